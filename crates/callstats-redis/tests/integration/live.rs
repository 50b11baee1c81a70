//! The live relay and the live stream slots against a real Redis, as two replicas on one prefix
//! see them: one poll per window, frames heard by every replica, a key's limit across replicas;
//! and a Redis that cannot be reached, where every replica goes on by itself.

use std::time::Duration;

use bytes::Bytes;
use callstats_domain::ports::{LiveRelay, StreamSlots};
use callstats_redis::testing::{
    PrivateRedis, assert_expires_within, connection, shared_redis_url, unique_prefix,
};
use callstats_redis::{Redis, RedisLiveRelay, RedisSettings, RedisStreamSlots};
use futures::StreamExt;
use futures::stream::BoxStream;

/// How long a frame may take to reach a subscription.
const HEARD_WITHIN: Duration = Duration::from_secs(5);

/// One replica's Redis on `prefix`.
fn replica(url: &str, prefix: &str) -> std::sync::Arc<Redis> {
    Redis::new(RedisSettings {
        prefix: prefix.to_owned(),
        retry_after: Duration::from_millis(200),
        ..RedisSettings::new(url)
    })
    .unwrap()
}

/// Two replicas' relays on one prefix.
fn relays(url: &str, prefix: &str) -> [RedisLiveRelay; 2] {
    [
        RedisLiveRelay::new(replica(url, prefix)),
        RedisLiveRelay::new(replica(url, prefix)),
    ]
}

/// Two replicas' stream slots on one prefix.
fn slots(url: &str, prefix: &str) -> [RedisStreamSlots; 2] {
    [
        RedisStreamSlots::new(replica(url, prefix)),
        RedisStreamSlots::new(replica(url, prefix)),
    ]
}

async fn next_frame(frames: &mut BoxStream<'static, Bytes>) -> Option<Bytes> {
    tokio::time::timeout(HEARD_WITHIN, frames.next())
        .await
        .expect("a frame, or the end of the stream, in time")
}

#[tokio::test]
async fn one_replica_claims_each_window_s_poll() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let prefix = unique_prefix("live-claim");
    let [a, b] = relays(&url, &prefix);
    let window = Duration::from_millis(600);
    assert!(a.claim_poll(window).await, "nobody claimed it yet");
    assert!(!b.claim_poll(window).await, "the other replica claimed it");
    assert!(
        !a.claim_poll(window).await,
        "once a window, for its claimer too"
    );
    assert_expires_within(&url, &format!("{prefix}live:poll"), 600).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(b.claim_poll(window).await, "a new window");
    assert!(!a.claim_poll(window).await);
}

#[tokio::test]
async fn a_frame_reaches_every_replica_and_is_the_latest_for_its_ttl() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let prefix = unique_prefix("live-frames");
    let [a, b] = relays(&url, &prefix);
    // Another deployment's relay on the same Redis hears nothing of this one.
    let [other, _] = relays(&url, &unique_prefix("live-frames-other"));
    let mut heard_by_a = a.subscribe().await.unwrap();
    let mut heard_by_b = b.subscribe().await.unwrap();
    let mut heard_by_other = other.subscribe().await.unwrap();
    assert_eq!(b.latest().await, None, "nothing published yet");

    let frame = Bytes::from_static("{\"waiting\":3,\"name\":\"Oʻtkir\"}\0\u{1}".as_bytes());
    a.publish(frame.clone(), Duration::from_millis(800)).await;
    assert_eq!(next_frame(&mut heard_by_b).await.unwrap(), frame);
    assert_eq!(
        next_frame(&mut heard_by_a).await.unwrap(),
        frame,
        "its own replica's subscription too"
    );
    assert_eq!(b.latest().await.unwrap(), frame);
    assert_eq!(a.latest().await.unwrap(), frame);

    b.publish(Bytes::from_static(b"second"), Duration::from_millis(800))
        .await;
    assert_eq!(next_frame(&mut heard_by_a).await.unwrap(), "second");
    assert_eq!(next_frame(&mut heard_by_b).await.unwrap(), "second");
    assert_eq!(a.latest().await.unwrap(), "second");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), heard_by_other.next())
            .await
            .is_err(),
        "another prefix's frames"
    );
    assert_eq!(other.latest().await, None);

    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(a.latest().await, None, "past its ttl");
    assert_eq!(b.latest().await, None);
}

