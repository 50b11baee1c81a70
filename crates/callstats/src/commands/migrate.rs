//! `callstats migrate`: apply pending migrations and exit.

use callstats_domain::error::cause_chain;
use clap::Args;

use crate::args::DatabaseArgs;
use crate::failure::Failure;

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub async fn run(args: MigrateArgs) -> Result<(), Failure> {
    let store = args.database.open_admin()?;
    let applied = store.migrate().await.map_err(|error| {
        anyhow::anyhow!("cannot migrate {}: {}", store.url(), cause_chain(&error))
    })?;
    if applied.is_empty() {
        eprintln!("{} is up to date", store.url());
    } else {
        eprintln!(
            "applied {} migration(s) to {}: {}",
            applied.len(),
            store.url(),
            applied.join(", ")
        );
    }
    Ok(())
}
