//! The open live streams of this replica.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use callstats_domain::DomainError;
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::live::LiveBody;
use callstats_domain::ports::{Clock, KeyStore, StreamSlots};
use futures::Stream;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::feed::LiveFeed;
use super::frame::Frame;

/// How often a stream sends a comment, events or not (docs/behaviour.md, "The stream": one at least
/// every 15 s).
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// How often the open streams' keys are read again from the key store itself (not the key
/// cache): with the read, a revoked or expired key's streams end within 10 s.
const KEY_CHECK: Duration = Duration::from_secs(4);
/// How long a slot counts without being renewed: a replica that stopped without closing its
/// streams frees their slots within this time.
const SLOT_TTL: Duration = Duration::from_secs(30);
/// How often the slots are renewed.
const SLOT_RENEWAL: Duration = Duration::from_secs(10);
/// A stream that has sent nothing for this long has at least three heartbeats unsent: its
/// client reads nothing, and it is dropped.
const UNREAD_FOR: Duration = Duration::from_secs(30);

/// What a stream sends.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// Event `live`: the figures, when they changed (and first, at once).
    Live { id: u64, body: LiveBody },
    /// Event `unavailable`: the figures can no longer be had (the platform or the roster
    /// failed, or the platform stopped reporting them); `error` is the JSON error body.
    Unavailable { id: u64, error: String },
    /// A comment: nothing new, the stream is alive.
    Heartbeat,
}

/// Why a stream ended, as `callstats_live_streams_closed_total` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Client,
    Revoked,
    Slow,
    Shutdown,
}

impl Ended {
    const fn label(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Revoked => "revoked",
            Self::Slow => "slow",
            Self::Shutdown => "shutdown",
        }
    }
}

/// The open streams of this replica. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct LiveStreams {
    inner: Arc<Registry>,
}

struct Registry {
    feed: LiveFeed,
    slots: Arc<dyn StreamSlots>,
    /// The key store itself, not the key cache: a revocation is seen at the next check.
    keys: Arc<dyn KeyStore>,
    clock: Arc<dyn Clock>,
    /// Cancelled at shutdown; every stream's token is its child.
    shutdown: CancellationToken,
    open: Mutex<HashMap<u64, Arc<Open>>>,
    next_id: AtomicU64,
    /// Distinguishes this replica's slot ids from the others'.
    replica: String,
    checking: AtomicBool,
}

/// One open stream, as the registry sees it.
struct Open {
    key_id: i64,
    digest: KeyDigest,
    slot: String,
    closed: CancellationToken,
    /// When the stream last handed its connection something (event or comment).
    sent_at: Mutex<Instant>,
}

impl LiveStreams {
    #[must_use]
    pub fn new(
        feed: LiveFeed,
        slots: Arc<dyn StreamSlots>,
        keys: Arc<dyn KeyStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            inner: Arc::new(Registry {
                feed,
                slots,
                keys,
                clock,
                shutdown: CancellationToken::new(),
                open: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(0),
                replica: format!("{:016x}", rand_u64()),
                checking: AtomicBool::new(false),
            }),
        }
    }

    /// The feed the streams read.
    #[must_use]
    pub fn feed(&self) -> &LiveFeed {
        &self.inner.feed
    }

    /// How many streams are open on this replica.
    #[must_use]
    pub fn open_count(&self) -> usize {
        self.inner.lock().len()
    }

    /// Opens a stream for `key` (presented as `digest`): its first event is the current
    /// figures. A 404 or 503 when there are none, a 429 when the key holds all its streams.
    pub async fn open(
        &self,
        key: &ApiKeyRecord,
        digest: KeyDigest,
    ) -> Result<LiveStream, DomainError> {
        let registry = &self.inner;
        // Subscribed first: a frame that comes while the current one is fetched is not missed.
        let frames = registry.feed.subscribe();
        let first = registry.feed.current().await?;
        if let Err(failure) = &first.outcome {
            return Err(failure.to_domain());
        }
        let id = registry.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = format!("{}-{id}", registry.replica);
        let limit = registry.feed.settings().streams_per_key;
        if !registry.slots.open(key.id, &slot, limit, SLOT_TTL).await {
            return Err(DomainError::TooManyStreams { limit });
        }
        let open = Arc::new(Open {
            key_id: key.id,
            digest,
            slot,
            closed: registry.shutdown.child_token(),
            sent_at: Mutex::new(Instant::now()),
        });
        registry.lock().insert(id, Arc::clone(&open));
        metrics::gauge!("callstats_live_streams_open").increment(1.0);
        self.start_checking();
        Ok(LiveStream {
            state: Some(State {
                frames,
                first: Some(first),
                sent: None,
                heartbeat: heartbeat(),
                open,
                _guard: Guard {
                    registry: Arc::clone(registry),
                    id,
                },
            }),
        })
    }

    /// Ends every stream (the replica is stopping): each ends after the event it is sending.
    pub fn shut_down(&self) {
        self.inner.shutdown.cancel();
    }

    /// Starts the checks of the open streams unless they run.
    fn start_checking(&self) {
        if self
            .inner
            .checking
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let registry = Arc::clone(&self.inner);
            tokio::spawn(async move { registry.check_while_open().await });
        }
    }
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Open>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes stream `id` out of the open streams, counts why and frees its slot; nothing when
    /// it was taken out already.
    fn end(self: &Arc<Self>, id: u64, ended: Ended) {
        let Some(open) = self.lock().remove(&id) else {
            return;
        };
        open.closed.cancel();
        metrics::gauge!("callstats_live_streams_open").decrement(1.0);
        metrics::counter!("callstats_live_streams_closed_total", "reason" => ended.label())
            .increment(1);
        let slots = Arc::clone(&self.slots);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { slots.close(open.key_id, &open.slot).await });
        }
    }

    /// Every few seconds while streams are open: the keys read again, the slots renewed, the
    /// streams that stopped reading dropped.
    async fn check_while_open(self: Arc<Self>) {
        let mut tick = tokio::time::interval(KEY_CHECK);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut renewed = Instant::now();
        loop {
            tick.tick().await;
            let open: Vec<(u64, Arc<Open>)> = self
                .lock()
                .iter()
                .map(|(id, open)| (*id, Arc::clone(open)))
                .collect();
            if open.is_empty() {
                self.checking.store(false, Ordering::Release);
                // A stream opened between the look and the flag keeps its checks.
                if self.lock().is_empty()
                    || self
                        .checking
                        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                {
                    return;
                }
                continue;
            }
            for (id, stream) in &open {
                let sent_at = *stream
                    .sent_at
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if sent_at.elapsed() >= UNREAD_FOR {
                    self.end(*id, Ended::Slow);
                }
            }
            self.end_revoked(&open).await;
            if renewed.elapsed() >= SLOT_RENEWAL {
                renewed = Instant::now();
                for (_, stream) in &open {
                    self.slots
                        .renew(stream.key_id, &stream.slot, SLOT_TTL)
                        .await;
                }
            }
        }
    }

    /// Ends the streams whose key is revoked, expired or gone. A key store that fails ends
    /// none: revoking a key needs that same database.
    async fn end_revoked(self: &Arc<Self>, open: &[(u64, Arc<Open>)]) {
        let digests: HashSet<KeyDigest> = open.iter().map(|(_, stream)| stream.digest).collect();
        let now = self.clock.now();
        for digest in digests {
            let usable = match self.keys.find_key(&digest).await {
                Ok(Some(key)) => key.check_usable(now).is_ok(),
                Ok(None) => false,
                Err(_) => true,
            };
            if !usable {
                for (id, stream) in open {
                    if stream.digest == digest {
                        self.end(*id, Ended::Revoked);
                    }
                }
            }
        }
    }
}

