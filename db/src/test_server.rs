//! A private MariaDB server for tests: a fresh data directory in a temporary directory,
//! a unix socket there, and a port on 127.0.0.1 (or another address of this machine); run as the tests' own user and stopped
//! when dropped. Its administrator is the account of the tests' own login name, which
//! logs in through the socket alone (as its owner: MariaDB's unix_socket authentication).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A database as a site set it up for SCR v3.1's log (see [`TestServer::v3_1_database`]).
pub const V3_1_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/v3_1_database.sql"
);

/// A running `mariadbd` of the tests.
pub struct TestServer {
    dir: tempfile::TempDir,
    child: Option<Child>,
    address: std::net::IpAddr,
    port: u16,
    tls: bool,
}

/// Where Debian installs the server and its tools.
fn tool(name: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let path = Path::new(dir).join(name);
        if path.exists() {
            return path;
        }
    }
    panic!(
        "{name} not found: install MariaDB with scripts/setup.sh (Debian's mariadb-server and mariadb-client)"
    );
}

fn login_name() -> String {
    // SAFETY: geteuid cannot fail; getpwuid's record is copied out at once
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        assert!(!pw.is_null(), "the tests' user has no passwd entry");
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

/// The server's own directory for temporary tables: in the shared /tmp another process
/// cleaning up may remove them under a server that is setting up.
fn private_tmp(dir: &Path) -> PathBuf {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("create the server's tmpdir");
    tmp
}

/// A port on `address` nobody listens on now.
fn free_port(address: std::net::IpAddr) -> u16 {
    std::net::TcpListener::bind((address, 0))
        .and_then(|l| l.local_addr())
        .unwrap_or_else(|e| panic!("bind {address}:0: {e}"))
        .port()
}

const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

impl TestServer {
    /// Creates a data directory and starts the server; returns once it answers.
    pub fn start() -> TestServer {
        TestServer::start_with(LOOPBACK, false)
    }

    /// [`TestServer::start`] of a server that also speaks TLS, with a certificate for
    /// 127.0.0.1 and localhost signed by an authority of its own ([`TestServer::tls_ca`]).
    pub fn start_with_tls() -> TestServer {
        TestServer::start_with(LOOPBACK, true)
    }

    /// [`TestServer::start_with_tls`] listening on `address` instead of 127.0.0.1 (an
    /// address of this machine other hosts reach it at), with a certificate for it.
    pub fn start_with_tls_at(address: std::net::IpAddr) -> TestServer {
        TestServer::start_with(address, true)
    }

    fn start_with(address: std::net::IpAddr, tls: bool) -> TestServer {
        let dir = tempfile::Builder::new()
            .prefix("scr-db-")
            .tempdir()
            .expect("temporary directory");
        let user = login_name();
        let out = Command::new(tool("mariadb-install-db"))
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .arg(format!("--user={user}"))
            .arg(format!("--auth-root-socket-user={user}"))
            .arg("--skip-test-db")
            .arg(format!("--tmpdir={}", private_tmp(dir.path()).display()))
            .output()
            .expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if tls {
            make_certificates(dir.path(), address);
        }
        let mut server = TestServer {
            dir,
            child: None,
            address,
            port: free_port(address),
            tls,
        };
        server.launch(&user);
        server
    }

    fn launch(&mut self, user: &str) {
        let d = self.dir.path();
        let tls: Vec<String> = if self.tls {
            vec![
                format!("--ssl-ca={}", self.tls_ca().display()),
                format!("--ssl-cert={}", d.join("server.pem").display()),
                format!("--ssl-key={}", d.join("server.key").display()),
            ]
        } else {
            vec![]
        };
        let child = Command::new(tool("mariadbd"))
            .arg("--no-defaults")
            .arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", d.join("pid").display()))
            .arg(format!("--tmpdir={}", private_tmp(d).display()))
            .arg(format!("--log-error={}", d.join("error.log").display()))
            .arg(format!("--user={user}"))
            .arg(format!("--bind-address={}", self.address))
            .arg(format!("--port={}", self.port))
            .args([
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=16M",
                "--performance-schema=OFF",
                "--skip-log-bin",
            ])
            .args(tls)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mariadbd");
        self.child = Some(child);
        // readiness, not timing: a loaded machine may take long, a dead server says why
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            if self.try_sql("SELECT 1").is_ok() {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("mariadbd exited ({status}): {}", self.error_log());
            }
            assert!(
                Instant::now() < until,
                "mariadbd never answered: {}",
                self.error_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The server's error log, for failure messages.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// The server's unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// The certificate of the authority that signed a TLS server's.
    pub fn tls_ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The address it listens on.
    pub fn address(&self) -> std::net::IpAddr {
        self.address
    }

    /// Its port there.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temporary directory the server lives in (the tests may put files there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `sql` as the administrator; the rows, tab-separated, one a line.
    pub fn try_sql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new(tool("mariadb"))
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--user={}", login_name()))
            .args(["--batch", "--skip-column-names", "--execute", sql])
            .output();
        rows_or_error(out)
    }

    /// Runs `sql` as the account `user` with `password` (from an option file of the
    /// server's directory, mode 600, never on the command line).
    pub fn try_sql_as(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let options = self.dir.path().join(format!("{user}.cnf"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&options)
            .map_err(|e| e.to_string())?;
        std::io::Write::write_all(
            &mut file,
            format!("[client]\nuser={user}\npassword={password}\n").as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        let out = Command::new(tool("mariadb"))
            .arg(format!("--defaults-file={}", options.display()))
            .arg(format!("--socket={}", self.socket().display()))
            .args(["--batch", "--skip-column-names", "--execute", sql])
            .output();
        rows_or_error(out)
    }

    /// [`TestServer::try_sql`] that must work.
    pub fn sql(&self, sql: &str) -> String {
        self.try_sql(sql)
            .unwrap_or_else(|e| panic!("`{sql}` failed: {e}"))
    }

    /// Runs `sql` as the administrator once for each account of `user` there is, with
    /// `{account}` in it that account (`'user'@'host'`): v3.1's own scr.mysql makes
    /// `user`@`%` alone, [`TestServer::create_user`] a `localhost` one beside it.
    pub fn sql_for_accounts(&self, user: &str, sql: &str) {
        let hosts = self.sql(&format!(
            "SELECT `Host` FROM `mysql`.`user` WHERE `User` = '{user}'"
        ));
        for host in hosts.lines() {
            self.sql(&sql.replace("{account}", &format!("'{user}'@'{host}'")));
        }
    }

    /// Runs an SQL file as the administrator.
    pub fn source(&self, file: &Path) {
        self.sql(&format!("SOURCE {}", file.display()));
    }

    /// Sets up a database `scr` as a site did for SCR v3.1, with its accounts `scr`
    /// (password `pw-all`) and `scr_insert` (`pw-insert`, INSERT and SELECT only): from
    /// v3.1's own scr.mysql when SCR_DB_V3_1_SCHEMA names a copy of it (from tag v3.1.0 of
    /// LLNL/scr), else from [`V3_1_FIXTURE`], written from it.
    pub fn v3_1_database(&self) {
        match std::env::var_os("SCR_DB_V3_1_SCHEMA") {
            Some(file) => {
                self.source(Path::new(&file));
                self.sql(
                    "ALTER USER 'scr'@'%' IDENTIFIED BY 'pw-all'; \
                     ALTER USER 'scr_insert'@'%' IDENTIFIED BY 'pw-insert'",
                );
            }
            None => {
                self.create_user("scr", "pw-all");
                self.create_user("scr_insert", "pw-insert");
                self.source(Path::new(V3_1_FIXTURE));
            }
        }
    }

    /// Creates an account of `user` with `password` that logs in from anywhere.
    pub fn create_user(&self, user: &str, password: &str) {
        self.sql(&format!(
            "CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'; CREATE USER '{user}'@'localhost' IDENTIFIED BY '{password}'"
        ));
    }

    fn signal(&self, sig: i32) {
        if let Some(child) = &self.child {
            // SAFETY: the pid is our child's, not yet waited for
            unsafe { libc::kill(child.id() as i32, sig) };
        }
    }

    /// Stops the server (SIGSTOP): it accepts connections and answers nothing. Returns
    /// once every thread of it is stopped.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
        let Some(child) = &self.child else { return };
        let tasks = PathBuf::from(format!("/proc/{}/task", child.id()));
        let stopped = |stat: String| {
            // the state follows the command name in parentheses
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('T'))
        };
        let until = Instant::now() + Duration::from_secs(60);
        while !std::fs::read_dir(&tasks)
            .map(|d| {
                d.flatten()
                    .all(|t| std::fs::read_to_string(t.path().join("stat")).is_ok_and(stopped))
            })
            .unwrap_or(true)
        {
            assert!(Instant::now() < until, "mariadbd did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Lets a paused server go on.
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Shuts the server down and starts it again on the same data, socket and port (an
    /// administrator's restart): the connections it had are gone. Returns once it answers.
    pub fn restart(&mut self) {
        self.stop();
        self.launch(&login_name());
    }

    /// Shuts the server down; its socket and port are gone afterwards.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: as in signal
            unsafe {
                libc::kill(child.id() as i32, libc::SIGCONT);
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            let _ = child.wait();
        }
    }
}

/// An authority (`ca.pem`) and a server certificate it signed for `address`, 127.0.0.1
/// and localhost (`server.pem`, `server.key`) in `dir`, made by the openssl command.
fn make_certificates(dir: &Path, address: std::net::IpAddr) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl (scripts/setup.sh installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &[
            &[
                "req",
                "-x509",
                "-days",
                "2",
                "-subj",
                "/CN=scr-test-ca",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ][..],
            &key,
        ]
        .concat(),
    );
    openssl(
        &[
            &[
                "req",
                "-subj",
                "/CN=localhost",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
            ][..],
            &key,
        ]
        .concat(),
    );
    let names = if address == LOOPBACK {
        "IP:127.0.0.1,DNS:localhost".to_string()
    } else {
        format!("IP:{address},IP:127.0.0.1,DNS:localhost")
    };
    std::fs::write(
        dir.join("server.ext"),
        format!("subjectAltName={names}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"),
    )
    .expect("write server.ext");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.pem",
    ]);
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            // SAFETY: as in signal
            unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What a run of the `mariadb` client printed: its rows, or its error.
fn rows_or_error(out: std::io::Result<std::process::Output>) -> Result<String, String> {
    let out = out.map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
