//! The call-day store against a fake call platform that counts and times its fetches, the
//! in-process tier, and a fake shared tier with locks (two stores on it are two replicas).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests: a panic is a failed test"
)]

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use callstats_domain::call_day::FetchedCalls;
use callstats_domain::error::cause_chain;
use callstats_domain::model::{AgentNumber, CallRecord};
use callstats_domain::params::Direction;
use callstats_domain::testing::TestClock;
use callstats_in_process::{MemoryCallDays, MemoryQuota};
use time::OffsetDateTime;
use time::macros::datetime;

use callstats_domain::limits::DayBudget;

use super::*;

/// 11:15 in Tashkent on 2026-11-21.
const NOW: OffsetDateTime = datetime!(2026-11-21 06:15 UTC);

fn day(raw: &str) -> Day {
    Day::parse(raw).unwrap()
}

fn range(start: &str, end: &str) -> DateRange {
    DateRange::up_to_31_days(day(start), day(end)).unwrap()
}

/// A trend's range: up to 366 days.
fn range_of(start: &str, end: &str) -> DateRange {
    DateRange::up_to(day(start), day(end), 366).unwrap()
}

/// The calls of a day: the first and last second of the day (local), and one in between; the
/// platform writes them at +08:00, and sends a call of the next day too, as a sloppy upstream
/// might.
fn calls_of(day: Day) -> Vec<CallRecord> {
    let midnight = tz::local_midnight_unix(day.date());
    let call = |second: i64, agent: &str| CallRecord {
        direction: Direction::Inbound,
        agent_number: Some(AgentNumber::new(agent).unwrap()),
        started_at: midnight + second,
        duration_seconds: 30.5,
        wait_seconds: None,
        queue: None,
    };
    vec![
        call(0, "101"),
        call(10 * 3600, "102"),
        call(86_399, "101"),
        call(86_400, "103"),
    ]
}

/// A call platform that answers [`calls_of`] for one-day windows, after `delay`, and fails the
/// days in `failing`. It records every window asked and the most fetches in flight at once.
#[derive(Default)]
struct FakePlatform {
    delay: Mutex<Duration>,
    failing: Mutex<HashSet<Day>>,
    /// Days answered 429 (with this `Retry-After`) the next time they are asked.
    throttling: Mutex<HashMap<Day, Option<Duration>>>,
    /// Days whose answer is unusable (past a bound, say).
    unusable: Mutex<HashSet<Day>>,
    asked: Mutex<Vec<Day>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

impl FakePlatform {
    fn with_delay(delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            delay: Mutex::new(delay),
            ..Self::default()
        })
    }

    fn set_delay(&self, delay: Duration) {
        *self.delay.lock().unwrap() = delay;
    }

    /// The days asked, in the order they were asked.
    fn asked_in_order(&self) -> Vec<Day> {
        self.asked.lock().unwrap().clone()
    }

    /// The days asked from the `from`-th fetch on, sorted (concurrent fetches start in any
    /// order).
    fn asked_since(&self, from: usize) -> Vec<Day> {
        let mut asked = self.asked.lock().unwrap()[from..].to_vec();
        asked.sort();
        asked
    }

    fn asked(&self) -> Vec<Day> {
        self.asked_since(0)
    }

    fn fetches(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl CallPlatform for FakePlatform {
    async fn calls(&self, range: DateRange) -> Result<FetchedCalls, UpstreamError> {
        assert!(range.is_single_day(), "the store asks one day at a time");
        let day = range.start();
        self.asked.lock().unwrap().push(day);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        let delay = *self.delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.failing.lock().unwrap().contains(&day) {
            return Err(UpstreamError::new("HTTP 502"));
        }
        if let Some(retry_after) = self.throttling.lock().unwrap().remove(&day) {
            return Err(UpstreamError::throttled("HTTP 429", retry_after));
        }
        if self.unusable.lock().unwrap().contains(&day) {
            return Err(UpstreamError::unusable("more than 5000 agents"));
        }
        Ok(calls_of(day).into())
    }
}

/// A tier shared by replicas: days and locks in one map, like Redis.
#[derive(Default)]
struct SharedTier {
    days: Mutex<HashMap<Day, Arc<CallDay>>>,
    locks: Mutex<HashSet<Day>>,
}

/// A call platform with a bug: it panics.
struct Exploding;

#[async_trait]
impl CallPlatform for Exploding {
    async fn calls(&self, _range: DateRange) -> Result<FetchedCalls, UpstreamError> {
        panic!("platform exploded")
    }
}

#[async_trait]
impl CallDayCache for SharedTier {
    async fn get(&self, days: &[Day]) -> Vec<Option<Arc<CallDay>>> {
        let kept = self.days.lock().unwrap();
        days.iter().map(|day| kept.get(day).cloned()).collect()
    }

    async fn put(&self, day: Arc<CallDay>, _ttl: Duration) {
        self.days.lock().unwrap().insert(day.day(), day);
    }

    async fn try_lock(&self, day: Day, _ttl: Duration) -> bool {
        self.locks.lock().unwrap().insert(day)
    }

    async fn unlock(&self, day: Day) {
        self.locks.lock().unwrap().remove(&day);
    }
}

fn settings() -> CallDaySettings {
    CallDaySettings {
        fetch_timeout: Duration::from_secs(5),
        ..CallDaySettings::default()
    }
}

fn store(
    platform: &Arc<FakePlatform>,
    shared: Option<Arc<SharedTier>>,
    clock: &Arc<TestClock>,
    settings: CallDaySettings,
) -> CallDayStore {
    store_counting_on(
        platform,
        shared,
        Arc::new(MemoryQuota::new()),
        clock,
        settings,
    )
}

/// A store whose day budgets are counted in `budget` (two stores on one counter are two
/// replicas sharing Redis).
fn store_counting_on(
    platform: &Arc<FakePlatform>,
    shared: Option<Arc<SharedTier>>,
    budget: Arc<MemoryQuota>,
    clock: &Arc<TestClock>,
    settings: CallDaySettings,
) -> CallDayStore {
    let shared: Option<Arc<dyn CallDayCache>> = match shared {
        Some(tier) => Some(tier),
        None => None,
    };
    CallDayStore::new(
        platform.clone(),
        Arc::new(MemoryCallDays::new(16 << 20)),
        shared,
        budget,
        clock.clone(),
        settings,
    )
}

/// A partner's key.
fn key(id: i64) -> Requester {
    Requester::key(id)
}

fn counts(days: &[Arc<CallDay>]) -> Vec<(String, usize)> {
    days.iter()
        .map(|d| (d.day().to_string(), d.calls().len()))
        .collect()
}

#[tokio::test]
async fn a_range_is_its_days_each_fetched_as_its_own_window() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let days = store(&platform, None, &clock, settings())
        .days(range("2026-11-01", "2026-11-03"), &key(1))
        .await
        .unwrap();
    assert_eq!(
        platform.asked(),
        [day("2026-11-01"), day("2026-11-02"), day("2026-11-03")]
    );
    // The call a second past the day's end belongs to the next day and is left out; the one
    // at 23:59:59 is kept.
    assert_eq!(
        counts(&days),
        [
            ("2026-11-01".to_owned(), 3),
            ("2026-11-02".to_owned(), 3),
            ("2026-11-03".to_owned(), 3)
        ]
    );
    let last = days[0].records().last().unwrap();
    assert_eq!(
        tz::local_day_and_hour(last.started_at),
        (day("2026-11-01").number(), 23)
    );
}

