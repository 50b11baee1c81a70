//! The testing kit (feature `mock`): builders for every input the statistics take, the held
//! days a mocked [`CallDaySource`](crate::ports::CallDaySource) answers with, a clock to set
//! and move, and `mockall` re-exported, so a test needs no second dependency for
//! `predicate::eq`. docs/testing.md shows them at work.
//!
//! The port traits in [`crate::ports`] that a test mocks have a generated `MockX` there
//! (feature `mock`): `MockPortalStore`, `MockCallDaySource` and `MockClock` are what
//! [`CallStats`](crate::use_cases::CallStats) reads; `MockKeyStore`, `MockQuotaCounter`,
//! `MockRequestLedger` what [`Gatekeeper`](crate::use_cases::Gatekeeper) reads; `MockLease` and
//! `MockResponseCache` what the warmer and the API's answers read. Each has
//! `expect_<method>()` as mockall makes it. The call-day store's tiers (`CallDayCache`,
//! `CallDayArchive`) and `CallPlatform` have none: their tests use fakes that hold days or
//! count fetches, which a mock would not make shorter (callstats-application's
//! `call_days/tests.rs`).
//!
//! Times are instants ([`OffsetDateTime`], e.g. `datetime!(2026-11-01 10:00 +5)`) or text
//! ([`Moment`]): a Tashkent local time or RFC 3339 with its offset; never Unix seconds.
//!
//! The builders panic on text that is not what they expect: in a test, that is a failed test.

#![allow(
    clippy::expect_used,
    reason = "test support: a malformed literal in a test is a failed test"
)]

use std::sync::{Arc, Mutex, PoisonError};

#[cfg(any(test, feature = "mock"))]
pub use mockall;
#[cfg(any(test, feature = "mock"))]
pub use mockall::predicate;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Duration, OffsetDateTime, PrimitiveDateTime};

use crate::access::{ApiKeyRecord, ApiKeySecret};
use crate::calendar::{DateRange, Day, LocalDateTime, Month};
use crate::call_day::CallDay;
use crate::live::{AgentNow, AgentState, LiveSnapshot, QueueNow};
use crate::model::{
    AgentNumber, CallRecord, CallScore, KpiOperatorRow, Metric, Operator, QueueName, Sentiment,
    Sheet,
};
use crate::params::{Direction, Granularity, SlThreshold};
use crate::ports::Clock;
use crate::rollup::DayRollup;
use crate::scope::ScopeSet;
use crate::stats::trend::{Trend, trend_response};
use crate::tz::TASHKENT;

/// An instant a builder takes: an [`OffsetDateTime`], or text, either a Tashkent local time
/// (`"2026-11-01 10:00"` or `"2026-11-01 10:00:00"`) or RFC 3339 with its own offset
/// (`"2026-11-01T05:00:00Z"`).
pub trait Moment {
    /// The instant; panics on text that is neither form.
    fn instant(self) -> OffsetDateTime;
}

impl Moment for OffsetDateTime {
    fn instant(self) -> OffsetDateTime {
        self
    }
}

impl Moment for &str {
    fn instant(self) -> OffsetDateTime {
        tashkent(self)
    }
}

/// The instant of a Tashkent local time (`"2026-11-01 10:00"`, seconds optional) or of an RFC
/// 3339 time with its offset.
///
/// ```
/// use callstats_domain::testing::tashkent;
/// use time::macros::datetime;
///
/// assert_eq!(tashkent("2026-11-01 10:00"), datetime!(2026-11-01 05:00 UTC));
/// assert_eq!(tashkent("2026-11-01T10:00:00+05:00"), datetime!(2026-11-01 05:00 UTC));
/// ```
#[must_use]
pub fn tashkent(text: &str) -> OffsetDateTime {
    if let Ok(instant) = OffsetDateTime::parse(text, &Rfc3339) {
        return instant;
    }
    let local = PrimitiveDateTime::parse(
        text,
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
    )
    .or_else(|_| {
        PrimitiveDateTime::parse(
            text,
            format_description!("[year]-[month]-[day] [hour]:[minute]"),
        )
    })
    .expect("a Tashkent local time YYYY-MM-DD HH:MM[:SS] or RFC 3339");
    local.assume_offset(TASHKENT)
}

/// The secret of every key of the tests: the same 32 bytes, so a test can present it.
#[must_use]
pub fn api_key_secret() -> ApiKeySecret {
    ApiKeySecret::from_random_bytes(&[7; 32])
}

/// A key `id` named `name` with `scopes` (a comma-separated list), 5 requests a minute, from
/// any Origin, neither expired nor revoked.
#[must_use]
pub fn api_key(id: i64, name: &str, scopes: &str) -> ApiKeyRecord {
    ApiKeyRecord {
        id,
        name: name.into(),
        scopes: ScopeSet::parse_list(scopes).expect("a list of scopes"),
        rate_limit_per_minute: 5,
        allowed_origin: None,
        expires_at: None,
        revoked_at: None,
    }
}

