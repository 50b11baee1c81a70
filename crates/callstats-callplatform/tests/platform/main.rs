//! The call-platform adapter against a mock upstream (wiremock); each test starts its own
//! server on port 0. The adapter against the sim is tested in `callstats-sim`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests: a panic is a failed test"
)]

mod helpers;
mod upstream;
