//! A database that is down or unreachable gives `StoreError`, never a panic or a hang, and the
//! pool recovers when it is back.

use std::time::Duration;

use callstats_domain::access::ApiKeySecret;
use callstats_domain::calendar::DateRange;
use callstats_domain::error::cause_chain;
use callstats_domain::ports::{KeyStore, PortalStore, StoreError};
use callstats_store::Store;
use callstats_store::config::{Access, DatabaseUrl, IfMissing, StoreConfig};
use callstats_store::testing::{Backend, TestDatabase};

use crate::support::{day, month, seeded};

/// Runs every read; all must fail. The outer timeout only guards against a hang.
async fn every_read_fails(store: &Store) -> Vec<StoreError> {
    let reads = async {
        let range = DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-01")).unwrap();
        let digest = ApiKeySecret::from_random_bytes(&[1; 32]).digest();
        vec![
            store.find_key(&digest).await.unwrap_err(),
            store.operators().await.unwrap_err(),
            store.off_days(month("2026-11")).await.unwrap_err(),
            store.published_sheets(None).await.unwrap_err(),
            store.sheet_content(1).await.unwrap_err(),
            store.scripts().await.unwrap_err(),
            store.call_scores(range).await.unwrap_err(),
        ]
    };
    tokio::time::timeout(Duration::from_secs(120), reads)
        .await
        .expect("reads against a dead database must end")
}

fn short_timeouts(url: &str) -> StoreConfig {
    let mut config = StoreConfig::new(DatabaseUrl::parse(url).unwrap(), Access::ReadOnly);
    config.connect_timeout = Duration::from_secs(2);
    config
}

#[tokio::test]
async fn a_postgres_server_that_does_not_answer_is_a_store_error() {
    // Port 1 on loopback: nothing listens there.
    let store = Store::open(&short_timeouts("postgres://postgres@127.0.0.1:1/portal")).unwrap();
    for error in every_read_fails(&store).await {
        assert_eq!(error.message, "no database connection", "{error}");
        // The driver's own error stays under it, for the log.
        let chain = cause_chain(&error);
        assert!(chain.ends_with("error connecting to server"), "{chain}");
    }
}

#[tokio::test]
async fn a_sqlite_file_that_cannot_be_opened_is_an_error_until_it_can() {
    let dir = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let missing =
        std::path::Path::new(dir.url().trim_start_matches("sqlite://")).with_file_name("not-yet");
    let url = format!("sqlite://{}", missing.join("portal.db").display());
    let store = Store::open(&short_timeouts(&url)).unwrap();
    assert_eq!(every_read_fails(&store).await.len(), 7);

    std::fs::create_dir_all(&missing).unwrap();
    let admin = Store::open(&StoreConfig {
        if_missing: IfMissing::Create,
        ..StoreConfig::new(DatabaseUrl::parse(&url).unwrap(), Access::ReadWrite)
    })
    .unwrap();
    admin.migrate().await.unwrap();
    assert_eq!(store.operators().await.unwrap(), []);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_sqlite_file_is_created_only_by_a_store_that_may_create_it() {
    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let path = std::path::PathBuf::from(db.url().trim_start_matches("sqlite://"));
    for access in [Access::ReadOnly, Access::ReadWrite] {
        let store = Store::open(&StoreConfig {
            access,
            ..short_timeouts(db.url())
        })
        .unwrap();
        assert_eq!(every_read_fails(&store).await.len(), 7);
        assert!(store.migrate().await.is_err(), "{access:?}");
        assert!(!path.exists(), "{access:?} created {}", path.display());
    }
    let creating = StoreConfig {
        if_missing: IfMissing::Create,
        ..short_timeouts(db.url())
    };
    let reader = Store::open(&creating).unwrap();
    assert_eq!(every_read_fails(&reader).await.len(), 7);
    assert!(!path.exists(), "a read-only store never creates the file");
    let admin = Store::open(&StoreConfig {
        access: Access::ReadWrite,
        ..creating
    })
    .unwrap();
    admin.migrate().await.unwrap();
    assert!(path.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_deleted_under_open_connections_fails_every_read_and_is_not_recreated() {
    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let path = std::path::PathBuf::from(db.url().trim_start_matches("sqlite://"));
    let reader = seeded(&db).await;
    let writer = Store::open(&StoreConfig {
        access: Access::ReadWrite,
        ..short_timeouts(db.url())
    })
    .unwrap();
    // Connections open on the file, as a running service holds them.
    assert_eq!(reader.operators().await.unwrap().len(), 4);
    assert!(writer.list_keys().await.unwrap().is_empty());
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    assert_eq!(every_read_fails(&reader).await.len(), 7);
    assert!(writer.list_keys().await.is_err());
    assert!(
        !path.exists(),
        "a new database appeared at {}",
        path.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_closed_by_the_server_are_replaced() {
    let Some(db) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = seeded(&db).await;
    assert_eq!(store.operators().await.unwrap().len(), 4);

    // What a server restart does to the pool's open connections.
    db.execute_sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .await;

    let mut outcomes = Vec::new();
    for _ in 0..5 {
        let outcome = store.operators().await.map(|roster| roster.len());
        let recovered = matches!(outcome, Ok(4));
        outcomes.push(outcome);
        if recovered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(matches!(outcomes.last(), Some(Ok(4))), "{outcomes:?}");
}

/// Postgres over TLS, as `sslmode=require` asks (the test server's certificate is the
/// distribution's self-signed one: encrypted, not verified, as with libpq).
#[tokio::test]
async fn postgres_with_sslmode_require_connects_over_tls() {
    let Some(db) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    drop(db.migrated_store().await);
    let url = format!("{}?sslmode=require", db.url());
    let store = Store::open(&StoreConfig::new(
        DatabaseUrl::parse(&url).unwrap(),
        Access::ReadOnly,
    ))
    .unwrap();
    assert!(store.operators().await.unwrap().is_empty());
    let disabled = Store::open(&StoreConfig::new(
        DatabaseUrl::parse(&format!("{}?sslmode=disable", db.url())).unwrap(),
        Access::ReadOnly,
    ))
    .unwrap();
    assert!(
        disabled.operators().await.unwrap().is_empty(),
        "and without TLS when asked"
    );
}
