//! The poller and the replica's latest frame.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use callstats_api::live::LiveResponse;
use callstats_domain::DomainError;
use callstats_domain::live::{LiveBody, live_figures};
use callstats_domain::model::Operator;
use callstats_domain::ports::{CallPlatform, Clock, LiveRelay, LiveSource, PortalStore};
use callstats_domain::request::PORTAL_TTL;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use super::frame::{Failure, Frame};

/// How the live figures are polled and streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSettings {
    /// The least time between two polls of the platform's `/live`, for the whole deployment
    /// (`CALLSTATS_LIVE_POLL_MS`).
    pub poll: Duration,
    /// The most streams one key may hold open across the deployment
    /// (`CALLSTATS_LIVE_STREAMS_PER_KEY`).
    pub streams_per_key: u32,
}

impl LiveSettings {
    pub const DEFAULT_POLL: Duration = Duration::from_millis(2000);
    pub const DEFAULT_STREAMS_PER_KEY: u32 = 4;
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            poll: Self::DEFAULT_POLL,
            streams_per_key: Self::DEFAULT_STREAMS_PER_KEY,
        }
    }
}

/// How long a request waits for a frame past one poll interval: the platform's own request
/// timeout is shorter, so a poll under way has ended by then.
const FRAME_WAIT: Duration = Duration::from_secs(12);

/// How many times an interval the poller looks whether a poll is due.
const LOOKS_AN_INTERVAL: u32 = 8;
/// The least time between two looks.
const MIN_LOOK: Duration = Duration::from_millis(50);

/// How long a lost relay subscription waits before it is made again.
const RESUBSCRIBE_AFTER: Duration = Duration::from_secs(1);

/// The live figures of this replica: the latest frame, and the poller that keeps it fresh
/// while anyone asks or listens. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct LiveFeed {
    inner: Arc<Inner>,
}

struct Inner {
    platform: Arc<dyn CallPlatform>,
    store: Arc<dyn PortalStore>,
    relay: Arc<dyn LiveRelay>,
    clock: Arc<dyn Clock>,
    settings: LiveSettings,
    /// The latest frame this replica knows, whichever replica polled it. Every stream and every
    /// waiting request holds a receiver: the poller runs while there is one.
    frames: watch::Sender<Option<Arc<Frame>>>,
    /// Whether the poller task is running.
    polling: AtomicBool,
    /// The roster last read, and when: names change rarely, so a poll reads it at most once a
    /// minute, and a portal outage keeps the last one.
    roster: tokio::sync::Mutex<Option<(Instant, Arc<Vec<Operator>>)>>,
    /// The id of the last frame this replica polled, so that ids grow.
    last_id: Mutex<u64>,
}

impl LiveFeed {
    #[must_use]
    pub fn new(
        platform: Arc<dyn CallPlatform>,
        store: Arc<dyn PortalStore>,
        relay: Arc<dyn LiveRelay>,
        clock: Arc<dyn Clock>,
        settings: LiveSettings,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                platform,
                store,
                relay,
                clock,
                settings,
                frames: watch::Sender::new(None),
                polling: AtomicBool::new(false),
                roster: tokio::sync::Mutex::new(None),
                last_id: Mutex::new(0),
            }),
        }
    }

    /// How the figures are polled and streamed.
    #[must_use]
    pub fn settings(&self) -> LiveSettings {
        self.inner.settings
    }

    /// The latest frame taken within one poll interval: this replica's, another replica's
    /// published one, or the next poll's, waited for. A 503 when none comes in time.
    pub async fn current(&self) -> Result<Arc<Frame>, DomainError> {
        let mut frames = self.inner.frames.subscribe();
        let fresh = |frame: &Option<Arc<Frame>>| {
            frame
                .as_ref()
                .filter(|frame| self.inner.is_fresh(frame))
                .cloned()
        };
        if let Some(frame) = fresh(&frames.borrow_and_update()) {
            return Ok(frame);
        }
        if let Some(frame) = self
            .inner
            .relay
            .latest()
            .await
            .and_then(|bytes| Frame::decode(&bytes))
        {
            let frame = Arc::new(frame);
            if self.inner.is_fresh(&frame) {
                self.inner.offer(Arc::clone(&frame));
                return Ok(frame);
            }
        }
        self.start();
        let waited = tokio::time::timeout(self.inner.settings.poll + FRAME_WAIT, async {
            loop {
                if frames.changed().await.is_err() {
                    return None;
                }
                if let Some(frame) = fresh(&frames.borrow_and_update()) {
                    return Some(frame);
                }
            }
        })
        .await;
        waited.ok().flatten().ok_or_else(|| {
            Failure::Platform("no live figures came within the wait".to_owned()).to_domain()
        })
    }

    /// A receiver of every frame from now on (the current one marked seen): holding it keeps
    /// the poller running.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Option<Arc<Frame>>> {
        let receiver = self.inner.frames.subscribe();
        self.start();
        receiver
    }

    /// Starts the poller unless it runs.
    fn start(&self) {
        if self
            .inner
            .polling
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move { inner.poll_while_wanted().await });
        }
    }
}

