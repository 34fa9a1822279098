//! `scr db init` against a real MariaDB server (a private `mariadbd`): it creates the
//! database the parameters name with the log's six tables, as the administrator of an
//! option file only its owner can read; an option file others can read is refused naming
//! it and the fix, and no password is ever taken from the command line.

use scr_db::test_server::TestServer;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn scr_db(server: &TestServer, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scr"))
        .arg("db")
        .args(args)
        .env("SCR_LOG_DB_HOST", server.socket())
        .env("SCR_LOG_DB_NAME", "sitelog")
        .env_remove("SCR_LOG_DB_USER")
        .env_remove("SCR_LOG_DB_PASS")
        .env("SCR_SYSTEM_CONF_FILE", server.dir().join("none.conf"))
        .env("HOME", server.dir())
        .output()
        .unwrap()
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn option_file(path: &Path, mode: u32) {
    std::fs::write(path, "[client]\nuser=admin\npassword=pw-admin\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn db_init_creates_the_six_tables_as_the_administrator_of_a_private_option_file() {
    let server = TestServer::start();
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost'");
    let file = server.dir().join("admin.cnf");

    // readable by others: refused before any connection, naming the file and the fix
    option_file(&file, 0o644);
    let o = scr_db(&server, &["init", "--option-file", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(
        said(&o).contains(&format!("chmod 600 {}", file.display())),
        "{}",
        said(&o)
    );
    assert_eq!(server.sql("SHOW DATABASES LIKE 'sitelog'"), "");

    // no password argument exists
    let o = scr_db(&server, &["init", "--password", "pw-admin"]);
    assert!(
        !o.status.success() && said(&o).contains("unexpected argument"),
        "{}",
        said(&o)
    );

    option_file(&file, 0o600);
    for _ in 0..2 {
        let o = scr_db(&server, &["init", "--option-file", file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", said(&o));
        assert!(said(&o).contains("database sitelog"), "{}", said(&o));
    }
    assert_eq!(
        server.sql("SHOW TABLES FROM sitelog"),
        "events\njobnames\njobs\ntransfers\ntypes\nusernames\n"
    );

    // ~/.my.cnf is the option file when none is given
    server.sql("DROP DATABASE sitelog");
    std::fs::rename(&file, server.dir().join(".my.cnf")).unwrap();
    let o = scr_db(&server, &["init"]);
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(server.sql("SHOW TABLES FROM sitelog").lines().count(), 6);

    let o = scr_db(&server, &["schema"]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), scr_db::SCHEMA);
}
