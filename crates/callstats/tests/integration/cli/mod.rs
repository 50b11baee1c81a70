//! The command-line contract of docs/command-line.md, driven through the real binary on both
//! backends.

use std::path::PathBuf;
use std::process::{Command, Output};

use callstats_domain::access::ApiKeySecret;
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::ports::{KeyStore, PortalStore};
use callstats_store::backend_tests;
use callstats_store::config::Access;
use callstats_store::testing::TestDatabase;

mod demo;
mod service;
mod storage;

const PORTAL: &str = include_str!("../../../../callstats-store/tests/fixtures/portal.json");

/// Runs `callstats ARGS` against the test database, in a directory of its own.
fn callstats(db: &TestDatabase, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_callstats"))
        .args(args)
        .env("CALLSTATS_DATABASE_URL", db.url())
        .env_remove("RUST_LOG")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[track_caller]
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

#[test]
fn help_never_shows_the_passwords_and_token_the_environment_holds() {
    for command in ["serve", "demo", "sim", "migrate"] {
        let output = Command::new(env!("CARGO_BIN_EXE_callstats"))
            .args([command, "--help"])
            .env(
                "CALLSTATS_DATABASE_URL",
                "postgres://app:dbpass-81@db/portal",
            )
            .env("CALLSTATS_REDIS_URL", "redis://:redispass-81@cache:6379")
            .env("CALLSTATS_CALL_PLATFORM_TOKEN", "tok-81")
            .env("CALLSTATS_SIM_TOKEN", "simtok-81")
            .output()
            .unwrap();
        assert_exit(&output, 0);
        let help = stdout(&output);
        for secret in ["dbpass-81", "redispass-81", "tok-81"] {
            assert!(
                !help.contains(secret),
                "`{command} --help` shows {secret}:\n{help}"
            );
        }
    }
}

/// A file in a directory of its own; the test removes the directory.
fn write_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "callstats-cli-{}-{}",
        std::process::id(),
        name.replace('.', "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// What the API would read, as text.
async fn portal_state(db: &TestDatabase) -> String {
    let store = db.store(Access::ReadOnly);
    let mut text = format!("{:?}", store.operators().await.unwrap());
    let sheets = store.published_sheets(None).await.unwrap();
    for sheet in &sheets {
        text += &format!(
            "{sheet:?}{:?}",
            store.sheet_content(sheet.id).await.unwrap()
        );
    }
    text += &format!("{:?}", store.scripts().await.unwrap());
    let day = |raw| Day::parse(raw).unwrap();
    let range = DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-21")).unwrap();
    text + &format!("{:?}", store.call_scores(range).await.unwrap())
}

fn key_from(output: &Output) -> ApiKeySecret {
    ApiKeySecret::parse(stdout(output).trim_end()).expect("stdout holds a key")
}

backend_tests! {
    async fn migrate_applies_the_schema_once(db: &TestDatabase) {
        let first = callstats(db, &["migrate"]);
        assert_exit(&first, 0);
        assert!(stderr(&first).contains("applied 3 migration"), "{}", stderr(&first));
        let second = callstats(db, &["migrate"]);
        assert_exit(&second, 0);
        assert!(stderr(&second).contains("up to date"), "{}", stderr(&second));
        assert!(db.store(Access::ReadWrite).pending_migrations().await.unwrap().is_empty());
        assert!(stdout(&first).is_empty() && stdout(&second).is_empty());
    }

    async fn seed_demo_is_deterministic_for_a_seed(db: &TestDatabase) {
        let demo = |seed: &str| {
            callstats(db, &["seed", "--demo", "--seed", seed, "--anchor", "2026-11-21"])
        };
        assert_exit(&demo("7"), 0);
        let first = portal_state(db).await;
        assert_eq!(db.store(Access::ReadOnly).operators().await.unwrap().len(), 80);
        let replace = |seed: &str| {
            callstats(db, &["seed", "--demo", "--seed", seed, "--anchor", "2026-11-21", "--replace"])
        };
        assert_exit(&replace("7"), 0);
        assert_eq!(portal_state(db).await, first);
        assert_exit(&replace("8"), 0);
        assert_ne!(portal_state(db).await, first);
    }

    async fn seed_demo_without_a_seed_uses_the_default_and_today(db: &TestDatabase) {
        let output = callstats(db, &["seed", "--demo"]);
        assert_exit(&output, 0);
        assert!(stderr(&output).contains("seed 42"), "{}", stderr(&output));
        let sheets = db.store(Access::ReadOnly).published_sheets(None).await.unwrap();
        assert_eq!(sheets.len(), 4);
    }

    async fn seed_file_loads_a_fixture(db: &TestDatabase) {
        let path = write_file(&format!("good-{:?}.json", db.backend()), PORTAL);
        let output = callstats(db, &["seed", "--file", path.to_str().unwrap()]);
        assert_exit(&output, 0);
        assert!(stderr(&output).contains("4 operators"), "{}", stderr(&output));
        assert_eq!(db.store(Access::ReadOnly).operators().await.unwrap().len(), 4);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    async fn seed_refuses_a_database_holding_portal_data_without_replace(db: &TestDatabase) {
        assert_exit(&callstats(db, &["seed", "--demo", "--anchor", "2026-11-21"]), 0);
        let before = portal_state(db).await;
        let path = write_file(&format!("refused-{:?}.json", db.backend()), PORTAL);
        for args in [
            vec!["seed", "--demo", "--seed", "9"],
            vec!["seed", "--file", path.to_str().unwrap()],
        ] {
            let output = callstats(db, &args);
            assert_exit(&output, 1);
            let message = stderr(&output);
            assert!(message.contains("already holds portal data") && message.contains("--replace"), "{message}");
            assert_eq!(portal_state(db).await, before, "{args:?} changed the data");
        }
        let replaced = callstats(db, &["seed", "--file", path.to_str().unwrap(), "--replace"]);
        assert_exit(&replaced, 0);
        assert_eq!(db.store(Access::ReadOnly).operators().await.unwrap().len(), 4);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    async fn seed_if_empty_loads_an_empty_database_and_leaves_one_holding_data_with_exit_0(db: &TestDatabase) {
        let first = callstats(db, &["seed", "--demo", "--anchor", "2026-11-21", "--if-empty"]);
        assert_exit(&first, 0);
        assert!(stderr(&first).contains("seeded"), "{}", stderr(&first));
        let before = portal_state(db).await;
        let again = callstats(db, &["seed", "--demo", "--seed", "9", "--if-empty"]);
        assert_exit(&again, 0);
        assert!(stderr(&again).contains("already holds portal data: left as it is"), "{}", stderr(&again));
        assert_eq!(portal_state(db).await, before);
    }

    async fn seed_file_with_a_bad_fixture_exits_1_naming_the_path_and_changes_nothing(db: &TestDatabase) {
        assert_exit(&callstats(db, &["seed", "--demo", "--anchor", "2026-11-21"]), 0);
        let before = portal_state(db).await;
        let mut bad: serde_json::Value = serde_json::from_str(PORTAL).unwrap();
        bad["scripts"][2]["views"] = serde_json::json!("many");
        let path = write_file(&format!("bad-{:?}.json", db.backend()), &bad.to_string());

        let output = callstats(db, &["seed", "--file", path.to_str().unwrap()]);
        assert_exit(&output, 1);
        let message = stderr(&output);
        assert!(message.contains("scripts[2].views: invalid type: string \"many\""), "{message}");
        assert!(stdout(&output).is_empty());
        assert_eq!(portal_state(db).await, before);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    async fn keys_create_prints_the_key_alone_on_stdout(db: &TestDatabase) {
        let output = callstats(
            db,
            &["keys", "create", "--name", "partner", "--scopes", "calls,kpi:detail", "--rate-limit", "30", "--origin", "dash.example.uz"],
        );
        assert_exit(&output, 0);
        let printed = stdout(&output);
        assert_eq!(printed.lines().count(), 1, "{printed:?}");
        assert!(printed.starts_with("cs_") && printed.ends_with('\n') && printed.len() == 47, "{printed:?}");
        assert!(!stderr(&output).contains(printed.trim_end()));

        let key = key_from(&output);
        let found = db.store(Access::ReadOnly).find_key(&key.digest()).await.unwrap().unwrap();
        assert_eq!(&*found.name, "partner");
        assert_eq!(found.scopes.to_list(), "calls,kpi:aggregate,kpi:detail");
        assert_eq!(found.rate_limit_per_minute, 30);
        assert_eq!(found.allowed_origin.as_deref(), Some("dash.example.uz"));
        assert_eq!((found.expires_at, found.revoked_at), (None, None));
    }

    async fn keys_create_with_an_unknown_scope_exits_2_and_stores_nothing(db: &TestDatabase) {
        let output = callstats(db, &["keys", "create", "--name", "x", "--scopes", "calls,kpi"]);
        assert_exit(&output, 2);
        assert!(stderr(&output).contains("unknown scope \"kpi\""), "{}", stderr(&output));
        assert!(stdout(&output).is_empty());
        let listed = callstats(db, &["keys", "list"]);
        assert_exit(&listed, 0);
        assert_eq!(stdout(&listed).lines().count(), 1, "only the header: {}", stdout(&listed));
    }

    async fn keys_create_with_a_past_expiry_warns_and_issues_an_expired_key(db: &TestDatabase) {
        let output = callstats(
            db,
            &["keys", "create", "--name", "late", "--scopes", "calls", "--expires-at", "2020-01-01T00:00:00+05:00"],
        );
        assert_exit(&output, 0);
        assert!(stderr(&output).contains("warning"), "{}", stderr(&output));
        let found = db.store(Access::ReadOnly).find_key(&key_from(&output).digest()).await.unwrap().unwrap();
        assert_eq!(found.expires_at.unwrap().unix_timestamp(), 1_577_818_800);
        let bad = callstats(db, &["keys", "create", "--name", "x", "--scopes", "calls", "--expires-at", "tomorrow"]);
        assert_exit(&bad, 2);
    }

    async fn keys_list_shows_every_key_but_never_its_plaintext(db: &TestDatabase) {
        let first = key_from(&callstats(db, &["keys", "create", "--name", "alpha", "--scopes", "calls"]));
        let second = key_from(&callstats(db, &["keys", "create", "--name", "beta", "--scopes", "scripts"]));
        let output = callstats(db, &["keys", "list"]);
        assert_exit(&output, 0);
        let listing = stdout(&output) + &stderr(&output);
        for key in [&first, &second] {
            assert!(!listing.contains(key.expose()), "{listing}");
            assert!(!listing.contains(&key.expose()[8..]), "{listing}");
            assert!(listing.contains(key.display_prefix()), "{listing}");
        }
        assert!(listing.contains("alpha") && listing.contains("beta"), "{listing}");
    }

    async fn keys_revoke_by_name_or_id_and_unknown_keys_exit_1(db: &TestDatabase) {
        let alpha = key_from(&callstats(db, &["keys", "create", "--name", "alpha", "--scopes", "calls"]));
        let beta = key_from(&callstats(db, &["keys", "create", "--name", "beta", "--scopes", "calls"]));
        assert_exit(&callstats(db, &["keys", "revoke", "alpha"]), 0);
        let store = db.store(Access::ReadOnly);
        assert!(store.find_key(&alpha.digest()).await.unwrap().unwrap().revoked_at.is_some());
        let beta_id = store.find_key(&beta.digest()).await.unwrap().unwrap().id;
        assert!(store.find_key(&beta.digest()).await.unwrap().unwrap().revoked_at.is_none());

        assert_exit(&callstats(db, &["keys", "revoke", &beta_id.to_string()]), 0);
        assert!(store.find_key(&beta.digest()).await.unwrap().unwrap().revoked_at.is_some());
        let listed = stdout(&callstats(db, &["keys", "list"]));
        assert_eq!(listed.matches("revoked").count(), 2, "{listed}");

        let unknown = callstats(db, &["keys", "revoke", "gamma"]);
        assert_exit(&unknown, 1);
        assert!(stderr(&unknown).contains("no key with id or name \"gamma\""));
    }
}

#[test]
fn a_database_url_that_cannot_work_exits_2() {
    for url in ["mysql://root@localhost/portal", "sqlite://", "callstats.db"] {
        let output = Command::new(env!("CARGO_BIN_EXE_callstats"))
            .args(["migrate", "--database-url", url])
            .output()
            .unwrap();
        assert_exit(&output, 2);
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("database URL"),
            "{url}"
        );
    }
}

#[test]
fn seed_needs_exactly_one_source_and_one_way_with_data_held() {
    for args in [
        &["seed"][..],
        &["seed", "--demo", "--file", "x.json"],
        &["seed", "--file", "x.json", "--seed", "3"],
        &["seed", "--demo", "--replace", "--if-empty"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_callstats"))
            .args(args)
            .output()
            .unwrap();
        assert_exit(&output, 2);
    }
}
