//! Settings several commands share: where the portal database is and how to pool it.

use std::time::Duration;

use callstats_store::Store;
use callstats_store::config::{Access, DatabaseUrl, StoreConfig};
use clap::Args;

use crate::failure::Failure;
use crate::secret::Secret;

/// The portal database of the admin commands (`migrate`, `seed`, `keys`).
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Portal database: sqlite://PATH (a file, created when missing) or postgres://USER@HOST/DB.
    #[arg(
        long,
        env = "CALLSTATS_DATABASE_URL",
        hide_env_values = true,
        default_value = "sqlite://callstats.db",
        value_name = "URL"
    )]
    pub database_url: Secret,

    #[command(flatten)]
    pub pool: PoolArgs,
}

/// Pool bounds; the defaults suit a small server.
#[derive(Debug, Clone, Args)]
pub struct PoolArgs {
    /// Most database connections open at once [default: 8 for Postgres, 4 for SQLite].
    #[arg(long, env = "CALLSTATS_DB_POOL_SIZE", value_name = "N")]
    pub db_pool_size: Option<usize>,

    /// Seconds to wait for a database connection (connecting, or a free one from the pool).
    #[arg(
        long,
        env = "CALLSTATS_DB_CONNECT_TIMEOUT_SECS",
        default_value_t = 5,
        value_name = "SECONDS"
    )]
    pub db_connect_timeout_secs: u64,

    /// Seconds one database statement may run.
    #[arg(
        long,
        env = "CALLSTATS_DB_STATEMENT_TIMEOUT_SECS",
        default_value_t = 10,
        value_name = "SECONDS"
    )]
    pub db_statement_timeout_secs: u64,
}

impl PoolArgs {
    /// Opens (without connecting) a store on `url`.
    pub fn open(&self, url: &str, access: Access) -> Result<Store, Failure> {
        Store::open(&self.store_config(url, access)?).map_err(Failure::config)
    }

    /// The store configuration for `url`; a URL or bound that cannot work is a configuration
    /// error (exit 2).
    pub fn store_config(&self, url: &str, access: Access) -> Result<StoreConfig, Failure> {
        let url = DatabaseUrl::parse(url).map_err(Failure::config)?;
        let mut config = StoreConfig::new(url, access);
        if let Some(size) = self.db_pool_size {
            config.pool_size = size;
        }
        if self.db_connect_timeout_secs == 0 || self.db_statement_timeout_secs == 0 {
            return Err(Failure::config(anyhow::anyhow!(
                "database timeouts must be at least 1 second"
            )));
        }
        config.connect_timeout = Duration::from_secs(self.db_connect_timeout_secs);
        config.statement_timeout = Duration::from_secs(self.db_statement_timeout_secs);
        Ok(config)
    }
}

impl DatabaseArgs {
    /// A store that may write (migrations, seeding, keys).
    pub fn open_admin(&self) -> Result<Store, Failure> {
        self.pool
            .open(self.database_url.expose(), Access::ReadWrite)
    }

    /// The API's store: its sessions cannot write.
    pub fn open_api(&self) -> Result<Store, Failure> {
        self.pool.open(self.database_url.expose(), Access::ReadOnly)
    }
}

/// Applies pending migrations, saying so when there were any: the admin commands work on a
/// fresh database as they do on a migrated one.
pub async fn migrated(store: Store) -> Result<Store, Failure> {
    let applied = store
        .migrate()
        .await
        .map_err(|error| anyhow::anyhow!("cannot migrate {}: {error}", store.url()))?;
    if !applied.is_empty() {
        eprintln!(
            "applied {} pending migration(s) to {}",
            applied.len(),
            store.url()
        );
    }
    Ok(store)
}
