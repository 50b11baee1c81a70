//! The call-day store end to end: the real HTTP adapter against an upstream that answers each
//! day's window, the days kept in process and in Redis, shared by every endpoint, direction and
//! replica (docs/behaviour.md, "Call records").

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use callstats_domain::calendar::Day;
use callstats_domain::limits::HistoryHorizon;
use callstats_domain::ports::CallDayArchive;
use callstats_domain::tz;
use callstats_redis::testing::{PrivateRedis, connection, shared_redis_url};
use callstats_store::StoredCallDays;
use callstats_store::backend_tests;
use callstats_store::config::Access;
use serde_json::{Value, json};
use time::OffsetDateTime;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::replicas::{
    Replica, admin, client, eventually, get, key, redis_settings, with_minute_left,
};

/// Three settled days.
const DAYS: [&str; 3] = ["2026-10-05", "2026-10-06", "2026-10-07"];
const SUMMARY: &str = "/api/v1/calls/summary?start=2026-10-05&end=2026-10-07";
const OUTBOUND: &str = "/api/v1/calls/summary?start=2026-10-05&end=2026-10-07&direction=outbound";
const AGENTS: &str = "/api/v1/calls/agents?start=2026-10-05&end=2026-10-07";

/// The Tashkent date of a window's `from`, e.g. `2026-10-05` for `2026-10-05T00:00:00+05:00`.
fn window_day(request: &Request) -> String {
    request
        .url
        .query_pairs()
        .find(|(name, _)| name == "from")
        .map(|(_, from)| from.chars().take(10).collect())
        .unwrap_or_default()
}

/// The page of one day's window. Four calls are on the day, written in other offsets than
/// +05:00 too; two more, a tenth of a second outside it on either side, must be ignored.
fn page_of(day: &str) -> Value {
    let date = time::Date::parse(
        day,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .unwrap();
    let before = date.previous_day().unwrap();
    let call = |id: &str, direction: &str, started_at: String| {
        json!({"id": format!("{day}-{id}"), "direction": direction, "agent_number": "101",
               "started_at": started_at, "duration_seconds": 60.0})
    };
    json!({
        "calls": [
            call("first-second", "inbound", format!("{day}T00:00:00+05:00")),
            call("utc-midnight", "outbound", format!("{before}T19:00:00Z")),
            call("last-tenth", "inbound", format!("{day}T23:59:59.9+05:00")),
            call("minus-five", "inbound", format!("{day}T13:59:59.5-05:00")),
            call("next-day", "inbound", format!("{day}T19:00:00Z")),
            call("day-before", "inbound", format!("{before}T18:59:59.9Z")),
        ],
        "next_cursor": null
    })
}

/// An upstream that answers every day's window with [`page_of`] after `delay`.
async fn upstream(delay: Duration) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/calls"))
        .respond_with(move |request: &Request| {
            ResponseTemplate::new(200)
                .set_body_json(page_of(&window_day(request)))
                .set_delay(delay)
        })
        .mount(&server)
        .await;
    server
}

/// How many times each day's window was asked.
async fn asked(upstream: &MockServer) -> BTreeMap<String, usize> {
    let mut asked = BTreeMap::new();
    for request in upstream.received_requests().await.unwrap() {
        *asked.entry(window_day(&request)).or_default() += 1;
    }
    asked
}

fn each_day_once() -> BTreeMap<String, usize> {
    DAYS.iter().map(|day| ((*day).to_owned(), 1)).collect()
}

