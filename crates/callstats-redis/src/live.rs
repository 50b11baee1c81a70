//! What the replicas share of the live figures, in Redis: the poll's claim (a `SET NX PX` key),
//! each frame (kept under one key and published on one channel), and the open live streams of
//! each key (a sorted set of stream ids scored by when they lapse, in Redis's own clock so that
//! the replicas' clocks do not matter). A Redis that cannot be reached lets every replica poll and
//! open streams for itself, as its locks and lease do.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use callstats_domain::ports::{LiveRelay, StreamSlots};
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::Redis;

/// The key of the poll's claim.
const POLL: &str = "live:poll";
/// The key of the latest frame.
const LATEST: &str = "live:latest";
/// The channel the frames are published on.
const CHANNEL: &str = "live";

token_adapter! {
    /// The live figures' relay in Redis: one replica polls per window, and every replica hears its
    /// frames over pub/sub.
    RedisLiveRelay
}

#[async_trait]
impl LiveRelay for RedisLiveRelay {
    async fn claim_poll(&self, window: Duration) -> bool {
        self.redis
            .try_lock("live poll claim", POLL, &self.token, window)
            .await
    }

    async fn publish(&self, frame: Bytes, ttl: Duration) {
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("SET")
            .arg(self.redis.key(LATEST))
            .arg(frame.as_ref())
            .arg("PX")
            .arg(ttl.as_millis().max(1))
            .ignore()
            .cmd("PUBLISH")
            .arg(self.redis.key(CHANNEL))
            .arg(frame.as_ref())
            .ignore();
        let _: Option<()> = self.redis.run("live publish", &pipeline).await;
    }

    async fn latest(&self) -> Option<Bytes> {
        let mut pipeline = redis::pipe();
        pipeline.get(self.redis.key(LATEST));
        self.redis
            .run::<(Option<Vec<u8>>,)>("live latest", &pipeline)
            .await
            .and_then(|(frame,)| frame)
            .map(Bytes::from)
    }

    async fn subscribe(&self) -> Option<BoxStream<'static, Bytes>> {
        let messages = self.redis.subscribe("live subscribe", CHANNEL).await?;
        Some(
            messages
                .map(|message| Bytes::copy_from_slice(message.get_payload_bytes()))
                .boxed(),
        )
    }
}

/// The open live streams of each key in Redis, shared by the replicas: a sorted set per key,
/// each stream id scored by the millisecond (of Redis's clock) it lapses at.
#[derive(Clone)]
pub struct RedisStreamSlots {
    redis: Arc<Redis>,
}

impl RedisStreamSlots {
    /// The slots on `redis`, under its key prefix (replicas sharing a prefix share the limit).
    #[must_use]
    pub fn new(redis: Arc<Redis>) -> Self {
        Self { redis }
    }

    /// The sorted set of the key `key_id`'s streams.
    fn streams(&self, key_id: i64) -> String {
        self.redis.key(&format!("live:streams:{key_id}"))
    }

    /// `EVAL` of `script` on the key's set with `stream` and `args` after it.
    fn eval(&self, script: &str, key_id: i64, stream: &str, args: &[u128]) -> redis::Pipeline {
        let mut pipeline = redis::pipe();
        let command = pipeline
            .cmd("EVAL")
            .arg(script)
            .arg(1)
            .arg(self.streams(key_id))
            .arg(stream);
        for arg in args {
            command.arg(*arg);
        }
        pipeline
    }
}

#[async_trait]
impl StreamSlots for RedisStreamSlots {
    async fn open(&self, key_id: i64, stream: &str, limit: u32, ttl: Duration) -> bool {
        let pipeline = self.eval(
            OPEN,
            key_id,
            stream,
            &[u128::from(limit), ttl.as_millis().max(1)],
        );
        match self
            .redis
            .run::<(i64,)>("live stream open", &pipeline)
            .await
        {
            Some((opened,)) => opened == 1,
            None => true,
        }
    }

    async fn renew(&self, key_id: i64, stream: &str, ttl: Duration) {
        let mut pipeline = self.eval(RENEW, key_id, stream, &[ttl.as_millis().max(1)]);
        pipeline.ignore();
        let _: Option<()> = self.redis.run("live stream renew", &pipeline).await;
    }

    async fn close(&self, key_id: i64, stream: &str) {
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("ZREM")
            .arg(self.streams(key_id))
            .arg(stream)
            .ignore();
        let _: Option<()> = self.redis.run("live stream close", &pipeline).await;
    }
}

/// Opens the slot `ARGV[1]` in the set `KEYS[1]` if the set holds fewer than `ARGV[2]` slots
/// once the lapsed ones are gone (a slot already open is kept open), lapsing in `ARGV[3]` ms of
/// Redis's clock; the set lives as long as its last slot. 1 when open, 0 otherwise.
const OPEN: &str = "\
local time = redis.call('TIME') \
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) \
local ttl = tonumber(ARGV[3]) \
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) \
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end \
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1]) \
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end \
return 1";

/// Keeps the slot `ARGV[1]` of the set `KEYS[1]` open for another `ARGV[2]` ms of Redis's
/// clock, if it is open (a lapsed or closed slot stays closed).
const RENEW: &str = "\
local time = redis.call('TIME') \
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) \
local ttl = tonumber(ARGV[2]) \
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) \
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1]) \
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end \
return 1";