/// The day `"YYYY-MM-DD"`.
#[must_use]
pub fn day(text: &str) -> Day {
    Day::parse(text).expect("a day YYYY-MM-DD")
}

/// The month `"YYYY-MM"`.
#[must_use]
pub fn month(text: &str) -> Month {
    Month::parse(text).expect("a month YYYY-MM")
}

/// The days `start` to `end` (`"YYYY-MM-DD"`), at most 31 of them, as
/// [`DateRange::up_to_31_days`] makes it.
#[must_use]
pub fn range(start: &str, end: &str) -> DateRange {
    DateRange::up_to_31_days(day(start), day(end))
        .expect("a range whose end is not before its start")
}

/// The agent number `text`.
#[must_use]
pub fn agent(text: &str) -> AgentNumber {
    AgentNumber::new(text).expect("an agent number")
}

/// The queue named `text`.
#[must_use]
pub fn queue(text: &str) -> QueueName {
    QueueName::new(text).expect("a queue name")
}

/// A call in `direction` that started `at`, lasted `seconds` and was answered by `agent`
/// (`None`: no agent answered), without a wait or a queue: chain [`CallExt::waited`] and
/// [`CallExt::queued`] for those.
///
/// ```
/// use callstats_domain::params::Direction;
/// use callstats_domain::testing::{CallExt, call};
///
/// let answered = call(Direction::Inbound, Some("101"), "2026-11-01 10:00", 60.0).waited(12.0);
/// let abandoned = call(Direction::Inbound, None, "2026-11-01 10:05", 0.0).queued("sales");
/// assert_eq!(answered.wait_seconds, Some(12.0));
/// assert!(abandoned.agent_number.is_none() && abandoned.queue.is_some());
/// ```
#[must_use]
pub fn call(
    direction: Direction,
    agent: Option<&str>,
    at: impl Moment,
    seconds: f64,
) -> CallRecord {
    CallRecord {
        agent_number: agent.map(self::agent),
        ..CallRecord::new(direction, at.instant(), seconds)
    }
}

/// The wait and queue of a call built by [`call`].
pub trait CallExt {
    /// The same call, having waited `seconds` in its queue.
    #[must_use]
    fn waited(self, seconds: f64) -> Self;
    /// The same call, offered by the queue `name`.
    #[must_use]
    fn queued(self, name: &str) -> Self;
}

impl CallExt for CallRecord {
    fn waited(mut self, seconds: f64) -> Self {
        self.wait_seconds = Some(seconds);
        self
    }

    fn queued(mut self, name: &str) -> Self {
        self.queue = Some(queue(name));
        self
    }
}

/// The inbound calls of docs/behaviour.md's worked example ("Service figures"), c-1 to c-5 of
/// 2 November 2026: the domain's and the API's tests check the page against them.
#[must_use]
pub fn worked_example() -> Vec<CallRecord> {
    let inbound = |agent, at, seconds| call(Direction::Inbound, agent, at, seconds);
    vec![
        inbound(Some("101"), "2026-11-02T09:00:00+05:00", 120.0)
            .waited(4.5)
            .queued("sales"),
        inbound(Some("102"), "2026-11-02T09:10:00+05:00", 60.0)
            .waited(20.0)
            .queued("sales"),
        inbound(None, "2026-11-02T09:20:00+05:00", 0.0)
            .waited(95.25)
            .queued("support"),
        inbound(Some("101"), "2026-11-02T10:00:00+05:00", 30.0)
            .waited(41.0)
            .queued("support"),
        inbound(Some("102"), "2026-11-02T11:00:00+05:00", 90.0),
    ]
}

/// The days of `range` holding `calls`, as a [`CallDaySource`](crate::ports::CallDaySource)
/// hands them over: every day of the range in order, each settled, fetched at the Unix epoch;
/// calls outside the range are left out. What a `MockCallDaySource` returns.
///
/// ```
/// use callstats_domain::params::Direction;
/// use callstats_domain::testing::{call, days_of, range};
///
/// let days = days_of(range("2026-11-01", "2026-11-02"), &[
///     call(Direction::Inbound, Some("101"), "2026-11-02 09:00", 30.0),
/// ]);
/// assert_eq!((days.len(), days[0].calls().len(), days[1].calls().len()), (2, 0, 1));
/// ```
#[must_use]
pub fn days_of(range: DateRange, calls: &[CallRecord]) -> Vec<Arc<CallDay>> {
    CallDay::split(&range, 0, calls)
        .into_iter()
        .map(Arc::new)
        .collect()
}

