//! Deterministic synthetic data for `callstats demo`, `callstats sim`, `callstats seed --demo`
//! and tests: the call platform's records (here) and the portal's data set ([`portal`]), the
//! second scoring calls of the first.
//!
//! A given seed, calls-per-day figure and date always give the same calls. The shapes follow a
//! Tashkent call centre: quiet nights, a morning and an afternoon peak, fewer calls at the
//! weekend (fewest on Sunday), about 70 % inbound, and durations with a long tail. Agents are
//! the demo roster's `101` to `180`.
//!
//! Inbound calls come through four named queues and wait before an agent answers: the busier
//! the hour, the likelier a wait and the longer it is. Each caller has a patience and hangs
//! up unanswered when the wait outlasts it, so abandonment rises with the wait. The figures
//! come out as a real centre's do: over a week, 78 % answered within 20 s (lower at the
//! peaks) and 5.6 % abandoned. Outbound calls have neither a queue nor a wait.
//!
//! The platform has no call that starts after the present instant: today is partial (the calls
//! that have started by now), later days are empty. The present is handed in (a [`Clock`] for
//! [`SyntheticPlatform`], an instant for [`Generator::calls_started_by`]), so tests fix it.
//!
//! It also shows what is happening now ([`Generator::live_at`]): the callers waiting and the
//! agents' states, read off the same calls (the `live` module says how).
//!
//! Depends on the domain and the store's fixture format only: no I/O, no clock of its own, no
//! OS randomness.

mod live;
pub mod portal;
mod rng;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::call_day::FetchedCalls;
use callstats_domain::live::{LiveError, LiveRuleBroken, LiveSnapshot};
use callstats_domain::model::{AgentNumber, CallRecord, QueueName};
use callstats_domain::params::Direction;
use callstats_domain::ports::{CallPlatform, Clock, UpstreamError};
use callstats_domain::tz;
use callstats_store::fixture::Fixture;
use time::{Duration, OffsetDateTime, PrimitiveDateTime, Time, Weekday};

use crate::rng::Rng;

/// Seed of the demo and of `callstats sim` when none is given.
pub const DEFAULT_SEED: u64 = 42;
/// Calls on an ordinary weekday when no figure is given.
pub const DEFAULT_CALLS_PER_DAY: u32 = 5_000;

/// First and last agent number of the demo roster.
const FIRST_AGENT: u32 = 101;
const AGENT_COUNT: u32 = 80;

/// Relative call volume per Tashkent hour, 00:00 to 23:00.
const HOUR_WEIGHTS: [u32; 24] = [
    3, 2, 1, 1, 1, 2, 6, 18, 45, 72, 90, 92, 70, 64, 82, 88, 80, 64, 46, 30, 20, 13, 8, 5,
];

/// The queues of inbound calls, and the share of calls each offers.
pub const QUEUES: [&str; 4] = ["support", "sales", "billing", "corporate"];
const QUEUE_WEIGHTS: [u32; 4] = [45, 30, 17, 8];

/// The heaviest hour's weight in [`HOUR_WEIGHTS`]: an hour's load is its weight over this.
const PEAK_HOUR_WEIGHT: u32 = 92;
/// Mean patience of a caller in seconds: a caller hangs up once the wait exceeds theirs.
const MEAN_PATIENCE_SECONDS: f64 = 200.0;

/// Agent numbers of the demo roster: `101` to `180`.
#[must_use]
pub fn demo_agent_numbers() -> Vec<AgentNumber> {
    (FIRST_AGENT..FIRST_AGENT + AGENT_COUNT)
        .filter_map(|n| AgentNumber::new(&n.to_string()).ok())
        .collect()
}

/// One generated call, with everything the upstream contract carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticCall {
    /// Unique across days: `c-YYYYMMDD-NNNNN`, numbered in start order.
    pub id: String,
    pub direction: Direction,
    /// `None` for unanswered inbound calls.
    pub agent_number: Option<AgentNumber>,
    /// Start in Tashkent time (`+05:00`).
    pub started_at: OffsetDateTime,
    /// Talk time of an answered call; time in the queue of an unanswered one.
    pub duration_seconds: f64,
    /// Seconds in the queue until answered or abandoned; `None` for outbound calls.
    pub wait_seconds: Option<f64>,
    /// One of [`QUEUES`] for inbound calls; `None` for outbound calls.
    pub queue: Option<&'static str>,
}

