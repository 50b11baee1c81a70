//! What the adapters and the program share that the pure domain must not hold, because it
//! reads a clock or speaks a format of the world outside:
//!
//! - [`clock::SystemClock`]: the real clock behind the domain's `Clock` port;
//! - [`breaker`]: the one outage state machine of the adapters, on the monotonic clock;
//! - [`encoding`]: the versioned encodings of a call day and of its rollup, for the tiers that
//!   keep them outside the process (Redis, the database);
//! - [`redact`]: what a message or a log line may show of a URL.
//!
//! It depends on the domain only; nothing in the domain or the application layer depends on it.

pub mod breaker;
pub mod clock;
pub mod encoding;
pub mod redact;
