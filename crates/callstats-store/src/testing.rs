//! Test support (feature `testing`): a fresh, empty database per test on either backend, so
//! tests run in parallel without seeing each other's data.
//!
//! SQLite always works (a file in its own temporary directory). Postgres needs
//! `CALLSTATS_TEST_POSTGRES_URL` (a server and a database the user may connect to, e.g.
//! `postgres://postgres@127.0.0.1:5432/test`): each test creates its own database there and
//! drops it afterwards. Without the variable a Postgres test prints a notice and skips, unless
//! `CALLSTATS_TEST_REQUIRE_SERVICES=1` (set by `.ci/run`), where it fails instead.
//!
//! [`backend_tests!`](crate::backend_tests) turns one test body into one test per backend.

#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "test support: a database that cannot be set up is a failed test"
)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};

use crate::config::{Access, DatabaseUrl, IfMissing, StoreConfig};
use crate::store::Store;

/// Where the Postgres tests find their server.
pub const POSTGRES_URL_VAR: &str = "CALLSTATS_TEST_POSTGRES_URL";
/// When `1`, tests that need a service fail rather than skip without it.
pub const REQUIRE_SERVICES_VAR: &str = "CALLSTATS_TEST_REQUIRE_SERVICES";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// The two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database that exists for one test and is removed when dropped.
#[derive(Debug)]
pub struct TestDatabase {
    backend: Backend,
    url: String,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    Directory(PathBuf),
    PostgresDatabase { admin_url: String, name: String },
}

/// A name no other test, in this process or another, is using.
fn unique_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "callstats_test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let path_start = base
        .get(after_scheme..)
        .and_then(|rest| rest.find('/'))
        .map_or(base.len(), |i| after_scheme + i);
    let host = base.get(..path_start).unwrap_or(base);
    match query {
        Some(query) => format!("{host}/{name}?{query}"),
        None => format!("{host}/{name}"),
    }
}

impl TestDatabase {
    /// A new, empty (unmigrated) database, or `None` when Postgres is not configured and not
    /// required (a notice says so on stderr).
    pub async fn create(backend: Backend) -> Option<Self> {
        let name = unique_name();
        match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join(&name);
                std::fs::create_dir_all(&dir).expect("create a temporary directory");
                Some(Self {
                    backend,
                    url: format!("sqlite://{}", dir.join("portal.db").display()),
                    cleanup: Cleanup::Directory(dir),
                })
            }
            Backend::Postgres => {
                let Ok(admin_url) = std::env::var(POSTGRES_URL_VAR) else {
                    if std::env::var(REQUIRE_SERVICES_VAR).is_ok_and(|v| v == "1") {
                        panic!(
                            "{POSTGRES_URL_VAR} is not set but {REQUIRE_SERVICES_VAR}=1: \
                             this test needs Postgres"
                        );
                    }
                    eprintln!("skipped: set {POSTGRES_URL_VAR} to run this test on Postgres");
                    return None;
                };
                let mut conn = AsyncPgConnection::establish(&admin_url)
                    .await
                    .unwrap_or_else(|error| {
                        panic!("cannot connect to {POSTGRES_URL_VAR}: {error}")
                    });
                conn.batch_execute(&format!("CREATE DATABASE \"{name}\""))
                    .await
                    .unwrap_or_else(|error| panic!("cannot create database {name}: {error}"));
                Some(Self {
                    backend,
                    url: with_database(&admin_url, &name),
                    cleanup: Cleanup::PostgresDatabase { admin_url, name },
                })
            }
        }
    }

    #[must_use]
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The URL in the form `--database-url` takes.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The store configuration of this database; a store that may write creates the SQLite
    /// file, as the admin commands do.
    #[must_use]
    pub fn config(&self, access: Access) -> StoreConfig {
        StoreConfig {
            if_missing: IfMissing::Create,
            ..StoreConfig::new(
                DatabaseUrl::parse(&self.url).expect("test database URL"),
                access,
            )
        }
    }

    /// A store on this database with the given access, not migrated.
    #[must_use]
    pub fn store(&self, access: Access) -> Store {
        Store::open(&self.config(access)).expect("open the test store")
    }

    /// Runs raw SQL on this database (for tests that need to break or inspect it).
    pub async fn execute_sql(&self, sql: &str) {
        match self.backend {
            Backend::Sqlite => {
                let path = self.url.trim_start_matches("sqlite://").to_owned();
                let sql = sql.to_owned();
                tokio::task::spawn_blocking(move || {
                    use diesel::Connection as _;
                    use diesel::connection::SimpleConnection as _;
                    let mut conn =
                        diesel::SqliteConnection::establish(&path).expect("open the test database");
                    conn.batch_execute(&sql).expect("run test SQL");
                })
                .await
                .expect("test SQL task");
            }
            Backend::Postgres => {
                let mut conn = AsyncPgConnection::establish(&self.url)
                    .await
                    .expect("connect to the test database");
                conn.batch_execute(sql).await.expect("run test SQL");
            }
        }
    }

    /// A read-write store on this database, migrated.
    pub async fn migrated_store(&self) -> Store {
        let store = self.store(Access::ReadWrite);
        store.migrate().await.expect("migrate the test database");
        store
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::Directory(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::PostgresDatabase { admin_url, name } => {
                let admin_url = admin_url.clone();
                let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
                // Drop may run inside or outside a runtime; a thread of its own works in both.
                let dropped = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .ok()?;
                    runtime.block_on(async {
                        let mut conn = AsyncPgConnection::establish(&admin_url).await.ok()?;
                        conn.batch_execute(&sql).await.ok()
                    })
                })
                .join();
                if !matches!(dropped, Ok(Some(()))) {
                    eprintln!("warning: could not drop test database {name}");
                }
            }
        }
    }
}

/// Turns each `async fn name(db: &TestDatabase) { … }` into a module `name` with the tests
/// `sqlite` and `postgres`, each running the body on a fresh database of that backend.
#[macro_export]
macro_rules! backend_tests {
    ($(
        $(#[$meta:meta])*
        async fn $name:ident($db:ident: &TestDatabase) $body:block
    )*) => {
        $(
            $(#[$meta])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                async fn run($db: &$crate::testing::TestDatabase) $body

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(db) =
                        $crate::testing::TestDatabase::create($crate::testing::Backend::Sqlite).await
                    {
                        run(&db).await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(db) =
                        $crate::testing::TestDatabase::create($crate::testing::Backend::Postgres)
                            .await
                    {
                        run(&db).await;
                    }
                }
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_name_is_replaced_keeping_host_and_options() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/test", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/test?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            with_database("postgres://h:5432", "x"),
            "postgres://h:5432/x"
        );
    }
}
