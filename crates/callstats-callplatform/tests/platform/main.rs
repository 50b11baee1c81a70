//! The call-platform adapter against a mock upstream (wiremock) and against the sim, and the
//! sim's own contract. One test binary; each test starts its own servers on port 0.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests: a panic is a failed test"
)]

mod helpers;
mod sim;
mod upstream;
