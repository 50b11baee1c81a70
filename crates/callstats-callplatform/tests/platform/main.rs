//! The call-platform adapter against a mock upstream (wiremock), `/calls` and `/live`; each test
//! starts its own server on port 0. The adapter against the sim is tested in `callstats-sim`.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

mod helpers;
mod live;
mod upstream;