#[tokio::test]
async fn days_already_kept_serve_every_later_range_without_asking_again() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    store
        .days(range("2026-11-01", "2026-11-05"), &key(1))
        .await
        .unwrap();
    store
        .days(range("2026-11-01", "2026-11-05"), &key(1))
        .await
        .unwrap();
    store
        .days(range("2026-11-03", "2026-11-04"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.fetches(), 5, "the same days again ask nothing");
    store
        .days(range("2026-11-04", "2026-11-07"), &key(1))
        .await
        .unwrap();
    assert_eq!(
        platform.asked_since(5),
        [day("2026-11-06"), day("2026-11-07")],
        "a slid window asks only its new days"
    );
}

#[tokio::test]
async fn today_is_kept_a_minute_settled_days_their_ttl_and_later_days_are_never_asked() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            ttl: Duration::from_secs(3600),
            ..settings()
        },
    );
    let days = store
        .days(range("2026-11-19", "2026-11-23"), &key(1))
        .await
        .unwrap();
    assert_eq!(
        platform.asked(),
        [day("2026-11-19"), day("2026-11-20"), day("2026-11-21")],
        "the days after today are not asked"
    );
    assert_eq!(
        counts(&days)[3..],
        [("2026-11-22".to_owned(), 0), ("2026-11-23".to_owned(), 0)]
    );

    clock.advance(Duration::from_secs(59));
    store
        .days(range("2026-11-19", "2026-11-23"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.fetches(), 3, "today is kept for a minute");

    clock.advance(Duration::from_secs(2));
    store
        .days(range("2026-11-19", "2026-11-23"), &key(1))
        .await
        .unwrap();
    assert_eq!(
        platform.asked_since(3),
        [day("2026-11-21")],
        "then today is asked again"
    );

    clock.advance(Duration::from_secs(3600));
    store
        .days(range("2026-11-19", "2026-11-20"), &key(1))
        .await
        .unwrap();
    assert_eq!(
        platform.asked_since(4),
        [day("2026-11-19"), day("2026-11-20")],
        "settled days are asked again once their ttl has passed"
    );
}

#[tokio::test]
async fn yesterday_is_unsettled_until_an_hour_after_midnight() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    // 00:30 in Tashkent on 2026-11-21: yesterday ended half an hour ago.
    let clock = TestClock::at(datetime!(2026-11-20 19:30 UTC));
    let store = store(&platform, None, &clock, settings());
    store
        .days(range("2026-11-20", "2026-11-20"), &key(1))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(61));
    store
        .days(range("2026-11-20", "2026-11-20"), &key(1))
        .await
        .unwrap();
    assert_eq!(
        platform.fetches(),
        2,
        "fetched before it settled: kept a minute"
    );
    // Now fetched at 00:31: still unsettled. At 01:31 it is settled, and then kept.
    clock.advance(Duration::from_secs(3600));
    store
        .days(range("2026-11-20", "2026-11-20"), &key(1))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(3600));
    store
        .days(range("2026-11-20", "2026-11-20"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.fetches(), 3);
}

#[tokio::test]
async fn each_day_says_when_it_was_fetched_and_whether_it_may_still_change() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    // 00:30 in Tashkent on 2026-11-21, and 250 ms: the 19th settled, the 20th ended half an
    // hour ago (not settled), the 21st under way, the 22nd not begun.
    let at = datetime!(2026-11-20 19:30:00.250 UTC);
    let clock = TestClock::at(at);
    let store = store(&platform, None, &clock, settings());
    let days = store
        .days(range("2026-11-19", "2026-11-22"), &key(1))
        .await
        .unwrap();
    let held: Vec<(Day, Held, i64)> = days
        .iter()
        .map(|d| (d.day(), d.held(), d.fetched_at_ms()))
        .collect();
    let ms = at.unix_timestamp() * 1000 + 250;
    assert_eq!(
        held,
        [
            (day("2026-11-19"), Held::Settled, ms),
            (day("2026-11-20"), Held::Provisional, ms),
            (day("2026-11-21"), Held::Provisional, ms),
            (day("2026-11-22"), Held::NotBegun, ms),
        ]
    );
    assert_eq!(
        platform.asked(),
        [day("2026-11-19"), day("2026-11-20"), day("2026-11-21")]
    );
    // Asked again later, the held days keep their fetch time.
    clock.advance(Duration::from_secs(30));
    let again = store
        .days(range("2026-11-19", "2026-11-19"), &key(1))
        .await
        .unwrap();
    assert_eq!(again[0].fetched_at_ms(), ms);
}

#[test]
fn a_day_is_settled_once_its_end_is_the_settle_time_past() {
    let settings = CallDaySettings::default();
    let day = day("2026-11-20");
    let end = tz::local_midnight_unix(day.date()) + 86_400;
    assert_eq!(settings.expires_at(day, end + 3599), end + 3599 + 60);
    assert_eq!(settings.expires_at(day, end + 3600), end + 3600 + 86_400);
    assert_eq!(settings.expires_at(day, end - 10), end - 10 + 60);
    let far = Day::new(time::Date::MAX);
    assert_eq!(
        settings.expires_at(far, i64::MAX - 5),
        i64::MAX,
        "no overflow"
    );
}

#[tokio::test]
async fn one_day_failing_fails_the_request_and_the_days_that_arrived_are_kept() {
    let platform = FakePlatform::with_delay(Duration::from_millis(20));
    platform.failing.lock().unwrap().insert(day("2026-11-03"));
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let failed = store.days(range("2026-11-01", "2026-11-05"), &key(1)).await;
    assert!(failed.is_err(), "no partial figures");
    platform.failing.lock().unwrap().clear();
    // Give the fetches the failed request left behind time to end.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let days = store
        .days(range("2026-11-01", "2026-11-05"), &key(1))
        .await
        .unwrap();
    assert_eq!(days.len(), 5);
    assert_eq!(
        platform.asked_since(5),
        [day("2026-11-03")],
        "only the failed day is asked again"
    );
}

