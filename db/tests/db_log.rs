//! The database log against a real MariaDB server (a private `mariadbd` per test): the
//! schema `scr db init` creates is v3.1's, and records go into a database set up as for
//! v3.1 through its insert-only account; a server down, refusing or stopped leaves the
//! sink off without failing its caller.

use chrono::{Local, TimeZone};
use scr_db::test_server::TestServer;
use scr_db::{Address, Connection, Sink, Target};

/// Longer than the log's own bound on any one wait: a sink has settled by then.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

fn target(server: &TestServer, user: &str, password: &str, database: &str) -> Target {
    Target {
        address: Address::Socket(server.socket()),
        database: database.into(),
        user: user.into(),
        password: Some(password.into()),
        debug: false,
        timeout: scr_db::TIMEOUT,
        ssl_ca: None,
    }
}

/// Every column of the tables of `database`: table, column, type, nullability, key.
fn columns(server: &TestServer, database: &str) -> String {
    server.sql(&format!(
        "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{database}' \
         ORDER BY TABLE_NAME, ORDINAL_POSITION"
    ))
}

#[test]
fn db_init_creates_the_tables_of_a_v3_1_database_column_for_column() {
    let server = TestServer::start();
    server.v3_1_database();
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost'");

    let mut conn = Connection::open(&target(&server, "admin", "pw-admin", "ours"), false).unwrap();
    conn.init_schema("ours").unwrap();
    // twice: init over a database in use keeps it
    conn.init_schema("ours").unwrap();

    let ours = columns(&server, "ours");
    assert_eq!(ours.lines().count(), 2 + 2 + 2 + 4 + 13 + 8, "{ours}");
    assert_eq!(ours, columns(&server, "scr"));
}

#[test]
fn records_of_a_run_go_into_a_v3_1_database_through_its_insert_only_account() {
    let server = TestServer::start();
    server.v3_1_database();

    let at = |s| Local.with_ymd_and_hms(2026, 3, 4, 10, 0, s).unwrap();
    let t = target(&server, "scr_insert", "pw-insert", "scr");
    let sink = Sink::open(Ok(t.clone()), "alice", "/p/alice/run1", at(0));
    assert!(sink.settle(SETTLE));
    let f = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    };
    sink.record(
        "START",
        at(0),
        &f(&[("ranks", "4"), ("nodes", "2"), ("jobid", "77")]),
    );
    sink.record(
        "CHECKPOINT",
        at(5),
        &f(&[
            ("name", "ckpt.1"),
            ("dset", "1"),
            ("bytes", "1048576"),
            ("secs", "2.000"),
        ]),
    );
    sink.record(
        "FLUSH",
        at(9),
        &f(&[
            ("name", "ckpt.1"),
            ("dset", "1"),
            ("bytes", "1048576"),
            ("secs", "4.000"),
        ]),
    );
    sink.record("HALT", at(10), &f(&[("exits", "1")]));
    assert!(sink.settle(SETTLE), "{}", server.error_log());
    // a second run of the same computation is the same job
    let again = Sink::open(Ok(t), "alice", "/p/alice/run1", at(30));
    again.record("END", at(40), &[]);
    assert!(again.settle(SETTLE));

    assert_eq!(
        server.sql(
            "SELECT u.name, n.name, j.start FROM scr.jobs j JOIN scr.usernames u ON u.id = j.username_id \
             JOIN scr.jobnames n ON n.id = j.jobname_id"
        ),
        "alice\t/p/alice/run1\t2026-03-04 10:00:00\n"
    );
    assert_eq!(
        server.sql(
            "SELECT t.name, e.dset_id, e.dset_name, e.start, e.secs, \
             NULLIF(REGEXP_REPLACE(e.note, ' ?utc_offset=[^ ]*$', ''), '') FROM scr.events e \
             JOIN scr.types t ON t.id = e.type_id ORDER BY e.id"
        ),
        "START\tNULL\tNULL\t2026-03-04 10:00:00\tNULL\tranks=4 nodes=2 jobid=77\n\
         CHECKPOINT_END\t1\tckpt.1\t2026-03-04 10:00:03\t2\tNULL\n\
         FLUSH_SUCCESS\t1\tckpt.1\t2026-03-04 10:00:05\t4\tNULL\n\
         HALT\tNULL\tNULL\t2026-03-04 10:00:10\tNULL\texits=1\n\
         END\tNULL\tNULL\t2026-03-04 10:00:40\tNULL\tNULL\n"
    );
    // each notes its writer's offset from UTC then, as its times are the writer's local time
    let offset = at(0).format("%:z").to_string();
    assert_eq!(
        server.sql(&format!(
            "SELECT COUNT(*) FROM scr.events WHERE note LIKE '%utc_offset={offset}'"
        )),
        "5\n"
    );
    assert_eq!(
        server.sql(
            "SELECT t.name, x.dset_id, x.start, x.end, x.secs, x.bytes, x.bw, x.`from`, x.`to` \
             FROM scr.transfers x JOIN scr.types t ON t.id = x.type_id ORDER BY x.id"
        ),
        "CHECKPOINT\t1\t2026-03-04 10:00:03\t2026-03-04 10:00:05\t2\t1048580\t524288\t\t\n\
         FLUSH_SYNC\t1\t2026-03-04 10:00:05\t2026-03-04 10:00:09\t4\t1048580\t262144\t\t/p/alice/run1\n"
    );
    assert_eq!(
        server.sql("SELECT COUNT(DISTINCT job_id) FROM scr.events"),
        "1\n"
    );
}