impl SyntheticCall {
    /// The domain's view of the call.
    #[must_use]
    pub fn to_record(&self) -> CallRecord {
        CallRecord {
            direction: self.direction,
            agent_number: self.agent_number.clone(),
            started_at: self.started_at.unix_timestamp(),
            duration_seconds: self.duration_seconds,
            wait_seconds: self.wait_seconds,
            queue: self.queue.and_then(|queue| QueueName::new(queue).ok()),
        }
    }
}

/// The deterministic generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    calls_per_day: u32,
}

impl Default for Generator {
    fn default() -> Self {
        Self::new(DEFAULT_SEED, DEFAULT_CALLS_PER_DAY)
    }
}

impl Generator {
    /// `calls_per_day` is the volume of an ordinary weekday; weekends get less.
    #[must_use]
    pub const fn new(seed: u64, calls_per_day: u32) -> Self {
        Self {
            seed,
            calls_per_day,
        }
    }

    #[must_use]
    pub const fn seed(&self) -> u64 {
        self.seed
    }

    #[must_use]
    pub const fn calls_per_day(&self) -> u32 {
        self.calls_per_day
    }

    /// Every call that starts on `day` (Tashkent), sorted by start: the whole day's schedule,
    /// whether or not it has happened yet. What the platform serves is
    /// [`Generator::calls_started_by`].
    #[must_use]
    pub fn calls_on(&self, day: Day) -> Vec<SyntheticCall> {
        let mut rng = Rng::new(self.seed, &format!("calls-{day}"));
        let count = self.volume(day.date().weekday(), &mut rng);
        let midnight = local_midnight(day);
        let agents = demo_agent_numbers();
        let agent_weights: Vec<u32> = (0..AGENT_COUNT)
            .map(|i| agent_activity(self.seed, i))
            .collect();

        // How busy the day is against an ordinary weekday: a Monday's peak waits longer than a
        // Sunday's.
        let day_load = f64::from(count) / f64::from(self.calls_per_day.max(1));

        let mut calls: Vec<Drawn> = (0..count)
            .map(|_| {
                let hour = pick_weighted(&HOUR_WEIGHTS, &mut rng);
                let second = i64::from(hour) * 3600 + i64::from(rng.below(3600_u32));
                let direction = if rng.below(100_u32) < 70 {
                    Direction::Inbound
                } else {
                    Direction::Outbound
                };
                let queued = (direction == Direction::Inbound).then(|| {
                    let queue = QUEUES
                        .get(usize::try_from(pick_weighted(&QUEUE_WEIGHTS, &mut rng)).unwrap_or(0))
                        .copied()
                        .unwrap_or("support");
                    let load = HOUR_WEIGHTS
                        .get(usize::try_from(hour).unwrap_or(0))
                        .map_or(0.0, |weight| {
                            f64::from(*weight) / f64::from(PEAK_HOUR_WEIGHT)
                        });
                    let wait = queue_wait(load * day_load, &mut rng);
                    let patience = exponential(MEAN_PATIENCE_SECONDS, &mut rng);
                    (queue, wait, patience)
                });
                // The caller hangs up when the wait outlasts their patience, having waited
                // that long.
                let abandoned = queued
                    .and_then(|(_, wait, patience)| (patience < wait).then(|| tenths(patience)));
                let agent = if abandoned.is_some() {
                    None
                } else {
                    agents
                        .get(usize::try_from(pick_weighted(&agent_weights, &mut rng)).unwrap_or(0))
                        .cloned()
                };
                let duration = abandoned.unwrap_or_else(|| talk_time(direction, &mut rng));
                Drawn {
                    second,
                    direction,
                    agent,
                    duration,
                    wait: queued.map(|(_, wait, _)| abandoned.unwrap_or_else(|| tenths(wait))),
                    queue: queued.map(|(queue, _, _)| queue),
                }
            })
            .collect();
        calls.sort_by_key(|c| c.second);

        let date = day.date();
        let stamp = format!(
            "{:04}{:02}{:02}",
            date.year(),
            u8::from(date.month()),
            date.day()
        );
        calls
            .into_iter()
            .zip(1_u32..)
            .map(|(call, n)| SyntheticCall {
                id: format!("c-{stamp}-{n:05}"),
                direction: call.direction,
                agent_number: call.agent,
                started_at: midnight + Duration::seconds(call.second),
                duration_seconds: call.duration,
                wait_seconds: call.wait,
                queue: call.queue,
            })
            .collect()
    }