#[tokio::test]
async fn the_deadline_bounds_the_whole_request_when_the_days_come_slower_than_expected() {
    // Days have been quick (the queue expects the next ones in no time); now each takes
    // 200 ms, one at a time: five are 1 s, past the deadline of 500 ms, though each day alone
    // is well within it. The request ends by its deadline: told to come back once the queue
    // sees it cannot make it, or unavailable at the deadline.
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            concurrency: 1,
            fetch_timeout: Duration::from_millis(500),
            ..settings()
        },
    );
    store
        .days(range("2026-10-01", "2026-10-05"), &key(1))
        .await
        .unwrap();
    platform.set_delay(Duration::from_millis(200));
    let started = Instant::now();
    let failed = store.days(range("2026-11-01", "2026-11-05"), &key(1)).await;
    let took = started.elapsed();
    assert!(
        matches!(
            failed,
            Err(CallDaysError::Unavailable(_) | CallDaysError::Busy { .. })
        ),
        "{failed:?}"
    );
    assert!(
        (Duration::from_millis(200)..Duration::from_millis(700)).contains(&took),
        "{took:?}"
    );
    // The fetches go on without their request, and what they get is kept.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let days = store
        .days(range("2026-11-01", "2026-11-05"), &key(1))
        .await
        .unwrap();
    assert_eq!(days.len(), 5);
    assert_eq!(platform.fetches(), 10);
}

#[tokio::test]
async fn a_request_whose_days_cannot_arrive_in_time_is_told_at_once_when_to_come_back() {
    // One day at a time, 100 ms each, and a deadline of 1 s: 31 days take about 3 s.
    let platform = FakePlatform::with_delay(Duration::from_millis(100));
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            concurrency: 1,
            fetch_timeout: Duration::from_secs(1),
            ..settings()
        },
    );
    // A first day teaches the queue how long a day takes.
    store
        .days(range("2026-09-01", "2026-09-01"), &key(1))
        .await
        .unwrap();
    let started = Instant::now();
    let shed = store.days(range("2026-10-01", "2026-10-31"), &key(2)).await;
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    let Err(CallDaysError::Busy { retry_after_secs }) = shed else {
        panic!("{shed:?}")
    };
    assert!((3..=5).contains(&retry_after_secs), "{retry_after_secs}");
    // Its days stay queued: asked again after the time given, they are all held.
    tokio::time::sleep(Duration::from_secs(u64::from(retry_after_secs))).await;
    let fetches = platform.fetches();
    let days = store
        .days(range("2026-10-01", "2026-10-31"), &key(2))
        .await
        .unwrap();
    assert_eq!(days.len(), 31);
    assert_eq!(
        fetches, 32,
        "every day was fetched while the partner waited"
    );
    assert_eq!(platform.fetches(), 32, "and none again");
}

#[tokio::test]
async fn days_are_fetched_a_request_at_a_time_taking_the_keys_in_turn() {
    let platform = FakePlatform::with_delay(Duration::from_millis(20));
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            concurrency: 1,
            ..settings()
        },
    );
    // Key 1 sends three requests of three days at once, then keys 2 and 3 one each.
    let ask = |start: &str, end: &str, who: i64| {
        let store = store.clone();
        let range = range(start, end);
        tokio::spawn(async move { store.days(range, &key(who)).await })
    };
    let mut requests = vec![
        ask("2026-10-01", "2026-10-03", 1),
        ask("2026-10-04", "2026-10-06", 1),
        ask("2026-10-07", "2026-10-09", 1),
    ];
    tokio::time::sleep(Duration::from_millis(5)).await;
    requests.push(ask("2026-10-20", "2026-10-21", 2));
    requests.push(ask("2026-10-25", "2026-10-25", 3));
    for request in requests {
        request.await.unwrap().unwrap();
    }
    let order: Vec<String> = platform
        .asked_in_order()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        order,
        [
            // Key 1's first request, then one request of each key in turn: the others waited
            // for one request of key 1 only.
            "2026-10-01",
            "2026-10-02",
            "2026-10-03",
            "2026-10-20",
            "2026-10-21",
            "2026-10-25",
            "2026-10-04",
            "2026-10-05",
            "2026-10-06",
            "2026-10-07",
            "2026-10-08",
            "2026-10-09",
        ]
    );
}

#[tokio::test]
async fn only_the_days_a_request_makes_the_service_fetch_are_paid_from_its_key_s_budget() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            day_budget: DayBudget::new(21),
            ..settings()
        },
    );
    let first = key(1);
    store
        .days(range("2026-11-01", "2026-11-07"), &first)
        .await
        .unwrap();
    assert_eq!(first.paid_so_far(), 7);
    // The same days again and days after today cost nothing: 2026-11-08 to today (the 21st)
    // are 14 days.
    let again = key(1);
    store
        .days(range("2026-11-01", "2026-11-30"), &again)
        .await
        .unwrap();
    assert_eq!(again.paid_so_far(), 14);
    // Over the budget: refused whole, nothing fetched, nothing counted.
    let fetches = platform.fetches();
    let refused = store.days(range("2026-10-01", "2026-10-05"), &key(1)).await;
    let Err(CallDaysError::OverBudget(over)) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!((over.key, over.needed, over.status.limit), (1, 5, 21));
    assert_eq!(over.status.remaining, 0);
    assert_eq!(platform.fetches(), fetches);
    // Another key has a budget of its own; the next minute, so has this one.
    store
        .days(range("2026-10-01", "2026-10-05"), &key(2))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(60));
    store
        .days(range("2026-09-01", "2026-09-05"), &key(1))
        .await
        .unwrap();
}

#[tokio::test]
async fn two_replicas_share_a_key_s_day_budget() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let counter = Arc::new(MemoryQuota::new());
    let budget = CallDaySettings {
        day_budget: DayBudget::new(10),
        ..settings()
    };
    let a = store_counting_on(&platform, None, Arc::clone(&counter), &clock, budget);
    let b = store_counting_on(&platform, None, counter, &clock, budget);
    a.days(range("2026-11-01", "2026-11-07"), &key(1))
        .await
        .unwrap();
    let refused = b.days(range("2026-10-01", "2026-10-05"), &key(1)).await;
    assert!(
        matches!(refused, Err(CallDaysError::OverBudget(_))),
        "{refused:?}"
    );
    b.days(range("2026-10-01", "2026-10-03"), &key(1))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_day_whose_answer_was_unusable_rests_before_it_is_asked_again() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    platform.unusable.lock().unwrap().insert(day("2026-11-02"));
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            unusable_hold: Duration::from_millis(300),
            ..settings()
        },
    );
    let failed = store.days(range("2026-11-01", "2026-11-03"), &key(1)).await;
    assert!(
        matches!(&failed, Err(CallDaysError::Unavailable(err)) if err.kind == UpstreamFailure::Unusable),
        "{failed:?}"
    );
    let fetches = platform.fetches();
    // Within the rest: refused at once, nothing asked, no budget spent.
    let again = key(1);
    let refused = store.days(range("2026-11-02", "2026-11-02"), &again).await;
    let Err(CallDaysError::Unavailable(err)) = refused else {
        panic!("{refused:?}")
    };
    // Why the day is held back, with the unusable answer under it.
    let chain = cause_chain(&err);
    assert!(
        err.reason.contains("2026-11-02 is not asked again")
            && chain.ends_with("unusable: call platform unavailable: more than 5000 agents"),
        "{chain}"
    );
    assert_eq!((platform.fetches(), again.paid_so_far()), (fetches, 0));
    let rest = err.retry_in.unwrap();
    assert!(
        rest > Duration::ZERO && rest <= Duration::from_millis(300),
        "a partner may ask again once the rest is over: {rest:?}"
    );
    // Other days are not held back.
    store
        .days(range("2026-11-03", "2026-11-03"), &key(1))
        .await
        .unwrap();
    // After the rest it is asked again.
    platform.unusable.lock().unwrap().clear();
    tokio::time::sleep(Duration::from_millis(350)).await;
    store
        .days(range("2026-11-02", "2026-11-02"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.asked_since(fetches), [day("2026-11-02")]);
}

