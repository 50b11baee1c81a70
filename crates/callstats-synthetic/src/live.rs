//! What the synthetic platform shows is happening now (docs/behaviour.md, "Live"), read off the
//! very calls it serves, so the live figures and the records agree and follow the same hourly load.
//!
//! - A caller waits in their call's queue from the call's start for its `wait_seconds` (until
//!   an agent answers, or until they hang up).
//! - An agent is `on_call` from the answer for the call's `duration_seconds`, carrying the call's
//!   queue (none for an outbound call), then in `wrap_up` for an after-call time fixed per call.
//!   The generator does not schedule agents, so an agent's calls may overlap: the latest
//!   answered is the one shown.
//! - An agent is signed in from `SIGNED_IN_MARGIN_MS` before a call is answered until as long
//!   after its wrap-up, so agents come in as the day's calls rise and leave as they fall: most
//!   are away at night, nearly all are in at the peaks. A signed-in agent between calls is
//!   `available`, unless on a break (`away`): a quarter-hour of the clock, one in
//!   `BREAK_ONE_IN` of each agent's.
//! - `since` is when the agent's state (and, on a call, its queue) last changed, looked for
//!   back to the start of the day before; an agent with no change since then shows that
//!   midnight.
//!
//! Waits are drawn with the hour's load, not from who is free (as in the records), so callers
//! may wait while agents are available, as the records have them do.

use std::collections::HashMap;

use callstats_domain::calendar::{Day, unix_millis};
use callstats_domain::live::{AgentNow, AgentState, LiveRuleBroken, LiveSnapshot, QueueNow};
use callstats_domain::model::{AgentNumber, QueueName};
use callstats_domain::tz;
use time::{Duration, OffsetDateTime};

use crate::rng::Rng;
use crate::{Generator, QUEUES, SyntheticCall, demo_agent_numbers, local_midnight, tenths};

/// Shortest after-call work, in seconds; the longest is this plus [`WRAP_UP_SPREAD_SECONDS`].
const WRAP_UP_MIN_SECONDS: u32 = 10;
const WRAP_UP_SPREAD_SECONDS: u32 = 50;
/// How long before a call's answer an agent signs in, and how long after its wrap-up they
/// stay, in milliseconds (twenty minutes).
const SIGNED_IN_MARGIN_MS: i64 = 20 * 60 * 1000;
/// Breaks are quarter-hours of the clock (Tashkent's offset being whole hours, its quarter-hours
/// begin when UTC's do)…
const BREAK_SLOT_MS: i64 = 15 * 60 * 1000;
/// …one in this many of each agent's quarter-hours being a break.
const BREAK_ONE_IN: u32 = 16;

/// One answered call as its agent lives it, in Unix milliseconds: instants are compared and
/// sorted many times a snapshot, and integers are what that is cheap on.
struct Handled {
    answered: i64,
    ended: i64,
    wrapped_up: i64,
    queue: Option<&'static str>,
}

/// What an agent shows: a state change, or a call of another queue, is a new `since`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Status {
    state: AgentState,
    queue: Option<&'static str>,
}

/// One agent: their calls, and what decides their breaks.
struct Agent<'a> {
    calls: &'a [Handled],
    number: &'a AgentNumber,
    seed: u64,
}

impl Generator {
    /// What the platform shows at `now`: every queue of [`QUEUES`] with the callers waiting in
    /// it, and every agent of the roster with their state, from the calls of the Tashkent day
    /// of `now` and of the day before. The same seed, volume and instant always give the same
    /// snapshot. [`CachedGenerator::live_at`](crate::CachedGenerator::live_at) keeps the days.
    ///
    /// # Errors
    /// None in practice: the snapshot is checked like any platform's, and the generator keeps
    /// its rules.
    pub fn live_at(&self, now: OffsetDateTime) -> Result<LiveSnapshot, LiveRuleBroken> {
        let today = Day::of(now);
        let before = today
            .plus_days(-1)
            .map(|day| self.calls_on(day))
            .unwrap_or_default();
        self.live_from(&before, &self.calls_on(today), now)
    }