    /// Every call of every day of the range, in start order, whether or not it has happened
    /// yet.
    #[must_use]
    pub fn calls_in(&self, range: DateRange) -> Vec<SyntheticCall> {
        range
            .iter_days()
            .flat_map(|day| self.calls_on(day))
            .collect()
    }

    /// The calls of `day` that have started by `now` (a call starting at `now` has): all of a
    /// day that is over, the part of today up to `now`, none of a day that has not begun (not
    /// even generated).
    #[must_use]
    pub fn calls_started_by(&self, day: Day, now: OffsetDateTime) -> Vec<SyntheticCall> {
        if local_midnight(day) > now {
            return Vec::new();
        }
        let mut calls = self.calls_on(day);
        let started = calls.partition_point(|call| call.started_at <= now);
        calls.truncate(started);
        calls
    }

    /// [`Generator::calls_started_by`] for every day of the range, in start order.
    #[must_use]
    pub fn calls_in_started_by(&self, range: DateRange, now: OffsetDateTime) -> Vec<SyntheticCall> {
        range
            .iter_days()
            .take_while(|day| local_midnight(*day) <= now)
            .flat_map(|day| self.calls_started_by(day, now))
            .collect()
    }

    /// The day's volume: the weekday figure scaled for the day of the week, ±5 % noise.
    fn volume(&self, weekday: Weekday, rng: &mut Rng) -> u32 {
        let percent: u64 = match weekday {
            Weekday::Monday => 110,
            Weekday::Tuesday => 104,
            Weekday::Wednesday | Weekday::Thursday => 100,
            Weekday::Friday => 96,
            Weekday::Saturday => 68,
            Weekday::Sunday => 42,
        };
        let noise = 95 + u64::from(rng.below(11_u32));
        u32::try_from(u64::from(self.calls_per_day) * percent * noise / 10_000).unwrap_or(u32::MAX)
    }
}

/// The generator with the days it generated last kept, so that paging through a day, or
/// asking for the live figures every few seconds, does not generate the day again.
pub struct CachedGenerator {
    generator: Generator,
    days: Mutex<VecDeque<(Day, Arc<[SyntheticCall]>)>>,
}

/// The generator only: a kept day is thousands of calls.
impl std::fmt::Debug for CachedGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedGenerator")
            .field("generator", &self.generator)
            .finish_non_exhaustive()
    }
}

impl CachedGenerator {
    /// Days kept, the oldest given up first: a week and the day before it.
    pub const KEPT_DAYS: usize = 8;

    #[must_use]
    pub fn new(generator: Generator) -> Self {
        Self {
            generator,
            days: Mutex::new(VecDeque::with_capacity(Self::KEPT_DAYS)),
        }
    }

    #[must_use]
    pub const fn generator(&self) -> Generator {
        self.generator
    }

    /// [`Generator::calls_on`], kept.
    pub fn calls_on(&self, day: Day) -> Arc<[SyntheticCall]> {
        // The lock is a plain list, valid whatever a panicking holder left in it.
        let kept = |days: &VecDeque<(Day, Arc<[SyntheticCall]>)>| {
            days.iter()
                .find(|(kept, _)| *kept == day)
                .map(|(_, calls)| Arc::clone(calls))
        };
        if let Some(calls) = kept(&self.days.lock().unwrap_or_else(PoisonError::into_inner)) {
            return calls;
        }
        let calls: Arc<[SyntheticCall]> = self.generator.calls_on(day).into();
        let mut days = self.days.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(calls) = kept(&days) {
            return calls;
        }
        if days.len() >= Self::KEPT_DAYS {
            days.pop_front();
        }
        days.push_back((day, Arc::clone(&calls)));
        calls
    }

    /// [`Generator::live_at`] from the kept days.
    ///
    /// # Errors
    /// As [`Generator::live_at`].
    pub fn live_at(&self, now: OffsetDateTime) -> Result<LiveSnapshot, LiveRuleBroken> {
        let today = Day::of(now);
        let before = today.plus_days(-1).map(|day| self.calls_on(day));
        self.generator
            .live_from(before.as_deref().unwrap_or(&[]), &self.calls_on(today), now)
    }
}

/// A call as drawn, before it is numbered.
struct Drawn {
    second: i64,
    direction: Direction,
    agent: Option<AgentNumber>,
    duration: f64,
    wait: Option<f64>,
    queue: Option<&'static str>,
}

