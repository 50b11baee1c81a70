//! The service end to end: the real assembly of `callstats serve` (`callstats::app::Assembly`)
//! on a real store (SQLite always, Postgres when `CALLSTATS_TEST_POSTGRES_URL` is set), seeded
//! with `data/portal.json`, keys issued through the store, the synthetic call platform served
//! over HTTP as the upstream, and real HTTP requests. Every test runs on both backends.

mod helpers;

mod access;
mod auth_edges;
mod caching;
mod durability;
mod endpoints;
mod failures;
mod privacy;