/// /calls/trend measured over the inbound calls among `calls` (every queue, the default
/// threshold), from the rollups of `range`'s days ([`days_of`]'s days, each rolled up).
#[must_use]
pub fn inbound_trend(range: &DateRange, granularity: Granularity, calls: &[CallRecord]) -> Trend {
    let rollups: Vec<DayRollup> = CallDay::split(range, 0, calls)
        .iter()
        .map(DayRollup::of)
        .collect();
    trend_response(
        range,
        Direction::Inbound,
        granularity,
        SlThreshold::DEFAULT,
        None,
        &rollups,
    )
}

/// The portal's score of `agent`'s call that started `at`: `percent` of the checklist, with
/// `sentiment`.
#[must_use]
pub fn score(agent: &str, at: impl Moment, percent: f64, sentiment: Sentiment) -> CallScore {
    CallScore {
        agent_number: self::agent(agent),
        started_at: at.instant().unix_timestamp(),
        checklist_percent: percent,
        sentiment,
    }
}

/// An operator of team A on the day shift, joined on 2025-01-01; `staff_role` `Some` for staff
/// who are not operators.
#[must_use]
pub fn operator(agent: &str, name: &str, staff_role: Option<&str>) -> Operator {
    Operator {
        agent_number: self::agent(agent),
        name: name.into(),
        team: "A".into(),
        shift: "day".into(),
        staff_role: staff_role.map(Into::into),
        joined_at: local("2025-01-01 09:00:00"),
    }
}

/// The published KPI sheet `id` of `month` (`"YYYY-MM"`) for `shift`, named `Sheet {id}`.
#[must_use]
pub fn sheet(id: i64, month: &str, shift: &str) -> Sheet {
    Sheet {
        id,
        name: format!("Sheet {id}"),
        month: self::month(month),
        shift: shift.into(),
        updated_at: local("2026-11-20 18:00:00"),
    }
}

/// Row `row` of a KPI sheet, of `agent` (`None`: a row naming nobody the roster knows),
/// `Operator {row}`, at `kpi_percent` with `payout`: a KPI sum of 1000, a bonus of 10 and one
/// metric (AHT).
#[must_use]
pub fn row(row: u32, agent: Option<&str>, kpi_percent: f64, payout: Option<f64>) -> KpiOperatorRow {
    KpiOperatorRow {
        agent_number: agent.map(self::agent),
        name: format!("Operator {row}"),
        row,
        kpi_percent,
        kpi_sum: 1000.0,
        fiksa: None,
        bonus: Some(10.0),
        fine: None,
        payout,
        metrics: vec![Metric {
            name: "AHT".into(),
            value: 182.123_456,
            ratio: Some(0.951_23),
            kpi: 500.005,
        }],
    }
}

fn local(text: &str) -> LocalDateTime {
    LocalDateTime::parse(text).expect("a local time YYYY-MM-DD HH:MM:SS")
}

/// A [`Clock`] the test sets and moves. Its constructors hand out an `Arc`, because the test
/// keeps one handle to move it while the code under test reads another.
pub struct TestClock {
    /// What it reads before it is moved.
    base: Base,
    /// How far it has been moved since.
    moved: Mutex<Duration>,
}

enum Base {
    At(OffsetDateTime),
    /// Running with another clock: a test against real servers cannot stop time, only move it
    /// forward (quota windows are UTC minutes, and a test cannot wait for the next one).
    Following(Arc<dyn Clock>),
}

impl Base {
    fn now(&self) -> OffsetDateTime {
        match self {
            Self::At(now) => *now,
            Self::Following(clock) => clock.now(),
        }
    }
}

impl TestClock {
    /// A clock standing still at `now` until the test moves it.
    #[must_use]
    pub fn at(now: OffsetDateTime) -> Arc<Self> {
        Self::on(Base::At(now))
    }

    /// A clock running with `clock` (the system's, say), ahead of it by however far the test
    /// moves it.
    #[must_use]
    pub fn following(clock: Arc<dyn Clock>) -> Arc<Self> {
        Self::on(Base::Following(clock))
    }

    fn on(base: Base) -> Arc<Self> {
        Arc::new(Self {
            base,
            moved: Mutex::new(Duration::ZERO),
        })
    }

    /// Makes it read `now` (and, following a clock, run on from there).
    pub fn set(&self, now: OffsetDateTime) {
        *self.moved() = now - self.base.now();
    }

    /// Moves it forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        *self.moved() += by;
    }

    /// Moves it to the first instant of the next UTC minute, the start of a quota window.
    pub fn advance_to_next_minute(&self) {
        let mut moved = self.moved();
        let now = self.base.now() + *moved;
        let into_minute = Duration::seconds(i64::from(now.second()))
            + Duration::nanoseconds(i64::from(now.nanosecond()));
        *moved += Duration::MINUTE - into_minute;
    }

    fn moved(&self) -> std::sync::MutexGuard<'_, Duration> {
        // The guarded value is one duration, whole whatever panicked while it was held.
        self.moved.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Clock for TestClock {
    fn now(&self) -> OffsetDateTime {
        self.base.now() + *self.moved()
    }
}

