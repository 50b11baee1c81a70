//! The integration tests of the callstats binary and its assembly, in one test binary (one link
//! of the whole stack instead of one per suite).
//!
//! - `cli`: the command-line contract, through the real binary on both backends.
//! - `e2e`: the service end to end, assembled as `serve` assembles it, on both backends.
//! - `edges`: HTTP edges over raw sockets against a spawned `callstats demo`.
//! - `faults`: an upstream that is down, slow or garbled; a Postgres that goes away; SIGTERM.
//! - `readme`: the README's partner walk-through, run as written against a spawned demo.
//! - `replicas`: several replicas sharing one store and one Redis.
//! - `security`: nothing secret in any response or log line.
//! - `sim`: `callstats sim` over the upstream contract.
//! - `welcome`: every `curl` line `callstats demo` prints answers 200.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

mod cli;
mod e2e;
mod edges;
mod faults;
mod monitoring;
mod readme;
mod replicas;
mod security;
mod sim;
mod support;
mod welcome;
