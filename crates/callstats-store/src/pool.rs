//! The two connection pools behind one type, the macro that runs the same query code on
//! either, and the query counter every connection reports to.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use callstats_domain::ports::StoreError;
use diesel::SqliteConnection;
use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::result::{ConnectionError, ConnectionResult};
use diesel_async::pooled_connection::deadpool::{Pool, PoolError};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use futures::FutureExt as _;
use futures::future::BoxFuture;

use crate::config::{Access, ConfigError, DatabaseUrl, StoreConfig};
use crate::sqlite::SqliteFile;

/// The embedded backend's connection: a synchronous SQLite connection whose calls run on
/// tokio's blocking threads.
pub(crate) type SqliteConn = SyncConnectionWrapper<SqliteConnection>;

/// One pool per backend; every query goes through [`with_connection!`].
pub(crate) enum Pools {
    Postgres(Pool<AsyncPgConnection>),
    Sqlite(Pool<SqliteConn>),
}

/// Runs `$body` with `$conn` bound to a pooled connection of whichever backend the store
/// uses. The body is written once and compiled once per backend, so the query code exists
/// in one place while diesel still checks it against each backend's SQL dialect. Checkout
/// failures become [`StoreError`] through `?`; the body's own value is returned as is.
macro_rules! with_connection {
    ($pools:expr, |$conn:ident| $body:expr) => {
        match $pools {
            $crate::pool::Pools::Postgres(pool) => {
                let mut object = pool.get().await.map_err($crate::pool::unavailable)?;
                let $conn = &mut *object;
                $body
            }
            $crate::pool::Pools::Sqlite(pool) => {
                let mut object = pool.get().await.map_err($crate::pool::unavailable)?;
                let $conn = &mut *object;
                $body
            }
        }
    };
}
pub(crate) use with_connection;

/// Loads every row `$query` selects, on a pooled connection of either backend, a failed
/// statement being [`query_failed`](crate::store::query_failed): each read then states only its
/// query.
macro_rules! load_all {
    ($pools:expr, $query:expr) => {
        $crate::pool::with_connection!($pools, |conn| $query.load(conn).await)
            .map_err($crate::store::query_failed)
    };
}
pub(crate) use load_all;

/// A checkout that failed: no connection within the configured wait or connect timeout.
pub(crate) fn unavailable(error: PoolError) -> StoreError {
    StoreError::from_source("no database connection", error)
}

/// Counts the statements the store's connections send, for tests and diagnostics.
#[derive(Debug, Clone, Default)]
pub(crate) struct QueryCounter(Arc<AtomicU64>);

impl QueryCounter {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Instrumentation for QueryCounter {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if matches!(event, InstrumentationEvent::StartQuery { .. }) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Builds the pool for `config`, and says whether it reads a SQLite file as a read-only
/// snapshot ([`SqliteFile`]). Nothing connects yet: a database that is down now makes the
/// first queries fail with [`StoreError`], and the pool connects again once it is back.
pub(crate) fn build(
    config: &StoreConfig,
    counter: &QueryCounter,
) -> Result<(Pools, bool), ConfigError> {
    if config.pool_size == 0 {
        return Err(ConfigError::ZeroPoolSize);
    }
    match &config.url {
        DatabaseUrl::Postgres(url) => {
            // A connection broken by a database restart reports itself broken, so no ping per
            // checkout is needed.
            let manager = manager::<AsyncPgConnection>(
                url,
                postgres_session_sql(config),
                counter,
                |url| crate::tls::establish(url).boxed(),
                RecyclingMethod::Fast,
            );
            Ok((pool(manager, config).map(Pools::Postgres)?, false))
        }
        DatabaseUrl::Sqlite(path) => {
            let file = SqliteFile::new(path, config.access, config.if_missing)?;
            let manager = manager::<SqliteConn>(
                &file.uri,
                sqlite_session_sql(config),
                counter,
                |url| SqliteConn::establish(url).boxed(),
                file.still_there(),
            );
            Ok((pool(manager, config).map(Pools::Sqlite)?, file.read_only))
        }
    }
}

/// Opens one connection of a backend.
type Establish<C> = fn(&str) -> BoxFuture<'_, ConnectionResult<C>>;

/// A manager whose new connections are opened with `establish`, run `session_sql` first and
/// report their statements to `counter`, and whose idle ones are checked with `recycling`
/// before they are used again.
fn manager<C>(
    url: &str,
    session_sql: String,
    counter: &QueryCounter,
    establish: Establish<C>,
    recycling: RecyclingMethod<C>,
) -> AsyncDieselConnectionManager<C>
where
    C: AsyncConnection + SimpleAsyncConnection + 'static,
{
    let counter = counter.clone();
    let mut manager_config = ManagerConfig::<C>::default();
    manager_config.custom_setup = Box::new(move |url| {
        let session_sql = session_sql.clone();
        let counter = counter.clone();
        let url = url.to_owned();
        async move {
            let mut conn = establish(&url).await?;
            conn.batch_execute(&session_sql)
                .await
                .map_err(ConnectionError::CouldntSetupConfiguration)?;
            conn.set_instrumentation(counter);
            tracing::debug!("opened a database connection");
            Ok(conn)
        }
        .boxed()
    });
    manager_config.recycling_method = recycling;
    AsyncDieselConnectionManager::new_with_config(url, manager_config)
}

fn pool<C>(
    manager: AsyncDieselConnectionManager<C>,
    config: &StoreConfig,
) -> Result<Pool<C>, ConfigError>
where
    AsyncDieselConnectionManager<C>: deadpool::managed::Manager,
{
    Pool::builder(manager)
        .max_size(config.pool_size)
        .wait_timeout(Some(config.connect_timeout))
        .create_timeout(Some(config.connect_timeout))
        .recycle_timeout(Some(config.connect_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|error| ConfigError::Pool(error.to_string()))
}

/// Session settings of every Postgres connection: a bound on each statement, a name in
/// `pg_stat_activity`, and read-only transactions for the API's pool.
fn postgres_session_sql(config: &StoreConfig) -> String {
    let (name, read_only) = match config.access {
        Access::ReadOnly => ("callstats", "on"),
        Access::ReadWrite => ("callstats-admin", "off"),
    };
    format!(
        "SET statement_timeout = {}; SET application_name = '{name}'; \
         SET default_transaction_read_only = {read_only};",
        config.statement_timeout.as_millis()
    )
}

/// Pragmas of every SQLite connection: foreign keys on, a busy timeout instead of an immediate
/// "database is locked", `query_only` for the API's pool, and for a pool that writes, WAL (kept
/// in the file, so the API's reads do not wait for a seed). A read-only pool leaves the journal
/// mode as the file has it: setting it is a write.
fn sqlite_session_sql(config: &StoreConfig) -> String {
    let (query_only, journal) = match config.access {
        Access::ReadOnly => ("ON", ""),
        Access::ReadWrite => ("OFF", " PRAGMA journal_mode = WAL;"),
    };
    format!(
        "PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON;{journal} \
         PRAGMA synchronous = NORMAL; PRAGMA query_only = {query_only};",
        config.statement_timeout.as_millis()
    )
}