backend_tests! {
    async fn days_are_tashkent_days_whatever_offset_the_upstream_writes(db: &TestDatabase) {
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        let upstream = upstream(Duration::ZERO).await;
        let replica = Replica::start(db, None, &upstream.uri());
        let client = client();

        let summary = get(&client, &replica.base, SUMMARY, &key).await;
        assert_eq!(summary.status, 200);
        let body: Value = serde_json::from_slice(&summary.body).unwrap();
        let daily: Vec<u64> = body["daily"].as_array().unwrap().iter().map(|d| d["count"].as_u64().unwrap()).collect();
        assert_eq!(daily, [3, 3, 3], "three inbound calls on each day, none outside it");
        assert_eq!(asked(&upstream).await, each_day_once(), "one window per day");

        let one_day = get(&client, &replica.base, "/api/v1/calls/summary?start=2026-10-06", &key).await;
        let body: Value = serde_json::from_slice(&one_day.body).unwrap();
        assert_eq!(body["hourly"][0]["count"], 1, "00:00:00 local");
        assert_eq!(body["hourly"][23]["count"], 2, "23:59:59.9 local, and 13:59:59.5 at -05:00");
        let outbound = get(&client, &replica.base, "/api/v1/calls/summary?start=2026-10-06&direction=outbound", &key).await;
        let body: Value = serde_json::from_slice(&outbound.body).unwrap();
        assert_eq!(body["hourly"][0]["count"], 1, "19:00 UTC the day before is local midnight");
        assert_eq!(asked(&upstream).await, each_day_once(), "the kept days answered");

        // Days after today have no calls, and nobody is asked for them, up to the calendar's end.
        let tomorrow = OffsetDateTime::now_utc()
            .to_offset(time::macros::offset!(+5))
            .date()
            .next_day()
            .unwrap();
        for path in [
            format!("/api/v1/calls/summary?start={tomorrow}&end={}", tomorrow.next_day().unwrap()),
            format!("/api/v1/calls/agents?start={tomorrow}"),
            "/api/v1/calls/summary?start=9999-12-01&end=9999-12-31".to_owned(),
        ] {
            let answer = get(&client, &replica.base, &path, &key).await;
            assert_eq!(answer.status, 200, "{path}");
            let body: Value = serde_json::from_slice(&answer.body).unwrap();
            assert!(body["total_calls"].as_u64().unwrap_or(0) == 0 && body["agents"].as_array().is_none_or(Vec::is_empty), "{path}: {body}");
        }
        assert_eq!(asked(&upstream).await, each_day_once(), "no later day asked");
        replica.stop().await;
    }

    async fn every_endpoint_and_replica_reads_the_days_one_replica_fetched(db: &TestDatabase) {
        let Some(url) = shared_redis_url() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        // Slow enough that the concurrent requests below all miss together.
        let upstream = upstream(Duration::from_millis(300)).await;
        let redis = redis_settings(&url, "call-days");
        let replicas = [
            Replica::start(db, Some(redis.clone()), &upstream.uri()),
            Replica::start(db, Some(redis), &upstream.uri()),
        ];
        let client = client();
        let (a, b, c) = tokio::join!(
            get(&client, &replicas[0].base, SUMMARY, &key),
            get(&client, &replicas[1].base, AGENTS, &key),
            get(&client, &replicas[1].base, OUTBOUND, &key),
        );
        assert_eq!((a.status, b.status, c.status), (200, 200, 200));
        assert_eq!(
            asked(&upstream).await,
            each_day_once(),
            "concurrent misses of one day on two replicas fetch it once"
        );
        // Another answer over the same days, computed by either replica from the kept days.
        for replica in &replicas {
            let two_days = get(&client, &replica.base, "/api/v1/calls/agents?start=2026-10-06&end=2026-10-07", &key).await;
            assert_eq!(two_days.status, 200);
        }
        assert_eq!(asked(&upstream).await, each_day_once());
        let [first, second] = replicas;
        first.stop().await;
        second.stop().await;
    }

    async fn an_entry_redis_cannot_decode_is_fetched_again_without_an_error(db: &TestDatabase) {
        let Some(url) = shared_redis_url() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        let upstream = upstream(Duration::ZERO).await;
        let redis = redis_settings(&url, "call-days-corrupt");
        let first = Replica::start(db, Some(redis.clone()), &upstream.uri());
        let client = client();
        assert_eq!(get(&client, &first.base, SUMMARY, &key).await.status, 200);
        let _: () = redis::cmd("SET")
            .arg(format!("{}day:2026-10-06", redis.prefix))
            .arg(b"\x01\xff\xfe not a day".as_slice())
            .query_async(&mut connection(&url).await)
            .await
            .unwrap();
        // A replica that holds nothing in process reads Redis: one entry is garbage.
        let second = Replica::start(db, Some(redis), &upstream.uri());
        let answer = get(&client, &second.base, AGENTS, &key).await;
        assert_eq!(answer.status, 200);
        let mut expected = each_day_once();
        expected.insert("2026-10-06".to_owned(), 2);
        assert_eq!(asked(&upstream).await, expected, "only the unreadable day is fetched again");
        first.stop().await;
        second.stop().await;
    }

    async fn without_redis_the_days_kept_in_process_still_answer(db: &TestDatabase) {
        let Some(mut redis) = PrivateRedis::start() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        let upstream = upstream(Duration::ZERO).await;
        let replica = Replica::start(db, Some(redis_settings(&redis.url(), "call-days-outage")), &upstream.uri());
        let client = client();
        assert_eq!(get(&client, &replica.base, SUMMARY, &key).await.status, 200);
        redis.stop();
        for path in [AGENTS, OUTBOUND] {
            let answer = get(&client, &replica.base, path, &key).await;
            assert_eq!(answer.status, 200, "{path} without Redis");
        }
        assert_eq!(asked(&upstream).await, each_day_once(), "no day fetched again");
        replica.stop().await;
    }

    async fn a_key_s_day_budget_is_one_for_every_replica(db: &TestDatabase) {
        let Some(url) = shared_redis_url() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        let upstream = upstream(Duration::ZERO).await;
        let redis = redis_settings(&url, "day-budget");
        let replicas = [
            Replica::start(db, Some(redis.clone()), &upstream.uri()),
            Replica::start(db, Some(redis), &upstream.uri()),
        ];
        let client = client();
        let days_left = |response: &reqwest::Response| {
            let ratelimit = response.headers()["ratelimit"].to_str().unwrap().to_owned();
            let days = ratelimit.split_once(", \"days\";r=").unwrap().1;
            days.split(';').next().unwrap().parse::<u32>().unwrap()
        };
        let ask = |replica: usize, path: &str| {
            client
                .get(format!("{}{path}", replicas[replica].base))
                .bearer_auth(key.expose())
                .send()
        };
        with_minute_left(Duration::from_secs(30)).await;
        // Two months on each replica: the default budget of 124 days, spent on two replicas.
        for (replica, month, left) in [(0, "2026-07", 93), (1, "2026-08", 62), (0, "2026-05", 31), (1, "2026-10", 0)] {
            let answer = ask(replica, &format!("/api/v1/calls/summary?start={month}-01&end={month}-31"))
                .await
                .unwrap();
            assert_eq!((answer.status().as_u16(), days_left(&answer)), (200, left), "{month} on replica {replica}");
        }
        // Either replica refuses one more day, and fetches nothing for it.
        for replica in [0, 1] {
            let refused = ask(replica, "/api/v1/calls/summary?start=2026-04-30").await.unwrap();
            assert_eq!(refused.status().as_u16(), 429, "replica {replica}");
            assert_eq!(days_left(&refused), 0);
            let body: Value = refused.json().await.unwrap();
            assert!(body["error"].as_str().unwrap().contains("day budget of 124"), "{body}");
        }
        let fetched: usize = asked(&upstream).await.values().sum();
        assert_eq!(fetched, 124, "no day fetched past the budget");
        // Days one replica holds cost nothing on the other.
        let held = ask(1, "/api/v1/calls/agents?start=2026-07-01&end=2026-07-31").await.unwrap();
        assert_eq!((held.status().as_u16(), days_left(&held)), (200, 0));
        let [first, second] = replicas;
        first.stop().await;
        second.stop().await;
    }

    async fn one_replica_warms_the_recent_days_for_both_and_the_other_fetches_nothing(db: &TestDatabase) {
        let Some(url) = shared_redis_url() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        // An upstream per replica, so that each one's requests are told apart.
        let upstreams = [upstream(Duration::ZERO).await, upstream(Duration::ZERO).await];
        let redis = redis_settings(&url, "warmer");
        let warm = |service: &mut callstats::app::Assembly| service.warm_days = 3;
        let replicas = [
            Replica::start_with(db, Some(redis.clone()), &upstreams[0].uri(), warm),
            Replica::start_with(db, Some(redis), &upstreams[1].uri(), warm),
        ];
        let today = OffsetDateTime::now_utc().to_offset(time::macros::offset!(+5)).date();
        let window: Vec<String> = [2_i64, 1, 0]
            .iter()
            .map(|back| (today - time::Duration::days(*back)).to_string())
            .collect();
        let ups = &upstreams;
        eventually(Duration::from_secs(10), "the three recent days warmed", || async move {
            let (a, b) = (asked(&ups[0]).await, asked(&ups[1]).await);
            a.len() + b.len() >= 3
        })
        .await;
        let (a, b) = (asked(&upstreams[0]).await, asked(&upstreams[1]).await);
        let (warmed, idle) = if a.is_empty() { (b, a) } else { (a, b) };
        assert!(idle.is_empty(), "the replica without the lease fetched {idle:?}");
        assert_eq!(warmed.keys().cloned().collect::<Vec<_>>(), window, "{warmed:?}");
        // Both answer the warm days from memory or the shared tier: nobody is asked again.
        let path = format!("/api/v1/calls/summary?start={}&end={}", window[0], window[2]);
        let client = client();
        for replica in &replicas {
            let answer = get(&client, &replica.base, &path, &key).await;
            assert_eq!(answer.status, 200);
        }
        let again = asked(&upstreams[0]).await.values().sum::<usize>()
            + asked(&upstreams[1]).await.values().sum::<usize>();
        assert_eq!(again, warmed.values().sum::<usize>(), "the questions asked nobody");
        let [first, second] = replicas;
        first.stop().await;
        second.stop().await;
    }

    async fn the_warm_up_delays_neither_readiness_nor_serving(db: &TestDatabase) {
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls,operators", 1_000).await;
        // An upstream that does not answer within the test: the warm-up cannot finish.
        let upstream = upstream(Duration::from_secs(600)).await;
        let replica = Replica::start_with(db, None, &upstream.uri(), |service| service.warm_days = 35);
        let ups = &upstream;
        eventually(Duration::from_secs(10), "the warm-up under way", || async move {
            !ups.received_requests().await.unwrap_or_default().is_empty()
        })
        .await;
        let client = client();
        let ready = get(&client, &replica.base, "/readyz", &key).await;
        assert_eq!(ready.status, 200, "ready while the recent days are being fetched");
        let roster = get(&client, &replica.base, "/api/v1/operators", &key).await;
        assert_eq!(roster.status, 200);
        replica.stop().await;
    }

    async fn the_backfill_holds_the_horizon_so_a_trend_over_it_asks_the_platform_nothing(db: &TestDatabase) {
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        let upstream = upstream(Duration::ZERO).await;
        let replica = Replica::start_with(db, None, &upstream.uri(), |service| {
            service.archive = Some(db.store(Access::ReadWrite));
            service.history = HistoryHorizon::new(6);
            // 600 a minute: a tenth of a second after each day; the first pass at once, then one every
            // tenth of a second.
            service.backfill = callstats_application::BackfillSettings {
                per_minute: 600,
                first: Duration::ZERO,
                every: Duration::from_millis(100),
            };
        });
        // The horizon's settled days: from 5 days back to yesterday, unless yesterday ended
        // less than the settle time (an hour) ago.
        let now = OffsetDateTime::now_utc();
        let today = Day::of(now);
        let settled: Vec<Day> = (1..=5)
            .filter_map(|back| today.plus_days(-back))
            .filter(|day| {
                tz::local_midnight_unix(day.date()) + 86_400 + 3_600 <= now.unix_timestamp()
            })
            .collect();
        let stored = StoredCallDays::new(Arc::new(db.store(Access::ReadOnly)));
        let (oldest, newest) = (*settled.last().unwrap(), settled[0]);
        eventually(Duration::from_secs(30), "the backfill holds the horizon", || async {
            stored.held_days(oldest, newest).await.unwrap().len() == settled.len()
        })
        .await;
        let asked_by_backfill = asked(&upstream).await;
        assert_eq!(asked_by_backfill.len(), settled.len(), "{asked_by_backfill:?}");
        assert!(asked_by_backfill.values().all(|times| *times == 1), "{asked_by_backfill:?}");

        let trend = get(
            &client(),
            &replica.base,
            &format!("/api/v1/calls/trend?start={oldest}&end={newest}&granularity=day"),
            &key,
        )
        .await;
        assert_eq!(trend.status, 200);
        let body: Value = serde_json::from_slice(&trend.body).unwrap();
        let offered: Vec<u64> = body["buckets"].as_array().unwrap().iter().map(|b| b["offered"].as_u64().unwrap()).collect();
        assert_eq!(offered, vec![3; settled.len()], "three inbound calls a day");
        assert_eq!(asked(&upstream).await, asked_by_backfill, "the trend asked the platform nothing");
        replica.stop().await;
    }
}
