//! The Redis adapters against a real Redis: the shared one from `CALLSTATS_TEST_REDIS_URL`, and
//! private `redis-server` processes for command counting and outages.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "test code: a panic is a failed test"
)]

mod call_days;
mod lease;
mod outage_log;
mod responses_and_quota;