/// The time an inbound call would wait for an agent at `load` (1: the peak hour of an
/// ordinary weekday): at low load most callers reach an agent at once; the busier the hour,
/// the likelier a wait (as Erlang C has it) and the longer it is.
fn queue_wait(load: f64, rng: &mut Rng) -> f64 {
    let load = load.clamp(0.0, 1.5);
    let ring = rng.between(0.5, 4.0);
    if rng.unit() < 0.1 + 0.5 * load {
        ring + exponential(5.0 + 20.0 * load, rng)
    } else {
        ring
    }
}

/// An exponential draw with mean `mean`.
fn exponential(mean: f64, rng: &mut Rng) -> f64 {
    -mean * (1.0 - rng.unit()).ln()
}

/// Seconds rounded to tenths, at most a day.
fn tenths(seconds: f64) -> f64 {
    ((seconds * 10.0).round() / 10.0).clamp(0.0, 86_400.0)
}

/// The instant `day` begins in Tashkent.
fn local_midnight(day: Day) -> OffsetDateTime {
    PrimitiveDateTime::new(day.date(), Time::MIDNIGHT).assume_offset(tz::TASHKENT)
}

/// Some agents take more calls than others: a fixed weight of 50..=149 per agent and seed.
fn agent_activity(seed: u64, index: u32) -> u32 {
    50 + Rng::new(seed, &format!("agent-{index}")).below(100_u32)
}

/// Talk time with a long tail: log-normal around 2.5 minutes inbound and 1.5 outbound,
/// 5 seconds to 1 hour, rounded to tenths.
fn talk_time(direction: Direction, rng: &mut Rng) -> f64 {
    let median: f64 = if direction == Direction::Inbound {
        150.0
    } else {
        90.0
    };
    // Box–Muller: a standard normal from two uniforms.
    let (u1, u2) = (rng.unit().max(f64::MIN_POSITIVE), rng.unit());
    let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let seconds = (median.ln() + 0.8 * normal).exp().clamp(5.0, 3600.0);
    (seconds * 10.0).round() / 10.0
}

/// An index drawn with probability proportional to its weight.
fn pick_weighted(weights: &[u32], rng: &mut Rng) -> u32 {
    let total: u32 = weights.iter().sum();
    let mut target = rng.below(total.max(1));
    for (index, weight) in (0_u32..).zip(weights) {
        if target < *weight {
            return index;
        }
        target -= weight;
    }
    0
}

/// The generator plugged in directly as the call-platform port (no HTTP), for `callstats demo`:
/// the calls that have started by the clock's present, none later, and the live figures of
/// that present.
#[derive(Clone)]
pub struct SyntheticPlatform {
    generator: Arc<CachedGenerator>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for SyntheticPlatform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntheticPlatform")
            .field("generator", &self.generator)
            .finish_non_exhaustive()
    }
}

impl SyntheticPlatform {
    /// `clock` says what the present is: no call that starts after it is served.
    #[must_use]
    pub fn new(generator: Generator, clock: Arc<dyn Clock>) -> Self {
        Self {
            generator: Arc::new(CachedGenerator::new(generator)),
            clock,
        }
    }
}

#[async_trait]
impl CallPlatform for SyntheticPlatform {
    async fn calls(&self, range: DateRange) -> Result<FetchedCalls, UpstreamError> {
        Ok(self
            .generator
            .generator()
            .calls_in_started_by(range, self.clock.now())
            .iter()
            .map(SyntheticCall::to_record)
            .collect())
    }

    async fn live(&self) -> Result<LiveSnapshot, LiveError> {
        self.generator
            .live_at(self.clock.now())
            .map_err(|broken| UpstreamError::unusable(broken.to_string()).into())
    }
}

