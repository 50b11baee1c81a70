//! What several test modules share: a spawned `callstats demo` and the service served in process.

pub mod demo;
pub mod serve;
