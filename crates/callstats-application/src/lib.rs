//! The application layer of callstats: the policies that sit between the use cases of the
//! domain and its ports.
//!
//! - [`answers`]: serving a request: admission with the cached answer read on the quota's
//!   trip, the response cache, single flight and the cross-replica lock around the use cases.
//! - [`call_days`]: the call-day store, which serves the call statistics' ranges from per-day
//!   entries kept in process and (optionally) in a tier every replica shares, fetching the
//!   missing days from the call platform concurrently, once, within one deadline.
//! - [`compute`]: CPU work (statistics, JSON, compression) off the request threads, bounded.
//! - [`csv_answer`]: the CSV form of an answer (RFC 4180, the formula guard).
//! - `bounded`: the buffer both forms of an answer are written into, bounded.
//! - [`cached_answer`]: what the response cache keeps of an answer: its body, validator and
//!   expiry.
//! - [`fair_queue`]: which missing call day is fetched next (a request at a time, keys in
//!   turn) and how many at once (adaptive to the upstream's backpressure).
//! - `log_throttle`: a warning at most once a minute per subject.
//! - [`single_flight`]: concurrent requests for one thing do the work once per replica, and
//!   the one place where the panics of spawned work stop.
//! - [`replica_lock`]: work done once across replicas (a lock per entry in the shared tier).
//! - [`warmer`]: the recent days held before anyone asks, by one replica for all.
//!
//! Depends on the domain (its types and ports) and on Tokio's timers and semaphores; never on
//! the web framework, a database, an HTTP client or Redis, which reach it only as ports.

pub mod answers;
pub mod backfill;
mod bounded;
pub mod cached_answer;
pub mod call_days;
pub mod compute;
pub mod csv_answer;
pub mod fair_queue;
pub mod live;
mod log_throttle;
pub mod replica_lock;
pub mod representation;
pub mod single_flight;
pub mod warmer;

#[cfg(any(test, feature = "mock"))]
pub use answers::MockApiUseCases;
pub use answers::{Answer, Answers, ApiUseCases, Body, CacheStatus, Computing, Outcome};
pub use backfill::{Backfill, BackfillSettings};
pub use cached_answer::{CachedAnswer, ETag};
pub use call_days::{Backfilled, CallDaySettings, CallDayStore, Warmed};
pub use compute::ComputePool;
pub use warmer::{Warmer, WarmerSettings};