#[test]
fn a_server_down_refusing_or_stopped_leaves_its_caller_going_and_one_back_gets_the_records() {
    let mut server = TestServer::start();
    server.v3_1_database();
    let now = Local::now();
    let t = target(&server, "scr_insert", "pw-insert", "scr");

    let refused = Sink::open(
        Ok(target(&server, "scr_insert", "wrong", "scr")),
        "bob",
        "/p",
        now,
    );
    assert!(!refused.settle(SETTLE));
    refused.record("START", now, &[]);

    // connected, then the server stops answering: the statement gives up and the records
    // wait, in order, while the server is tried again; answering again, it gets them. A sink
    // that could not connect at all meanwhile stays off
    let sink = Sink::open(Ok(t.clone()), "bob", "/p", now);
    assert!(sink.settle(SETTLE));
    server.pause();
    sink.record("START", now, &[("ranks", "2".into())]);
    let stopped = Sink::open(Ok(t.clone()), "bob", "/p", now);
    stopped.record("START", now, &[]);
    sink.record("END", now, &[]);
    assert!(!stopped.settle(SETTLE));
    server.resume();
    assert!(sink.settle(SETTLE * 4), "{}", server.error_log());
    assert_eq!(
        server.sql(
            "SELECT t.name FROM scr.events e JOIN scr.types t ON t.id = e.type_id ORDER BY e.id"
        ),
        "START\nEND\n"
    );
    drop(sink);

    // restarted under a sink (an administrator's restart): the connection is gone, and the
    // records go to the server once it is back
    let sink = Sink::open(Ok(t.clone()), "bob", "/p", now);
    sink.record("START", now, &[]);
    assert!(sink.settle(SETTLE));
    server.restart();
    sink.record(
        "CHECKPOINT",
        now,
        &[("name", "ckpt.1".into()), ("dset", "1".into())],
    );
    sink.record("END", now, &[]);
    assert!(sink.settle(SETTLE * 4), "{}", server.error_log());
    assert_eq!(
        server.sql("SELECT COUNT(*) FROM scr.events"),
        "5\n",
        "both sinks' records, none twice"
    );
    drop(sink);

    server.stop();
    let down = Sink::open(Ok(t), "bob", "/p", now);
    assert!(!down.settle(SETTLE));
    down.record("START", now, &[]);
}

/// A listener at `socket`, nonblocking: whether anyone connected, without waiting.
fn listen(socket: &std::path::Path) -> std::os::unix::net::UnixListener {
    let l = std::os::unix::net::UnixListener::bind(socket).unwrap();
    l.set_nonblocking(true).unwrap();
    l
}

#[test]
fn a_password_goes_to_no_socket_another_user_may_have_put_there() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // a directory everyone may write (not sticky): anyone may have made its socket
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = dir.path().join("mysqld.sock");
    let someone = listen(&socket);
    let with_password = Target {
        address: Address::Socket(socket.clone()),
        database: "scr".into(),
        user: "scr_insert".into(),
        password: Some("pw-insert".into()),
        debug: false,
        timeout: scr_db::TIMEOUT,
        ssl_ca: None,
    };
    let e = Connection::open(&with_password, true)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains(&socket.display().to_string()), "{e}");
    assert!(e.contains("TLS"), "{e}");
    assert_eq!(
        someone.accept().err().map(|e| e.kind()),
        Some(std::io::ErrorKind::WouldBlock),
        "the client connected"
    );
    // a sticky directory everyone may write, as /tmp: nobody's socket is there yet, and
    // anyone's may be the moment the client connects
    let sticky = tempfile::tempdir().unwrap();
    std::fs::set_permissions(sticky.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut in_tmp = with_password.clone();
    in_tmp.address = Address::Socket(sticky.path().join("mysql.sock"));
    let e = Connection::open(&in_tmp, true)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("writable by everyone"), "{e}");
    // the sink says so once and writes nothing
    let sink = Sink::open(Ok(with_password.clone()), "alice", "/p", Local::now());
    assert!(!sink.settle(SETTLE));

    // the same socket in a directory of the user's alone is tried (nothing answers there)
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let trying = std::thread::spawn(move || Connection::open(&with_password, true).is_ok());
    let until = std::time::Instant::now() + SETTLE;
    while someone.accept().is_err() {
        assert!(
            std::time::Instant::now() < until,
            "the client never connected"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!trying.join().unwrap());
}