#[tokio::test]
async fn a_key_s_limit_holds_across_replicas_until_a_slot_closes_or_lapses() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let prefix = unique_prefix("live-slots");
    let [a, b] = slots(&url, &prefix);
    let ttl = Duration::from_secs(30);
    assert!(a.open(1, "a-1", 2, ttl).await);
    assert!(b.open(1, "b-1", 2, ttl).await);
    assert!(!a.open(1, "a-2", 2, ttl).await, "the key's limit");
    assert!(!b.open(1, "b-2", 2, ttl).await, "on the other replica too");
    assert!(a.open(1, "a-1", 2, ttl).await, "already open: still open");
    assert!(b.open(2, "b-2", 2, ttl).await, "another key's own limit");
    let mut redis = connection(&url).await;
    let mut members: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{prefix}live:streams:1"))
        .arg(0)
        .arg(-1)
        .query_async(&mut redis)
        .await
        .unwrap();
    members.sort_unstable();
    assert_eq!(members, ["a-1", "b-1"], "ordered by when they lapse");
    assert_expires_within(&url, &format!("{prefix}live:streams:1"), 30_000).await;

    // Closing a slot another key holds, or none, frees nothing.
    a.close(2, "b-1").await;
    a.close(1, "unknown").await;
    assert!(!b.open(1, "b-2", 2, ttl).await, "still full");
    // Closed (by whichever replica), a slot is free for any replica.
    a.close(1, "b-1").await;
    assert!(b.open(1, "b-2", 2, ttl).await);
    assert!(!a.open(1, "a-2", 2, ttl).await);
    b.close(1, "a-1").await;
    assert!(a.open(1, "a-2", 2, ttl).await);
}

#[tokio::test]
async fn a_slot_lapses_unless_renewed() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let prefix = unique_prefix("live-slots-lapse");
    let [a, b] = slots(&url, &prefix);
    let ttl = Duration::from_millis(600);
    assert!(a.open(1, "renewed", 2, ttl).await);
    assert!(a.open(1, "left", 2, ttl).await);
    tokio::time::sleep(Duration::from_millis(400)).await;
    a.renew(1, "renewed", ttl).await;
    assert!(!b.open(1, "new", 2, ttl).await, "both still open");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(b.open(1, "new", 2, ttl).await, "the one left lapsed");
    assert!(!b.open(1, "another", 2, ttl).await, "the renewed one holds");
    // A lapsed slot is not brought back by renewing it, and the set goes with its last slot.
    tokio::time::sleep(Duration::from_millis(800)).await;
    a.renew(1, "renewed", ttl).await;
    let exists: i64 = redis::cmd("EXISTS")
        .arg(format!("{prefix}live:streams:1"))
        .query_async(&mut connection(&url).await)
        .await
        .unwrap();
    assert_eq!(exists, 0, "expired with its last slot");
    assert!(b.open(1, "x", 2, ttl).await);
    assert!(b.open(1, "y", 2, ttl).await);
    assert!(!a.open(1, "renewed", 2, ttl).await);
}

#[tokio::test]
async fn a_subscription_ends_when_redis_goes_away() {
    let Some(mut redis) = PrivateRedis::start() else {
        return;
    };
    let [a, b] = relays(&redis.url(), &unique_prefix("live-outage"));
    let mut frames = a.subscribe().await.unwrap();
    b.publish(Bytes::from_static(b"frame"), Duration::from_secs(5))
        .await;
    assert_eq!(next_frame(&mut frames).await.unwrap(), "frame");
    assert!(a.claim_poll(Duration::from_secs(5)).await);
    assert!(!b.claim_poll(Duration::from_secs(5)).await);

    redis.stop();
    assert_eq!(next_frame(&mut frames).await, None, "the stream ends");
    assert!(
        b.claim_poll(Duration::from_secs(5)).await,
        "each replica polls for itself"
    );
    assert!(b.subscribe().await.is_none());
    assert_eq!(b.latest().await, None);
}

#[tokio::test]
async fn without_redis_every_replica_polls_and_streams_by_itself() {
    // A loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let prefix = unique_prefix("live-unreachable");
    let [a, b] = relays(&url, &prefix);
    assert!(a.subscribe().await.is_none(), "no connection, no stream");
    assert!(a.claim_poll(Duration::from_secs(5)).await);
    assert!(b.claim_poll(Duration::from_secs(5)).await);
    assert!(a.claim_poll(Duration::from_secs(5)).await);
    a.publish(Bytes::from_static(b"frame"), Duration::from_secs(5))
        .await;
    assert_eq!(a.latest().await, None);
    assert!(b.subscribe().await.is_none());

    let [c, d] = slots(&url, &prefix);
    assert!(c.open(1, "c-1", 1, Duration::from_secs(5)).await);
    assert!(d.open(1, "d-1", 1, Duration::from_secs(5)).await);
    assert!(c.open(1, "c-2", 1, Duration::from_secs(5)).await);
    c.renew(1, "c-1", Duration::from_secs(5)).await;
    c.close(1, "c-1").await;
}
