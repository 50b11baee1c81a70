//! /calls/live across two replicas sharing Redis (docs/behaviour.md, "Live"): one poll of the
//! platform an interval for the whole deployment, every stream fed, the per-key limit counted
//! across replicas, and a revoked key's stream ended.

use std::time::{Duration, Instant};

use callstats_application::live::LiveSettings;
use callstats_domain::access::ApiKeySecret;
use callstats_redis::testing::shared_redis_url;
use callstats_sim::{SimOptions, spawn_sim};
use callstats_store::backend_tests;
use callstats_store::testing::TestDatabase;
use time::OffsetDateTime;

use crate::replicas::{Replica, admin, client, key, redis_settings};

const LIVE: &str = "/api/v1/calls/live";

/// An open stream: the response, and what has been read of it.
struct Stream {
    response: reqwest::Response,
    read: String,
}

impl Stream {
    /// Opens the stream on `base`; `Err` with the status when it is refused.
    async fn open(client: &reqwest::Client, base: &str, key: &ApiKeySecret) -> Result<Self, u16> {
        let response = client
            .get(format!("{base}{LIVE}"))
            .bearer_auth(key.expose())
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        if response.status() != 200 {
            return Err(response.status().as_u16());
        }
        Ok(Self {
            response,
            read: String::new(),
        })
    }

    /// The `data` of the next `live` event within `wait`; `None` when the stream ends first
    /// or nothing comes.
    async fn next_live(&mut self, wait: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.read.find("\n\n") {
                let block: String = self.read.drain(..end + 2).collect();
                if block.lines().any(|line| line == "event: live") {
                    let data = block.lines().find_map(|line| line.strip_prefix("data: "))?;
                    return Some(data.to_owned());
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?
                .ok()??;
            self.read.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Whether the stream ends within `wait` (events and comments read meanwhile).
    async fn ends_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return false,
                Ok(Ok(Some(_))) => {}
                Ok(Ok(None) | Err(_)) => return true,
            }
        }
    }
}

/// Two replicas on the shared Redis polling every `poll`, in front of one sim.
async fn two_replicas(
    db: &TestDatabase,
    test: &str,
    poll: Duration,
) -> Option<([Replica; 2], callstats_sim::RunningSim)> {
    let url = shared_redis_url()?;
    let redis = redis_settings(&url, test);
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let live = |assembly: &mut callstats::app::Assembly| {
        assembly.live = LiveSettings {
            poll,
            ..LiveSettings::default()
        };
    };
    let replicas = [
        Replica::start_with(db, Some(redis.clone()), &sim.base_url(), live),
        Replica::start_with(db, Some(redis), &sim.base_url(), live),
    ];
    Some((replicas, sim))
}

backend_tests! {
    async fn two_replicas_with_listeners_on_both_poll_once_an_interval_between_them(db: &TestDatabase) {
        let poll = Duration::from_millis(500);
        let Some((replicas, sim)) = two_replicas(db, "live-polls", poll).await else {
            return;
        };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1000).await;
        let other = key_with_calls(&admin).await;
        let client = client();
        let mut streams = Vec::new();
        for (replica, key) in [(0, &key), (1, &key), (0, &other), (1, &other), (1, &other)] {
            let mut stream = Stream::open(&client, &replicas[replica].base, key).await.unwrap();
            let first = stream.next_live(Duration::from_secs(5)).await.expect("the figures at once");
            let body: serde_json::Value = serde_json::from_str(&first).unwrap();
            assert!(body["totals"]["agents_available"].is_u64(), "{body}");
            streams.push(stream);
        }
        let before = sim.live_requests();
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(6)).await;
        let polls = sim.live_requests() - before;
        let intervals = started.elapsed().as_millis() / poll.as_millis();
        assert!(
            u128::from(polls) <= intervals + 1,
            "{polls} polls in {intervals} intervals with listeners on two replicas"
        );
        assert!(u128::from(polls) * 2 >= intervals, "{polls} polls in {intervals} intervals");
        // Nobody listens any more: once a write to each closed connection has failed (the
        // second after the client left: within two comments, 20 s), nothing is polled.
        drop(streams);
        tokio::time::sleep(Duration::from_secs(21)).await;
        let after = sim.live_requests();
        tokio::time::sleep(poll * 6).await;
        assert_eq!(sim.live_requests(), after, "polled with nobody listening");
        for replica in replicas {
            replica.stop().await;
        }
        sim.stop().await;
    }

    async fn a_key_holds_four_streams_across_both_replicas(db: &TestDatabase) {
        let Some((replicas, sim)) = two_replicas(db, "live-per-key", LiveSettings::DEFAULT_POLL).await else {
            return;
        };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1000).await;
        let client = client();
        let mut open = Vec::new();
        for replica in [0, 1, 0, 1] {
            open.push(Stream::open(&client, &replicas[replica].base, &key).await.unwrap());
        }
        for replica in [0, 1] {
            assert_eq!(Stream::open(&client, &replicas[replica].base, &key).await.err(), Some(429));
        }
        // A stream closed by its client frees its slot for either replica, once a write of its
        // replica to the closed connection has failed: within two comments, 20 s.
        drop(open.pop());
        let deadline = Instant::now() + Duration::from_secs(22);
        loop {
            match Stream::open(&client, &replicas[0].base, &key).await {
                Ok(stream) => {
                    open.push(stream);
                    break;
                }
                Err(status) => {
                    assert_eq!(status, 429);
                    assert!(Instant::now() < deadline, "the slot was not freed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        drop(open);
        for replica in replicas {
            replica.stop().await;
        }
        sim.stop().await;
    }

    async fn a_revoked_key_s_stream_ends_within_10_seconds(db: &TestDatabase) {
        let Some((replicas, sim)) = two_replicas(db, "live-revoke", LiveSettings::DEFAULT_POLL).await else {
            return;
        };
        let admin = admin(db).await;
        let (key, id) = key(&admin, "calls", 1000).await;
        let client = client();
        let mut stream = Stream::open(&client, &replicas[1].base, &key).await.unwrap();
        stream.next_live(Duration::from_secs(5)).await.expect("the figures at once");
        admin.revoke_keys(&id.to_string(), OffsetDateTime::now_utc()).await.unwrap();
        let revoked = Instant::now();
        assert!(stream.ends_within(Duration::from_secs(10)).await, "still open 10 s after");
        assert!(revoked.elapsed() <= Duration::from_secs(10));
        assert_eq!(Stream::open(&client, &replicas[0].base, &key).await.err(), Some(401));
        for replica in replicas {
            replica.stop().await;
        }
        sim.stop().await;
    }
}

/// A second key with the `calls` scope.
async fn key_with_calls(admin: &callstats_store::Store) -> ApiKeySecret {
    key(admin, "calls", 1000).await.0
}