#[tokio::test]
async fn a_day_the_upstream_throttles_is_fetched_again_after_its_retry_after() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    platform
        .throttling
        .lock()
        .unwrap()
        .insert(day("2026-11-02"), Some(Duration::from_millis(300)));
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let started = Instant::now();
    let days = store
        .days(range("2026-11-01", "2026-11-03"), &key(1))
        .await
        .unwrap();
    assert_eq!(counts(&days).len(), 3);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        platform.asked_since(3),
        [day("2026-11-02")],
        "asked again, once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_the_concurrency_of_day_windows_are_fetched_at_once() {
    let platform = FakePlatform::with_delay(Duration::from_millis(30));
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            concurrency: 4,
            ..settings()
        },
    );
    // Two requests over 31 days each, 62 days in all, at once.
    let partner = key(1);
    let (a, b) = tokio::join!(
        store.days(range("2026-09-01", "2026-10-01"), &partner),
        store.days(range("2026-10-02", "2026-11-01"), &partner)
    );
    assert_eq!((a.unwrap().len(), b.unwrap().len()), (31, 31));
    assert_eq!(platform.fetches(), 62);
    assert_eq!(platform.most_in_flight.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_misses_of_one_day_fetch_it_once() {
    let platform = FakePlatform::with_delay(Duration::from_millis(100));
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let requests = (0..10).map(|i| {
        let store = store.clone();
        // Overlapping ranges: every one holds 2026-11-05.
        let start = day("2026-11-01").plus_days(i % 5).unwrap();
        tokio::spawn(async move {
            store
                .days(
                    DateRange::up_to_31_days(start, start.plus_days(4).unwrap()).unwrap(),
                    &key(1),
                )
                .await
        })
    });
    let mut held: HashMap<Day, Vec<Arc<CallDay>>> = HashMap::new();
    for request in futures::future::join_all(requests).await {
        for kept in request.unwrap().unwrap() {
            held.entry(kept.day()).or_default().push(kept);
        }
    }
    // Every request holds the one copy of a day: memory grows with the days, not the requests.
    for (day, copies) in &held {
        assert!(
            copies.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])),
            "{day:?} held as {} different copies",
            copies.len()
        );
    }
    let asked = platform.asked();
    let distinct: HashSet<&Day> = asked.iter().collect();
    assert_eq!(asked.len(), distinct.len(), "a day asked twice: {asked:?}");
    assert_eq!(asked.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_a_tier_fetch_each_day_once_for_the_deployment() {
    let platform = FakePlatform::with_delay(Duration::from_millis(100));
    let clock = TestClock::at(NOW);
    let shared = Arc::new(SharedTier::default());
    let a = store(&platform, Some(Arc::clone(&shared)), &clock, settings());
    let b = store(&platform, Some(Arc::clone(&shared)), &clock, settings());
    // Concurrent misses of the same days on both replicas.
    let partner = key(1);
    let (one, two) = tokio::join!(
        a.days(range("2026-11-01", "2026-11-07"), &partner),
        b.days(range("2026-11-01", "2026-11-07"), &partner)
    );
    assert_eq!(counts(&one.unwrap()), counts(&two.unwrap()));
    assert_eq!(platform.fetches(), 7, "{:?}", platform.asked());
    // A day one replica fetched is not fetched by the other.
    a.days(range("2026-11-08", "2026-11-08"), &key(1))
        .await
        .unwrap();
    b.days(range("2026-11-08", "2026-11-08"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.fetches(), 8);
    assert!(
        shared.locks.lock().unwrap().is_empty(),
        "every lock given up"
    );
}

#[tokio::test]
async fn a_fetch_that_panics_fails_its_request_and_gives_its_day_lock_up() {
    let shared = Arc::new(SharedTier::default());
    let store = CallDayStore::new(
        Arc::new(Exploding),
        Arc::new(MemoryCallDays::new(16 << 20)),
        Some(shared.clone()),
        Arc::new(MemoryQuota::new()),
        TestClock::at(NOW),
        settings(),
    );
    let failed = store.days(range("2026-11-01", "2026-11-02"), &key(1)).await;
    assert!(
        matches!(&failed, Err(CallDaysError::Unavailable(err)) if err.reason.contains("platform exploded")),
        "the panic's cause is kept: {failed:?}"
    );
    assert!(
        shared.locks.lock().unwrap().is_empty(),
        "every lock given up"
    );
}

#[tokio::test]
async fn a_shared_tier_that_answers_nothing_leaves_the_in_process_tier_serving() {
    /// A shared tier that is down: misses, no locks, writes lost.
    struct Down;

    #[async_trait]
    impl CallDayCache for Down {
        async fn get(&self, days: &[Day]) -> Vec<Option<Arc<CallDay>>> {
            vec![None; days.len()]
        }

        async fn put(&self, _day: Arc<CallDay>, _ttl: Duration) {}
    }

    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = CallDayStore::new(
        platform.clone(),
        Arc::new(MemoryCallDays::new(16 << 20)),
        Some(Arc::new(Down)),
        Arc::new(MemoryQuota::new()),
        clock.clone(),
        settings(),
    );
    store
        .days(range("2026-11-01", "2026-11-03"), &key(1))
        .await
        .unwrap();
    store
        .days(range("2026-11-01", "2026-11-03"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.fetches(), 3);
}

#[tokio::test]
async fn an_entry_of_another_day_or_past_its_lifetime_is_a_miss() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let shared = Arc::new(SharedTier::default());
    // Kept under the wrong day, and a settled day fetched two days ago.
    shared.days.lock().unwrap().insert(
        day("2026-11-01"),
        Arc::new(CallDay::from_records(day("2026-11-02"), 0, vec![])),
    );
    let stale = (NOW.unix_timestamp() - 2 * 86_400) * 1000;
    shared.days.lock().unwrap().insert(
        day("2026-11-03"),
        Arc::new(CallDay::from_records(day("2026-11-03"), stale, vec![])),
    );
    // Days still revised: none of them is final yet.
    let revised = CallDaySettings {
        revision_days: 60,
        ..settings()
    };
    let days = store(&platform, Some(shared), &clock, revised)
        .days(range("2026-11-01", "2026-11-03"), &key(1))
        .await
        .unwrap();
    assert_eq!(platform.fetches(), 3);
    assert!(days.iter().all(|d| d.calls().len() == 3));
}

/// A warmer of the last `days` days over `store`, alone (its lease always held).
fn warmer(store: &CallDayStore, clock: &Arc<TestClock>, days: u32) -> crate::warmer::Warmer {
    crate::warmer::Warmer::new(
        store.clone(),
        Arc::new(callstats_in_process::SoleLease),
        clock.clone(),
        crate::warmer::WarmerSettings {
            days,
            ..crate::warmer::WarmerSettings::default()
        },
    )
}

#[tokio::test]
async fn the_warmer_holds_the_recent_days_and_fetches_again_only_what_is_about_to_expire() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let budget = Arc::new(MemoryQuota::new());
    let store = store_counting_on(&platform, None, budget.clone(), &clock, settings());
    let warmer = warmer(&store, &clock, 5);
    let window = range("2026-11-17", "2026-11-21");
    assert_eq!(warmer.window(), window.iter_days().collect::<Vec<_>>());

    let warmed = warmer.pass().await.unwrap();
    assert_eq!(
        (warmed.fetched, warmed.failed.len(), warmed.held.len()),
        (5, 0, 5)
    );
    assert_eq!(platform.asked(), window.iter_days().collect::<Vec<_>>());
    // Held: a request over them asks nobody, and pays nothing from its key's budget.
    let asked = platform.fetches();
    store.days(window, &key(1)).await.unwrap();
    assert_eq!(platform.fetches(), asked);
    assert_eq!(warmer.pass().await.unwrap().fetched, 0, "all held");

    // 45 s on, today (kept a minute) has 15 s left: it alone is fetched again.
    clock.advance(Duration::from_secs(45));
    let warmed = warmer.pass().await.unwrap();
    assert_eq!(warmed.fetched, 1);
    assert_eq!(platform.asked_since(asked), [day("2026-11-21")]);
    // Nearly a day on, every settled day is fetched again before its lifetime ends.
    clock.advance(Duration::from_secs(86_400 - 45 - 19));
    let before = platform.fetches();
    let warmed = warmer.pass().await.unwrap();
    assert_eq!(
        platform.asked_since(before),
        range("2026-11-18", "2026-11-22")
            .iter_days()
            .collect::<Vec<_>>(),
        "the window moved on a day; the 17th is no longer kept warm"
    );
    assert_eq!(warmed.held.len(), 5);
}

#[tokio::test]
async fn the_warmer_refreshes_an_unsettled_yesterday_like_today() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    // 00:30 in Tashkent on 2026-11-21: yesterday ended half an hour ago.
    let clock = TestClock::at(datetime!(2026-11-20 19:30 UTC));
    let store = store(&platform, None, &clock, settings());
    let warmer = warmer(&store, &clock, 3);
    let held: Vec<Held> = warmer
        .pass()
        .await
        .unwrap()
        .held
        .iter()
        .map(|d| d.held())
        .collect();
    assert_eq!(held, [Held::Settled, Held::Provisional, Held::Provisional]);
    clock.advance(Duration::from_secs(45));
    let before = platform.fetches();
    warmer.pass().await.unwrap();
    assert_eq!(
        platform.asked_since(before),
        [day("2026-11-20"), day("2026-11-21")]
    );
}

