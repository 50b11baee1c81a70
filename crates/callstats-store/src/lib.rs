//! x
pub mod config;
pub mod demo;
pub mod fixture;
pub mod keys;
pub mod migrate;
mod pool;
mod rows;
mod schema;
mod seed;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub use store::Store;
