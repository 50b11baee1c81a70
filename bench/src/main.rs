//! The benchmarks of callstats: each one builds the service, starts it on loopback beside what
//! it measures against (the sim, a hostile platform, Redis, wrk, callgrind) and prints its
//! figures as a table. `cargo measure <benchmark>` (an alias of `cargo run -p callstats-bench
//! --`); docs/performance.md says what each measures, its targets and its latest table. Not in
//! CI, which builds this crate and runs its unit tests only.
//!
//! Each benchmark is a module with an `Options` (clap arguments; its doc comment is the
//! subcommand's help) and a `run`, and a line in `benchmarks!` below; what they share is in
//! [`harness`].

mod harness;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Declares the benchmarks' modules and the subcommand of each (its variant's name in kebab
/// case), so that adding a benchmark is its module and one line.
macro_rules! benchmarks {
    ($($module:ident => $variant:ident,)+) => {
        $(mod $module;)+

        #[derive(Debug, Subcommand)]
        enum Benchmark {
            $($variant($module::Options),)+
        }

        impl Benchmark {
            fn run(&self) -> Result<()> {
                match self {
                    $(Self::$variant(options) => $module::run(options),)+
                }
            }
        }
    };
}

benchmarks! {
    load => Load,
    instructions => Instructions,
    replicas_load => ReplicasLoad,
    cold => Cold,
    durability => Durability,
    isolation => Isolation,
    hostile => Hostile,
    soak => Soak,
    trend => Trend,
    live => Live,
}

/// The benchmarks of callstats (docs/performance.md).
#[derive(Debug, Parser)]
#[command(name = "cargo measure", bin_name = "cargo measure")]
struct Cli {
    #[command(subcommand)]
    benchmark: Benchmark,
}

fn main() -> Result<()> {
    Cli::parse().benchmark.run()
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser as _};

    use super::{Benchmark, Cli};

    #[test]
    fn the_command_line_is_well_formed_and_every_benchmark_has_its_help() {
        Cli::command().debug_assert();
        for benchmark in Cli::command().get_subcommands() {
            assert!(
                benchmark.get_about().is_some(),
                "{} has no help",
                benchmark.get_name()
            );
        }
        assert!(Cli::try_parse_from(["cargo measure", "replicas-load"]).is_ok());
    }

    #[test]
    fn options_have_defaults_and_read_values() {
        let cold = |args: &[&str]| {
            let line = ["cargo measure", "cold"].iter().chain(args);
            match Cli::try_parse_from(line)
                .map_err(|err| err.kind())?
                .benchmark
            {
                Benchmark::Cold(options) => {
                    Ok((options.latency_ms, options.calls_per_day, options.debug))
                }
                _ => Err(clap::error::ErrorKind::InvalidSubcommand),
            }
        };
        assert_eq!(cold(&[]), Ok((100, 5000, false)));
        assert_eq!(
            cold(&["--latency-ms", "20", "--debug", "--calls-per-day", "10"]),
            Ok((20, 10, true))
        );
        assert_eq!(
            cold(&["--latency-ms"]),
            Err(clap::error::ErrorKind::InvalidValue)
        );
        assert_eq!(
            cold(&["--fast"]),
            Err(clap::error::ErrorKind::UnknownArgument)
        );
        assert!(Cli::try_parse_from(["cargo measure", "soak", "--rate", "0"]).is_err());
        assert!(Cli::try_parse_from(["cargo measure", "unknown"]).is_err());
    }
}
