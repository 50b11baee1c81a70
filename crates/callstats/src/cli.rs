//! The command line (docs/command-line.md). Every setting has a `--flag` and a `CALLSTATS_*`
//! environment variable.

use clap::{Parser, Subcommand};

use crate::commands::demo::DemoArgs;
use crate::commands::keys::KeysArgs;
use crate::commands::migrate::MigrateArgs;
use crate::commands::seed::SeedArgs;
use crate::commands::serve::ServeArgs;
use crate::commands::sim::SimArgs;
use crate::logging::{LogFormat, LogWriter};

/// Read-only call-centre statistics for partners' dashboards.
#[derive(Debug, Parser)]
#[command(name = "callstats", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Log lines as text or as one JSON object per line (on stderr).
    #[arg(long, global = true, env = "CALLSTATS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the API with the built-in demo data and synthetic call platform, printing a fresh
    /// key and three ready curl lines.
    Demo(Box<DemoArgs>),
    /// Run the API in production (needs CALLSTATS_CALL_PLATFORM_URL).
    Serve(Box<ServeArgs>),
    /// Serve the synthetic call platform over the upstream contract.
    Sim(SimArgs),
    /// Apply pending database migrations and exit.
    Migrate(MigrateArgs),
    /// Replace all portal data (not keys) with the demo data set or a fixture file, in one
    /// transaction.
    Seed(SeedArgs),
    /// Issue, list and revoke API keys.
    Keys(KeysArgs),
}

impl Command {
    /// Servers log every request; one-shot commands only what goes wrong.
    #[must_use]
    pub fn default_log_level(&self) -> &'static str {
        match self {
            Self::Demo(_) | Self::Serve(_) | Self::Sim(_) => "info",
            Self::Migrate(_) | Self::Seed(_) | Self::Keys(_) => "warn",
        }
    }

    /// Servers hand their lines to a writer thread; one-shot commands write them at once.
    #[must_use]
    pub const fn log_writer(&self) -> LogWriter {
        match self {
            Self::Demo(_) | Self::Serve(_) | Self::Sim(_) => LogWriter::Background,
            Self::Migrate(_) | Self::Seed(_) | Self::Keys(_) => LogWriter::Direct,
        }
    }
}