/// Takes the stream out of the open streams when its response is dropped: its client went
/// away, or it ended.
struct Guard {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let ended = if self.registry.shutdown.is_cancelled() {
            Ended::Shutdown
        } else {
            Ended::Client
        };
        self.registry.end(self.id, ended);
    }
}

/// One open stream: its events, from the current figures on. Ends when its key is revoked or
/// expires, when it stops reading, and at shutdown; dropping it closes it.
pub struct LiveStream {
    state: Option<State>,
}

struct State {
    frames: watch::Receiver<Option<Arc<Frame>>>,
    /// The figures the stream opened with, sent at once.
    first: Option<Arc<Frame>>,
    /// The figures last sent (their digest), or `None` after an `unavailable`.
    sent: Option<String>,
    heartbeat: tokio::time::Interval,
    open: Arc<Open>,
    /// Takes the stream out of the open streams when dropped.
    _guard: Guard,
}

impl LiveStream {
    /// The stream's events.
    pub fn events(self) -> impl Stream<Item = LiveEvent> + Send + 'static {
        futures::stream::unfold(self.state, |state| async move {
            let mut state = state?;
            let event = state.next().await?;
            *state
                .open
                .sent_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
            if !matches!(event, LiveEvent::Heartbeat) {
                metrics::counter!("callstats_live_events_sent_total").increment(1);
            }
            Some((event, Some(state)))
        })
    }
}

impl State {
    /// The next event, or `None` once the stream ends.
    async fn next(&mut self) -> Option<LiveEvent> {
        if let Some(first) = self.first.take() {
            return self.event_for(&first);
        }
        loop {
            tokio::select! {
                biased;
                () = self.open.closed.cancelled() => {
                    // Ended by the registry (revoked, slow) or by shutdown.
                    return None;
                }
                changed = self.frames.changed() => {
                    changed.ok()?;
                    let frame = self.frames.borrow_and_update().clone();
                    if let Some(event) = frame.and_then(|frame| self.event_for(&frame)) {
                        return Some(event);
                    }
                }
                _ = self.heartbeat.tick() => return Some(LiveEvent::Heartbeat),
            }
        }
    }

    /// The event `frame` makes: its figures when they differ from those last sent, an
    /// `unavailable` when the figures were there and are gone, else none.
    fn event_for(&mut self, frame: &Frame) -> Option<LiveEvent> {
        match &frame.outcome {
            Ok(body) => {
                if self.sent.as_deref() == Some(frame.figures.as_str()) {
                    return None;
                }
                self.sent = Some(frame.figures.clone());
                Some(LiveEvent::Live {
                    id: frame.id,
                    body: body.clone(),
                })
            }
            Err(failure) => {
                self.sent.take()?;
                let error = serde_json::json!({ "error": failure.to_domain().to_string() });
                Some(LiveEvent::Unavailable {
                    id: frame.id,
                    error: error.to_string(),
                })
            }
        }
    }
}

/// A heartbeat every [`HEARTBEAT`], the first one [`HEARTBEAT`] after the stream opens.
fn heartbeat() -> tokio::time::Interval {
    let mut interval = tokio::time::interval_at(Instant::now() + HEARTBEAT, HEARTBEAT);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    interval
}

/// A number unlikely to be another replica's: the time and the process id, hashed.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}
