//! `callstats demo`: the newcomer's command. Migrates, loads the demo data set when the
//! database holds no operators, issues a fresh `demo` key with every scope, prints it with three
//! ready `curl` lines, and serves with the built-in synthetic call platform (or the real one when
//! `CALLSTATS_CALL_PLATFORM_URL` is set).
//!
//! Every printed line answers 200: /ping, today's call summary, and the KPI sheet of the latest
//! month with a published sheet (this month has only a draft, which /kpi/{month} does not show),
//! or the list of published sheets when the database has none.
//!
//! The demo cannot reach a deployment (docs/security.md, "The demo reaching a deployment"): its
//! database and Redis come from its command line only, never from `CALLSTATS_DATABASE_URL` or
//! `CALLSTATS_REDIS_URL`; it refuses a database holding keys it did not issue (keys named other
//! than `demo`) before writing anything; and its key ends with it: issued to expire in
//! [`KEY_LIFETIME`], pushed back every hour while the demo runs, and revoked when it stops.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use callstats_domain::access::{ApiKeySecret, DEFAULT_RATE_LIMIT};
use callstats_domain::calendar::{Day, Month};
use callstats_domain::error::cause_chain;
use callstats_domain::ports::PortalStore as _;
use callstats_domain::scope::ScopeSet;
use callstats_store::Store;
use callstats_store::config::{Access, IfMissing};
use callstats_store::keys::NewKey;
use callstats_synthetic::Generator;
use clap::Args;
use time::OffsetDateTime;

use crate::app::{Assembly, Listen, Upstream};
use crate::args::PoolArgs;
use crate::args::ServiceArgs;
use crate::commands::keys::{issue, timestamp};
use crate::commands::{migrated, today_in_tashkent};
use crate::failure::Failure;
use crate::secret::Secret;

/// The name of the demo's keys; a database holding keys of any other name is not the demo's.
pub const KEY_NAME: &str = "demo";
/// How long the demo's key works unless the demo pushes its expiry back: what bounds a key
/// left by a demo that did not stop cleanly.
pub const KEY_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How often a running demo pushes its key's expiry back to [`KEY_LIFETIME`] from then.
const KEY_RENEWAL: Duration = Duration::from_secs(3600);

#[derive(Debug, Args)]
#[command(mut_arg("redis_url", |arg| arg
    .env(None)
    .help("Redis for the response cache and quotas, from this flag only (never \
           CALLSTATS_REDIS_URL, so the demo never shares a deployment's). Unset: both stay in \
           this process.")))]
pub struct DemoArgs {
    /// The demo's own database: sqlite://PATH (created when missing) or postgres://USER@HOST/DB.
    /// From this flag only (never CALLSTATS_DATABASE_URL, so the demo never reaches a
    /// deployment's); a database holding keys not named `demo` is refused.
    #[arg(long, default_value = "sqlite://callstats-demo.db", value_name = "URL")]
    pub database_url: Secret,

    #[command(flatten)]
    pub pool: PoolArgs,

    #[command(flatten)]
    pub service: ServiceArgs,
}

