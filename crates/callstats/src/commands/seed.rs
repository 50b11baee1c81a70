//! `callstats seed --demo [--seed N] [--replace | --if-empty]` / `callstats seed --file PATH
//! [--replace | --if-empty]`: load portal data (not keys) in one transaction; a database that
//! already holds portal data is replaced only with `--replace`, and left as it is with exit 0
//! with `--if-empty`. The fixture is read and checked before the database is
//! touched, so a bad file changes nothing.

use std::path::PathBuf;

use anyhow::Context as _;
use callstats_domain::calendar::Day;
use callstats_store::fixture::ValidFixture;
use callstats_store::{Existing, SeedError};
use clap::{ArgGroup, Args};

use crate::args::DatabaseArgs;
use crate::commands::{migrated, today_in_tashkent};
use crate::failure::Failure;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["demo", "file"])))]
pub struct SeedArgs {
    /// Load the built-in demo data set: a Tashkent call centre of 80 operators.
    #[arg(long)]
    pub demo: bool,

    /// Seed of the demo data set: the same seed (and day) always gives the same data
    /// [default: 42].
    #[arg(long, value_name = "N", conflicts_with = "file")]
    pub seed: Option<u64>,

    /// Day the demo data is placed around (its KPI months and scored calls) [default: today in
    /// Tashkent].
    #[arg(long, value_name = "YYYY-MM-DD", conflicts_with = "file")]
    pub anchor: Option<String>,

    /// Load a fixture file (a JSON object; format in docs/portal-schema.md).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,

    /// Replace the portal data a database already holds; without it such a database is left
    /// unchanged (exit code 1).
    #[arg(long)]
    pub replace: bool,

    /// Load only into a database without portal data; one that holds some is left unchanged
    /// and the command exits 0 (for a one-shot step that runs at every start).
    #[arg(long, conflicts_with = "replace")]
    pub if_empty: bool,

    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub async fn run(args: SeedArgs) -> Result<(), Failure> {
    let (fixture, what) = match &args.file {
        Some(path) => (read_fixture(path)?, format!("fixture {}", path.display())),
        None => {
            let anchor = match &args.anchor {
                Some(raw) => Day::parse(raw).map_err(|_| {
                    Failure::config(anyhow::anyhow!(
                        "invalid --anchor {raw:?}: expected a date YYYY-MM-DD"
                    ))
                })?,
                None => today_in_tashkent(),
            };
            let seed = args.seed.unwrap_or(callstats_synthetic::DEFAULT_SEED);
            let fixture = callstats_synthetic::portal_fixture(seed, anchor)
                .validate()
                .context("the built-in demo data set is invalid")?;
            (
                fixture,
                format!("demo data set (seed {seed}, anchor {anchor})"),
            )
        }
    };
    let store = migrated(args.database.open_admin()?).await?;
    let existing = if args.replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    match store.seed(&fixture, existing).await {
        Err(SeedError::HoldsData) if args.if_empty => {
            eprintln!(
                "{} already holds portal data: left as it is (--if-empty)",
                store.url()
            );
            return Ok(());
        }
        outcome => outcome.with_context(|| {
            format!("seeding {} failed; the database is unchanged", store.url())
        })?,
    }
    eprintln!(
        "seeded {} with the {what}: {}",
        store.url(),
        fixture.counts()
    );
    Ok(())
}

/// Reads and checks a fixture file; a problem is named by its JSON path.
fn read_fixture(path: &std::path::Path) -> Result<ValidFixture, Failure> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read fixture {}", path.display()))?;
    ValidFixture::from_json(&text)
        .map_err(|error| anyhow::anyhow!("fixture {} rejected: {error}", path.display()).into())
}
