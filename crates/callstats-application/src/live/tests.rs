//! The live feed and streams against a fake platform, the in-process relay and slots, and a
//! clock on Tokio's time (paused: the tests run in virtual time).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use callstats_api::live::LiveResponse;
use callstats_domain::DomainError;
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::calendar::DateRange;
use callstats_domain::call_day::FetchedCalls;
use callstats_domain::live::{AgentNow, AgentState, LiveError, LiveSnapshot, QueueNow};
use callstats_domain::model::Operator;
use callstats_domain::ports::{
    CallPlatform, Clock, MockKeyStore, MockPortalStore, StreamSlots, UpstreamError,
};
use callstats_domain::scope::ScopeSet;
use callstats_domain::testing::{agent, operator, queue};
use callstats_in_process::{LocalLiveRelay, LocalStreamSlots};
use futures::{Stream, StreamExt as _};
use time::OffsetDateTime;
use time::macros::datetime;

use super::frame::Failure;
use super::streams::HEARTBEAT;
use super::*;

const POLL: Duration = Duration::from_millis(2000);
const START: OffsetDateTime = datetime!(2026-11-21 09:15:00 +05:00);

/// Wall-clock time that runs with Tokio's, so that paused tests move both.
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> OffsetDateTime {
        START + self.0.elapsed()
    }
}

/// A platform whose `/live` answers what the test sets, counting the polls.
struct FakePlatform {
    answer: Mutex<Result<(u32, AgentState), LiveError>>,
    polls: AtomicU32,
    clock: Arc<dyn Clock>,
}

impl FakePlatform {
    fn new(clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self {
            answer: Mutex::new(Ok((2, AgentState::OnCall))),
            polls: AtomicU32::new(0),
            clock,
        })
    }

    /// Callers waiting in `sales`, and agent 101's state.
    fn set(&self, answer: Result<(u32, AgentState), LiveError>) {
        *self.answer.lock().unwrap() = answer;
    }

    fn polls(&self) -> u32 {
        self.polls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl CallPlatform for FakePlatform {
    async fn calls(&self, _: DateRange) -> Result<FetchedCalls, UpstreamError> {
        Err(UpstreamError::new("no calls here"))
    }

    async fn live(&self) -> Result<LiveSnapshot, LiveError> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        let (waiting, state) = self.answer.lock().unwrap().clone()?;
        let now = self.clock.now();
        Ok(LiveSnapshot::new(
            now,
            vec![QueueNow {
                queue: queue("sales"),
                waiting,
                // Fixed, so that the figures change only when the test changes them.
                oldest_wait_seconds: (waiting > 0).then_some(30.0),
            }],
            vec![AgentNow {
                agent_number: agent("101"),
                state,
                since: START,
                queue: (state == AgentState::OnCall).then(|| queue("sales")),
            }],
        )
        .unwrap())
    }
}

fn record(revoked: bool) -> ApiKeyRecord {
    ApiKeyRecord {
        id: 7,
        name: "wallboard".into(),
        scopes: ScopeSet::parse_list("calls").unwrap(),
        rate_limit_per_minute: 60,
        allowed_origin: None,
        expires_at: None,
        revoked_at: revoked.then_some(START),
    }
}

const DIGEST: KeyDigest = KeyDigest([9; 32]);

struct World {
    platform: Arc<FakePlatform>,
    feed: LiveFeed,
    streams: LiveStreams,
    revoked: Arc<Mutex<bool>>,
}

