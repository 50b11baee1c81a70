//! The call-platform port over HTTP.
//!
//! - [`HttpCallPlatform`] is the adapter the service uses: it pages through the upstream call
//!   platform's `/calls` (docs/call-platform.md), bounded in time and attempts, behind a
//!   circuit breaker, and turns whatever it cannot get whole into the domain's
//!   `UpstreamError` (the API's 503). It reads the optional `/live` the same way, behind a
//!   breaker of its own, a 404 there meaning the platform reports no live figures.
//! - [`wire`] is the contract on the wire, both sides of it: the page (and the `/live` answer)
//!   the adapter reads and the ones `callstats-sim` writes.
//!
//! Depends on `callstats-domain` (the port it implements) only; never on the store, the web
//! API or the binary crate.

mod budget;
mod client;
mod config;
pub mod wire;

pub use client::{BuildError, HttpCallPlatform, install_crypto_provider};
pub use config::{BearerToken, HttpPlatformConfig};