#[tokio::test]
async fn a_replica_without_the_lease_warms_nothing() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let mut lease = callstats_domain::ports::MockLease::new();
    lease.expect_hold().returning(|_| false);
    let warmer = crate::warmer::Warmer::new(
        store,
        Arc::new(lease),
        clock.clone(),
        crate::warmer::WarmerSettings::default(),
    );
    assert!(warmer.pass().await.is_none());
    assert_eq!(platform.fetches(), 0);
}

#[tokio::test]
async fn a_request_for_a_day_the_warmer_queued_is_not_kept_behind_the_keys() {
    let platform = FakePlatform::with_delay(Duration::from_millis(50));
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            concurrency: 1,
            ..settings()
        },
    );
    let warmer = warmer(&store, &clock, 4);
    // The warmer queues four days; a key's request for another day comes first, and a
    // request for the warmer's last day is let out before the warmer's others.
    let warming = tokio::spawn(async move { warmer.pass().await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let (one, two) = (key(1), key(2));
    let (other, last) = tokio::join!(
        store.days(range("2026-11-10", "2026-11-10"), &one),
        store.days(range("2026-11-21", "2026-11-21"), &two),
    );
    other.unwrap();
    last.unwrap();
    warming.await.unwrap().unwrap();
    let order = platform.asked_in_order();
    let position = |raw: &str| order.iter().position(|d| *d == day(raw)).unwrap();
    assert!(position("2026-11-10") < position("2026-11-19"), "{order:?}");
    assert!(position("2026-11-21") < position("2026-11-19"), "{order:?}");
}

/// A durable tier in memory, as one database shared by replicas; it can refuse reads or
/// writes, and counts its reads.
#[derive(Default)]
struct FakeArchive {
    days: Mutex<HashMap<Day, Arc<CallDay>>>,
    refuse_reads: std::sync::atomic::AtomicBool,
    refuse_writes: std::sync::atomic::AtomicBool,
    reads: AtomicUsize,
    /// Reads of rollups, and the days they were asked.
    rollup_reads: Mutex<Vec<Vec<Day>>>,
    sweeps: Mutex<Vec<(Day, u32)>>,
}

impl FakeArchive {
    fn holds(&self, date: &str) -> bool {
        self.days.lock().unwrap().contains_key(&day(date))
    }

    /// Waits (a bounded while) for the writes in flight to land.
    async fn until_holds(&self, date: &str) {
        for _ in 0..200 {
            if self.holds(date) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{date} was never written");
    }
}

#[async_trait]
impl CallDayArchive for FakeArchive {
    async fn get(&self, days: &[Day]) -> Result<Vec<Arc<CallDay>>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.refuse_reads.load(Ordering::SeqCst) {
            return Err(StoreError::new("no database connection"));
        }
        let held = self.days.lock().unwrap();
        Ok(days
            .iter()
            .filter_map(|day| held.get(day).cloned())
            .collect())
    }

    async fn put(&self, day: &CallDay) -> Result<(), StoreError> {
        if self.refuse_writes.load(Ordering::SeqCst) {
            return Err(StoreError::new(
                "cannot execute INSERT in a read-only transaction",
            ));
        }
        self.days
            .lock()
            .unwrap()
            .insert(day.day(), Arc::new(day.clone()));
        Ok(())
    }

    async fn rollups(&self, days: &[Day]) -> Result<Vec<Arc<DayRollup>>, StoreError> {
        self.rollup_reads.lock().unwrap().push(days.to_vec());
        if self.refuse_reads.load(Ordering::SeqCst) {
            return Err(StoreError::new("no database connection"));
        }
        let held = self.days.lock().unwrap();
        Ok(days
            .iter()
            .filter_map(|day| held.get(day).map(|held| Arc::new(DayRollup::of(held))))
            .collect())
    }

    async fn held_days(&self, first: Day, last: Day) -> Result<Vec<Day>, StoreError> {
        if self.refuse_reads.load(Ordering::SeqCst) {
            return Err(StoreError::new("no database connection"));
        }
        let mut held: Vec<Day> = self
            .days
            .lock()
            .unwrap()
            .keys()
            .filter(|day| (first..=last).contains(*day))
            .copied()
            .collect();
        held.sort();
        Ok(held)
    }

    async fn delete_before(&self, first: Day, limit: u32) -> Result<u64, StoreError> {
        self.sweeps.lock().unwrap().push((first, limit));
        let mut held = self.days.lock().unwrap();
        let mut old: Vec<Day> = held.keys().filter(|day| **day < first).copied().collect();
        old.sort();
        old.truncate(usize::try_from(limit).unwrap());
        for day in &old {
            held.remove(day);
        }
        Ok(u64::try_from(old.len()).unwrap())
    }
}

fn archived(
    platform: &Arc<FakePlatform>,
    archive: &Arc<FakeArchive>,
    clock: &Arc<TestClock>,
    settings: CallDaySettings,
) -> CallDayStore {
    store(platform, None, clock, settings).with_archive(archive.clone())
}

#[tokio::test]
async fn a_settled_day_is_revised_inside_the_window_and_final_after_it() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    // 2026-11-10 ended 10 days before NOW: final at once. 2026-11-18 is still revised.
    let both = || async {
        store
            .days(range("2026-11-10", "2026-11-10"), &key(1))
            .await
            .unwrap();
        store
            .days(range("2026-11-18", "2026-11-18"), &key(1))
            .await
            .unwrap();
    };
    both().await;
    assert_eq!(platform.asked(), [day("2026-11-10"), day("2026-11-18")]);
    clock.advance(Duration::from_secs(86_400 + 60));
    both().await;
    assert_eq!(
        platform.asked_since(2),
        [day("2026-11-18")],
        "only the day inside the revision window is fetched again"
    );
    // Seven days after its end 2026-11-18 is final too.
    clock.set(datetime!(2026-11-26 19:00 UTC));
    both().await;
    assert_eq!(platform.fetches(), 3);
}

