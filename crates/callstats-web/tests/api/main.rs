//! The API end to end in process: the real app, the real in-process cache and quota, and
//! in-memory stand-ins for the portal store and the call platform.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

mod helpers;

mod access;
mod caching;
mod conventions;
mod csv;
mod document_conventions;
mod document_truth;
mod endpoints;
mod errors;
mod freshness;
mod live;
mod openapi;
mod ops;
mod problems;
mod trend;
mod upstream_limits;
