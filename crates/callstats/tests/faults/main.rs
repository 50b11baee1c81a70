//! Faults, with the processes and proxies the tests start themselves: an upstream that is down,
//! slow past the deadline, flapping or talking garbage; a Postgres that goes away and comes
//! back; SIGTERM under load. The service is assembled exactly as `serve` assembles it
//! ([`callstats::app`]), with short timeouts so each case takes seconds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests: a panic is a failed test"
)]

#[path = "../support/demo.rs"]
mod demo;
mod harness;
mod postgres;
#[path = "../support/serve.rs"]
mod serve;
mod shutdown;
mod upstream;
