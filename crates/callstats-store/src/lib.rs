//! The portal store of callstats: the [`PortalStore`](callstats_domain::ports::PortalStore)
//! port over a real database, plus the admin side the `callstats` binary needs (migrations,
//! seeding from a fixture, API keys; the demo data set is callstats-synthetic's portal data).
//!
//! Two backends share one schema (`schema.rs`) and one body of query code:
//! **Postgres** through diesel-async and a bounded deadpool pool (production), and **SQLite**
//! as the embedded default (one file, no server) through diesel-async's
//! `SyncConnectionWrapper`, whose calls run on tokio's blocking threads.
//!
//! It depends on `callstats-domain` and on database crates only: never on a web framework, an
//! HTTP client, the cache or another adapter. It returns domain types, and every database
//! failure becomes [`StoreError`](callstats_domain::ports::StoreError) (the API's 503), never a
//! panic.
//!
//! # Query code written once
//!
//! Every read and write is written once, inside `with_connection!`: the macro checks out a
//! connection of whichever backend the store uses and pastes the same body into one arm per
//! backend, so diesel type-checks the query against each dialect while the source exists in
//! one place. Only the column types both backends support appear in the schema (text,
//! integers, doubles, booleans, dates, timestamps without zone; instants are Unix seconds).
//!
//! Where the backends cannot share code:
//! - **Migrations**: one directory per backend (`migrations/postgres`, `migrations/sqlite`),
//!   because identity columns and CHECK syntax differ; a test compares the schemas they
//!   produce (tables, columns, types, nullability, keys, indexes).
//! - **Multi-row INSERT while seeding**: diesel builds it for SQLite only on the synchronous
//!   connection, so seeding hands each statement to SQLite's blocking thread and to Postgres's
//!   async connection through one small trait (`ExecuteOwned`); the statement itself is built
//!   once.
//! - **Session settings**: Postgres gets `statement_timeout`, `application_name` and, for the
//!   API's read-only pool, `default_transaction_read_only`; SQLite gets `busy_timeout`,
//!   `foreign_keys`, WAL and, read-only, `query_only`.
//!
//! # Reads
//!
//! Each read of the port is one statement; a KPI sheet is three (stated totals, rows, every
//! metric of every row), whatever its size. Every KPI statement filters on `published`, so no
//! read can return a draft. `username` and `phone` are written by seeding and selected by no
//! read: the row structs the reads load have no such fields. [`Store::queries_run`] counts the
//! statements sent (tests pin the bounds with it).
//!
//! # Pool
//!
//! [`Store::open`] builds the pool without connecting: a database that is down makes each call
//! fail with `StoreError` after at most the configured connect/wait timeout, and the pool
//! connects again once the database is back. Connections closed by the server report
//! themselves broken and are replaced, so checkouts need no ping.

pub mod call_days;
pub mod config;
pub mod fixture;
pub mod keys;
pub mod migrate;
mod pool;
mod rows;
mod schema;
mod seed;
mod spawning;
mod sqlite;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;

pub use call_days::StoredCallDays;
pub use seed::{Existing, SeedError};
pub use spawning::SpawningStore;
pub use store::{PoolStatus, Store};