#[async_trait]
impl LiveSource for LiveFeed {
    async fn now(&self) -> Result<LiveBody, DomainError> {
        self.current()
            .await?
            .outcome
            .clone()
            .map_err(|failure| failure.to_domain())
    }
}

impl Inner {
    /// Whether the latest frame this replica knows was taken within one poll interval.
    fn latest_is_fresh(&self) -> bool {
        self.frames
            .borrow()
            .as_ref()
            .is_some_and(|frame| self.is_fresh(frame))
    }

    /// Whether `frame` was taken within one poll interval.
    fn is_fresh(&self, frame: &Frame) -> bool {
        let now = self.now_ms();
        let poll = u64::try_from(self.settings.poll.as_millis()).unwrap_or(u64::MAX);
        now.saturating_sub(frame.taken_ms()) < poll
    }

    fn now_ms(&self) -> u64 {
        let nanos = self.clock.now().unix_timestamp_nanos() / 1_000_000;
        u64::try_from(nanos).unwrap_or(0)
    }

    /// Keeps `frame` as the latest unless a later one is known.
    fn offer(&self, frame: Arc<Frame>) {
        self.frames.send_if_modified(|latest| {
            if latest.as_ref().is_some_and(|latest| latest.id >= frame.id) {
                return false;
            }
            *latest = Some(frame);
            true
        });
    }

    /// Polls once per interval, when the deployment's poll is ours, and takes in the other
    /// replicas' frames, until nobody on this replica asks or listens.
    async fn poll_while_wanted(self: Arc<Self>) {
        loop {
            self.poll_while_listened().await;
            self.polling.store(false, Ordering::Release);
            // A listener that came between the last look and the flag must not wait alone.
            if self.frames.receiver_count() == 0
                || self
                    .polling
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                return;
            }
        }
    }

    async fn poll_while_listened(&self) {
        // Looked at several times an interval: a claim refused by a moment (the last one set a
        // little late) is tried again soon, not an interval later.
        let mut tick =
            tokio::time::interval((self.settings.poll / LOOKS_AN_INTERVAL).max(MIN_LOOK));
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut subscription: Option<BoxStream<'static, bytes::Bytes>> = None;
        let mut resubscribe_at = Instant::now();
        loop {
            if subscription.is_none() && Instant::now() >= resubscribe_at {
                subscription = self.relay.subscribe().await;
                resubscribe_at = Instant::now() + RESUBSCRIBE_AFTER;
            }
            tokio::select! {
                _ = tick.tick() => {
                    if self.frames.receiver_count() == 0 {
                        return;
                    }
                    if self.latest_is_fresh() {
                        continue;
                    }
                    if self.relay.claim_poll(self.settings.poll).await {
                        let frame = Arc::new(self.poll().await);
                        self.relay.publish(frame.encode(), self.settings.poll * 3).await;
                        self.offer(frame);
                    }
                }
                published = next(&mut subscription) => match published {
                    Some(bytes) => {
                        if let Some(frame) = Frame::decode(&bytes) {
                            self.offer(Arc::new(frame));
                        }
                    }
                    None => subscription = None,
                },
            }
        }
    }

    /// Asks the platform once and names its agents from the roster.
    async fn poll(&self) -> Frame {
        let id = self.next_id();
        let frame = match self.platform.live().await {
            Ok(snapshot) => match self.roster().await {
                Ok(roster) => {
                    Frame::live(id, &LiveResponse::from(&live_figures(&snapshot, &roster)))
                }
                Err(reason) => Frame::failed(id, Failure::Portal(reason)),
            },
            Err(err) => Frame::failed(id, Failure::of(&err)),
        };
        let outcome = match &frame.outcome {
            Ok(_) => "ok",
            Err(failure) => failure.outcome_label(),
        };
        metrics::counter!("callstats_live_polls_total", "outcome" => outcome).increment(1);
        frame
    }

    /// The roster, read again once a minute; the last one read while the portal fails.
    async fn roster(&self) -> Result<Arc<Vec<Operator>>, String> {
        let mut kept = self.roster.lock().await;
        if let Some((read_at, roster)) = kept.as_ref()
            && read_at.elapsed() < PORTAL_TTL
        {
            return Ok(Arc::clone(roster));
        }
        match self.store.operators().await {
            Ok(roster) => {
                let roster = Arc::new(roster);
                *kept = Some((Instant::now(), Arc::clone(&roster)));
                Ok(roster)
            }
            Err(err) => {
                tracing::warn!(error = %err, "the roster for the live figures could not be read");
                kept.as_ref()
                    .map(|(_, roster)| Arc::clone(roster))
                    .ok_or_else(|| err.to_string())
            }
        }
    }

    /// An id above every one this replica has polled or seen.
    fn next_id(&self) -> u64 {
        let seen = self.frames.borrow().as_ref().map_or(0, |frame| frame.id);
        let mut last = self.last_id.lock().unwrap_or_else(PoisonError::into_inner);
        *last = self
            .now_ms()
            .max(last.saturating_add(1))
            .max(seen.saturating_add(1));
        *last
    }
}

/// The next frame published, or `None` once the subscription ends; pending forever without one.
async fn next(subscription: &mut Option<BoxStream<'static, bytes::Bytes>>) -> Option<bytes::Bytes> {
    match subscription {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}