#[tokio::test]
async fn the_warmer_fetches_no_final_day_again() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let days: Vec<Day> = (10..=19).map(|n| day(&format!("2026-11-{n}"))).collect();
    let first = store.warm(&days, Duration::from_secs(20)).await;
    assert_eq!(first.fetched, 10);
    clock.advance(Duration::from_secs(86_400));
    let again = store.warm(&days, Duration::from_secs(20)).await;
    // A day later, 2026-11-10 to 2026-11-14 ended 7 days ago or more: final. The others are
    // fetched again.
    assert_eq!(
        platform.asked_since(10),
        (15..=19)
            .map(|n| day(&format!("2026-11-{n}")))
            .collect::<Vec<_>>()
    );
    assert_eq!(again.fetched, 5);
    assert_eq!(again.held.len(), 10);
}

#[tokio::test]
async fn a_day_fetched_once_is_read_by_another_replica_from_the_database() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    let first = archived(&platform, &archive, &clock, settings());
    first
        .days(range("2026-11-17", "2026-11-19"), &key(1))
        .await
        .unwrap();
    // Today is not settled: it is not persisted.
    first
        .days(range("2026-11-21", "2026-11-21"), &key(1))
        .await
        .unwrap();
    archive.until_holds("2026-11-19").await;
    assert_eq!(archive.days.lock().unwrap().len(), 3);
    // Another replica, and this one restarted: no Redis, one database.
    let second = archived(&platform, &archive, &clock, settings());
    let days = second
        .days(range("2026-11-17", "2026-11-19"), &key(2))
        .await
        .unwrap();
    assert_eq!(counts(&days).len(), 3);
    assert_eq!(platform.fetches(), 4, "no day fetched twice");
    // Read once from the database, then held in process.
    let reads = archive.reads.load(Ordering::SeqCst);
    second
        .days(range("2026-11-17", "2026-11-19"), &key(2))
        .await
        .unwrap();
    assert_eq!(archive.reads.load(Ordering::SeqCst), reads);
}

#[tokio::test]
#[tracing_test::traced_test]
async fn a_database_that_refuses_writes_or_reads_changes_no_answer() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    archive.refuse_writes.store(true, Ordering::SeqCst);
    archive.refuse_reads.store(true, Ordering::SeqCst);
    let store = archived(&platform, &archive, &clock, settings());
    for _ in 0..3 {
        let days = store
            .days(range("2026-11-17", "2026-11-19"), &key(1))
            .await
            .unwrap();
        assert_eq!(counts(&days).len(), 3);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        platform.fetches(),
        3,
        "served from the cache after the first"
    );
    assert!(archive.days.lock().unwrap().is_empty());
    assert!(logs_contain(
        "a call day could not be written to the database"
    ));
    // Once a minute: three failed writes, one line.
    logs_assert(|lines| {
        let written = lines
            .iter()
            .filter(|line| line.contains("could not be written"))
            .count();
        (written == 1)
            .then_some(())
            .ok_or(format!("{written} lines"))
    });
}

#[tokio::test]
async fn the_sweep_deletes_in_bounded_batches() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    for n in 0..(i64::from(SWEEP_BATCH) * 3 + 5) {
        let old = day("2025-01-01").plus_days(n).unwrap();
        archive
            .days
            .lock()
            .unwrap()
            .insert(old, Arc::new(CallDay::from_records(old, 0, vec![])));
    }
    let store = archived(&platform, &archive, &clock, settings());
    let first = day("2025-06-01");
    let deleted = store.sweep(first).await;
    assert_eq!(deleted, 151, "the days of 2025 before June");
    assert!(archive.days.lock().unwrap().keys().all(|day| *day >= first));
    assert!(
        archive
            .sweeps
            .lock()
            .unwrap()
            .iter()
            .all(|(_, limit)| *limit == SWEEP_BATCH)
    );
    assert_eq!(store.sweep(first).await, 0);
    assert_eq!(
        store_without_archive_sweeps(&platform, &clock).await,
        0,
        "nothing to sweep without a durable tier"
    );
}

async fn store_without_archive_sweeps(platform: &Arc<FakePlatform>, clock: &Arc<TestClock>) -> u64 {
    store(platform, None, clock, settings())
        .sweep(day("2026-01-01"))
        .await
}

/// The platform fails every day from now on.
fn fail_all(platform: &FakePlatform, days: &[&str]) {
    platform
        .failing
        .lock()
        .unwrap()
        .extend(days.iter().map(|d| day(d)));
}