fn world_with(relay: Arc<LocalLiveRelay>, slots: Arc<dyn StreamSlots>, per_key: u32) -> World {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock(tokio::time::Instant::now()));
    let platform = FakePlatform::new(Arc::clone(&clock));
    let mut store = MockPortalStore::new();
    store
        .expect_operators()
        .returning(|| Ok(vec![operator("101", "Dilnoza", None)]));
    let feed = LiveFeed::new(
        platform.clone(),
        Arc::new(store),
        relay,
        Arc::clone(&clock),
        LiveSettings {
            poll: POLL,
            streams_per_key: per_key,
        },
    );
    let revoked = Arc::new(Mutex::new(false));
    let mut keys = MockKeyStore::new();
    let state = Arc::clone(&revoked);
    keys.expect_find_key()
        .returning(move |_| Ok(Some(record(*state.lock().unwrap()))));
    let streams = LiveStreams::new(feed.clone(), slots, Arc::new(keys), clock);
    World {
        platform,
        feed,
        streams,
        revoked,
    }
}

/// A stream `world` opens for `key`, which it must admit.
async fn open(world: &World, key: &ApiKeyRecord) -> LiveStream {
    world.streams.open(key, DIGEST).await.unwrap()
}

fn world() -> World {
    world_of_one(4)
}

/// A replica of its own (its relay and stream slots shared with none), a key holding at most
/// `per_key` streams.
fn world_of_one(per_key: u32) -> World {
    world_with(
        Arc::new(LocalLiveRelay::new()),
        Arc::new(LocalStreamSlots::new()),
        per_key,
    )
}

/// The next event within `wait`, `Some(None)` when the stream ended, `None` when nothing came.
async fn next_within(
    events: &mut (impl Stream<Item = LiveEvent> + Unpin),
    wait: Duration,
) -> Option<Option<LiveEvent>> {
    tokio::time::timeout(wait, events.next()).await.ok()
}

