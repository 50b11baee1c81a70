//! The fair fetch queue: which missing call day is fetched next, and how many at once.
//!
//! - **A request at a time, keys in turn.** A request's missing days wait as one job in its
//!   key's line. Jobs are served one at a time: every day of the job being served is let out
//!   before the next job starts, and the next job is taken from the next key in turn
//!   (round-robin across keys, each key's jobs in arrival order; the key just served goes
//!   behind every key waiting then). One key's burst delays another key's request by at most
//!   one of its jobs, and requests finish one after another rather than all together.
//! - **The warmer last.** The days the warmer keeps held wait in a line of their own, let out
//!   only when no key's day waits ([`FairQueue::enqueue_background`]); a request that needs a
//!   day waiting there takes its place at the front instead ([`FairQueue::promote`]).
//! - **The backfill after it.** The days the backfill fetches into the database wait in a
//!   line of their own behind the warmer's ([`FairQueue::enqueue_backfill`]), promoted alike.
//! - **Days to fetch again first.** A day the upstream throttled, or whose fetch lost its turn
//!   otherwise, is put at the front ([`FairQueue::first`]).
//! - **Bounded.** At most `max_queued_days` days wait in all and `max_queued_days_per_key` per
//!   key; a request that would go past them is not queued.
//! - **Adaptive concurrency.** At most `limit` days are fetched at once, `limit` between 1 and
//!   `max_concurrency`: additive increase, multiplicative decrease ([`Aimd`]), driven by the
//!   upstream's explicit backpressure (429, or 503 with `Retry-After`), whose `Retry-After`
//!   pauses every fetch of the replica.
//! - **Estimates.** From a day's place in the order, the fetches in flight, the limit, the
//!   pause and the recent time of a day's fetch, [`FairQueue::estimate`] says when the days a
//!   request waits for should be held, so a request that cannot make its deadline is told at
//!   once when to come back.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use callstats_domain::calendar::Day;
use tokio::sync::oneshot;

/// The longest pause a `Retry-After` may impose; a longer one is cut to it.
const MAX_PAUSE: Duration = Duration::from_secs(60);
/// The pause after a 429 without `Retry-After`, and the least after any.
const DEFAULT_PAUSE: Duration = Duration::from_secs(1);
const MIN_PAUSE: Duration = Duration::from_millis(100);
/// What one day's fetch is taken to take for a full queue's `Retry-After` before any fetch was
/// timed. (No request is shed on an estimate before then: the deadline alone bounds it.)
const UNTIMED_FETCH: Duration = Duration::from_secs(1);
/// Weight of the newest fetch time in the running average.
const FETCH_TIME_WEIGHT: f64 = 0.2;

/// How the queue is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    /// Most days fetched at once (`CALLSTATS_CALL_PLATFORM_CONCURRENCY`), and where the
    /// adaptive limit starts.
    pub max_concurrency: usize,
    /// Most days waiting in all (`CALLSTATS_CALL_DAY_QUEUE_DAYS`).
    pub max_queued_days: usize,
    /// Most days waiting for one key (`CALLSTATS_CALL_DAY_QUEUE_DAYS_PER_KEY`).
    pub max_queued_days_per_key: usize,
}

impl QueueSettings {
    pub const DEFAULT_MAX_QUEUED_DAYS: usize = 2_000;
    pub const DEFAULT_MAX_QUEUED_DAYS_PER_KEY: usize = 248;
}

/// Whose line a job waits in.
pub type LineKey = i64;

/// The queue. Share it as an `Arc`.
pub struct FairQueue {
    settings: QueueSettings,
    state: Mutex<State>,
}

