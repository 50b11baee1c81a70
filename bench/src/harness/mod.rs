//! What every benchmark shares, on top of xtask's library (which builds the service and starts
//! it on loopback: `xtask::serve`, `xtask::process`): a server's figures read from its metrics
//! ([`metrics`]) and from /proc ([`usage`]), answers asked and told apart by status ([`ask`]),
//! the bare baseline ([`baseline`]), wrk ([`wrk`]), the days asked ([`days`]) and the table the
//! figures are printed in ([`table`]).

pub mod ask;
pub mod baseline;
pub mod days;
pub mod metrics;
pub mod table;
pub mod usage;
pub mod wrk;

use std::io::Write as _;

use anyhow::{Context as _, Result};

/// Prints a benchmark's report on stdout (the figures; progress goes to stderr).
pub fn print(report: &str) -> Result<()> {
    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .context("cannot write the report")
}

/// `release` or `debug`, as a report names the build it measured.
pub fn build_name(debug: bool) -> &'static str {
    if debug { "debug" } else { "release" }
}