#[test]
fn a_password_goes_over_tcp_only_by_tls_to_a_certificate_that_checks_out() {
    let plain = TestServer::start();
    plain.v3_1_database();
    let tcp = |server: &TestServer| {
        let mut t = target(server, "scr_insert", "pw-insert", "scr");
        t.address = Address::Tcp {
            host: "127.0.0.1".into(),
            port: server.port(),
        };
        t
    };
    // a server without TLS is not sent the password
    let e = Connection::open(&tcp(&plain), true)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("TLS"), "{e}");
    drop(plain);

    let server = TestServer::start_with_tls();
    server.v3_1_database();
    // a certificate no known authority signed is refused
    let e = Connection::open(&tcp(&server), true)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    // and the message says what would make it check out
    assert!(e.contains("ssl-ca="), "{e}");
    assert_eq!(server.sql("SELECT COUNT(*) FROM scr.jobs"), "0\n");
    // with the server's authority (ssl-ca of the option file) the records go in over TLS
    let mut t = tcp(&server);
    t.ssl_ca = Some(server.tls_ca());
    let sink = Sink::open(Ok(t), "alice", "/p/alice/run1", Local::now());
    sink.record("START", Local::now(), &[]);
    assert!(sink.settle(SETTLE), "{}", server.error_log());
    assert_eq!(server.sql("SELECT COUNT(*) FROM scr.events"), "1\n");
    let accepted: u64 = server
        .sql("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'")
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(accepted >= 1, "no TLS connection was accepted");
}

