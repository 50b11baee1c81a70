//! The Redis adapters against a real Redis: the shared one from `CALLSTATS_TEST_REDIS_URL`, and
//! private `redis-server` processes for command counting and outages.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

mod call_days;
mod lease;
mod live;
mod outage_log;
mod responses_and_quota;
