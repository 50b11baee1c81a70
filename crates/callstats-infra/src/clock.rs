//! The real clock behind the domain's [`Clock`] port, which the wiring hands to the use cases,
//! the adapters and the synthetic platform. Reading the time is the one thing it does.

use time::OffsetDateTime;

use callstats_domain::ports::Clock;

/// The system's clock, in UTC.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}