pub async fn run(args: DemoArgs) -> Result<(), Failure> {
    for variable in ["CALLSTATS_DATABASE_URL", "CALLSTATS_REDIS_URL"] {
        if std::env::var_os(variable).is_some() {
            eprintln!("note: the demo ignores {variable} (see `callstats demo --help`)");
        }
    }
    let upstream = match args.service.platform.http_config()? {
        Some(config) => Upstream::Http(config),
        None => Upstream::Synthetic(Generator::default()),
    };
    let (today, latest_sheet) = prepare(&args).await?;
    // The file exists now and is never created again: deleted under the demo, it is gone (503),
    // as under `serve`.
    let open = |access| {
        args.pool
            .open(args.database_url.expose(), access, IfMissing::Fail)
    };
    let admin = Arc::new(open(Access::ReadWrite)?);
    let archive = args
        .service
        .call_day_persist
        .then(|| open(Access::ReadWrite))
        .transpose()?;
    let service = Assembly::from_args(open(Access::ReadOnly)?, archive, upstream, &args.service)?;
    // Listening first: a demo that cannot listen issues no key.
    let application = Listen::from_args(&args.service).bind(service.state()?)?;
    let now = OffsetDateTime::now_utc();
    let key = NewKey::new(KEY_NAME, ScopeSet::all())
        .and_then(|key| key.rate_limit(DEFAULT_RATE_LIMIT))
        .map_err(Failure::config)?
        .expires_at(now + KEY_LIFETIME);
    let (secret, listing) = issue(&admin, &key, now).await?;
    let renewal = tokio::spawn(renew(Arc::clone(&admin), listing.id));
    eprintln!(
        "the demo key expires {} unless the demo is still running (it pushes the expiry back \
         hourly), and is revoked when the demo stops",
        listing.expires_at.map_or_else(String::new, timestamp)
    );
    let served = match print_welcome(&secret, &args.service.bind, today, latest_sheet) {
        Ok(()) => application.run_until_stopped().await.map_err(Failure::from),
        Err(error) => Err(anyhow::Error::from(error)
            .context("cannot write to stdout")
            .into()),
    };
    renewal.abort();
    let revoked = admin
        .revoke_keys(&listing.id.to_string(), OffsetDateTime::now_utc())
        .await
        .map_err(|err| {
            anyhow!(
                "cannot revoke the demo key {} (it expires within a day): {}",
                listing.id,
                cause_chain(&err)
            )
        });
    if revoked.is_ok() {
        eprintln!("revoked the demo key {}", listing.id);
    }
    served?;
    revoked?;
    Ok(())
}

/// Makes the demo's database ready, creating it when missing: refuses one holding keys the
/// demo did not issue, migrates it, and loads the demo data set when it holds no operators.
/// Returns today (Tashkent) and the latest month with a published sheet.
async fn prepare(args: &DemoArgs) -> Result<(Day, Option<Month>), Failure> {
    let admin = args.pool.open(
        args.database_url.expose(),
        Access::ReadWrite,
        IfMissing::Create,
    )?;
    refuse_other_keys(&admin).await?;
    let admin = migrated(admin).await?;
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
    let latest_sheet = admin
        .published_sheets(None)
        .await
        .map_err(|err| anyhow!("cannot read {}: {}", admin.url(), cause_chain(&err)))?
        .iter()
        .map(|sheet| sheet.month)
        .max();
    Ok((today, latest_sheet))
}

/// Refuses, before anything is written, a database that holds keys the demo did not issue:
/// the demo prints a key with every scope, which must never open a deployment's data. A
/// database without any migration applied has no key table, so no keys.
async fn refuse_other_keys(admin: &Store) -> Result<(), Failure> {
    let applied = admin.applied_migrations().await.map_err(|err| {
        anyhow!(
            "cannot read the migration state of {}: {}",
            admin.url(),
            cause_chain(&err)
        )
    })?;
    if applied.is_empty() {
        return Ok(());
    }
    let keys = admin.list_keys().await.map_err(|err| {
        anyhow!(
            "cannot read the keys of {}: {}",
            admin.url(),
            cause_chain(&err)
        )
    })?;
    let others = keys.iter().filter(|key| key.name != KEY_NAME).count();
    if others == 0 {
        return Ok(());
    }
    Err(Failure::config(anyhow!(
        "{} holds {others} key(s) the demo did not issue (named other than `{KEY_NAME}`): the \
         demo prints a key with every scope, so it runs only on a database of its own; nothing \
         was changed. Point --database-url at another database (a new SQLite file will do)",
        admin.url()
    )))
}

/// Pushes the demo key's expiry back to [`KEY_LIFETIME`] from now, every [`KEY_RENEWAL`],
/// until the key is no longer usable (revoked by `keys revoke`, or expired).
async fn renew(admin: Arc<Store>, id: i64) {
    let mut every =
        tokio::time::interval_at(tokio::time::Instant::now() + KEY_RENEWAL, KEY_RENEWAL);
    loop {
        every.tick().await;
        let now = OffsetDateTime::now_utc();
        match admin.extend_key(id, now + KEY_LIFETIME, now).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(
                    id,
                    "the demo key was revoked or has expired: no longer renewed"
                );
                return;
            }
            Err(err) => tracing::warn!(
                id,
                cause = cause_chain(&err),
                "cannot push the demo key's expiry back; trying again later"
            ),
        }
    }
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