#[tokio::test]
#[tracing_test::traced_test]
async fn a_held_day_past_its_lifetime_answers_stale_when_its_fetch_fails() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let fresh = store
        .days(range("2026-11-18", "2026-11-19"), &key(1))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(86_400 + 1));
    fail_all(&platform, &["2026-11-18", "2026-11-19"]);
    let requester = key(1);
    let stale = store
        .days(range("2026-11-18", "2026-11-19"), &requester)
        .await
        .unwrap();
    assert_eq!(stale, fresh, "the copies, with their fetch time");
    assert!(requester.was_served_stale());
    assert_eq!(platform.fetches(), 4, "fetching again was tried");
    assert!(logs_contain("a call day answered stale"));
    // A healthy answer is not marked.
    let healthy = key(1);
    platform.failing.lock().unwrap().clear();
    store
        .days(range("2026-11-18", "2026-11-19"), &healthy)
        .await
        .unwrap();
    assert!(!healthy.was_served_stale());
}

#[tokio::test]
async fn stale_answers_end_at_their_bound_and_a_day_never_held_fails_as_before() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let bounded = CallDaySettings {
        max_stale: Duration::from_secs(3_600),
        ..settings()
    };
    let store = store(&platform, None, &clock, bounded);
    store
        .days(range("2026-11-19", "2026-11-19"), &key(1))
        .await
        .unwrap();
    fail_all(&platform, &["2026-11-18", "2026-11-19"]);
    // One day held, one never: the request fails as it did.
    let failed = store.days(range("2026-11-18", "2026-11-19"), &key(1)).await;
    assert!(
        matches!(failed, Err(CallDaysError::Unavailable(_))),
        "{failed:?}"
    );
    clock.advance(Duration::from_secs(86_400 + 3_600));
    assert!(
        store
            .days(range("2026-11-19", "2026-11-19"), &key(1))
            .await
            .is_ok()
    );
    clock.advance(Duration::from_secs(2));
    let past = store.days(range("2026-11-19", "2026-11-19"), &key(1)).await;
    assert!(
        matches!(past, Err(CallDaysError::Unavailable(_))),
        "{past:?}"
    );
}

#[tokio::test]
async fn todays_last_copy_answers_stale_too() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    let today = store
        .days(range("2026-11-21", "2026-11-21"), &key(1))
        .await
        .unwrap();
    assert_eq!(today[0].held(), Held::Provisional);
    clock.advance(Duration::from_secs(300));
    fail_all(&platform, &["2026-11-21"]);
    let requester = key(1);
    let stale = store
        .days(range("2026-11-21", "2026-11-21"), &requester)
        .await
        .unwrap();
    assert_eq!(stale, today);
    assert!(requester.was_served_stale());
}

#[tokio::test]
async fn a_copy_in_the_shared_tier_or_the_database_answers_stale() {
    let clock = TestClock::at(NOW);
    // Fetched two days ago, settled, still revised: its lifetime is over.
    let old_ms = (NOW.unix_timestamp() - 2 * 86_400) * 1000;
    let copy = Arc::new(CallDay::from_records(
        day("2026-11-16"),
        old_ms,
        calls_of(day("2026-11-16")),
    ));
    let shared = Arc::new(SharedTier::default());
    shared
        .days
        .lock()
        .unwrap()
        .insert(copy.day(), Arc::clone(&copy));
    let archive = Arc::new(FakeArchive::default());
    archive
        .days
        .lock()
        .unwrap()
        .insert(copy.day(), Arc::clone(&copy));
    let failing = FakePlatform::with_delay(Duration::ZERO);
    fail_all(&failing, &["2026-11-16"]);
    let tiers = [
        store(&failing, Some(shared), &clock, settings()),
        archived(&failing, &archive, &clock, settings()),
    ];
    for (asked, store) in (1..).zip(tiers) {
        let requester = key(1);
        let days = store
            .days(range("2026-11-16", "2026-11-16"), &requester)
            .await
            .unwrap();
        assert_eq!(days, [Arc::clone(&copy)]);
        assert!(requester.was_served_stale());
        assert_eq!(failing.fetches(), asked);
    }
}