    /// [`Generator::live_at`] from calls already generated: `today`'s are those of the
    /// Tashkent day of `now`, `before`'s those of the day before.
    ///
    /// # Errors
    /// As [`Generator::live_at`].
    pub fn live_from(
        &self,
        before: &[SyntheticCall],
        today: &[SyntheticCall],
        now: OffsetDateTime,
    ) -> Result<LiveSnapshot, LiveRuleBroken> {
        let day = Day::of(now);
        let floor = unix_millis(local_midnight(day.plus_days(-1).unwrap_or(day)));
        let now_ms = unix_millis(now);

        // Callers waiting now, and when the first of them joined, by queue.
        let mut waiting: HashMap<&str, (u32, i64)> = HashMap::new();
        let mut handled: HashMap<&AgentNumber, Vec<Handled>> = HashMap::new();
        for call in before.iter().chain(today) {
            let started = unix_millis(call.started_at);
            let answered = started.saturating_add(millis(call.wait_seconds.unwrap_or(0.0)));
            if let Some(queue) = call.queue
                && (started..answered).contains(&now_ms)
            {
                let (count, first) = waiting.entry(queue).or_insert((0, started));
                *count = count.saturating_add(1);
                *first = (*first).min(started);
            }
            if let Some(agent) = &call.agent_number {
                let ended = answered.saturating_add(millis(call.duration_seconds));
                handled.entry(agent).or_default().push(Handled {
                    answered,
                    ended,
                    wrapped_up: ended.saturating_add(self.wrap_up_ms(call)),
                    queue: call.queue,
                });
            }
        }

        let queues = QUEUES
            .iter()
            .filter_map(|name| {
                let (count, first) = waiting.get(name).copied().unzip();
                Some(QueueNow {
                    queue: QueueName::new(name).ok()?,
                    waiting: count.unwrap_or(0),
                    oldest_wait_seconds: first.map(|first| seconds(now_ms.saturating_sub(first))),
                })
            })
            .collect();
        let roster = demo_agent_numbers();
        let agents = roster
            .iter()
            .map(|number| {
                let agent = Agent {
                    calls: handled.get(number).map_or(&[][..], Vec::as_slice),
                    number,
                    seed: self.seed,
                };
                let current = agent.status(now_ms);
                AgentNow {
                    agent_number: number.clone(),
                    state: current.state,
                    since: instant(agent.since(current, now_ms, floor)),
                    queue: current.queue.and_then(|queue| QueueName::new(queue).ok()),
                }
            })
            .collect();
        LiveSnapshot::new(now, queues, agents)
    }

    /// A call's after-call work, fixed by the seed and the call.
    fn wrap_up_ms(&self, call: &SyntheticCall) -> i64 {
        let spread = Rng::new(self.seed, &call.id).below(WRAP_UP_SPREAD_SECONDS + 1);
        i64::from(WRAP_UP_MIN_SECONDS + spread) * 1000
    }
}

impl Agent<'_> {
    /// What the agent shows at `at`.
    fn status(&self, at: i64) -> Status {
        let talking = self
            .calls
            .iter()
            .filter(|call| (call.answered..call.ended).contains(&at))
            .max_by_key(|call| call.answered);
        if let Some(call) = talking {
            return Status {
                state: AgentState::OnCall,
                queue: call.queue,
            };
        }
        let signed_in = || {
            self.calls.iter().any(|call| {
                call.answered.saturating_sub(SIGNED_IN_MARGIN_MS) <= at
                    && at < call.wrapped_up.saturating_add(SIGNED_IN_MARGIN_MS)
            })
        };
        let state = if self
            .calls
            .iter()
            .any(|call| (call.ended..call.wrapped_up).contains(&at))
        {
            AgentState::WrapUp
        } else if signed_in() && !self.on_break(at) {
            AgentState::Available
        } else {
            AgentState::Away
        };
        Status { state, queue: None }
    }

    /// Whether the quarter-hour holding `at` is one of the agent's breaks.
    fn on_break(&self, at: i64) -> bool {
        let slot = at.div_euclid(BREAK_SLOT_MS).cast_unsigned();
        // The slot spread over the seed's bits (Fibonacci hashing), the agent as the purpose.
        let seed = self.seed ^ slot.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Rng::new(seed, self.number.as_str()).below(BREAK_ONE_IN) == 0
    }

    /// When the agent last changed to `current`: the latest instant after `floor` at which
    /// what they show changes, found among the instants where it can (each call's edges and
    /// each quarter-hour's start); `floor` when it has not changed since.
    fn since(&self, current: Status, now: i64, floor: i64) -> i64 {
        let slots = (floor.div_euclid(BREAK_SLOT_MS)..=now.div_euclid(BREAK_SLOT_MS))
            .map(|slot| slot.saturating_mul(BREAK_SLOT_MS));
        let mut edges: Vec<i64> = self
            .calls
            .iter()
            .flat_map(|call| {
                [
                    call.answered.saturating_sub(SIGNED_IN_MARGIN_MS),
                    call.answered,
                    call.ended,
                    call.wrapped_up,
                    call.wrapped_up.saturating_add(SIGNED_IN_MARGIN_MS),
                ]
            })
            .chain(slots)
            .filter(|edge| floor < *edge && *edge <= now)
            .collect();
        edges.sort_unstable();
        edges.dedup();
        edges
            .into_iter()
            .rev()
            .find(|edge| self.status(edge.saturating_sub(1)) != current)
            .unwrap_or(floor)
    }
}

