//! What one key may make the service ask of the call platform: how far back (the history
//! horizon) and how many days a minute (the day budget). The rules are pure; the application
//! layer counts, queues and fetches (docs/behaviour.md, "Upstream work").

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::access::QuotaBucket;
use crate::calendar::Day;

/// Days back from today (Tashkent, today included) whose calls may be asked for.
pub const DEFAULT_HISTORY_DAYS: u32 = 400;
/// Day fetches one key may cause per UTC clock minute: four cold 31-day ranges.
pub const DEFAULT_DAY_FETCHES_PER_MINUTE: u32 = 124;

/// How far back calls are asked of the upstream: the last `days` days, today included; 0 turns
/// the horizon off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryHorizon(u32);

impl HistoryHorizon {
    #[must_use]
    pub const fn new(days: u32) -> Self {
        Self(days)
    }

    /// The earliest day a call period may start on when today is `today`; `None` when the
    /// horizon is off (or reaches back past what `time` can count).
    #[must_use]
    pub fn earliest(self, today: Day) -> Option<EarliestDay> {
        if self.0 == 0 {
            return None;
        }
        let day = today.plus_days(1 - i64::from(self.0))?;
        Some(EarliestDay {
            day,
            horizon_days: self.0,
        })
    }
}

impl Default for HistoryHorizon {
    fn default() -> Self {
        Self(DEFAULT_HISTORY_DAYS)
    }
}

/// The earliest day calls may be asked for, with the horizon it follows from (for the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarliestDay {
    pub day: Day,
    pub horizon_days: u32,
}

/// How many day fetches a key may cause per UTC clock minute; 0 turns the budget off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayBudget(u32);

impl DayBudget {
    #[must_use]
    pub const fn new(per_minute: u32) -> Self {
        Self(per_minute)
    }

    /// The limit, or `None` when the budget is off.
    #[must_use]
    pub const fn per_minute(self) -> Option<u32> {
        if self.0 == 0 { None } else { Some(self.0) }
    }
}

impl Default for DayBudget {
    fn default() -> Self {
        Self(DEFAULT_DAY_FETCHES_PER_MINUTE)
    }
}

/// Whether `amount` more may be counted in a window that holds `count` of at most `limit`: the
/// rule every budget counter applies atomically.
#[must_use]
pub const fn fits(count: u64, amount: u64, limit: u64) -> bool {
    match count.checked_add(amount) {
        Some(total) => total <= limit,
        None => false,
    }
}

/// A key's day budget in the current window: what the `"days"` item of `RateLimit` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayBudgetStatus {
    pub limit: u32,
    /// Day fetches left in the window, never negative.
    pub remaining: u32,
    /// Seconds to the next window (1..=60).
    pub reset_seconds: u32,
}

impl DayBudgetStatus {
    /// The window `bucket` after `used` day fetches.
    #[must_use]
    pub fn current(limit: u32, used: u64, bucket: &QuotaBucket) -> Self {
        Self {
            limit,
            remaining: limit.saturating_sub(u32::try_from(used).unwrap_or(u32::MAX)),
            reset_seconds: bucket.seconds_left,
        }
    }

    /// The same window after `spent` more day fetches.
    #[must_use]
    pub const fn less(self, spent: u32) -> Self {
        Self {
            remaining: self.remaining.saturating_sub(spent),
            ..self
        }
    }
}

/// A request refused because the days it would make the service fetch exceed its key's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    /// The key refused (a request sharing another key's computation is not refused for it).
    pub key: i64,
    /// Days of the request that are not held and would have been fetched.
    pub needed: u32,
    /// The key's window as it stands (nothing was counted for the refused request).
    pub status: DayBudgetStatus,
    /// How far the backfill has filled the history horizon, while it is still filling it: the
    /// days asked for may then be held without the key's budget a while later.
    pub filling: Option<HistoryFill>,
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            needed,
            status,
            filling,
            ..
        } = self;
        if *needed > status.limit {
            write!(
                f,
                "day budget exceeded: this request needs {needed} days that are not held, more \
                 than the key's day budget of {} day fetches a minute; ask for a shorter period",
                status.limit
            )?;
        } else {
            write!(
                f,
                "day budget exceeded: this request needs {needed} days that are not held, and \
                 the key's day budget of {} day fetches a minute has {} left; retry in {} s",
                status.limit, status.remaining, status.reset_seconds
            )?;
        }
        match filling {
            Some(filling) => write!(f, "; {filling}"),
            None => Ok(()),
        }
    }
}

