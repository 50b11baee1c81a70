//! One module per command group; `run` dispatches.

pub mod demo;
pub mod keys;
pub mod migrate;
pub mod seed;
pub mod serve;
pub mod sim;

use callstats_domain::calendar::Day;
use callstats_domain::error::cause_chain;
use callstats_domain::tz;
use callstats_store::Store;
use time::OffsetDateTime;

use crate::cli::Command;
use crate::failure::Failure;

pub async fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Migrate(args) => migrate::run(args).await,
        Command::Seed(args) => seed::run(args).await,
        Command::Keys(args) => keys::run(args).await,
        Command::Serve(args) => serve::run(*args).await,
        Command::Demo(args) => demo::run(*args).await,
        Command::Sim(args) => sim::run(args).await,
    }
}

/// Today's date in Tashkent, where the synthetic data is placed by default.
pub fn today_in_tashkent() -> Day {
    Day::new(tz::to_tashkent(OffsetDateTime::now_utc()).date())
}

/// Applies pending migrations, saying so when there were any: the admin commands work on a
/// fresh database as they do on a migrated one.
pub async fn migrated(store: Store) -> Result<Store, Failure> {
    let applied = store.migrate().await.map_err(|error| {
        anyhow::anyhow!("cannot migrate {}: {}", store.url(), cause_chain(&error))
    })?;
    if !applied.is_empty() {
        eprintln!(
            "applied {} pending migration(s) to {}",
            applied.len(),
            store.url()
        );
    }
    Ok(store)
}
