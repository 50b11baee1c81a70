//! The API end to end in process: the real app, the real in-process cache and quota, and
//! in-memory stand-ins for the portal store and the call platform.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "test code: a panic is a failed test"
)]

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
mod openapi;
mod ops;
mod problems;
mod upstream_limits;