struct State {
    /// Days to fetch before any job: throttled ones, and lost turns.
    first: VecDeque<Ticket>,
    /// The job being served: its days not let out yet.
    serving: VecDeque<Ticket>,
    /// Whose job is being served. That key waits for its next turn behind every key in
    /// `turns` when its job is all let out, even a key that queued after it.
    serving_key: Option<LineKey>,
    /// The warmer's days, let out when nothing else waits.
    background: VecDeque<Ticket>,
    /// The backfill's days, let out when not even the warmer's wait.
    backfill: VecDeque<Ticket>,
    /// Keys with jobs waiting (the key being served aside), in the order they are served next.
    turns: VecDeque<LineKey>,
    /// Each key's jobs (a job: its days in order), oldest first; a key is in `turns` exactly
    /// while it has one.
    lines: HashMap<LineKey, VecDeque<VecDeque<Ticket>>>,
    /// Days waiting, in all and per key (days of `first` and `serving` included).
    queued: usize,
    queued_per_key: HashMap<LineKey, usize>,
    /// Days being fetched, and since when.
    in_flight: HashMap<Day, Instant>,
    limit: Aimd,
    paused_until: Option<Instant>,
    /// A task will let days out when the pause ends.
    resume_pending: bool,
    /// Running average of a day's fetch time.
    fetch_time: Duration,
    measured: bool,
}

/// A day's place in the queue: the sender of its turn.
struct Ticket {
    day: Day,
    key: Option<LineKey>,
    turn: oneshot::Sender<Slot>,
}

/// The queue is full: nothing was queued. `drained_in` is about when there will be room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    pub drained_in: Duration,
}

/// A day's wait for its turn to be fetched.
pub struct Turn(oneshot::Receiver<Slot>);

impl Turn {
    /// The slot, once the day is let out; `None` if the queue is gone.
    pub async fn slot(self) -> Option<Slot> {
        self.0.await.ok()
    }
}

/// The right to fetch one day now. Report how the fetch went ([`Slot::fetched`] or
/// [`Slot::throttled`]); dropped unreported (a failure, a panic, a lock held elsewhere) it only
/// gives the slot back.
pub struct Slot {
    queue: Arc<FairQueue>,
    day: Day,
    started: Instant,
    /// The limit's decrease count when the slot was let out.
    epoch: u64,
    armed: bool,
}

impl Slot {
    /// The day arrived: its fetch time counts toward the average, and the limit may grow.
    pub fn fetched(self) {
        let took = self.started.elapsed();
        {
            let mut state = self.queue.state();
            state.record_fetch_time(took);
            state.limit.on_success();
            metrics::gauge!("callstats_call_day_fetch_concurrency").set(state.limit.as_f64());
        }
        // Dropped here: the slot is given back.
    }

    /// The upstream asked to be called less: the limit shrinks (once per burst of answers) and
    /// every fetch waits `retry_after` (or a second); the caller puts the day back in front
    /// ([`FairQueue::first`]).
    pub fn throttled(self, retry_after: Option<Duration>) {
        metrics::counter!("callstats_upstream_throttled_total").increment(1);
        let pause = retry_after
            .unwrap_or(DEFAULT_PAUSE)
            .clamp(MIN_PAUSE, MAX_PAUSE);
        {
            let mut state = self.queue.state();
            if state.limit.on_backpressure(self.epoch) {
                tracing::info!(
                    limit = state.limit.current(),
                    pause_ms = pause.as_millis(),
                    "the call platform asked to slow down: fewer day fetches at once"
                );
                metrics::gauge!("callstats_call_day_fetch_concurrency").set(state.limit.as_f64());
            }
            let until = Instant::now() + pause;
            if state.paused_until.is_none_or(|current| current < until) {
                state.paused_until = Some(until);
            }
        }
        // Dropped here: the slot is given back, and nothing is let out before the pause ends.
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let queue = Arc::clone(&self.queue);
        let mut state = queue.state();
        state.in_flight.remove(&self.day);
        queue.let_out(&mut state);
    }
}

