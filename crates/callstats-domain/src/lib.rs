//! The domain of callstats: every type the API speaks, all statistics logic, the port traits
//! the outside world implements, and the use cases that combine them.
//!
//! This crate must stay pure: no web framework, no database, no HTTP client, no cache client,
//! no clock, no randomness. Adapters depend on it, never the reverse; time and I/O reach the use
//! cases only through the traits in [`ports`] (the real clock is `callstats-infra`'s).
//!
//! Testing the statistics, with the kit of the `mock` feature: docs/testing.md.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod access;
pub mod calendar;
pub mod call_day;
pub mod error;
pub mod identifiers;
pub mod limits;
pub mod live;
pub mod model;
pub mod params;
pub mod ports;
pub mod request;
pub mod rollup;
pub mod scope;
pub mod stats;
pub mod use_cases;
// Documented without the feature too, marked as needing it on docs.rs.
#[cfg(any(test, doc, feature = "mock"))]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub mod testing;
pub mod tz;

pub use error::DomainError;