/// Seconds as whole milliseconds.
fn millis(seconds: f64) -> i64 {
    i64::try_from(Duration::saturating_seconds_f64(seconds).whole_milliseconds()).unwrap_or(0)
}

/// Milliseconds as seconds to the tenth.
fn seconds(millis: i64) -> f64 {
    tenths(Duration::milliseconds(millis).as_seconds_f64())
}

/// The instant of a Unix millisecond, in Tashkent's offset.
fn instant(millis: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .map_or(OffsetDateTime::UNIX_EPOCH, |at| at.to_offset(tz::TASHKENT))
}

#[cfg(test)]
mod tests {
    use callstats_domain::testing::tashkent;

    use super::*;
    use crate::CachedGenerator;

    /// A Wednesday of the default generator, the days kept between snapshots.
    fn wednesday() -> CachedGenerator {
        CachedGenerator::new(Generator::default())
    }

    /// Every `step` minutes from `from` (hour) up to `to` (hour), Tashkent time on the Wednesday.
    fn instants(from: i64, to: i64, step: usize) -> impl Iterator<Item = OffsetDateTime> {
        (from * 60..to * 60)
            .step_by(step)
            .map(|minute| tashkent("2026-11-18 00:00") + Duration::minutes(minute))
    }

    fn total_waiting(snapshot: &LiveSnapshot) -> u32 {
        snapshot.queues().iter().map(|q| q.waiting).sum()
    }

    fn in_state(snapshot: &LiveSnapshot, state: AgentState) -> usize {
        snapshot
            .agents()
            .iter()
            .filter(|a| a.state == state)
            .count()
    }

    fn same_figures(a: &LiveSnapshot, b: &LiveSnapshot) -> bool {
        a.queues() == b.queues() && a.agents() == b.agents()
    }

    #[test]
    fn the_same_seed_and_instant_give_the_same_snapshot() {
        let now = tashkent("2026-11-18 11:00:07");
        let snapshot = Generator::default().live_at(now).unwrap();
        assert_eq!(Generator::default().live_at(now).unwrap(), snapshot);
        assert_eq!(wednesday().live_at(now).unwrap(), snapshot);
        let other = Generator::new(43, 5_000).live_at(now).unwrap();
        assert!(!same_figures(&other, &snapshot));
    }

    #[test]
    fn agents_are_the_roster_queues_those_of_the_records_and_every_since_is_past() {
        let generator = wednesday();
        let now = tashkent("2026-11-18 14:30");
        let snapshot = generator.live_at(now).unwrap();
        assert_eq!(snapshot.as_of(), now);
        let numbers: Vec<AgentNumber> = snapshot
            .agents()
            .iter()
            .map(|a| a.agent_number.clone())
            .collect();
        assert_eq!(numbers, demo_agent_numbers());
        let names: Vec<&str> = snapshot.queues().iter().map(|q| q.queue.as_str()).collect();
        assert_eq!(names, QUEUES);
        let floor = tashkent("2026-11-17 00:00");
        for agent in snapshot.agents() {
            assert!(floor <= agent.since && agent.since <= now, "{agent:?}");
            if agent.state != AgentState::OnCall {
                assert_eq!(agent.queue, None, "{agent:?}");
            }
        }
    }