/// Two users, each with an account of their own granted a database of their own records
/// (`Connection::grant_own_records` beside a v3.1 database): each logs their jobs through
/// the library's sink unchanged; each reads their own jobs and events, and nothing of the
/// other's nor of the log's: no table, no name, no counter is shared to probe. What a user
/// writes there (even a row that names the other) stays in their own database, and the
/// site's reader takes each database's jobs as its owner's.
#[test]
fn each_user_reads_and_writes_only_their_own_records() {
    let server = TestServer::start();
    server.v3_1_database();
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost' WITH GRANT OPTION");
    let at = |s| Local.with_ymd_and_hms(2026, 5, 6, 7, 0, s).unwrap();
    let admin = target(&server, "admin", "pw-admin", "scr");
    for (user, password) in [("alice", "pw-alice"), ("bob", "pw-bob")] {
        server.create_user(user, password);
        let mut conn = Connection::open(&admin, false).unwrap();
        // every account of the user's name, without naming their hosts
        let hosts = conn.grant_own_records("scr", user, None).unwrap();
        assert_eq!(hosts, ["%", "localhost"]);
        let own = scr_db::own_records::own_database_name("scr", user).unwrap();
        // the user's jobs, logged as the library logs them, into their own database
        let sink = Sink::open(
            Ok(target(&server, user, password, &own)),
            user,
            &format!("/p/{user}/run"),
            at(0),
        );
        sink.record("START", at(1), &[("ranks", "2".into())]);
        sink.record(
            "CHECKPOINT",
            at(3),
            &[
                ("name", format!("ckpt.{user}")),
                ("dset", "1".into()),
                ("bytes", "4096".into()),
                ("secs", "1.000".into()),
            ],
        );
        assert!(sink.settle(SETTLE), "{user}: {}", server.error_log());
    }
    let as_user = |user: &str, sql: &str| {
        let password = format!("pw-{user}");
        server.try_sql_as(user, &password, sql)
    };
    assert_eq!(
        as_user("alice", "SELECT name FROM scr_alice.jobnames").unwrap(),
        "/p/alice/run\n"
    );
    assert_eq!(
        as_user("bob", "SELECT dset_name, bytes FROM scr_bob.transfers").unwrap(),
        "ckpt.bob\t4096\n"
    );
    // nothing of the other's, nor of the log's tables, nor of the server's
    for sql in [
        "SELECT * FROM scr.events",
        "SELECT * FROM scr.jobnames",
        "SELECT * FROM scr_bob.events",
        "SELECT * FROM scr_bob.usernames",
        "SELECT * FROM mysql.user",
    ] {
        let refused = as_user("alice", sql).unwrap_err();
        assert!(refused.contains("denied"), "{sql}: {refused}");
    }
    assert_eq!(
        as_user(
            "alice",
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'scr%'"
        )
        .unwrap(),
        "scr_alice\n"
    );
    // what alice writes, even in bob's name, goes into her own database alone
    as_user(
        "alice",
        "INSERT INTO scr_alice.usernames (name) VALUES ('bob'); \
         INSERT INTO scr_alice.events (id, job_id, type_id, note) VALUES (4294967295, 1, 1, 'forged')",
    )
    .unwrap();
    assert_eq!(
        server.sql("SELECT COUNT(*) FROM scr_bob.events WHERE note = 'forged'"),
        "0\n"
    );
    assert_eq!(server.sql("SELECT COUNT(*) FROM scr.events"), "0\n");
    // bob logs on, his counters untouched
    let sink = Sink::open(
        Ok(target(&server, "bob", "pw-bob", "scr_bob")),
        "bob",
        "/p/bob/run",
        at(10),
    );
    sink.record("START", at(11), &[("ranks", "2".into())]);
    assert!(sink.settle(SETTLE), "{}", server.error_log());
    assert_eq!(
        server.sql("SELECT COUNT(*) FROM scr_bob.events WHERE note LIKE 'ranks=2 utc_offset=%'"),
        "2\n"
    );

    // the site's reader: every database, each job its owner's, whatever its rows say
    let mut conn = Connection::open(&admin, true).unwrap();
    let jobs = conn
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    assert!(jobs.unread.is_empty(), "{:?}", jobs.unread);
    let seen: Vec<(&str, &str, &str)> = jobs
        .jobs
        .iter()
        .map(|j| (j.database.as_str(), j.user.as_str(), j.name.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("scr_alice", "alice", "/p/alice/run"),
            ("scr_bob", "bob", "/p/bob/run")
        ]
    );
    // and a user's reader, their own
    let mut conn =
        Connection::open(&target(&server, "alice", "pw-alice", "scr_alice"), true).unwrap();
    let own: Vec<String> = conn
        .jobs("scr_alice", &scr_db::read::Selection::default())
        .unwrap()
        .jobs
        .into_iter()
        .map(|j| j.database)
        .collect();
    assert_eq!(own, ["scr_alice"]);
    // the administrator reading alice's database by its name: a row there naming bob is
    // still alice's
    server.sql(
        "INSERT IGNORE INTO scr_alice.usernames (name) VALUES ('bob'); \
         INSERT INTO scr_alice.jobnames (name) VALUES ('/p/bob/forged'); \
         INSERT INTO scr_alice.jobs (username_id, jobname_id, start) SELECT u.id, n.id, NOW() \
         FROM scr_alice.usernames u, scr_alice.jobnames n \
         WHERE u.name = 'bob' AND n.name = '/p/bob/forged'",
    );
    let mut conn = Connection::open(&admin, true).unwrap();
    let by_name = conn
        .jobs("scr_alice", &scr_db::read::Selection::default())
        .unwrap()
        .jobs;
    assert_eq!(by_name.len(), 2, "{by_name:?}");
    assert!(by_name.iter().all(|j| j.user == "alice"), "{by_name:?}");
    // a database that cannot be read is passed over, named, and costs the others nothing
    server.sql("ALTER TABLE scr_bob.jobs DROP COLUMN start");
    let listed = conn
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    assert!(listed.jobs.iter().all(|j| j.user == "alice"), "{listed:?}");
    assert!(!listed.jobs.is_empty(), "{listed:?}");
    assert_eq!(listed.unread.len(), 1, "{listed:?}");
    assert_eq!(listed.unread[0].0, "scr_bob", "{listed:?}");
    // a user's database dropped while still granted is named too: its records are gone,
    // which is not the same as a user who never logged
    server.sql("DROP DATABASE scr_bob");
    let listed = conn
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    assert!(!listed.jobs.is_empty(), "{listed:?}");
    assert_eq!(listed.unread.len(), 1, "{listed:?}");
    assert_eq!(listed.unread[0].0, "scr_bob", "{listed:?}");
    assert!(
        listed.unread[0].1.contains("no longer exists"),
        "{listed:?}"
    );
    // and granting again makes it, empty, and read again
    conn.grant_own_records("scr", "bob", None).unwrap();
    let listed = conn
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    assert!(listed.unread.is_empty(), "{listed:?}");
    // bob's account dropped (its grants with it): his database is still there, whose
    // records it holds no grant says any more; named, not passed over in silence
    server.sql("DROP USER 'bob'@'%'; DROP USER 'bob'@'localhost'");
    let listed = conn
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    assert!(listed.jobs.iter().all(|j| j.user == "alice"), "{listed:?}");
    assert_eq!(listed.unread.len(), 1, "{listed:?}");
    assert_eq!(listed.unread[0].0, "scr_bob", "{listed:?}");
    assert!(
        listed.unread[0].1.contains("no account of that user"),
        "{listed:?}"
    );
}