impl FairQueue {
    #[must_use]
    pub fn new(settings: QueueSettings) -> Arc<Self> {
        let max = settings.max_concurrency.max(1);
        metrics::gauge!("callstats_call_day_fetch_concurrency").set(count_as_f64(max));
        Arc::new(Self {
            settings,
            state: Mutex::new(State {
                first: VecDeque::new(),
                serving: VecDeque::new(),
                serving_key: None,
                background: VecDeque::new(),
                backfill: VecDeque::new(),
                turns: VecDeque::new(),
                lines: HashMap::new(),
                queued: 0,
                queued_per_key: HashMap::new(),
                in_flight: HashMap::new(),
                limit: Aimd::new(max),
                paused_until: None,
                resume_pending: false,
                fetch_time: UNTIMED_FETCH,
                measured: false,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change leaves the state whole before it can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `days` more days of `key` fit in the queue; if not, about when they would.
    pub fn room_for(&self, key: LineKey, days: usize) -> Result<(), Full> {
        let state = self.state();
        let per_key = state.queued_per_key.get(&key).copied().unwrap_or(0);
        if state.queued.saturating_add(days) <= self.settings.max_queued_days
            && per_key.saturating_add(days) <= self.settings.max_queued_days_per_key
        {
            return Ok(());
        }
        Err(Full {
            drained_in: state.finish_of(state.queued.max(per_key)),
        })
    }

    /// Queues `days` as one job in `key`'s line, in their order; each gets its turn.
    pub fn enqueue(self: &Arc<Self>, key: LineKey, days: &[Day]) -> Vec<Turn> {
        let mut state = self.state();
        let (tickets, turns): (VecDeque<Ticket>, Vec<Turn>) = days
            .iter()
            .map(|day| {
                let (turn, wait) = oneshot::channel();
                (
                    Ticket {
                        day: *day,
                        key: Some(key),
                        turn,
                    },
                    Turn(wait),
                )
            })
            .unzip();
        if tickets.is_empty() {
            return turns;
        }
        state.count_in(key, tickets.len());
        if !state.lines.contains_key(&key) && state.serving_key != Some(key) {
            state.turns.push_back(key);
        }
        state.lines.entry(key).or_default().push_back(tickets);
        self.let_out(&mut state);
        turns
    }

    /// Puts `day` at the front: it is let out before any job's day.
    pub fn first(self: &Arc<Self>, day: Day) -> Turn {
        let (turn, wait) = oneshot::channel();
        let mut state = self.state();
        state.queued = state.queued.saturating_add(1);
        state.first.push_back(Ticket {
            day,
            key: None,
            turn,
        });
        state.report_depth();
        self.let_out(&mut state);
        Turn(wait)
    }

    /// Queues `days` in the warmer's line, behind every key's day; each gets its turn. Not
    /// bounded by the queue's bounds (the warmer asks for a bounded number of days) and not
    /// counted in its depth.
    pub fn enqueue_background(self: &Arc<Self>, days: &[Day]) -> Vec<Turn> {
        self.enqueue_behind(days, |state| &mut state.background)
    }

    /// Queues `days` in the backfill's line, behind the warmer's; otherwise as
    /// [`FairQueue::enqueue_background`].
    pub fn enqueue_backfill(self: &Arc<Self>, days: &[Day]) -> Vec<Turn> {
        self.enqueue_behind(days, |state| &mut state.backfill)
    }

    fn enqueue_behind(
        self: &Arc<Self>,
        days: &[Day],
        line: impl Fn(&mut State) -> &mut VecDeque<Ticket>,
    ) -> Vec<Turn> {
        let mut state = self.state();
        let turns = days
            .iter()
            .map(|day| {
                let (turn, wait) = oneshot::channel();
                line(&mut state).push_back(Ticket {
                    day: *day,
                    key: None,
                    turn,
                });
                Turn(wait)
            })
            .collect();
        state.report_background();
        self.let_out(&mut state);
        turns
    }

    /// A request needs `day`: if it waits in the warmer's or the backfill's line, it goes to
    /// the front.
    pub fn promote(self: &Arc<Self>, day: Day) {
        let mut state = self.state();
        let in_line = |line: &VecDeque<Ticket>| line.iter().position(|ticket| ticket.day == day);
        let found = match in_line(&state.background) {
            Some(place) => state.background.remove(place),
            None => in_line(&state.backfill).and_then(|place| state.backfill.remove(place)),
        };
        if let Some(ticket) = found {
            state.queued = state.queued.saturating_add(1);
            state.first.push_back(ticket);
            state.report_depth();
            state.report_background();
        }
        self.let_out(&mut state);
    }

    /// About how long until every day of `wanted` that is queued or being fetched is held:
    /// from each one's place in the order, the fetches in flight, the limit, the pause and the
    /// recent fetch time. Zero when none of them is, or before any fetch was timed.
    pub fn estimate(&self, wanted: &HashSet<Day>) -> Duration {
        let state = self.state();
        if !state.measured {
            return Duration::ZERO;
        }
        let mut longest = Duration::ZERO;
        for (day, since) in &state.in_flight {
            if wanted.contains(day) {
                longest = longest.max(state.fetch_time.saturating_sub(since.elapsed()));
            }
        }
        let mut place = 0_usize;
        let mut last_wanted = None;
        state.for_each_in_order(|ticket| {
            if wanted.contains(&ticket.day) {
                last_wanted = Some(place);
            }
            place = place.saturating_add(1);
        });
        match last_wanted {
            Some(place) => longest.max(state.finish_of(place.saturating_add(1))),
            None => longest,
        }
    }

    /// Lets days out while there are free slots and no pause.
    fn let_out(self: &Arc<Self>, state: &mut State) {
        loop {
            if let Some(until) = state.paused_until {
                if Instant::now() < until {
                    self.resume_at(state, until);
                    return;
                }
                state.paused_until = None;
            }
            if state.in_flight.len() >= state.limit.current() {
                return;
            }
            let Some((ticket, background)) = state.next() else {
                return;
            };
            if background {
                state.report_background();
            } else {
                state.count_out(ticket.key);
            }
            let slot = Slot {
                queue: Arc::clone(self),
                day: ticket.day,
                started: Instant::now(),
                epoch: state.limit.epoch(),
                armed: true,
            };
            state.in_flight.insert(ticket.day, Instant::now());
            if let Err(mut unused) = ticket.turn.send(slot) {
                // Nobody waits for the day any more (it arrived by another way): skip it.
                unused.armed = false;
                state.in_flight.remove(&ticket.day);
            }
        }
    }

    /// Lets days out again when the pause ends.
    fn resume_at(self: &Arc<Self>, state: &mut State, until: Instant) {
        if state.resume_pending {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        state.resume_pending = true;
        let queue = Arc::clone(self);
        runtime.spawn(async move {
            tokio::time::sleep_until(until.into()).await;
            let mut state = queue.state();
            state.resume_pending = false;
            queue.let_out(&mut state);
        });
    }
}

impl State {
    /// The next day to let out, and whether it is the warmer's: the front first, then the job
    /// being served, then the next key's oldest job, then the warmer's line.
    fn next(&mut self) -> Option<(Ticket, bool)> {
        if let Some(ticket) = self.first.pop_front() {
            return Some((ticket, false));
        }
        loop {
            if let Some(ticket) = self.serving.pop_front() {
                return Some((ticket, false));
            }
            if let Some(served) = self.serving_key.take()
                && self.lines.contains_key(&served)
            {
                self.turns.push_back(served);
            }
            let Some(key) = self.turns.pop_front() else {
                return self
                    .background
                    .pop_front()
                    .or_else(|| self.backfill.pop_front())
                    .map(|ticket| (ticket, true));
            };
            let line = self.lines.get_mut(&key)?;
            let job = line.pop_front()?;
            if line.is_empty() {
                self.lines.remove(&key);
            }
            self.serving = job;
            self.serving_key = Some(key);
        }
    }

    /// Every waiting day in the order it will be let out.
    fn for_each_in_order(&self, mut visit: impl FnMut(&Ticket)) {
        self.first.iter().chain(&self.serving).for_each(&mut visit);
        let served_next = self.serving_key.filter(|key| self.lines.contains_key(key));
        let ring: Vec<LineKey> = self.turns.iter().copied().chain(served_next).collect();
        for round in 0.. {
            let mut any = false;
            for key in &ring {
                if let Some(job) = self.lines.get(key).and_then(|line| line.get(round)) {
                    any = true;
                    job.iter().for_each(&mut visit);
                }
            }
            if !any {
                break;
            }
        }
    }

    /// About when the `count`-th day from now (counting from 1) will be held.
    fn finish_of(&self, count: usize) -> Duration {
        let limit = self.limit.current().max(1);
        let waves = self.in_flight.len().saturating_add(count).div_ceil(limit);
        let pause = self.paused_until.map_or(Duration::ZERO, |until| {
            until.saturating_duration_since(Instant::now())
        });
        pause.saturating_add(
            self.fetch_time
                .saturating_mul(u32::try_from(waves).unwrap_or(u32::MAX)),
        )
    }

    fn record_fetch_time(&mut self, took: Duration) {
        self.fetch_time = if self.measured {
            self.fetch_time
                .mul_f64(1.0 - FETCH_TIME_WEIGHT)
                .saturating_add(took.mul_f64(FETCH_TIME_WEIGHT))
        } else {
            took
        };
        self.measured = true;
    }

    fn count_in(&mut self, key: LineKey, days: usize) {
        self.queued = self.queued.saturating_add(days);
        let per_key = self.queued_per_key.entry(key).or_default();
        *per_key = per_key.saturating_add(days);
        self.report_depth();
    }

    fn count_out(&mut self, key: Option<LineKey>) {
        self.queued = self.queued.saturating_sub(1);
        if let Some(key) = key
            && let Some(per_key) = self.queued_per_key.get_mut(&key)
        {
            *per_key = per_key.saturating_sub(1);
            if *per_key == 0 {
                self.queued_per_key.remove(&key);
            }
        }
        self.report_depth();
    }

    fn report_background(&self) {
        metrics::gauge!("callstats_call_day_queue_days", "class" => "warmer")
            .set(count_as_f64(self.background.len()));
        metrics::gauge!("callstats_call_day_queue_days", "class" => "backfill")
            .set(count_as_f64(self.backfill.len()));
    }

    fn report_depth(&self) {
        metrics::gauge!("callstats_call_day_queue_days", "class" => "partner")
            .set(count_as_f64(self.queued));
        metrics::gauge!("callstats_call_day_queue_keys", "class" => "partner")
            .set(count_as_f64(self.queued_per_key.len()));
    }
}

fn count_as_f64(count: usize) -> f64 {
    f64::from(u32::try_from(count).unwrap_or(u32::MAX))
}

/// Additive increase, multiplicative decrease of the days fetched at once, the loss-based
/// algorithm of TCP Reno that Netflix's concurrency-limits (`AIMDLimit`) and Vector's adaptive
/// request concurrency apply to requests; here it reacts only to the upstream's explicit
/// backpressure. A backpressure answer halves the limit, once per burst: answers to fetches
/// let out before the last decrease do not decrease it again. After `limit` fetches in a row
/// arrive, it grows by one, up to the maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aimd {
    max: usize,
    limit: usize,
    arrived: usize,
    /// Decreases so far.
    epoch: u64,
}

impl Aimd {
    #[must_use]
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            max,
            limit: max,
            arrived: 0,
            epoch: 0,
        }
    }

    #[must_use]
    pub const fn current(&self) -> usize {
        self.limit
    }

    /// The count of decreases, which a fetch let out now carries.
    #[must_use]
    pub const fn epoch(&self) -> u64 {
        self.epoch
    }

    fn as_f64(self) -> f64 {
        count_as_f64(self.limit)
    }

    /// A fetch arrived.
    pub fn on_success(&mut self) {
        if self.limit >= self.max {
            return;
        }
        self.arrived = self.arrived.saturating_add(1);
        if self.arrived >= self.limit {
            self.limit = self.limit.saturating_add(1).min(self.max);
            self.arrived = 0;
        }
    }

    /// A fetch let out at `epoch` was throttled; whether the limit went down.
    pub fn on_backpressure(&mut self, epoch: u64) -> bool {
        if epoch != self.epoch {
            return false;
        }
        self.limit = (self.limit / 2).max(1);
        self.arrived = 0;
        self.epoch = self.epoch.wrapping_add(1);
        true
    }
}

#[cfg(test)]
mod tests;
