//! The live figures of a replica alone: its poll's claim, its frames handed to its own
//! subscriptions, and its open live streams, all in process memory. Times are tokio's, so that
//! tests with a paused clock see them move.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use callstats_domain::ports::{LiveRelay, StreamSlots};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::broadcast;
use tokio::time::Instant;

/// How many frames a subscription may fall behind by; past it, it skips to the newer ones
/// (a live view wants the present, not every frame it missed).
const FRAMES_BEHIND: usize = 8;

/// Locks `mutex`, whatever a panicking holder left in it: its values stay valid.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The live figures' relay of one replica alone: it claims every window's poll for itself and
/// hands its frames to its own subscriptions.
pub struct LocalLiveRelay {
    /// When the last claim was granted.
    last_claim: Mutex<Option<Instant>>,
    /// The latest frame, and when it stops being kept.
    latest: Mutex<Option<(Bytes, Instant)>>,
    frames: broadcast::Sender<Bytes>,
}

impl Default for LocalLiveRelay {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalLiveRelay {
    /// A relay with no claim made, no frame kept and no subscription.
    #[must_use]
    pub fn new() -> Self {
        Self {
            last_claim: Mutex::new(None),
            latest: Mutex::new(None),
            frames: broadcast::Sender::new(FRAMES_BEHIND),
        }
    }
}

#[async_trait]
impl LiveRelay for LocalLiveRelay {
    async fn claim_poll(&self, window: Duration) -> bool {
        let now = Instant::now();
        let mut last = lock(&self.last_claim);
        match *last {
            Some(claimed) if now.saturating_duration_since(claimed) < window => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }

    async fn publish(&self, frame: Bytes, ttl: Duration) {
        let now = Instant::now();
        *lock(&self.latest) = Some((frame.clone(), now.checked_add(ttl).unwrap_or(now)));
        // Err only means nobody is subscribed.
        let _ = self.frames.send(frame);
    }

    async fn latest(&self) -> Option<Bytes> {
        let mut latest = lock(&self.latest);
        match &*latest {
            Some((frame, until)) if Instant::now() < *until => Some(frame.clone()),
            Some(_) => {
                *latest = None;
                None
            }
            None => None,
        }
    }

    async fn subscribe(&self) -> Option<BoxStream<'static, Bytes>> {
        let frames = futures::stream::unfold(self.frames.subscribe(), |mut frames| async move {
            loop {
                match frames.recv().await {
                    Ok(frame) => return Some((frame, frames)),
                    // Fell behind: the oldest frames kept come next.
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        Some(frames.boxed())
    }
}

/// The open live streams of each key on one replica alone: per key, each stream's id and when
/// it lapses.
#[derive(Default)]
pub struct LocalStreamSlots {
    slots: Mutex<HashMap<i64, HashMap<String, Instant>>>,
}

impl LocalStreamSlots {
    /// No stream open.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

/// Drops the lapsed slots of every key, and the keys left without one.
fn drop_lapsed(slots: &mut HashMap<i64, HashMap<String, Instant>>, now: Instant) {
    slots.retain(|_, streams| {
        streams.retain(|_, until| now < *until);
        !streams.is_empty()
    });
}

#[async_trait]
impl StreamSlots for LocalStreamSlots {
    async fn open(&self, key_id: i64, stream: &str, limit: u32, ttl: Duration) -> bool {
        let now = Instant::now();
        let until = now.checked_add(ttl).unwrap_or(now);
        let mut slots = lock(&self.slots);
        drop_lapsed(&mut slots, now);
        let streams = slots.entry(key_id).or_default();
        if let Some(open) = streams.get_mut(stream) {
            *open = until;
            return true;
        }
        if u32::try_from(streams.len()).unwrap_or(u32::MAX) >= limit {
            if streams.is_empty() {
                slots.remove(&key_id);
            }
            return false;
        }
        streams.insert(stream.to_owned(), until);
        true
    }

    async fn renew(&self, key_id: i64, stream: &str, ttl: Duration) {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        if let Some(open) = slots
            .get_mut(&key_id)
            .and_then(|streams| streams.get_mut(stream))
            .filter(|until| now < **until)
        {
            *open = now.checked_add(ttl).unwrap_or(now);
        }
    }

    async fn close(&self, key_id: i64, stream: &str) {
        let mut slots = lock(&self.slots);
        if let Some(streams) = slots.get_mut(&key_id) {
            streams.remove(stream);
            if streams.is_empty() {
                slots.remove(&key_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(2);

    #[tokio::test(start_paused = true)]
    async fn the_poll_is_claimed_once_per_window() {
        let relay = LocalLiveRelay::new();
        assert!(relay.claim_poll(WINDOW).await, "nobody claimed it yet");
        assert!(!relay.claim_poll(WINDOW).await, "claimed in this window");
        tokio::time::advance(Duration::from_millis(1_999)).await;
        assert!(!relay.claim_poll(WINDOW).await, "the window has not passed");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(relay.claim_poll(WINDOW).await, "a new window");
        assert!(!relay.claim_poll(WINDOW).await);
    }

    #[tokio::test]
    async fn a_frame_reaches_every_subscription_and_is_the_latest() {
        let relay = LocalLiveRelay::new();
        assert_eq!(relay.latest().await, None, "nothing published yet");
        let mut first = relay.subscribe().await.unwrap();
        let mut second = relay.subscribe().await.unwrap();
        relay
            .publish(Bytes::from_static(b"frame 1"), Duration::from_secs(5))
            .await;
        relay
            .publish(Bytes::from_static(b"frame 2"), Duration::from_secs(5))
            .await;
        for subscription in [&mut first, &mut second] {
            assert_eq!(subscription.next().await.unwrap(), "frame 1");
            assert_eq!(subscription.next().await.unwrap(), "frame 2");
        }
        assert_eq!(relay.latest().await.unwrap(), "frame 2");
        // A subscription made later hears only what is published after it.
        let mut later = relay.subscribe().await.unwrap();
        relay
            .publish(Bytes::from_static(b"frame 3"), Duration::from_secs(5))
            .await;
        assert_eq!(later.next().await.unwrap(), "frame 3");
    }

    #[tokio::test]
    async fn a_lagging_subscription_skips_to_newer_frames() {
        let relay = LocalLiveRelay::new();
        let mut behind = relay.subscribe().await.unwrap();
        let published = FRAMES_BEHIND + 3;
        for n in 0..published {
            relay
                .publish(Bytes::from(n.to_string()), Duration::from_secs(5))
                .await;
        }
        let mut heard = Vec::new();
        for _ in 0..FRAMES_BEHIND {
            heard.push(behind.next().await.unwrap());
        }
        let expected: Vec<Bytes> = (published - FRAMES_BEHIND..published)
            .map(|n| Bytes::from(n.to_string()))
            .collect();
        assert_eq!(heard, expected, "the newest frames, in order");
    }

    #[tokio::test]
    async fn a_subscription_ends_with_its_relay() {
        let relay = LocalLiveRelay::new();
        let mut frames = relay.subscribe().await.unwrap();
        drop(relay);
        assert_eq!(frames.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_latest_frame_is_kept_for_its_ttl() {
        let relay = LocalLiveRelay::new();
        relay
            .publish(Bytes::from_static(b"frame"), Duration::from_secs(3))
            .await;
        tokio::time::advance(Duration::from_millis(2_999)).await;
        assert_eq!(relay.latest().await.unwrap(), "frame");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(relay.latest().await, None, "expired");
        assert_eq!(relay.latest().await, None);
    }

    const TTL: Duration = Duration::from_secs(30);

    #[tokio::test(start_paused = true)]
    async fn a_key_opens_at_most_its_limit_of_streams() {
        let slots = LocalStreamSlots::new();
        assert!(slots.open(1, "a", 2, TTL).await);
        assert!(slots.open(1, "b", 2, TTL).await);
        assert!(!slots.open(1, "c", 2, TTL).await, "the key's limit");
        assert!(slots.open(1, "a", 2, TTL).await, "already open: still open");
        assert!(slots.open(2, "c", 2, TTL).await, "another key's own limit");
        assert!(!slots.open(3, "d", 0, TTL).await, "a limit of none");
        // Closing frees a slot, and only the key's own.
        slots.close(2, "a").await;
        assert!(!slots.open(1, "c", 2, TTL).await);
        slots.close(1, "a").await;
        assert!(slots.open(1, "c", 2, TTL).await);
        assert!(!slots.open(1, "a", 2, TTL).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_lapses_unless_renewed() {
        let slots = LocalStreamSlots::new();
        assert!(slots.open(1, "renewed", 2, TTL).await);
        assert!(slots.open(1, "left", 2, TTL).await);
        tokio::time::advance(Duration::from_secs(20)).await;
        slots.renew(1, "renewed", TTL).await;
        assert!(!slots.open(1, "new", 2, TTL).await, "both still open");
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(slots.open(1, "new", 2, TTL).await, "the one left lapsed");
        assert!(
            !slots.open(1, "another", 2, TTL).await,
            "the renewed one holds"
        );
        // A lapsed slot is not brought back by renewing it.
        tokio::time::advance(TTL).await;
        slots.renew(1, "renewed", TTL).await;
        assert!(slots.open(1, "x", 2, TTL).await);
        assert!(slots.open(1, "y", 2, TTL).await);
        assert!(lock(&slots.slots).get(&1).is_some_and(|s| s.len() == 2));
    }

    #[tokio::test]
    async fn a_closed_key_leaves_nothing_behind() {
        let slots = LocalStreamSlots::new();
        assert!(slots.open(7, "a", 1, TTL).await);
        assert!(!slots.open(7, "b", 1, TTL).await);
        slots.close(7, "a").await;
        assert!(lock(&slots.slots).is_empty());
        assert!(!slots.open(8, "a", 0, TTL).await);
        assert!(lock(&slots.slots).is_empty(), "a refusal keeps no entry");
    }
}
