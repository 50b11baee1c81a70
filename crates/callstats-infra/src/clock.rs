//! The real clock behind the [`Clock`] port, here so that every adapter and the synthetic
//! platform can take it without depending on the serving layer. Reading the time is the one
//! thing it does; nothing in the domain calls it, the wiring hands it in.

use time::OffsetDateTime;

use crate::ports::Clock;

/// The system's clock, in UTC.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}
