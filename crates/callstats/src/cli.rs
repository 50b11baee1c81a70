//! The command line (decisions.md section 2). Every setting has a `--flag` and a `CALLSTATS_*`
//! environment variable.

use clap::{Parser, Subcommand};

use crate::commands::keys::KeysArgs;
use crate::commands::migrate::MigrateArgs;
use crate::commands::seed::SeedArgs;

/// Read-only call-centre statistics for partners' dashboards.
#[derive(Debug, Parser)]
#[command(name = "callstats", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply pending database migrations and exit.
    Migrate(MigrateArgs),
    /// Replace all portal data (not keys) with the demo data set or a fixture file, in one
    /// transaction.
    Seed(SeedArgs),
    /// Issue, list and revoke API keys.
    Keys(KeysArgs),
}
