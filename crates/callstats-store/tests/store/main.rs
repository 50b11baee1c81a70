//! The store's integration tests. Every test in a `backend_tests!` block runs twice: on a fresh
//! SQLite file and on a fresh Postgres database (`CALLSTATS_TEST_POSTGRES_URL`).

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

mod call_days;
mod fixtures;
mod keys;
mod queries;
mod round_trip;
mod schema;
mod seeding;
mod spawning;
mod support;
mod unavailable;