/// How far the backfill has filled the history horizon: `held` of its `days` settled days,
/// at `per_minute` day fetches a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryFill {
    pub held: u32,
    pub days: u32,
    pub per_minute: u32,
}

impl HistoryFill {
    /// The whole minutes the days not held yet take at the backfill's rate, at least 1.
    #[must_use]
    pub fn minutes_left(&self) -> u32 {
        let left = self.days.saturating_sub(self.held);
        left.div_ceil(self.per_minute.max(1)).max(1)
    }
}

impl fmt::Display for HistoryFill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the call history is still being filled: {} of its {} settled days are held, and \
             the rest take about {} min at {} days a minute; days held cost no budget",
            self.held,
            self.days,
            self.minutes_left(),
            self.per_minute
        )
    }
}

/// How much of one day's answer is taken before the day is given up as unusable: pages asked
/// (`CALLSTATS_CALL_PLATFORM_MAX_PAGES_PER_DAY`), calls kept (`CALLSTATS_CALL_DAY_MAX_CALLS`)
/// and distinct agents among them (`CALLSTATS_CALL_DAY_MAX_AGENTS`). docs/call-platform.md
/// says why the defaults are what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayBounds {
    pub pages: u32,
    pub calls: usize,
    pub agents: usize,
}

impl DayBounds {
    pub const DEFAULT_PAGES: u32 = 500;
    pub const DEFAULT_CALLS: usize = 200_000;
    pub const DEFAULT_AGENTS: usize = 5_000;
}

impl Default for DayBounds {
    fn default() -> Self {
        Self {
            pages: Self::DEFAULT_PAGES,
            calls: Self::DEFAULT_CALLS,
            agents: Self::DEFAULT_AGENTS,
        }
    }
}

/// On whose behalf a range's missing days are fetched: the key whose requests the fair queue
/// takes in turn with other keys', and whose day budget pays for the days fetched for it. It
/// records how many days it paid for, so the answer's `RateLimit` header can report them, and
/// whether a day was answered stale (its refetch failed), so the answer can say so. Clones
/// share the record.
#[derive(Debug, Clone)]
pub struct Requester {
    key: i64,
    fetched: Arc<AtomicU32>,
    stale: Arc<AtomicBool>,
}

impl Requester {
    /// The requests of the key with this id.
    #[must_use]
    pub fn key(id: i64) -> Self {
        Self {
            key: id,
            fetched: Arc::default(),
            stale: Arc::default(),
        }
    }

    #[must_use]
    pub const fn key_id(&self) -> i64 {
        self.key
    }

    /// Records `days` fetches paid for from the key's budget.
    pub fn paid(&self, days: u32) {
        self.fetched.fetch_add(days, Ordering::Relaxed);
    }

    /// The day fetches paid for so far.
    #[must_use]
    pub fn paid_so_far(&self) -> u32 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// Records that a day was answered from a copy past its lifetime.
    pub fn served_stale(&self) {
        self.stale.store(true, Ordering::Relaxed);
    }

    /// Whether a day was answered from a copy past its lifetime.
    #[must_use]
    pub fn was_served_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;
    use crate::access::QuotaSubject;
    use crate::testing::day;

    #[test]
    fn the_horizon_is_the_last_n_days_today_included() {
        let earliest = HistoryHorizon::new(400)
            .earliest(day("2026-11-25"))
            .unwrap();
        assert_eq!(earliest.day, day("2025-10-22"));
        assert_eq!(earliest.horizon_days, 400);
        assert_eq!(
            HistoryHorizon::new(1)
                .earliest(day("2026-11-25"))
                .unwrap()
                .day,
            day("2026-11-25"),
            "a horizon of one day is today alone"
        );
    }

