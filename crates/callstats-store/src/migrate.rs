//! The embedded migrations, one directory per backend (their SQL differs in identity columns
//! and CHECK syntax; a test keeps the resulting schemas equal).

use callstats_domain::ports::StoreError;
use diesel_async::AsyncMigrationHarness;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::pool::{Pools, unavailable};
use crate::store::Store;

const POSTGRES: EmbeddedMigrations = embed_migrations!("migrations/postgres");
const SQLITE: EmbeddedMigrations = embed_migrations!("migrations/sqlite");

/// Migrations could not be read or applied.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error(transparent)]
    Unavailable(#[from] StoreError),
    #[error("migration failed: {0}")]
    Failed(String),
}

/// Runs `$action` on a harness around a pooled connection of either backend, on a blocking
/// thread: the harness blocks internally, which must not happen on an async worker.
macro_rules! with_harness {
    ($pools:expr, |$harness:ident, $migrations:ident| $action:expr) => {
        match $pools {
            Pools::Postgres(pool) => {
                with_harness!(@on pool, POSTGRES, |$harness, $migrations| $action)
            }
            Pools::Sqlite(pool) => with_harness!(@on pool, SQLITE, |$harness, $migrations| $action),
        }
    };
    // One backend's arm: its pool and its set of migrations.
    (@on $pool:ident, $set:expr, |$harness:ident, $migrations:ident| $action:expr) => {{
        let object = $pool.get().await.map_err(unavailable)?;
        let $migrations = $set;
        blocking(move || {
            let mut $harness = AsyncMigrationHarness::new(object);
            $action
        })
        .await
    }};
}

type HarnessResult<T> = diesel::migration::Result<T>;

async fn blocking<T: Send + 'static>(
    action: impl FnOnce() -> HarnessResult<T> + Send + 'static,
) -> Result<T, MigrationError> {
    tokio::task::spawn_blocking(action)
        .await
        .map_err(|error| MigrationError::Failed(format!("migration task failed: {error}")))?
        .map_err(|error| MigrationError::Failed(error.to_string()))
}

impl Store {
    /// Applies every pending migration; returns the versions applied (empty when up to date).
    pub async fn migrate(&self) -> Result<Vec<String>, MigrationError> {
        with_harness!(&self.pools, |harness, migrations| {
            harness
                .run_pending_migrations(migrations)
                .map(|versions| versions.iter().map(ToString::to_string).collect())
        })
    }

    /// Versions of the migrations applied so far: none on a new database, which has no table
    /// but the migrations' own.
    pub async fn applied_migrations(&self) -> Result<Vec<String>, MigrationError> {
        with_harness!(&self.pools, |harness, _migrations| {
            harness
                .applied_migrations()
                .map(|versions| versions.iter().map(ToString::to_string).collect())
        })
    }

    /// Names of the migrations not yet applied (`serve` refuses to start while there are any).
    pub async fn pending_migrations(&self) -> Result<Vec<String>, MigrationError> {
        with_harness!(&self.pools, |harness, migrations| {
            harness.pending_migrations(migrations).map(|pending| {
                pending
                    .iter()
                    .map(|migration| migration.name().to_string())
                    .collect()
            })
        })
    }
}
