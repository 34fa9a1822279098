//! One database log for the whole cluster, as a site runs it: a MariaDB server on the
//! host's address on the cluster's network, TLS only, the v3.1 database with its
//! insert-only account; every node's library and the launcher on the host log there over
//! TCP, the password and the server's authority in an option file of the job's home
//! directory (mode 600), never on a command line.

use scr_db::test_server::TestServer;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The host's address on the cluster's network (tests/cluster/cluster.sh's bridge).
const HOST_ADDRESS: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 99, 0, 254);

/// The server and the home directory whose ~/.my.cnf reaches it.
pub struct SiteLog {
    pub server: TestServer,
    home: PathBuf,
}

impl SiteLog {
    /// Starts the server once the cluster's network is up; `shared` is a directory every
    /// node sees (the nodes have /tmp of their own).
    pub fn start(shared: &Path) -> SiteLog {
        let server = TestServer::start_with_tls_at(HOST_ADDRESS.into());
        server.v3_1_database();
        // the server itself refuses the account anything but TLS, and remembers who came
        server.sql_for_accounts("scr_insert", "ALTER USER {account} REQUIRE SSL");
        server.sql("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 1");
        let home = shared.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let ca = home.join("site-ca.pem");
        std::fs::copy(server.tls_ca(), &ca).unwrap();
        let mut options = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(home.join(".my.cnf"))
            .unwrap();
        std::io::Write::write_all(
            &mut options,
            format!("[client]\npassword=pw-insert\nssl-ca={}\n", ca.display()).as_bytes(),
        )
        .unwrap();
        SiteLog { server, home }
    }

    /// The environment of a job that logs here.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.home.display().to_string()),
            ("SCR_LOG_ENABLE", "1".into()),
            ("SCR_LOG_SYSLOG_ENABLE", "0".into()),
            ("SCR_LOG_DB_ENABLE", "1".into()),
            (
                "SCR_LOG_DB_HOST",
                format!("{HOST_ADDRESS}:{}", self.server.port()),
            ),
            ("SCR_LOG_DB_NAME", "scr".into()),
            ("SCR_LOG_DB_USER", "scr_insert".into()),
        ]
    }

    /// The events logged, in order: type, dataset name, note.
    pub fn events(&self) -> Vec<[String; 3]> {
        self.server
            .sql(
                "SELECT t.name, IFNULL(e.dset_name, ''), IFNULL(e.note, '') FROM scr.events e \
                 JOIN scr.types t ON t.id = e.type_id ORDER BY e.id",
            )
            .lines()
            .map(|l| {
                let mut c = l.splitn(3, '\t').map(str::to_string);
                [(); 3].map(|_| c.next().unwrap_or_default())
            })
            .collect()
    }

    /// The addresses the log's account connected from, each with how (the server's own
    /// record: `using TCP/IP` or `using SSL/TLS`).
    pub fn clients(&self) -> Vec<(String, String)> {
        let mut from: Vec<(String, String)> = self
            .server
            .sql(
                "SELECT argument FROM mysql.general_log \
                 WHERE command_type = 'Connect' AND argument LIKE 'scr\\_insert@%'",
            )
            .lines()
            .filter_map(|l| {
                let (address, how) = l.strip_prefix("scr_insert@")?.split_once(" on ")?;
                let how = how.rsplit_once(" using ").map_or("", |(_, h)| h);
                Some((address.to_string(), how.to_string()))
            })
            .collect();
        from.sort();
        from.dedup();
        from
    }

    /// The names of the datasets of events of type `kind`, in order.
    pub fn named(events: &[[String; 3]], kind: &str) -> Vec<String> {
        events
            .iter()
            .filter(|e| e[0] == kind)
            .map(|e| e[1].clone())
            .collect()
    }
}