    #[test]
    fn a_horizon_of_zero_or_past_the_calendar_allows_every_day() {
        assert_eq!(HistoryHorizon::new(0).earliest(day("2026-11-25")), None);
        assert_eq!(
            HistoryHorizon::default()
                .earliest(day("2026-11-25"))
                .map(|e| e.horizon_days),
            Some(400)
        );
    }

    #[test]
    fn a_budget_counts_up_to_its_limit_exactly() {
        assert!(fits(0, 124, 124));
        assert!(fits(93, 31, 124));
        assert!(!fits(94, 31, 124));
        assert!(!fits(0, 125, 124));
        assert!(
            fits(124, 0, 124),
            "a request that fetches nothing always fits"
        );
        assert!(!fits(u64::MAX, 1, u64::MAX), "no overflow");
        assert_eq!(DayBudget::new(0).per_minute(), None);
        assert_eq!(DayBudget::default().per_minute(), Some(124));
    }

    #[test]
    fn the_status_reports_what_is_left_of_the_window() {
        let bucket = QuotaBucket::new(
            &QuotaSubject::KeyDays(7),
            datetime!(2026-11-25 06:15:18 UTC),
        );
        let status = DayBudgetStatus::current(124, 93, &bucket);
        assert_eq!(
            status,
            DayBudgetStatus {
                limit: 124,
                remaining: 31,
                reset_seconds: 42
            }
        );
        assert_eq!(status.less(31).remaining, 0);
        assert_eq!(status.less(40).remaining, 0, "never negative");
        assert_eq!(DayBudgetStatus::current(124, 500, &bucket).remaining, 0);
    }

    /// Key 7's refusal of `needed` days, its budget of `limit` with `remaining` left.
    fn refusal(needed: u32, limit: u32, remaining: u32, reset_seconds: u32) -> OverBudget {
        OverBudget {
            key: 7,
            needed,
            status: DayBudgetStatus {
                limit,
                remaining,
                reset_seconds,
            },
            filling: None,
        }
    }

    #[test]
    fn a_refusal_names_the_budget_and_when_to_retry_or_that_the_period_is_too_long() {
        let refused = refusal(31, 124, 10, 42);
        let status = refused.status;
        assert_eq!(
            refused.to_string(),
            "day budget exceeded: this request needs 31 days that are not held, and the key's \
             day budget of 124 day fetches a minute has 10 left; retry in 42 s"
        );
        let never = OverBudget {
            needed: 31,
            status: DayBudgetStatus {
                limit: 20,
                ..status
            },
            ..refused
        };
        assert!(
            never.to_string().contains("ask for a shorter period"),
            "{never}"
        );
    }

    #[test]
    fn a_refusal_while_the_history_fills_says_how_far_it_is_and_how_long_the_rest_takes() {
        let filling = HistoryFill {
            held: 112,
            days: 396,
            per_minute: 10,
        };
        let refused = OverBudget {
            filling: Some(filling),
            ..refusal(254, 124, 124, 58)
        };
        assert_eq!(
            refused.to_string(),
            "day budget exceeded: this request needs 254 days that are not held, more than the \
             key's day budget of 124 day fetches a minute; ask for a shorter period; the call \
             history is still being filled: 112 of its 396 settled days are held, and the rest \
             take about 29 min at 10 days a minute; days held cost no budget"
        );
        assert_eq!(
            HistoryFill {
                held: 395,
                ..filling
            }
            .minutes_left(),
            1,
            "a day left is a minute, not none"
        );
        assert_eq!(
            HistoryFill {
                per_minute: 0,
                ..filling
            }
            .minutes_left(),
            284
        );
    }

    #[test]
    fn clones_of_a_requester_share_what_it_paid() {
        let requester = Requester::key(7);
        let clone = requester.clone();
        clone.paid(31);
        requester.paid(2);
        assert_eq!((requester.paid_so_far(), requester.key_id()), (33, 7));
        assert_eq!(Requester::key(7).paid_so_far(), 0);
    }
}