/// The portal data set for `seed` around `anchor`, on the default platform's agents and with
/// checklist scores on the very calls it serves (its default seed and volume).
#[must_use]
pub fn portal_fixture(seed: u64, anchor: Day) -> Fixture {
    let platform = Generator::default();
    portal::data_set(seed, anchor, &demo_agent_numbers(), |day| {
        platform
            .calls_on(day)
            .into_iter()
            .filter_map(|call| {
                Some(portal::ScorableCall {
                    agent_number: call.agent_number?,
                    id: call.id,
                    started_at: call.started_at,
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use callstats_domain::testing::TestClock;
    use time::macros::datetime;

    use super::*;

    /// The present of these tests: a Wednesday afternoon in Tashkent.
    const NOW: OffsetDateTime = datetime!(2026-11-18 14:30:00 +05:00);

    fn day(raw: &str) -> Day {
        Day::parse(raw).unwrap()
    }

    fn records(calls: &[SyntheticCall]) -> Vec<CallRecord> {
        calls.iter().map(SyntheticCall::to_record).collect()
    }

    fn week() -> Vec<Vec<SyntheticCall>> {
        // 2026-11-16 is a Monday.
        let range = DateRange::up_to_31_days(day("2026-11-16"), day("2026-11-22")).unwrap();
        range
            .iter_days()
            .map(|d| Generator::default().calls_on(d))
            .collect()
    }

    #[test]
    fn same_seed_and_day_give_the_same_calls() {
        let a = Generator::new(7, 500).calls_on(day("2026-11-02"));
        assert_eq!(a, Generator::new(7, 500).calls_on(day("2026-11-02")));
        assert_ne!(a, Generator::new(8, 500).calls_on(day("2026-11-02")));
        assert_ne!(a, Generator::new(7, 500).calls_on(day("2026-11-03")));
    }

    #[test]
    fn weekday_volume_is_near_the_figure_and_sunday_is_quietest() {
        let counts: Vec<usize> = week().iter().map(Vec::len).collect();
        assert!((5_000..=5_900).contains(&counts[0]), "Monday {counts:?}");
        let sunday = counts[6];
        assert!(counts.iter().take(6).all(|c| *c > sunday), "{counts:?}");
        assert!(sunday < 2_500, "{counts:?}");
    }

    #[test]
    fn nights_are_quiet_and_daytime_peaks_morning_and_afternoon() {
        let mut per_hour = [0_usize; 24];
        for call in week().iter().flatten() {
            per_hour[usize::from(call.started_at.hour())] += 1;
        }
        let night: usize = per_hour[0..6].iter().sum();
        assert!(night * 20 < per_hour[11] * 6, "{per_hour:?}");
        assert!(
            per_hour[11] > per_hour[13] && per_hour[15] > per_hour[13],
            "{per_hour:?}"
        );
    }

    #[test]
    fn calls_are_sorted_tashkent_local_on_their_day_with_unique_ids() {
        let calls = week().concat();
        let ids: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), calls.len());
        for day_calls in week() {
            assert!(
                day_calls
                    .windows(2)
                    .all(|w| w[0].started_at <= w[1].started_at)
            );
            let first = &day_calls[0];
            assert_eq!(first.started_at.offset(), tz::TASHKENT);
            assert!(
                day_calls
                    .iter()
                    .all(|c| c.started_at.date() == first.started_at.date())
            );
        }
        assert!(calls[0].id.starts_with("c-20261116-"));
    }

    #[test]
    fn mix_of_directions_unanswered_calls_and_long_tailed_durations() {
        let calls = week().concat();
        let n = calls.len();
        let inbound = calls
            .iter()
            .filter(|c| c.direction == Direction::Inbound)
            .count();
        assert!(
            (n * 65 / 100..n * 75 / 100).contains(&inbound),
            "{inbound}/{n}"
        );
        let unanswered: Vec<_> = calls.iter().filter(|c| c.agent_number.is_none()).collect();
        assert!(
            !unanswered.is_empty() && unanswered.iter().all(|c| c.direction == Direction::Inbound)
        );
        let mut talk: Vec<f64> = calls
            .iter()
            .filter(|c| c.agent_number.is_some())
            .map(|c| c.duration_seconds)
            .collect();
        talk.sort_by(f64::total_cmp);
        let median = talk[talk.len() / 2];
        let p99 = talk[talk.len() * 99 / 100];
        assert!((90.0..200.0).contains(&median), "median {median}");
        assert!(p99 > 4.0 * median, "p99 {p99} vs median {median}");
        assert!(talk.iter().all(|d| (5.0..=3600.0).contains(d)));
    }

    #[test]
    fn inbound_calls_wait_in_named_queues_and_look_like_a_real_centre_s() {
        let calls = week().concat();
        let inbound: Vec<&SyntheticCall> = calls
            .iter()
            .filter(|c| c.direction == Direction::Inbound)
            .collect();
        assert!(
            inbound
                .iter()
                .all(|c| c.wait_seconds.is_some() && c.queue.is_some_and(|q| QUEUES.contains(&q)))
        );
        assert!(
            calls
                .iter()
                .filter(|c| c.direction == Direction::Outbound)
                .all(|c| c.wait_seconds.is_none() && c.queue.is_none())
        );
        let used: HashSet<&str> = inbound.iter().filter_map(|c| c.queue).collect();
        assert_eq!(used.len(), QUEUES.len());

        let count = |n: usize| f64::from(u32::try_from(n).unwrap());
        let share = |part: usize, whole: usize| 100.0 * count(part) / count(whole);
        let within = |calls: &[&SyntheticCall]| {
            calls
                .iter()
                .filter(|c| c.agent_number.is_some() && c.wait_seconds.unwrap() <= 20.0)
                .count()
        };
        let level = share(within(&inbound), inbound.len());
        assert!((70.0..=90.0).contains(&level), "service level {level:.1} %");
        let lost = |calls: &[&SyntheticCall]| {
            share(
                calls.iter().filter(|c| c.agent_number.is_none()).count(),
                calls.len(),
            )
        };
        let abandon_rate = lost(&inbound);
        assert!(
            (1.5..=8.0).contains(&abandon_rate),
            "abandonment {abandon_rate:.1} %"
        );

        // Busier hours wait longer and lose more callers.
        let in_hours = |hours: &[u8]| -> Vec<&SyntheticCall> {
            inbound
                .iter()
                .copied()
                .filter(|c| hours.contains(&c.started_at.hour()))
                .collect()
        };
        let (peak, quiet) = (in_hours(&[10, 11]), in_hours(&[7, 19, 20]));
        let mean_wait = |calls: &[&SyntheticCall]| {
            calls.iter().map(|c| c.wait_seconds.unwrap()).sum::<f64>() / count(calls.len())
        };
        assert!(
            mean_wait(&peak) > 1.5 * mean_wait(&quiet),
            "{} vs {}",
            mean_wait(&peak),
            mean_wait(&quiet)
        );
        assert!(
            lost(&peak) > lost(&quiet),
            "{} vs {}",
            lost(&peak),
            lost(&quiet)
        );
        // An abandoned caller's wait is the time they held on.
        assert!(
            inbound
                .iter()
                .filter(|c| c.agent_number.is_none())
                .all(|c| c.wait_seconds == Some(c.duration_seconds))
        );
    }

    #[test]
    fn agents_are_the_demo_roster() {
        let roster: HashSet<AgentNumber> = demo_agent_numbers().into_iter().collect();
        assert_eq!(roster.len(), 80);
        let used: HashSet<AgentNumber> = week()
            .concat()
            .into_iter()
            .filter_map(|c| c.agent_number)
            .collect();
        assert!(used.is_subset(&roster));
        assert_eq!(used.len(), 80, "every agent takes calls over a week");
    }

    #[tokio::test]
    async fn platform_returns_the_generators_calls_for_the_range() {
        let range = DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-03")).unwrap();
        let generator = Generator::new(3, 200);
        let records = SyntheticPlatform::new(generator, TestClock::at(NOW))
            .calls(range)
            .await
            .unwrap()
            .records()
            .collect::<Vec<_>>();
        let expected: Vec<CallRecord> = generator
            .calls_in(range)
            .iter()
            .map(SyntheticCall::to_record)
            .collect();
        assert_eq!(records, expected);
        let (from, to) = range.unix_window();
        assert!(records.iter().all(|r| (from..to).contains(&r.started_at)));
    }

    #[test]
    fn no_call_starts_after_now_today_is_partial_and_later_days_are_empty() {
        let generator = Generator::default();
        let (yesterday, today, tomorrow) =
            (day("2026-11-17"), day("2026-11-18"), day("2026-11-19"));

        // A day that is over: all of it.
        let over = generator.calls_started_by(yesterday, NOW);
        assert!(
            over == generator.calls_on(yesterday),
            "{} calls",
            over.len()
        );

        // Today: the first calls of the day, up to now and none later.
        let whole = generator.calls_on(today);
        let partial = generator.calls_started_by(today, NOW);
        let started: Vec<SyntheticCall> = whole
            .iter()
            .filter(|call| call.started_at <= NOW)
            .cloned()
            .collect();
        assert!(
            partial == started,
            "{} calls served, {} started by now",
            partial.len(),
            started.len()
        );
        assert!(
            !partial.is_empty() && partial.len() < whole.len(),
            "{} of {} calls by 14:30",
            partial.len(),
            whole.len()
        );
        // A call that starts exactly now has started; a nanosecond earlier it has not.
        let call = &whole[whole.len() / 2];
        assert!(
            generator
                .calls_started_by(today, call.started_at)
                .contains(call)
        );
        let just_before = call.started_at - Duration::nanoseconds(1);
        assert!(
            !generator
                .calls_started_by(today, just_before)
                .contains(call)
        );

        // Later days: nothing, up to the calendar's last day.
        for later in [tomorrow, day("9999-12-31")] {
            let calls = generator.calls_started_by(later, NOW);
            assert!(calls.is_empty(), "{later}: {} calls", calls.len());
        }

        // A range across now: the days that are over, then today's part, then nothing.
        let range = DateRange::up_to_31_days(yesterday, day("2026-11-30")).unwrap();
        let calls = generator.calls_in_started_by(range, NOW);
        assert!(
            calls == [over, partial].concat(),
            "{} calls, the last {:?}",
            calls.len(),
            calls.last()
        );
    }

    #[tokio::test]
    async fn the_platform_serves_no_call_that_starts_after_its_clock_s_present() {
        let generator = Generator::default();
        let platform = SyntheticPlatform::new(generator, TestClock::at(NOW));
        let one_day = |raw: &str| DateRange::up_to_31_days(day(raw), day(raw)).unwrap();

        let today: Vec<CallRecord> = platform
            .calls(one_day("2026-11-18"))
            .await
            .unwrap()
            .records()
            .collect();
        assert!(!today.is_empty());
        assert!(today.iter().all(|r| r.started_at <= NOW.unix_timestamp()));
        assert!(today == records(&generator.calls_started_by(day("2026-11-18"), NOW)));
        assert!(today.len() < generator.calls_on(day("2026-11-18")).len());

        for later in ["2026-11-19", "2026-12-01", "9999-12-31"] {
            let calls = platform.calls(one_day(later)).await.unwrap();
            assert!(calls.is_empty(), "{later}: {} calls", calls.len());
        }

        // The clock moves on: so does what the platform serves.
        let tomorrow_noon = datetime!(2026-11-19 12:00:00 +05:00);
        let later = SyntheticPlatform::new(generator, TestClock::at(tomorrow_noon));
        let range = DateRange::up_to_31_days(day("2026-11-18"), day("2026-11-19")).unwrap();
        let both: Vec<CallRecord> = later.calls(range).await.unwrap().records().collect();
        assert!(both == records(&generator.calls_in_started_by(range, tomorrow_noon)));
        assert!(both.len() > generator.calls_on(day("2026-11-18")).len());
        assert!(
            later
                .calls(one_day("2026-11-18"))
                .await
                .unwrap()
                .records()
                .collect::<Vec<_>>()
                == records(&generator.calls_on(day("2026-11-18")))
        );
    }

    #[tokio::test]
    async fn the_platform_serves_the_live_figures_of_its_clock_s_present() {
        let generator = Generator::default();
        let clock = TestClock::at(NOW);
        let platform = SyntheticPlatform::new(generator, clock.clone());
        let live = platform.live().await.unwrap();
        assert_eq!(live, generator.live_at(NOW).unwrap());
        clock.advance(std::time::Duration::from_secs(90));
        let later = platform.live().await.unwrap();
        assert_eq!(later.as_of(), NOW + Duration::seconds(90));
        assert_eq!(later, generator.live_at(later.as_of()).unwrap());
    }

    #[test]
    fn the_portal_roster_is_the_platform_s_agents_and_its_scores_are_on_the_platform_s_calls() {
        let anchor = day("2026-11-21");
        let fixture = portal_fixture(42, anchor);
        let roster: Vec<_> = fixture
            .operators
            .iter()
            .map(|o| o.agent_number.clone())
            .collect();
        assert_eq!(roster, demo_agent_numbers());

        let mut calls = std::collections::HashMap::new();
        for back in 0..30 {
            for call in Generator::default().calls_on(anchor.plus_days(-back).unwrap()) {
                calls.insert(call.id.clone(), call);
            }
        }
        assert!(
            fixture.call_scores.len() > 1000,
            "{}",
            fixture.call_scores.len()
        );
        for score in &fixture.call_scores {
            let call = &calls[&score.call_id];
            assert_eq!(call.agent_number.as_ref(), Some(&score.agent_number));
            assert_eq!(call.started_at, score.started_at);
        }
    }
}
