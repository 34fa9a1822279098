//! The database log against a real MariaDB server (a private `mariadbd` per test): the
//! schema `scr db init` creates is v3.1's, and records go into a database set up as for
//! v3.1 through its insert-only account; a server down, refusing or stopped leaves the
//! sink off without failing its caller.

use chrono::{Local, TimeZone};
use scr_db::test_server::TestServer;
use scr_db::{Address, Connection, Sink, Target};

fn target(server: &TestServer, user: &str, password: &str, database: &str) -> Target {
    Target {
        address: Address::Socket(server.socket()),
        database: database.into(),
        user: user.into(),
        password: Some(password.into()),
        debug: false,
        timeout: scr_db::TIMEOUT,
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
    assert!(sink.is_on());
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
    assert!(sink.is_on(), "{}", server.error_log());
    // a second run of the same computation is the same job
    let again = Sink::open(Ok(t), "alice", "/p/alice/run1", at(30));
    again.record("END", at(40), &[]);
    assert!(again.is_on());

    assert_eq!(
        server.sql(
            "SELECT u.name, n.name, j.start FROM scr.jobs j JOIN scr.usernames u ON u.id = j.username_id \
             JOIN scr.jobnames n ON n.id = j.jobname_id"
        ),
        "alice\t/p/alice/run1\t2026-03-04 10:00:00\n"
    );
    assert_eq!(
        server.sql(
            "SELECT t.name, e.dset_id, e.dset_name, e.start, e.secs, e.note FROM scr.events e \
             JOIN scr.types t ON t.id = e.type_id ORDER BY e.id"
        ),
        "START\tNULL\tNULL\t2026-03-04 10:00:00\tNULL\tranks=4 nodes=2 jobid=77\n\
         CHECKPOINT\t1\tckpt.1\t2026-03-04 10:00:03\t2\tNULL\n\
         FLUSH\t1\tckpt.1\t2026-03-04 10:00:05\t4\tNULL\n\
         HALT\tNULL\tNULL\t2026-03-04 10:00:10\tNULL\texits=1\n\
         END\tNULL\tNULL\t2026-03-04 10:00:40\tNULL\tNULL\n"
    );
    assert_eq!(
        server.sql(
            "SELECT t.name, x.dset_id, x.start, x.end, x.secs, x.bytes, x.bw, x.`from`, x.`to` \
             FROM scr.transfers x JOIN scr.types t ON t.id = x.type_id ORDER BY x.id"
        ),
        "CHECKPOINT\t1\t2026-03-04 10:00:03\t2026-03-04 10:00:05\t2\t1048580\t524288\t\t\n\
         FLUSH\t1\t2026-03-04 10:00:05\t2026-03-04 10:00:09\t4\t1048580\t262144\t\t/p/alice/run1\n"
    );
    assert_eq!(
        server.sql("SELECT COUNT(DISTINCT job_id) FROM scr.events"),
        "1\n"
    );
}

#[test]
fn a_server_down_refusing_or_stopped_leaves_the_sink_off_and_its_caller_going() {
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
    assert!(!refused.is_on());
    refused.record("START", now, &[]);

    // connected, then the server stops answering: the statement gives up, the sink stays off
    let sink = Sink::open(Ok(t.clone()), "bob", "/p", now);
    assert!(sink.is_on());
    server.pause();
    sink.record("START", now, &[]);
    assert!(!sink.is_on());
    sink.record("END", now, &[]);
    let stopped = Sink::open(Ok(t.clone()), "bob", "/p", now);
    assert!(!stopped.is_on());
    server.resume();
    assert_eq!(server.sql("SELECT COUNT(*) FROM scr.events"), "0\n");

    server.stop();
    let down = Sink::open(Ok(t), "bob", "/p", now);
    assert!(!down.is_on());
    down.record("START", now, &[]);
}
