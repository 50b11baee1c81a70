//! `callstats sim`: the synthetic call platform over the upstream contract (`/calls`, and
//! `/live` unless `--no-live`), with optional injected failures, latency and a request-rate
//! limit, for local runs, compose and fault tests.

use std::net::TcpListener;
use std::time::Duration;

use anyhow::anyhow;
use callstats_sim::{SimOptions, serve_sim};
use clap::Args;
use clap::builder::BoolishValueParser;

use crate::failure::Failure;
use crate::secret::Secret;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to serve on.
    #[arg(long, env = "CALLSTATS_SIM_BIND", default_value = callstats_sim::DEFAULT_SIM_BIND, value_name = "ADDR")]
    pub bind: String,
    /// Seed of the generator: the same seed gives the same calls.
    #[arg(long, default_value_t = callstats_synthetic::DEFAULT_SEED, value_name = "N")]
    pub seed: u64,
    /// Calls on an ordinary weekday (weekends get fewer).
    #[arg(long, default_value_t = callstats_synthetic::DEFAULT_CALLS_PER_DAY, value_name = "N")]
    pub calls_per_day: u32,
    /// Bearer token requests must carry; without it, none is checked.
    #[arg(
        long,
        env = "CALLSTATS_SIM_TOKEN",
        hide_env_values = true,
        value_name = "T"
    )]
    pub token: Option<Secret>,
    /// Share of requests (0 to 1) answered with a 500 and a JSON body.
    #[arg(long, default_value_t = 0.0, value_name = "F")]
    pub fail_rate: f64,
    /// Milliseconds added before every answer.
    #[arg(
        long,
        env = "CALLSTATS_SIM_LATENCY_MS",
        default_value_t = 0,
        value_name = "N"
    )]
    pub latency_ms: u64,
    /// Requests past this many in one second are answered 429 with `Retry-After: 1`, as a
    /// rate-limited platform would; unset: no limit.
    #[arg(long, value_name = "N")]
    pub max_rps: Option<u32>,
    /// Answer `GET /live` with 404, as a platform that reports no live figures does.
    #[arg(long, env = "CALLSTATS_SIM_NO_LIVE", value_parser = BoolishValueParser::new())]
    pub no_live: bool,
}

pub async fn run(args: SimArgs) -> Result<(), Failure> {
    let options = SimOptions {
        seed: args.seed,
        calls_per_day: args.calls_per_day,
        token: args.token.map(|token| token.expose().to_owned()),
        fail_rate: args.fail_rate,
        latency: Duration::from_millis(args.latency_ms),
        max_rps: args.max_rps,
        live: !args.no_live,
        // The machine's clock: no call that starts after the present is served.
        ..SimOptions::default()
    };
    options.validate().map_err(Failure::config)?;
    let listener = TcpListener::bind(&args.bind)
        .map_err(|err| Failure::config(anyhow!("cannot listen on {}: {err}", args.bind)))?;
    tracing::info!(
        address = args.bind,
        live = !args.no_live,
        "serving the synthetic call platform at /calls and, when live, /live"
    );
    serve_sim(listener, options).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn no_live(args: &[&str]) -> bool {
        let args = std::iter::once("sim").chain(args.iter().copied());
        Command::try_parse_from(args).unwrap().sim.no_live
    }

    #[test]
    fn live_is_served_unless_no_live_is_given() {
        assert!(!no_live(&[]));
        assert!(no_live(&["--no-live"]));
        assert!(Command::try_parse_from(["sim", "--no-live=maybe"]).is_err());
    }
}