fn body_of(event: &LiveEvent) -> serde_json::Value {
    match event {
        LiveEvent::Live { body, .. } => serde_json::from_str(body.as_str()).unwrap(),
        other => panic!("not a live event: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn many_requests_at_once_make_one_poll_and_the_next_interval_one_more() {
    let world = world();
    let answers = futures::future::join_all((0..20).map(|_| world.feed.current())).await;
    assert!(answers.iter().all(Result::is_ok));
    assert_eq!(world.platform.polls(), 1);
    let first = answers[0].as_ref().unwrap().id;
    assert!(
        answers
            .iter()
            .all(|frame| frame.as_ref().unwrap().id == first)
    );

    // Within the interval the frame is served as it is.
    tokio::time::sleep(POLL / 2).await;
    assert_eq!(world.feed.current().await.unwrap().id, first);
    assert_eq!(world.platform.polls(), 1);

    // Past it, the next request waits for a new poll.
    tokio::time::sleep(POLL).await;
    let later = world.feed.current().await.unwrap();
    assert!(later.id > first);
    assert_eq!(world.platform.polls(), 2);
}

#[tokio::test(start_paused = true)]
async fn nothing_is_polled_while_nobody_asks_or_listens() {
    let world = world();
    world.feed.current().await.unwrap();
    tokio::time::sleep(POLL * 20).await;
    assert_eq!(world.platform.polls(), 1, "polled with nobody asking");
}

#[tokio::test(start_paused = true)]
async fn a_platform_without_live_figures_is_a_404_and_one_that_is_down_a_503() {
    let world = world();
    world.platform.set(Err(LiveError::NotReported));
    let err = callstats_domain::ports::LiveSource::now(&world.feed)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        DomainError::NotFound("the call platform does not report live figures".to_owned())
    );
    tokio::time::sleep(POLL).await;
    world
        .platform
        .set(Err(LiveError::Unavailable(UpstreamError::new("refused"))));
    let err = callstats_domain::ports::LiveSource::now(&world.feed)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DomainError::UpstreamUnavailable(_)),
        "{err:?}"
    );
    // And no stream opens on either.
    assert!(matches!(
        world.streams.open(&record(false), DIGEST).await.err(),
        Some(DomainError::UpstreamUnavailable(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_stream_sends_the_figures_at_once_then_only_changes_and_a_heartbeat() {
    let world = world();
    let stream = open(&world, &record(false)).await;
    let mut events = Box::pin(stream.events());
    let first = next_within(&mut events, Duration::from_millis(1))
        .await
        .flatten()
        .expect("the figures at once");
    let body = body_of(&first);
    assert_eq!(body["totals"]["waiting"], 2);
    assert_eq!(body["agents"][0]["name"], "Dilnoza");

    // Polls that find the same figures send nothing; the heartbeat comes at 10 s.
    let quiet = next_within(&mut events, HEARTBEAT - Duration::from_millis(100)).await;
    assert_eq!(quiet, None, "an event without a change");
    assert_eq!(
        next_within(&mut events, Duration::from_millis(200)).await,
        Some(Some(LiveEvent::Heartbeat))
    );
    assert!(world.platform.polls() >= 4, "{}", world.platform.polls());

    // A change is pushed after the next poll, with a later id.
    world.platform.set(Ok((5, AgentState::Available)));
    let changed = next_within(&mut events, POLL + Duration::from_millis(10))
        .await
        .flatten()
        .expect("the change");
    let body = body_of(&changed);
    assert_eq!(body["totals"]["waiting"], 5);
    assert_eq!(body["totals"]["agents_available"], 1);
    let (LiveEvent::Live { id: first_id, .. }, LiveEvent::Live { id: changed_id, .. }) =
        (&first, &changed)
    else {
        unreachable!()
    };
    assert!(changed_id > first_id);
}

#[tokio::test(start_paused = true)]
async fn figures_that_go_say_unavailable_once_and_come_back_as_a_live_event() {
    let world = world();
    let stream = open(&world, &record(false)).await;
    let mut events = Box::pin(stream.events());
    next_within(&mut events, Duration::from_millis(1)).await;
    world
        .platform
        .set(Err(LiveError::Unavailable(UpstreamError::new("refused"))));
    let gone = next_within(&mut events, POLL + Duration::from_millis(10))
        .await
        .flatten();
    let Some(LiveEvent::Unavailable { error, .. }) = gone else {
        panic!("{gone:?}")
    };
    assert_eq!(
        error,
        r#"{"error":"the upstream call platform is unavailable"}"#
    );
    // Still down: nothing more but heartbeats.
    let next = next_within(&mut events, HEARTBEAT).await.flatten();
    assert_eq!(next, Some(LiveEvent::Heartbeat));
    world.platform.set(Ok((1, AgentState::Away)));
    let back = next_within(&mut events, POLL + Duration::from_millis(10))
        .await
        .flatten()
        .expect("the figures again");
    assert_eq!(body_of(&back)["totals"]["agents_away"], 1);
}

#[tokio::test(start_paused = true)]
async fn a_revoked_key_s_stream_ends_within_10_seconds() {
    let world = world();
    let stream = open(&world, &record(false)).await;
    let mut events = Box::pin(stream.events());
    next_within(&mut events, Duration::from_millis(1)).await;
    *world.revoked.lock().unwrap() = true;
    let started = tokio::time::Instant::now();
    loop {
        match next_within(&mut events, Duration::from_secs(10)).await {
            Some(Some(LiveEvent::Heartbeat)) => {}
            Some(None) => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(
        started.elapsed() <= Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(world.streams.open_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_key_holds_at_most_its_streams_and_a_closed_one_frees_its_slot() {
    let world = world_of_one(2);
    let key = record(false);
    let first = open(&world, &key).await;
    let _second = open(&world, &key).await;
    let refused = world.streams.open(&key, DIGEST).await.err();
    assert_eq!(refused, Some(DomainError::TooManyStreams { limit: 2 }));
    drop(first);
    // The slot is freed by a task of its own.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(world.streams.open(&key, DIGEST).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_every_stream() {
    let world = world();
    let streams = [
        open(&world, &record(false)).await,
        open(&world, &record(false)).await,
    ];
    world.streams.shut_down();
    for stream in streams {
        let mut events = Box::pin(stream.events());
        // The figures it was opened with, then the end.
        assert!(matches!(
            next_within(&mut events, Duration::from_millis(1)).await,
            Some(Some(LiveEvent::Live { .. }))
        ));
        assert_eq!(
            next_within(&mut events, Duration::from_millis(1)).await,
            Some(None)
        );
    }
    assert_eq!(world.streams.open_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_reads_nothing_is_dropped_and_holds_no_other_back() {
    let world = world_of_one(2);
    let key = record(false);
    let _unread = open(&world, &key).await;
    let read = open(&world, &key).await;
    let mut events = Box::pin(read.events());
    next_within(&mut events, Duration::from_millis(1)).await;
    let mut waiting = 2;
    for _ in 0..4 {
        waiting += 1;
        world.platform.set(Ok((waiting, AgentState::OnCall)));
        loop {
            let event = next_within(&mut events, Duration::from_secs(11))
                .await
                .flatten()
                .expect("the reader keeps its events");
            if event != LiveEvent::Heartbeat {
                assert_eq!(body_of(&event)["totals"]["waiting"], waiting);
                break;
            }
        }
        tokio::time::sleep(Duration::from_secs(8)).await;
    }
    // The stream nobody read is gone, its slot free; the reader's stays.
    assert_eq!(world.streams.open_count(), 1);
    assert!(world.streams.open(&key, DIGEST).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn replicas_sharing_a_relay_poll_once_an_interval_between_them_and_both_receive() {
    let relay = Arc::new(LocalLiveRelay::new());
    let slots: Arc<dyn StreamSlots> = Arc::new(LocalStreamSlots::new());
    let one = world_with(Arc::clone(&relay), Arc::clone(&slots), 4);
    let two = world_with(relay, slots, 4);
    let mut first = Box::pin(
        one.streams
            .open(&record(false), DIGEST)
            .await
            .unwrap()
            .events(),
    );
    let mut second = Box::pin(
        two.streams
            .open(&record(false), DIGEST)
            .await
            .unwrap()
            .events(),
    );
    next_within(&mut first, Duration::from_millis(1)).await;
    next_within(&mut second, Duration::from_millis(1)).await;
    tokio::time::sleep(POLL * 10).await;
    let polls = one.platform.polls() + two.platform.polls();
    assert!((10..=11).contains(&polls), "{polls} polls in 10 intervals");
    // A change seen by whichever replica polls reaches the streams of both.
    one.platform.set(Ok((9, AgentState::WrapUp)));
    two.platform.set(Ok((9, AgentState::WrapUp)));
    for events in [&mut first, &mut second] {
        let event = loop {
            match next_within(events, POLL * 2).await.flatten() {
                Some(LiveEvent::Heartbeat) => {}
                event => break event.expect("the change"),
            }
        };
        assert_eq!(body_of(&event)["totals"]["waiting"], 9);
    }
}

#[test]
fn a_frame_crosses_the_relay_unchanged() {
    let snapshot = LiveSnapshot::new(START, Vec::new(), Vec::new()).unwrap();
    let answer = |snapshot: &LiveSnapshot, roster: &[Operator]| {
        LiveResponse::from(&callstats_domain::live::live_figures(snapshot, roster))
    };
    let live = Frame::live(42, &answer(&snapshot, &[operator("101", "Dilnoza", None)]));
    assert_eq!(Frame::decode(&live.encode()), Some(live.clone()));
    let failed = Frame::failed(43, frame_failure());
    assert_eq!(Frame::decode(&failed.encode()), Some(failed));
    assert_eq!(Frame::decode(b"not a frame"), None);
    // The same figures at another instant have the same digest.
    let later = LiveSnapshot::new(START + Duration::from_secs(2), Vec::new(), Vec::new()).unwrap();
    let later = Frame::live(44, &answer(&later, &[]));
    assert_eq!(later.figures, live.figures);
    assert_ne!(later.outcome, live.outcome);
}

fn frame_failure() -> Failure {
    Failure::Platform("refused".to_owned())
}
