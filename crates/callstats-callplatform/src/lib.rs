//! The call-platform port over HTTP, both ends of it.
//!
//! - [`HttpCallPlatform`] is the adapter the service uses: it pages through the upstream call
//!   platform's `/calls` (docs/call-platform.md), bounded in time and attempts, behind a
//!   circuit breaker, and turns whatever it cannot get whole into the domain's
//!   `UpstreamError` (the API's 503).
//! - [`sim`] serves the synthetic platform of `callstats-synthetic` over that same contract,
//!   with a token check and injected failures and latency: `callstats sim`.
//!
//! Depends on `callstats-domain` (the port it implements) and `callstats-synthetic` (what the
//! sim serves); never on the store, the web API or the binary crate.

mod breaker;
mod client;
mod config;
pub mod sim;
mod wire;

pub use client::{BuildError, HttpCallPlatform, install_crypto_provider};
pub use config::{BearerToken, HttpPlatformConfig};
pub use sim::{RunningSim, SimOptions, serve_sim, sim_server, spawn_sim};