/// The calls each rollup counts, by day.
fn offered(rollups: &[Arc<DayRollup>]) -> Vec<(String, u64)> {
    rollups
        .iter()
        .map(|rollup| {
            (
                rollup.day().to_string(),
                rollup
                    .all_groups()
                    .iter()
                    .map(|group| group.counts.offered)
                    .sum(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_trend_reads_rollups_of_every_day_and_makes_each_final_one_once() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(&platform, None, &clock, settings());
    // Two months and a half: read a month at a time, each day fetched once.
    let rollups = store
        .rollups(range_of("2026-09-01", "2026-11-21"), &key(1))
        .await
        .unwrap();
    assert_eq!(rollups.len(), 82);
    assert_eq!(platform.fetches(), 82);
    let days = store
        .days(range("2026-11-01", "2026-11-21"), &key(1))
        .await
        .unwrap();
    let expected: Vec<(String, u64)> = days
        .iter()
        .map(|d| (d.day().to_string(), u64::try_from(d.calls().len()).unwrap()))
        .collect();
    assert_eq!(offered(&rollups)[61..], expected[..]);
    // A final day's rollup is the same one the next time; today's is made again.
    let again = store
        .rollups(range_of("2026-09-01", "2026-11-21"), &key(1))
        .await
        .unwrap();
    assert!(
        Arc::ptr_eq(&rollups[0], &again[0]),
        "a final day's rollup is kept"
    );
    assert!(
        !Arc::ptr_eq(&rollups[81], &again[81]),
        "today's is made from the day"
    );
    assert_eq!(platform.fetches(), 82);
}

#[tokio::test]
async fn a_trend_over_the_day_budget_is_refused_whole_before_any_fetch() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let store = store(
        &platform,
        None,
        &clock,
        CallDaySettings {
            day_budget: DayBudget::new(40),
            ..settings()
        },
    );
    store
        .days(range("2026-11-01", "2026-11-21"), &key(1))
        .await
        .unwrap();
    let paid = key(1);
    // 61 days, 21 of them held: 40 to fetch, but 21 of the minute's 40 are spent.
    let refused = store
        .rollups(range_of("2026-09-22", "2026-11-21"), &paid)
        .await;
    let Err(CallDaysError::OverBudget(over)) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(
        (over.needed, over.status.limit, over.status.remaining),
        (40, 40, 19)
    );
    assert_eq!(platform.fetches(), 21, "nothing fetched");
    assert_eq!(paid.paid_so_far(), 0);
    // Another key, its budget whole, fits: only the 40 days not held are fetched and paid.
    let fits = key(2);
    store
        .rollups(range_of("2026-09-22", "2026-11-21"), &fits)
        .await
        .unwrap();
    assert_eq!((fits.paid_so_far(), platform.fetches()), (40, 61));
}

#[tokio::test]
async fn a_fresh_replica_reads_final_rollups_from_the_database_without_the_days() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    let first = archived(&platform, &archive, &clock, settings());
    first
        .days(range("2026-11-01", "2026-11-20"), &key(1))
        .await
        .unwrap();
    archive.until_holds("2026-11-20").await;
    // Another replica: the final days' rollups in one read, the others from their days.
    let second = archived(&platform, &archive, &clock, settings());
    let reads = archive.reads.load(Ordering::SeqCst);
    let rollups = second
        .rollups(range("2026-11-01", "2026-11-20"), &key(1))
        .await
        .unwrap();
    assert_eq!(rollups.len(), 20);
    assert_eq!(platform.fetches(), 20, "nothing fetched again");
    let rollup_reads = archive.rollup_reads.lock().unwrap().clone();
    assert_eq!(rollup_reads.len(), 1);
    assert_eq!(rollup_reads[0].len(), 20);
    // 2026-11-01 to 2026-11-13 ended 7 days before NOW or more: final, read as rollups. The
    // days after them are read as days, in one statement.
    assert_eq!(archive.reads.load(Ordering::SeqCst), reads + 1);
    let expected = offered(
        &first
            .rollups(range("2026-11-01", "2026-11-20"), &key(1))
            .await
            .unwrap(),
    );
    assert_eq!(offered(&rollups), expected);
}

fn backfill(
    store: &CallDayStore,
    archive: &Arc<FakeArchive>,
    clock: &Arc<TestClock>,
    lease: Arc<dyn callstats_domain::ports::Lease>,
) -> crate::backfill::Backfill {
    crate::backfill::Backfill::new(
        store.clone(),
        archive.clone(),
        lease,
        clock.clone(),
        HistoryHorizon::new(10),
        // 6,000 a minute: 10 ms after each fetch.
        crate::backfill::BackfillSettings {
            per_minute: 6_000,
            ..crate::backfill::BackfillSettings::default()
        },
    )
}

#[tokio::test]
async fn the_backfill_fills_the_horizon_newest_first_at_its_rate_and_then_asks_nothing() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    let store = archived(&platform, &archive, &clock, settings());
    // The database holds one day of the horizon already; another is held in process.
    archive
        .put(&CallDay::from_fetched(
            day("2026-11-15"),
            unix_millis(NOW),
            &calls_of(day("2026-11-15")).into(),
        ))
        .await
        .unwrap();
    store
        .days(range("2026-11-13", "2026-11-13"), &key(1))
        .await
        .unwrap();
    archive.until_holds("2026-11-13").await;
    archive.days.lock().unwrap().remove(&day("2026-11-13"));
    let fetched_before = platform.fetches();
    let backfill = backfill(
        &store,
        &archive,
        &clock,
        Arc::new(callstats_in_process::SoleLease),
    );
    // 10 days back from 2026-11-21: 2026-11-12 to the 20th have settled, today has not.
    assert_eq!(backfill.horizon().len(), 9);
    let started = Instant::now();
    let filled = backfill.pass().await.unwrap();
    let expected: Vec<Day> = [20, 19, 18, 17, 16, 14, 12]
        .map(|n| day(&format!("2026-11-{n}")))
        .to_vec();
    assert_eq!(
        filled.fetched, expected,
        "newest first, the held days skipped"
    );
    assert_eq!(platform.asked_since(fetched_before).len(), 7);
    assert_eq!((filled.held, filled.written, filled.failed), (9, 1, 0));
    // At its rate: 10 ms after each fetch.
    assert!(
        started.elapsed() >= Duration::from_millis(70),
        "{:?}",
        started.elapsed()
    );
    for n in 12..=20 {
        archive.until_holds(&format!("2026-11-{n}")).await;
    }
    assert!(!archive.holds("2026-11-21"), "today is not settled");
    // Held: the next pass asks the platform for nothing.
    let again = backfill.pass().await.unwrap();
    assert_eq!((again.held, again.fetched.len()), (9, 0));
    assert_eq!(platform.fetches(), fetched_before + 7);
    // A day later, the day that entered the horizon is the one fetched.
    clock.advance(Duration::from_secs(86_400));
    let next_day = backfill.pass().await.unwrap();
    assert_eq!(next_day.fetched, [day("2026-11-21")]);
}

#[tokio::test]
async fn a_replica_without_the_backfill_lease_fills_nothing() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    let store = archived(&platform, &archive, &clock, settings());
    let mut lease = callstats_domain::ports::MockLease::new();
    lease.expect_hold().returning(|_| false);
    assert!(
        backfill(&store, &archive, &clock, Arc::new(lease))
            .pass()
            .await
            .is_none()
    );
    assert_eq!(platform.fetches(), 0);
}

#[tokio::test]
async fn a_refusal_while_the_backfill_fills_the_history_says_how_far_it_is() {
    let platform = FakePlatform::with_delay(Duration::ZERO);
    let clock = TestClock::at(NOW);
    let archive = Arc::new(FakeArchive::default());
    let small = CallDaySettings {
        day_budget: DayBudget::new(10),
        ..settings()
    };
    let history = HistoryHorizon::new(30);
    let store = archived(&platform, &archive, &clock, small).with_backfill(history, 10);
    store
        .days(range("2026-11-14", "2026-11-20"), &key(1))
        .await
        .unwrap();
    archive.until_holds("2026-11-14").await;
    archive.until_holds("2026-11-20").await;
    // 30 days up to today (2026-11-21), whose own day has not settled: 29 for the backfill.
    let refused = store.days(range("2026-10-23", "2026-11-13"), &key(2)).await;
    let Err(CallDaysError::OverBudget(over)) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(
        over.filling,
        Some(HistoryFill {
            held: 7,
            days: 29,
            per_minute: 10
        })
    );
    assert!(
        callstats_domain::DomainError::from(CallDaysError::OverBudget(over))
            .to_string()
            .contains("7 of its 29 settled days are held"),
        "the message says it"
    );
    // Without a backfill a refusal says nothing of the history.
    let refused = archived(&platform, &archive, &clock, small)
        .days(range("2026-10-23", "2026-11-13"), &key(3))
        .await;
    assert!(
        matches!(refused, Err(CallDaysError::OverBudget(over)) if over.filling.is_none()),
        "{refused:?}"
    );
    // Once every settled day of the horizon is held, nor does one with a backfill.
    let large = archived(&platform, &archive, &clock, settings());
    large
        .days(range("2026-10-23", "2026-11-13"), &key(4))
        .await
        .unwrap();
    archive.until_holds("2026-10-23").await;
    archive.until_holds("2026-11-13").await;
    let refused = store.days(range("2026-09-01", "2026-09-30"), &key(5)).await;
    assert!(
        matches!(refused, Err(CallDaysError::OverBudget(over)) if over.filling.is_none()),
        "{refused:?}"
    );
}