/// When [`live_example`] was taken.
pub const LIVE_AS_OF: OffsetDateTime = time::macros::datetime!(2026-11-21 09:15:22.5 +05:00);

/// A queue of a live snapshot: `waiting` callers, the oldest of them waiting `oldest`.
pub fn waiting(name: &str, waiting: u32, oldest: Option<f64>) -> QueueNow {
    QueueNow {
        queue: queue(name),
        waiting,
        oldest_wait_seconds: oldest,
    }
}

/// An agent of a live snapshot, in `state` since `since`, on a call of `on`.
pub fn agent_now(
    number: &str,
    state: AgentState,
    since: OffsetDateTime,
    on: Option<&str>,
) -> AgentNow {
    AgentNow {
        agent_number: agent(number),
        state,
        since,
        queue: on.map(queue),
    }
}

/// docs/behaviour.md's live worked example, at [`LIVE_AS_OF`]: three queues (one nobody
/// waits in), agents in every state, one on a call of a queue the platform did not list,
/// one not on the roster ([`live_roster`]).
pub fn live_example() -> LiveSnapshot {
    LiveSnapshot::new(
        LIVE_AS_OF,
        vec![
            waiting("support", 2, Some(12.346)),
            waiting("billing", 0, None),
            waiting("sales", 3, Some(41.5)),
            waiting("corporate", 2, Some(7.0)),
        ],
        vec![
            agent_now(
                "103",
                AgentState::OnCall,
                time::macros::datetime!(2026-11-21 09:14:00 +05:00),
                Some("sales"),
            ),
            agent_now(
                "101",
                AgentState::Available,
                time::macros::datetime!(2026-11-21 09:10:00 +05:00),
                None,
            ),
            agent_now(
                "102",
                AgentState::OnCall,
                time::macros::datetime!(2026-11-21 04:13:00.25 UTC),
                Some("vip"),
            ),
            agent_now(
                "99",
                AgentState::WrapUp,
                time::macros::datetime!(2026-11-21 09:15:00 +05:00),
                Some("sales"),
            ),
            agent_now(
                "104",
                AgentState::Away,
                time::macros::datetime!(2026-11-21 08:00:00 +05:00),
                None,
            ),
            agent_now(
                "105",
                AgentState::OnCall,
                time::macros::datetime!(2026-11-21 09:15:10 +05:00),
                None,
            ),
        ],
    )
    .expect("the worked example keeps the snapshot's rules")
}

/// The roster of [`live_example`].
pub fn live_roster() -> Vec<Operator> {
    vec![
        operator("101", "Aziza Karimova", None),
        operator("102", "Bobur Aliyev", None),
        operator("103", "Dilnoza Rashidova", None),
        operator("99", "Sardor Umarov", Some("supervisor")),
        operator("105", "Kamola Yusupova", None),
    ]
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn a_clock_at_an_instant_stands_still_until_set_or_advanced() {
        let clock = TestClock::at(datetime!(2026-11-21 06:15:30 UTC));
        assert_eq!(clock.now(), datetime!(2026-11-21 06:15:30 UTC));
        clock.advance(std::time::Duration::from_secs(61));
        assert_eq!(clock.now(), datetime!(2026-11-21 06:16:31 UTC));
        clock.set(datetime!(2026-11-21 06:15:00 UTC));
        assert_eq!(
            clock.now(),
            datetime!(2026-11-21 06:15:00 UTC),
            "set moves it back too"
        );
        clock.advance_to_next_minute();
        assert_eq!(clock.now(), datetime!(2026-11-21 06:16:00 UTC));
        clock.advance_to_next_minute();
        assert_eq!(
            clock.now(),
            datetime!(2026-11-21 06:17:00 UTC),
            "always the next one"
        );
    }

    #[test]
    fn a_following_clock_runs_with_its_base_ahead_by_what_it_was_moved() {
        let base = TestClock::at(datetime!(2026-11-21 06:15:30.25 UTC));
        let followed: Arc<dyn Clock> = base.clone();
        let clock = TestClock::following(followed);
        assert_eq!(clock.now(), base.now());
        clock.advance_to_next_minute();
        assert_eq!(clock.now(), datetime!(2026-11-21 06:16:00 UTC));
        base.advance(std::time::Duration::from_secs(5));
        assert_eq!(
            clock.now(),
            datetime!(2026-11-21 06:16:05 UTC),
            "it runs on"
        );
        clock.set(datetime!(2026-11-22 00:00 UTC));
        base.advance(std::time::Duration::from_secs(1));
        assert_eq!(clock.now(), datetime!(2026-11-22 00:00:01 UTC));
    }
}
