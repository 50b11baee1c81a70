//! The domain of callstats: every type the API speaks, all statistics logic, the port traits
//! the outside world implements, and the use cases that combine them.
//!
//! This crate must stay pure: no web framework, no database, no HTTP client, no cache client,
//! no clock or randomness of its own. Adapters depend on it, never the reverse; time and I/O
//! reach it only through the traits in [`ports`].

pub mod access;
pub mod breaker;
pub mod calendar;
pub mod call_day;
pub mod call_day_encoding;
pub mod error;
pub mod limits;
pub mod model;
#[cfg(feature = "openapi")]
mod openapi;
pub mod params;
pub mod ports;
pub mod request;
pub mod scope;
pub mod service;
pub mod stats;
#[cfg(any(test, feature = "mock"))]
pub mod testing;
pub mod tz;

pub use error::DomainError;

#[cfg(test)]
mod test_builders;