/// `scr db grant` reaches no further than it says: the database it grants is the user's
/// alone (not a GRANT pattern that takes in another's), the accounts are the user's that
/// exist (none is made without a password), and it refuses, changing nothing, a database
/// of that name that holds anything but the log's tables or that another account may
/// already read, and an account that reads the log or another user's records already.
#[test]
fn a_grant_reaches_no_further_than_it_says() {
    let server = TestServer::start();
    server.v3_1_database();
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost' WITH GRANT OPTION");
    let admin = || Connection::open(&target(&server, "admin", "pw-admin", "scr"), false).unwrap();
    let grant = |user: &str, host: Option<&str>| admin().grant_own_records("scr", user, host);

    // `_` in j_smith's database is no wildcard: jasmith's stays out of j_smith's reach
    server.sql(
        "CREATE DATABASE scr_jasmith; CREATE TABLE scr_jasmith.t (x INT); INSERT INTO scr_jasmith.t VALUES (7)",
    );
    server.create_user("j_smith", "pw-j_smith");
    grant("j_smith", None).unwrap();
    let refused = server
        .try_sql_as("j_smith", "pw-j_smith", "SELECT x FROM scr_jasmith.t")
        .unwrap_err();
    assert!(refused.contains("denied"), "{refused}");
    server
        .try_sql_as(
            "j_smith",
            "pw-j_smith",
            "SELECT COUNT(*) FROM scr_j_smith.jobs",
        )
        .unwrap();
    // granting again changes nothing
    grant("j_smith", None).unwrap();

    // no account is made: carol has none, then one at localhost alone
    let none = grant("carol", None).unwrap_err().to_string();
    assert!(
        none.contains("no account 'carol'") && none.contains("CREATE USER"),
        "{none}"
    );
    assert_eq!(
        server.sql("SELECT COUNT(*) FROM mysql.user WHERE User = 'carol'"),
        "0\n"
    );
    server.sql("CREATE USER 'carol'@'localhost' IDENTIFIED BY 'pw-carol'");
    let none = grant("carol", Some("%")).unwrap_err().to_string();
    assert!(none.contains("no account 'carol'@'%'"), "{none}");
    assert_eq!(grant("carol", None).unwrap(), ["localhost"]);
    assert_eq!(
        server.sql("SELECT Host FROM mysql.user WHERE User = 'carol'"),
        "localhost\n"
    );

    // a database of that name holding something else is refused and left as it was
    server.sql("CREATE USER 'jasmith'@'%' IDENTIFIED BY 'pw-jasmith'");
    let refused = grant("jasmith", None).unwrap_err().to_string();
    assert!(
        refused.contains("scr_jasmith") && refused.contains("t (BASE TABLE)"),
        "{refused}"
    );
    assert_eq!(server.sql("SELECT x FROM scr_jasmith.t"), "7\n");
    assert!(
        server
            .try_sql_as("jasmith", "pw-jasmith", "SELECT x FROM scr_jasmith.t")
            .is_err()
    );

    // a user's database another account may read already is not made theirs
    server.create_user("dave", "pw-dave");
    server.sql("CREATE DATABASE scr_dave; GRANT SELECT ON `scr\\_d%`.* TO 'carol'@'localhost'");
    let shared = grant("dave", None).unwrap_err().to_string();
    assert!(
        shared.contains("'carol'@'localhost'") && shared.contains("REVOKE"),
        "{shared}"
    );
    assert!(
        server
            .try_sql_as("dave", "pw-dave", "SHOW TABLES FROM scr_dave")
            .is_err()
    );

    // an account that reads the log, or every user's records, already would be hidden
    // nothing
    server.create_user("erin", "pw-erin");
    server.sql("GRANT SELECT ON `scr`.* TO 'erin'@'%'");
    let wider = grant("erin", None).unwrap_err().to_string();
    assert!(
        wider.contains("'erin'@'%'") && wider.contains("REVOKE"),
        "{wider}"
    );
    server.create_user("fred", "pw-fred");
    server.sql("GRANT SELECT ON `scr\\_%`.* TO 'fred'@'localhost'");
    let wider = grant("fred", None).unwrap_err().to_string();
    assert!(
        wider.contains("'fred'@'localhost'") && wider.contains("scr\\_%"),
        "{wider}"
    );
    for refused in ["scr_erin", "scr_fred"] {
        assert_eq!(
            server.sql(&format!(
                "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{refused}'"
            )),
            "0\n"
        );
    }
    // and a name that makes no database, or one of the server's own, is refused
    server.sql("CREATE USER 'j.doe'@'%' IDENTIFIED BY 'pw'");
    assert!(grant("j.doe", None).is_err());

    // a role, or a column's grant, reaches what the grant does not judge: refused
    server.sql(
        "CREATE ROLE reader; GRANT SELECT ON scr.* TO reader; \
         CREATE USER 'gina'@'localhost' IDENTIFIED BY 'pw-gina'; GRANT reader TO 'gina'@'localhost'; \
         CREATE USER 'hal'@'localhost' IDENTIFIED BY 'pw-hal'; \
         GRANT SELECT (id, name) ON scr_j_smith.jobnames TO 'hal'@'localhost'",
    );
    let role = grant("gina", None).unwrap_err().to_string();
    assert!(role.contains("the role reader"), "{role}");
    let column = grant("hal", None).unwrap_err().to_string();
    assert!(
        column.contains("scr_j_smith") && column.contains("jobnames"),
        "{column}"
    );
    // and j_smith's database, which hal's column grant reaches, is j_smith's no more
    let shared = grant("j_smith", None).unwrap_err().to_string();
    assert!(shared.contains("'hal'@'localhost'"), "{shared}");

    // a database with a trigger runs what nobody granted: refused
    server.sql(
        "CREATE USER 'ivy'@'localhost' IDENTIFIED BY 'pw-ivy'; CREATE DATABASE scr_ivy; \
         CREATE TABLE scr_ivy.jobnames (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(512) NOT NULL); \
         CREATE TRIGGER scr_ivy.t AFTER INSERT ON scr_ivy.jobnames FOR EACH ROW INSERT INTO scr.jobnames (name) VALUES (NEW.name)",
    );
    let trigger = grant("ivy", None).unwrap_err().to_string();
    assert!(trigger.contains("the trigger t"), "{trigger}");

    // another log named like a user's database (`scr_test` beside `scr`) is no user's
    // (fred's pattern grant, which reaches it, out of the way first)
    server.sql("REVOKE SELECT ON `scr\\_%`.* FROM 'fred'@'localhost'");
    admin().init_schema("scr_test").unwrap();
    server.sql(
        "INSERT INTO scr_test.usernames (name) VALUES ('kim'); INSERT INTO scr_test.jobnames (name) VALUES ('/p/kim'); \
         INSERT INTO scr_test.jobs (username_id, jobname_id, start) VALUES (1, 1, NOW()); \
         CREATE USER 'test'@'localhost' IDENTIFIED BY 'pw-test'",
    );
    let other_log = grant("test", None).unwrap_err().to_string();
    assert!(other_log.contains("holds records already"), "{other_log}");
    assert!(
        server
            .try_sql_as("test", "pw-test", "SELECT * FROM scr_test.jobs")
            .is_err()
    );
    // nor does the site's reader take it for user test's: only databases granted to their user
    let mut conn = Connection::open(&target(&server, "admin", "pw-admin", "scr"), true).unwrap();
    assert_eq!(
        conn.log_databases("scr").unwrap(),
        ["scr", "scr_carol", "scr_j_smith"]
    );

    // an account that may do more than read and add in its own database (alter or drop
    // its tables, make a view of one) is refused, and keeps what it had: granting again
    // once that is revoked reads and adds, no more
    server.sql(
        "CREATE USER 'lou'@'localhost' IDENTIFIED BY 'pw-lou'; \
         GRANT SELECT, INSERT, DROP, CREATE VIEW ON `scr\\_lou`.* TO 'lou'@'localhost'",
    );
    let more = grant("lou", None).unwrap_err().to_string();
    assert!(
        more.contains("DROP ON `scr\\_lou`") && more.contains("REVOKE"),
        "{more}"
    );
    server.sql("REVOKE DROP, CREATE VIEW ON `scr\\_lou`.* FROM 'lou'@'localhost'");
    // a grant's database is a pattern, however it was written: `scr_lou` unescaped, and
    // `scr_lo_`, take in scr_lou as much as `scr\_lou` does
    for pattern in ["scr_lou", "scr_lo_"] {
        server.sql(&format!(
            "GRANT DELETE ON `{pattern}`.* TO 'lou'@'localhost'"
        ));
        let more = grant("lou", None).unwrap_err().to_string();
        assert!(more.contains(&format!("DELETE ON `{pattern}`")), "{more}");
        server.sql(&format!(
            "REVOKE DELETE ON `{pattern}`.* FROM 'lou'@'localhost'"
        ));
    }
    grant("lou", None).unwrap();
    // a user's database made unlike the log's (a view where a table was) is no records the
    // report reads, and it says so rather than leave the user out without a word
    server
        .sql("DROP TABLE scr_lou.types; CREATE VIEW scr_lou.types AS SELECT 1 AS id, 'X' AS name");
    let mut reader = Connection::open(&target(&server, "admin", "pw-admin", "scr"), true).unwrap();
    let jobs = reader
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    assert!(
        jobs.unread
            .iter()
            .any(|(db, why)| db == "scr_lou" && why.contains("view")),
        "{:?}",
        jobs.unread
    );
    server.sql("DROP VIEW scr_lou.types; DROP DATABASE scr_lou; DROP USER 'lou'@'localhost'");

    // rows left in a table but `jobs` (events a first job's id would take over), a
    // scheduled event, a table stored elsewhere, a column of its own: each refused
    let leftover = |user: &str, setup: &str| {
        admin().init_schema(&format!("scr_{user}")).unwrap();
        server.sql(&format!(
            "CREATE USER '{user}'@'localhost' IDENTIFIED BY 'pw'; {setup}"
        ));
        grant(user, None).unwrap_err().to_string()
    };
    let orphans = leftover(
        "yan",
        "INSERT INTO scr_yan.types (name) VALUES ('CHECKPOINT_FAILED'); \
         INSERT INTO scr_yan.events (job_id, type_id, start) VALUES (1, 1, NOW())",
    );
    assert!(orphans.contains("holds records already"), "{orphans}");
    server.sql("SET GLOBAL event_scheduler = OFF");
    let scheduled = leftover(
        "zed",
        "CREATE EVENT scr_zed.exfil ON SCHEDULE EVERY 1 HOUR DO SELECT 1",
    );
    assert!(
        scheduled.contains("the scheduled event exfil"),
        "{scheduled}"
    );
    let elsewhere = leftover("una", "ALTER TABLE scr_una.types ENGINE = MEMORY");
    assert!(
        elsewhere.contains("the table types stored by MEMORY"),
        "{elsewhere}"
    );
    let extra = leftover("vic", "ALTER TABLE scr_vic.jobs ADD COLUMN spy VARCHAR(10)");
    assert!(extra.contains("the column jobs.spy"), "{extra}");
}

