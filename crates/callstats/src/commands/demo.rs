//! `callstats demo`: the newcomer's command. Migrates, loads the demo data set when the
//! database holds no operators, issues a fresh `demo` key with every scope, prints it with three
//! ready `curl` lines, and serves with the built-in synthetic call platform (or the real one when
//! `CALLSTATS_CALL_PLATFORM_URL` is set).
//!
//! Every printed line answers 200: /ping, today's call summary, and the KPI sheet of the latest
//! month with a published sheet (this month has only a draft, which /kpi/{month} does not show),
//! or the list of published sheets when the database has none.

use std::io::Write as _;

use anyhow::{Context as _, anyhow};
use callstats_domain::access::{ApiKeySecret, DEFAULT_RATE_LIMIT};
use callstats_domain::calendar::{Day, Month};
use callstats_domain::error::cause_chain;
use callstats_domain::ports::PortalStore as _;
use callstats_domain::scope::ScopeSet;
use callstats_store::keys::NewKey;
use callstats_synthetic::Generator;
use clap::Args;
use time::OffsetDateTime;

use crate::app::{Assembly, Listen, Upstream};
use crate::args::PoolArgs;
use crate::args::ServiceArgs;
use crate::commands::keys::issue;
use crate::commands::{migrated, today_in_tashkent};
use crate::failure::Failure;
use crate::secret::Secret;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Portal database: sqlite://PATH (created when missing) or postgres://USER@HOST/DB.
    #[arg(
        long,
        env = "CALLSTATS_DATABASE_URL",
        hide_env_values = true,
        default_value = "sqlite://callstats-demo.db",
        value_name = "URL"
    )]
    pub database_url: Secret,

    #[command(flatten)]
    pub pool: PoolArgs,

    #[command(flatten)]
    pub service: ServiceArgs,
}

pub async fn run(args: DemoArgs) -> Result<(), Failure> {
    let upstream = match args.service.platform.http_config()? {
        Some(config) => Upstream::Http(config),
        None => Upstream::Synthetic(Generator::default()),
    };
    let admin = migrated(args.pool.open(
        args.database_url.expose(),
        callstats_store::config::Access::ReadWrite,
        callstats_store::config::IfMissing::Create,
    )?)
    .await?;
    let today = today_in_tashkent();
    if !admin
        .has_operators()
        .await
        .map_err(|err| anyhow!("cannot read {}: {}", admin.url(), cause_chain(&err)))?
    {
        let seed = callstats_synthetic::DEFAULT_SEED;
        let fixture = callstats_synthetic::portal_fixture(seed, today)
            .validate()
            .map_err(|err| anyhow!("the demo data set is invalid: {err}"))?;
        admin
            .seed(&fixture, callstats_store::Existing::Replace)
            .await
            .map_err(|err| anyhow!("cannot load the demo data: {}", cause_chain(&err)))?;
        eprintln!(
            "loaded the demo data set (seed {seed}, around {today}) into {}",
            admin.url()
        );
    }
    let key = NewKey::new("demo", ScopeSet::all())
        .and_then(|key| key.rate_limit(DEFAULT_RATE_LIMIT))
        .map_err(Failure::config)?;
    let (secret, _) = issue(&admin, &key, OffsetDateTime::now_utc()).await?;
    let latest_sheet = admin
        .published_sheets(None)
        .await
        .map_err(|err| anyhow!("cannot read {}: {}", admin.url(), cause_chain(&err)))?
        .iter()
        .map(|sheet| sheet.month)
        .max();

    let archive = args
        .service
        .call_day_persist
        .then(|| {
            args.pool.open(
                args.database_url.expose(),
                callstats_store::config::Access::ReadWrite,
                callstats_store::config::IfMissing::Create,
            )
        })
        .transpose()?;
    let service = Assembly::from_args(
        args.pool.open(
            args.database_url.expose(),
            callstats_store::config::Access::ReadOnly,
            callstats_store::config::IfMissing::Create,
        )?,
        archive,
        upstream,
        &args.service,
    )?;
    let application = Listen::from_args(&args.service).bind(service.state()?)?;
    print_welcome(&secret, &args.service.bind, today, latest_sheet)
        .context("cannot write to stdout")?;
    application.run_until_stopped().await?;
    Ok(())
}

/// The key and three requests to try, on stdout.
fn print_welcome(
    secret: &ApiKeySecret,
    bind: &str,
    today: Day,
    latest_sheet: Option<Month>,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in welcome(secret.expose(), bind, today, latest_sheet) {
        writeln!(out, "{line}")?;
    }
    out.flush()
}

/// The key line and three `curl` lines, each answering 200: the KPI line shows the latest
/// month with a published sheet (`latest_sheet`), or lists the published sheets when there is
/// none (any month would answer 404).
fn welcome(key: &str, bind: &str, today: Day, latest_sheet: Option<Month>) -> [String; 4] {
    let base = format!("http://{bind}/api/v1");
    let kpi = latest_sheet.map_or_else(|| "kpi/months".to_owned(), |month| format!("kpi/{month}"));
    [
        format!("key: {key}"),
        format!("curl -H 'Authorization: Bearer {key}' {base}/ping"),
        format!("curl -H 'Authorization: Bearer {key}' '{base}/calls/summary?start={today}'"),
        format!("curl -H 'Authorization: Bearer {key}' {base}/{kpi}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kpi_line_shows_the_latest_published_month_or_the_list() {
        let today = Day::parse("2026-11-21").unwrap();
        let month = Month::parse("2026-10").unwrap();
        let lines = welcome("cs_k", "127.0.0.1:8080", today, Some(month));
        assert_eq!(
            lines,
            [
                "key: cs_k",
                "curl -H 'Authorization: Bearer cs_k' http://127.0.0.1:8080/api/v1/ping",
                "curl -H 'Authorization: Bearer cs_k' 'http://127.0.0.1:8080/api/v1/calls/summary?start=2026-11-21'",
                "curl -H 'Authorization: Bearer cs_k' http://127.0.0.1:8080/api/v1/kpi/2026-10",
            ]
        );
        let [.., kpi] = welcome("cs_k", "127.0.0.1:8080", today, None);
        assert_eq!(
            kpi,
            "curl -H 'Authorization: Bearer cs_k' http://127.0.0.1:8080/api/v1/kpi/months"
        );
    }
}
