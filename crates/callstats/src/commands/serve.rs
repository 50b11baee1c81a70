//! `callstats serve`: the production server. It refuses to start (exit 2) without an upstream
//! call platform (an empty URL counts as none), without its SQLite file (it never creates
//! one), with migrations pending unless `--migrate` is given, or with persistence on over a
//! SQLite file it cannot write; it warns at start when no upstream token is set.

use anyhow::anyhow;
use callstats_domain::error::cause_chain;
use callstats_store::config::Access;
use clap::Args;

use crate::app::{Assembly, Listen, Upstream};
use crate::args::DatabaseArgs;
use crate::args::ServiceArgs;
use crate::commands::migrated;
use crate::failure::Failure;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub service: ServiceArgs,

    /// Apply pending migrations before serving instead of refusing to start.
    #[arg(long)]
    pub migrate: bool,
}

pub async fn run(args: ServeArgs) -> Result<(), Failure> {
    let upstream = args.service.platform.http_config()?.ok_or_else(|| {
        Failure::config(anyhow!(
            "CALLSTATS_CALL_PLATFORM_URL (--call-platform-url) is required (it is unset or empty): the address of the upstream call platform"
        ))
    })?;
    // Not required (a platform inside the network may want none), but a production platform
    // that does would refuse every fetch: said once, at start, where the operator looks.
    if upstream.token.is_none() {
        tracing::warn!(
            "CALLSTATS_CALL_PLATFORM_TOKEN is unset or empty: requests to the call platform carry no Authorization header"
        );
    }
    let admin = args.database.open_existing(Access::ReadWrite)?;
    if admin.read_only_file() {
        if args.service.call_day_persist {
            return Err(Failure::config(anyhow!(
                "{} cannot be written here (neither the file nor its folder): start with --call-day-persist false to serve it read-only",
                admin.url()
            )));
        }
        tracing::info!(
            database = %admin.url(),
            "the SQLite file cannot be written here: served read-only, as it is now"
        );
    }
    let pending = admin.pending_migrations().await.map_err(|err| {
        anyhow!(
            "cannot read the migration state of {}: {}",
            admin.url(),
            cause_chain(&err)
        )
    })?;
    if !pending.is_empty() {
        if !args.migrate {
            return Err(Failure::config(anyhow!(
                "{} migration(s) pending on {}: run `callstats migrate` first, or start with --migrate",
                pending.len(),
                admin.url()
            )));
        }
        migrated(admin).await?;
    }
    // Settled call days are persisted through a read-write pool of their own.
    let archive = args
        .service
        .call_day_persist
        .then(|| args.database.open_existing(Access::ReadWrite))
        .transpose()?;
    let service = Assembly::from_args(
        args.database.open_existing(Access::ReadOnly)?,
        archive,
        Upstream::Http(upstream),
        &args.service,
    )?;
    let application = Listen::from_args(&args.service).bind(service.state()?)?;
    application.run_until_stopped().await?;
    tracing::info!("stopped");
    Ok(())
}