/// Records as SCR v3.1 itself writes them (its names; `CHECKPOINT_END` and `FLUSH_SUCCESS`
/// without a start, their time in their transfer) are read back as the text log's events:
/// the kinds, the order, the bytes and the times a site's report needs.
#[test]
fn v3_1s_own_records_read_back_as_the_text_logs_events() {
    let server = TestServer::start();
    server.v3_1_database();
    // carol's job: a run with a checkpoint and its flush, then a run that restarts from it
    server.sql(
        "INSERT INTO scr.usernames (name) VALUES ('carol'); \
         INSERT INTO scr.jobnames (name) VALUES ('/p/carol/run'); \
         INSERT INTO scr.jobs (username_id, jobname_id, start) VALUES (1, 1, '2026-03-04 10:00:00'); \
         INSERT INTO scr.types (name) VALUES ('START'), ('CHECKPOINT_END'), ('CHECKPOINT'), \
           ('FLUSH_SUCCESS'), ('FLUSH_SYNC'), ('RESTART_SUCCESS'); \
         INSERT INTO scr.events (job_id, type_id, dset_id, dset_name, start, secs, note) VALUES \
           (1, 1, NULL, NULL, '2026-03-04 10:00:00', NULL, NULL), \
           (1, 2, 1, 'ckpt.1', NULL, 2, NULL), \
           (1, 4, 1, 'ckpt.1', NULL, 4, NULL), \
           (1, 1, NULL, NULL, '2026-03-04 11:00:00', NULL, NULL), \
           (1, 6, 1, NULL, '2026-03-04 11:00:01', 1, NULL); \
         INSERT INTO scr.transfers (job_id, type_id, dset_id, dset_name, start, end, secs, bytes, files, bw, `from`, `to`) VALUES \
           (1, 3, 1, 'ckpt.1', '2026-03-04 10:10:00', '2026-03-04 10:10:02', 2, 4096, 2, 2048, '/tmp', '/tmp/ckpt.1'), \
           (1, 5, 1, 'ckpt.1', '2026-03-04 10:10:02', '2026-03-04 10:10:06', 4, 4096, 2, 1024, '/tmp', '/p/carol/run');",
    );
    let mut conn = Connection::open(&target(&server, "scr", "pw-all", "scr"), true).unwrap();
    let selection = scr_db::read::Selection::default();
    let jobs = conn.jobs("scr", &selection).unwrap().jobs;
    assert_eq!(jobs.len(), 1);
    let events = conn.events_of(&jobs[0], &selection).unwrap();
    let read: Vec<(&str, Option<String>, Option<f64>)> = events
        .iter()
        .map(|e| {
            (
                scr_db::text_log_kind(&e.kind).0,
                e.end().map(|t| t.format("%H:%M:%S").to_string()),
                e.bytes,
            )
        })
        .collect();
    let at = |t: &str| Some(t.to_string());
    assert_eq!(
        read,
        [
            ("START", at("10:00:00"), None),
            ("CHECKPOINT", at("10:10:02"), Some(4096.0)),
            ("FLUSH", at("10:10:06"), Some(4096.0)),
            ("START", at("11:00:00"), None),
            ("RESTART", at("11:00:02"), None),
        ]
    );
}