    #[test]
    fn nobody_waits_at_night_and_peaks_have_callers_waiting_agents_on_calls_and_some_away() {
        let generator = wednesday();
        let sample = |from, to, step| -> Vec<LiveSnapshot> {
            instants(from, to, step)
                .map(|now| generator.live_at(now).unwrap())
                .collect()
        };
        let mean = |snapshots: &[LiveSnapshot], count: &dyn Fn(&LiveSnapshot) -> usize| {
            let total: usize = snapshots.iter().map(count).sum();
            f64::from(u32::try_from(total).unwrap())
                / f64::from(u32::try_from(snapshots.len()).unwrap())
        };
        let night = sample(1, 5, 10);
        let peaks = [sample(10, 12, 5), sample(14, 16, 5)].concat();
        let waiting = |s: &LiveSnapshot| usize::try_from(total_waiting(s)).unwrap();
        let on_call = |s: &LiveSnapshot| in_state(s, AgentState::OnCall);
        let away = |s: &LiveSnapshot| in_state(s, AgentState::Away);

        assert!(night.iter().all(|s| total_waiting(s) == 0));
        assert!(
            night
                .iter()
                .all(|s| s.queues().iter().all(|q| q.oldest_wait_seconds.is_none()))
        );
        assert!(
            mean(&night, &away) > 60.0,
            "away at night {}",
            mean(&night, &away)
        );
        assert!(
            mean(&night, &on_call) < 2.0,
            "on calls at night {}",
            mean(&night, &on_call)
        );

        assert!(
            mean(&peaks, &waiting) > 1.0,
            "waiting at the peaks {}",
            mean(&peaks, &waiting)
        );
        assert!(peaks.iter().any(|s| total_waiting(s) >= 3));
        assert!(
            mean(&peaks, &on_call) > 15.0,
            "on calls at the peaks {}",
            mean(&peaks, &on_call)
        );
        let away_at_peaks = mean(&peaks, &away);
        assert!(
            (1.0..15.0).contains(&away_at_peaks),
            "away at the peaks {away_at_peaks}"
        );
        assert!(peaks.iter().all(|s| in_state(s, AgentState::Available) > 0));
        assert!(peaks.iter().any(|s| in_state(s, AgentState::WrapUp) > 0));
    }

    #[test]
    fn through_the_working_day_the_figures_change_within_a_few_polls() {
        let generator = wednesday();
        for now in instants(10, 17, 30) {
            let first = generator.live_at(now).unwrap();
            let changed = (1..=5).any(|poll| {
                let later = generator
                    .live_at(now + Duration::seconds(2 * poll))
                    .unwrap();
                !same_figures(&first, &later)
            });
            assert!(changed, "no change within five polls of {now}");
        }
    }

    #[test]
    fn callers_waiting_and_agents_on_calls_are_the_calls_in_progress() {
        let generator = wednesday();
        let calls = generator.calls_on(Day::parse("2026-11-18").unwrap());
        for now in [
            tashkent("2026-11-18 11:00"),
            tashkent("2026-11-18 15:20:30"),
        ] {
            let snapshot = generator.live_at(now).unwrap();
            let answered_at = |call: &SyntheticCall| {
                call.started_at + Duration::seconds_f64(call.wait_seconds.unwrap_or(0.0))
            };
            for queue in snapshot.queues() {
                let waiting: Vec<&SyntheticCall> = calls
                    .iter()
                    .filter(|c| c.queue == Some(queue.queue.as_str()))
                    .filter(|c| c.started_at <= now && now < answered_at(c))
                    .collect();
                assert_eq!(
                    queue.waiting,
                    u32::try_from(waiting.len()).unwrap(),
                    "{queue:?}"
                );
                let oldest = waiting
                    .iter()
                    .map(|c| (now - c.started_at).as_seconds_f64())
                    .reduce(f64::max);
                assert_eq!(queue.oldest_wait_seconds, oldest.map(tenths), "{queue:?}");
            }
            for agent in snapshot.agents() {
                let talking = calls
                    .iter()
                    .filter(|c| c.agent_number.as_ref() == Some(&agent.agent_number))
                    .filter(|c| {
                        let answered = answered_at(c);
                        answered <= now
                            && now < answered + Duration::seconds_f64(c.duration_seconds)
                    })
                    .max_by_key(|c| answered_at(c));
                match talking {
                    Some(call) => {
                        assert_eq!(agent.state, AgentState::OnCall, "{agent:?}");
                        assert_eq!(
                            agent.queue.as_ref().map(QueueName::as_str),
                            call.queue,
                            "{agent:?}"
                        );
                    }
                    None => assert_ne!(agent.state, AgentState::OnCall, "{agent:?}"),
                }
            }
            assert!(in_state(&snapshot, AgentState::OnCall) > 5);
            assert!(snapshot.agents().iter().any(|a| a.queue.is_some()));
        }
    }

    #[test]
    fn an_agent_s_since_is_when_what_they_show_began() {
        let generator = wednesday();
        let now = tashkent("2026-11-18 15:00");
        let snapshot = generator.live_at(now).unwrap();
        let shows = |at: OffsetDateTime, index: usize| {
            let snapshot = generator.live_at(at).unwrap();
            let agent = &snapshot.agents()[index];
            (agent.state, agent.queue.clone())
        };
        for (index, agent) in snapshot.agents().iter().enumerate().take(12) {
            let current = (agent.state, agent.queue.clone());
            assert_eq!(shows(agent.since, index), current, "{agent:?}");
            let just_before = agent.since - Duration::MILLISECOND;
            assert_ne!(shows(just_before, index), current, "{agent:?}");
        }
    }
}
