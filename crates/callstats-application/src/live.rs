//! What is happening now (docs/behaviour.md, "Live"): the call platform's `/live` asked at most
//! once per poll interval for the whole deployment, and only while someone asks or listens; each
//! poll's outcome (a frame) handed to every replica, where `/calls/live` answers from it and the
//! open streams send it on.
//!
//! - [`LiveFeed`] polls and shares. With Redis, the replicas that have someone asking or
//!   listening each try to claim the next poll
//!   ([`LiveRelay::claim_poll`](callstats_domain::ports::LiveRelay::claim_poll)); the one that
//!   gets it asks the platform and publishes the frame, and every replica receives it through
//!   the relay's subscription. Without Redis the replica polls for itself.
//! - [`LiveStreams`] keeps the open streams: their per-key slots, the check of their keys
//!   (a revoked or expired key's streams end within 10 s), the drop of a stream that stopped
//!   reading, and their end at shutdown.

mod feed;
mod frame;
mod streams;

pub use feed::{LiveFeed, LiveSettings};
pub use frame::Frame;
pub use streams::{LiveEvent, LiveStream, LiveStreams};

/// Sets the live figures' series to zero, so that they exist (and their panel and alert have
/// data) before the first stream or poll. Call once the metrics recorder is installed.
pub fn report_no_live_streams_yet() {
    metrics::gauge!("callstats_live_streams_open").set(0.0);
    for outcome in ["ok", "not_reported", "failed"] {
        metrics::counter!("callstats_live_polls_total", "outcome" => outcome).absolute(0);
    }
    metrics::counter!("callstats_live_events_sent_total").absolute(0);
    for reason in ["client", "revoked", "slow", "shutdown"] {
        metrics::counter!("callstats_live_streams_closed_total", "reason" => reason).absolute(0);
    }
}

#[cfg(test)]
mod tests;