/// A connection that fails says what it means and the fix where the server's words do not:
/// the account and password refused, a database the account may not use, none of that
/// name, a server that takes the connection and never answers.
#[test]
fn a_failed_connection_names_the_setting_to_fix() {
    let server = TestServer::start();
    server.v3_1_database();
    let open = |user: &str, password: &str, database: &str, timeout| {
        let mut t = target(&server, user, password, database);
        t.timeout = timeout;
        match Connection::open(&t, true) {
            Ok(_) => panic!("{user} connected to {database}"),
            Err(e) => e.to_string(),
        }
    };
    let bound = std::time::Duration::from_secs(2);
    let wrong = open("scr_insert", "wrong", "scr", bound);
    assert!(
        wrong.contains("1045") && wrong.contains("SCR_LOG_DB_PASS"),
        "{wrong}"
    );
    // no socket at that path: no server listens there
    let mut gone = target(&server, "scr_insert", "pw-insert", "scr");
    gone.address = Address::Socket(server.socket().with_file_name("nope.sock"));
    let nothing = match Connection::open(&gone, true) {
        Ok(_) => panic!("connected to no socket"),
        Err(e) => e.to_string(),
    };
    assert!(
        nothing.contains("no server's socket") && nothing.contains("SCR_LOG_DB_HOST"),
        "{nothing}"
    );
    server.sql("CREATE DATABASE other");
    let elsewhere = open("scr_insert", "pw-insert", "other", bound);
    assert!(
        elsewhere.contains("1044") && elsewhere.contains("SCR_LOG_DB_NAME=scr_$USER"),
        "{elsewhere}"
    );
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost'");
    let missing = open("admin", "pw-admin", "nosuch", bound);
    assert!(
        missing.contains("1049") && missing.contains("scr db init"),
        "{missing}"
    );
    server.pause();
    let silent = open("scr_insert", "pw-insert", "scr", bound);
    server.resume();
    assert!(
        silent.contains("no answer") && silent.contains("stopped or overloaded"),
        "{silent}"
    );
    assert!(!silent.contains("os error"), "{silent}");
}

/// One user's database costs the site's report a bounded amount: a user who fills theirs
/// with more jobs than the reader takes from one user has the newest read and the rest
/// named as left out, and the other users' jobs are read whole.
#[test]
fn a_users_database_flooded_with_jobs_is_read_to_a_bound_and_named() {
    use scr_db::read::MOST_JOBS_OF_A_USER;
    let server = TestServer::start();
    server.v3_1_database();
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost' WITH GRANT OPTION");
    let admin = target(&server, "admin", "pw-admin", "scr");
    let mut conn = Connection::open(&admin, false).unwrap();
    for user in ["alice", "mallory"] {
        server.create_user(user, &format!("pw-{user}"));
        conn.grant_own_records("scr", user, None).unwrap();
    }
    // alice's one job, and mallory's flood (each job a day after the one before: the
    // newest are the last ids)
    let flood = MOST_JOBS_OF_A_USER + 5;
    server.sql(&format!(
        "INSERT INTO scr_alice.usernames (name) VALUES ('alice'); \
         INSERT INTO scr_alice.jobnames (name) VALUES ('/p/alice/run'); \
         INSERT INTO scr_alice.jobs (username_id, jobname_id, start) VALUES (1, 1, NOW()); \
         INSERT INTO scr_mallory.usernames (name) VALUES ('mallory'); \
         INSERT INTO scr_mallory.jobnames (name) SELECT CONCAT('/p/m/', seq) FROM scr_mallory.seq_1_to_{flood}; \
         INSERT INTO scr_mallory.jobs (username_id, jobname_id, start) \
         SELECT 1, seq, '2020-01-01' + INTERVAL seq DAY FROM scr_mallory.seq_1_to_{flood}"
    ));
    let mut conn = Connection::open(&admin, true).unwrap();
    let listed = conn
        .jobs("scr", &scr_db::read::Selection::default())
        .unwrap();
    let of = |user: &str| -> Vec<&str> {
        listed
            .jobs
            .iter()
            .filter(|j| j.user == user)
            .map(|j| j.name.as_str())
            .collect()
    };
    assert_eq!(of("alice"), ["/p/alice/run"]);
    let mallorys = of("mallory");
    assert_eq!(mallorys.len(), MOST_JOBS_OF_A_USER);
    // the newest, oldest first
    assert_eq!(mallorys[0], "/p/m/6");
    assert_eq!(mallorys.last(), Some(&format!("/p/m/{flood}").as_str()));
    assert_eq!(listed.unread.len(), 1, "{:?}", listed.unread);
    assert_eq!(listed.unread[0].0, "scr_mallory");
    assert!(
        listed.unread[0]
            .1
            .contains(&format!("only its newest {MOST_JOBS_OF_A_USER} jobs")),
        "{:?}",
        listed.unread
    );
}
