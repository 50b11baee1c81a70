//! The sim on port 0, in process: the call-platform adapter against it, and its own contract
//! checks; `/live` in [`live`].

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

use std::time::Duration;

use callstats_callplatform::{
    BearerToken, HttpCallPlatform, HttpPlatformConfig, install_crypto_provider,
};
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::error::cause_chain;
use callstats_domain::model::CallRecord;
use callstats_domain::ports::{CallPlatform, UpstreamFailure};
use callstats_domain::testing::range;
use callstats_synthetic::{Generator, SyntheticCall};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use callstats_sim::{RunningSim, SimOptions, spawn_sim};

mod live;

const SIM_TOKEN: &str = "sim-token-5b2e";

/// Short backoffs and bounds, no breaker, no token unless a test adds one.
fn test_config(base_url: impl Into<String>) -> HttpPlatformConfig {
    HttpPlatformConfig {
        retry_backoff: Duration::from_millis(5),
        retry_backoff_max: Duration::from_millis(20),
        request_timeout: Duration::from_secs(2),
        fetch_timeout: Duration::from_secs(5),
        breaker_threshold: 0,
        ..HttpPlatformConfig::new(base_url, None)
    }
}

fn platform(config: HttpPlatformConfig) -> HttpCallPlatform {
    HttpCallPlatform::new(config).unwrap()
}

fn options(seed: u64, calls_per_day: u32) -> SimOptions {
    SimOptions {
        seed,
        calls_per_day,
        ..SimOptions::default()
    }
}

fn sim_config(sim: &RunningSim) -> HttpPlatformConfig {
    test_config(sim.base_url())
}

/// `GET {sim}{target}`: the status, the content type and the body's bytes.
async fn request(
    sim: &RunningSim,
    target: &str,
    token: Option<&str>,
) -> (u16, Option<String>, Vec<u8>) {
    install_crypto_provider();
    let mut request = reqwest::Client::new().get(format!("{}{target}", sim.base_url()));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

/// `GET /calls?{query}`, its body read as JSON.
async fn get(sim: &RunningSim, query: &str, token: Option<&str>) -> (u16, Option<String>, Value) {
    let (status, content_type, body) = request(sim, &format!("/calls?{query}"), token).await;
    (status, content_type, serde_json::from_slice(&body).unwrap())
}

const ONE_DAY: &str = "from=2026-11-01T00:00:00%2B05:00&to=2026-11-02T00:00:00%2B05:00";

#[tokio::test]
async fn adapter_returns_exactly_the_generators_calls_for_a_multi_day_range() {
    let sim = spawn_sim(options(7, 400)).unwrap();
    let mut config = sim_config(&sim);
    // Small pages, so pages end mid-day and at day ends.
    config.page_limit = 97;
    let week = range("2026-11-01", "2026-11-07");

    let records = platform(config)
        .calls(week)
        .await
        .unwrap()
        .records()
        .collect::<Vec<_>>();

    let expected: Vec<CallRecord> = Generator::new(7, 400)
        .calls_in(week)
        .iter()
        .map(SyntheticCall::to_record)
        .collect();
    assert!(expected.len() > 2_000, "{}", expected.len());
    assert_eq!(records.len(), expected.len());
    assert_eq!(records, expected);
    sim.stop().await;
}

#[tokio::test]
async fn adapter_counts_match_the_generator_at_the_default_volume() {
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let days = range("2026-11-14", "2026-11-16");
    let records = platform(sim_config(&sim))
        .calls(days)
        .await
        .unwrap()
        .records()
        .collect::<Vec<_>>();
    let generator = Generator::default();
    for day in days.iter_days() {
        let (from, to) = DateRange::up_to_31_days(day, day).unwrap().unix_window();
        let got = records
            .iter()
            .filter(|r| (from..to).contains(&r.started_at))
            .count();
        assert_eq!(got, generator.calls_on(day).len(), "{day}");
    }
    sim.stop().await;
}

#[tokio::test]
async fn sim_serves_a_window_off_midnight_filtered_to_the_window() {
    let sim = spawn_sim(options(3, 2_000)).unwrap();
    // 22:00 Nov 1 to 02:00 Nov 2 in Tashkent, written in UTC: spans two days.
    let from = "2026-11-01T17:00:00Z";
    let to = "2026-11-01T21:00:00Z";
    let (mut ids, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let mut query = format!("from={from}&to={to}&limit=50");
        if let Some(cursor) = &cursor {
            query.push_str(&format!("&cursor={cursor}"));
        }
        let (status, _, body) = get(&sim, &query, None).await;
        assert_eq!(status, 200, "{body}");
        let calls = body["calls"].as_array().unwrap();
        assert!(calls.len() <= 50);
        for call in calls {
            let started =
                OffsetDateTime::parse(call["started_at"].as_str().unwrap(), &Rfc3339).unwrap();
            assert_eq!(started.offset(), callstats_domain::tz::TASHKENT);
            ids.push(call["id"].as_str().unwrap().to_owned());
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let generator = Generator::new(3, 2_000);
    let (from_unix, to_unix) = (
        OffsetDateTime::parse(from, &Rfc3339)
            .unwrap()
            .unix_timestamp(),
        OffsetDateTime::parse(to, &Rfc3339)
            .unwrap()
            .unix_timestamp(),
    );
    let expected: Vec<String> = range("2026-11-01", "2026-11-02")
        .iter_days()
        .flat_map(|day| generator.calls_on(day))
        .filter(|c| (from_unix..to_unix).contains(&c.started_at.unix_timestamp()))
        .map(|c| c.id)
        .collect();
    assert!(expected.iter().any(|id| id.starts_with("c-20261101")));
    assert!(expected.iter().any(|id| id.starts_with("c-20261102")));
    assert_eq!(ids, expected);
    sim.stop().await;
}

#[tokio::test]
async fn sim_pages_hold_at_most_limit_and_the_cursor_leads_on() {
    let sim = spawn_sim(options(1, 500)).unwrap();
    let (status, content_type, first) = get(&sim, &format!("{ONE_DAY}&limit=10"), None).await;
    assert_eq!(status, 200);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    assert_eq!(first["calls"].as_array().unwrap().len(), 10);
    let call = &first["calls"][0];
    for field in [
        "id",
        "direction",
        "agent_number",
        "started_at",
        "duration_seconds",
    ] {
        assert!(call.get(field).is_some(), "{field} missing in {call}");
    }
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, _, second) = get(&sim, &format!("{ONE_DAY}&limit=10&cursor={cursor}"), None).await;
    assert_eq!(second["calls"].as_array().unwrap().len(), 10);
    assert_ne!(first["calls"][9]["id"], second["calls"][0]["id"]);
    assert!(first["calls"][9]["started_at"].as_str() <= second["calls"][0]["started_at"].as_str());
    sim.stop().await;
}

#[tokio::test]
async fn sim_with_a_token_answers_401_without_it() {
    let sim = spawn_sim(SimOptions {
        token: Some(SIM_TOKEN.to_owned()),
        ..options(1, 100)
    })
    .unwrap();

    let (status, _, body) = get(&sim, ONE_DAY, None).await;
    assert_eq!(status, 401);
    assert!(body["error"].is_string(), "{body}");
    let (status, _, _) = get(&sim, ONE_DAY, Some("wrong")).await;
    assert_eq!(status, 401);
    let (status, _, _) = get(&sim, ONE_DAY, Some(SIM_TOKEN)).await;
    assert_eq!(status, 200);

    let day = range("2026-11-01", "2026-11-01");
    let error = platform(sim_config(&sim)).calls(day).await.unwrap_err();
    assert!(error.reason.contains("401"), "{error}");
    let mut config = sim_config(&sim);
    config.token = Some(BearerToken::new(SIM_TOKEN));
    assert!(!platform(config).calls(day).await.unwrap().is_empty());
    sim.stop().await;
}

#[tokio::test]
async fn sim_with_fail_rate_one_answers_500_with_a_json_body() {
    let sim = spawn_sim(SimOptions {
        fail_rate: 1.0,
        ..options(1, 100)
    })
    .unwrap();
    let (status, content_type, body) = get(&sim, ONE_DAY, None).await;
    assert_eq!(status, 500);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    assert!(
        body["error"].as_str().unwrap().contains("injected"),
        "{body}"
    );

    let error = platform(sim_config(&sim))
        .calls(range("2026-11-01", "2026-11-01"))
        .await
        .unwrap_err();
    assert!(error.reason.contains("after 3 attempt(s)"), "{error}");
    sim.stop().await;
}

#[tokio::test]
async fn sim_past_its_request_rate_answers_429_with_retry_after_and_the_adapter_reports_backpressure()
 {
    let sim = spawn_sim(SimOptions {
        max_rps: Some(3),
        ..options(1, 100)
    })
    .unwrap();
    // Three requests in one second are served, the next ones refused until the second ends.
    // (A second may end during the loop: then a later request is served again.)
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(get(&sim, ONE_DAY, None).await.0);
    }
    let refused = statuses.iter().filter(|status| **status == 429).count();
    assert!((1..=3).contains(&refused), "{statuses:?}");
    assert_eq!(statuses[..3], [200, 200, 200], "{statuses:?}");
    install_crypto_provider();
    let response = reqwest::Client::new()
        .get(format!("{}/calls?{ONE_DAY}", sim.base_url()))
        .send()
        .await
        .unwrap();
    if response.status() == 429 {
        assert_eq!(response.headers()["retry-after"], "1");
    }
    // A burst past the rate: the adapter says the platform asked to slow down, and when.
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let platform = platform(sim_config(&sim));
        burst.spawn(async move { platform.calls(range("2026-11-01", "2026-11-01")).await });
    }
    let results = burst.join_all().await;
    let throttled: Vec<_> = results
        .iter()
        .filter_map(|result| result.as_ref().err())
        .collect();
    assert!(!throttled.is_empty(), "8 at once past 3 a second");
    for error in throttled {
        assert_eq!(
            error.kind,
            UpstreamFailure::Backpressure {
                retry_after: Some(Duration::from_secs(1))
            },
            "{error}"
        );
    }
    sim.stop().await;
}

#[tokio::test]
async fn sim_latency_past_the_request_timeout_makes_the_adapter_answer_unavailable() {
    let sim = spawn_sim(SimOptions {
        latency: Duration::from_millis(600),
        ..options(1, 100)
    })
    .unwrap();
    let day = range("2026-11-01", "2026-11-01");
    let mut config = sim_config(&sim);
    config.request_timeout = Duration::from_millis(100);
    config.max_retries = 1;
    let error = platform(config).calls(day).await.unwrap_err();
    assert!(cause_chain(&error).contains("timed out"), "{error:?}");

    // The same latency within the timeout is only slow.
    let records = platform(sim_config(&sim)).calls(day).await.unwrap();
    assert!(!records.is_empty());
    sim.stop().await;
}

#[tokio::test]
async fn sim_rejects_bad_parameters_with_400_and_a_json_error() {
    let sim = spawn_sim(options(1, 100)).unwrap();
    let (_, _, other_window) = get(
        &sim,
        "from=2026-11-02T00:00:00%2B05:00&to=2026-11-03T00:00:00%2B05:00&limit=1",
        None,
    )
    .await;
    let foreign_cursor = other_window["next_cursor"].as_str().unwrap().to_owned();
    let cases = [
        ("missing from", "to=2026-11-02T00:00:00%2B05:00".to_owned()),
        ("missing to", "from=2026-11-01T00:00:00%2B05:00".to_owned()),
        (
            "from not RFC 3339",
            "from=2026-11-01&to=2026-11-02T00:00:00%2B05:00".to_owned(),
        ),
        (
            "to before from",
            "from=2026-11-02T00:00:00%2B05:00&to=2026-11-01T00:00:00%2B05:00".to_owned(),
        ),
        ("limit zero", format!("{ONE_DAY}&limit=0")),
        ("limit too large", format!("{ONE_DAY}&limit=1001")),
        ("limit not a number", format!("{ONE_DAY}&limit=ten")),
        ("limit empty", format!("{ONE_DAY}&limit=")),
        ("cursor garbage", format!("{ONE_DAY}&cursor=%%%")),
        ("cursor not ours", format!("{ONE_DAY}&cursor=bm9wZQ")),
        (
            "cursor of another window",
            format!("{ONE_DAY}&cursor={foreign_cursor}"),
        ),
        (
            "window over 92 days",
            "from=2026-01-01T00:00:00Z&to=2026-06-01T00:00:00Z".to_owned(),
        ),
    ];
    for (case, query) in cases {
        let (status, content_type, body) = get(&sim, &query, None).await;
        assert_eq!(status, 400, "{case}: {body}");
        assert_eq!(content_type.as_deref(), Some("application/json"), "{case}");
        assert!(body["error"].is_string(), "{case}: {body}");
    }
    sim.stop().await;
}

#[tokio::test]
async fn sim_reads_an_unencoded_plus_offset_as_a_plus() {
    let sim = spawn_sim(options(1, 100)).unwrap();
    let (status, _, body) = get(
        &sim,
        "from=2026-11-01T00:00:00+05:00&to=2026-11-02T00:00:00+05:00",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body["calls"].as_array().unwrap().is_empty());
    sim.stop().await;
}

#[tokio::test]
async fn sim_answers_unknown_paths_with_a_json_404() {
    let sim = spawn_sim(options(1, 100)).unwrap();
    install_crypto_provider();
    let response = reqwest::get(format!("{}/nope", sim.base_url()))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert!(body["error"].is_string());
    sim.stop().await;
}

/// `from=…&to=…` for one whole Tashkent day, in UTC.
fn day_query(day: Day) -> String {
    let (from, to) = DateRange::up_to_31_days(day, day).unwrap().unix_window();
    let utc = |unix| {
        OffsetDateTime::from_unix_timestamp(unix)
            .unwrap()
            .format(&Rfc3339)
            .unwrap()
    };
    format!("from={}&to={}", utc(from), utc(to))
}

/// The ids of every call the sim serves for `query`, following the cursor.
async fn all_ids(sim: &RunningSim, query: &str) -> Vec<String> {
    let (mut ids, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let mut page_query = query.to_owned();
        if let Some(cursor) = &cursor {
            page_query.push_str(&format!("&cursor={cursor}"));
        }
        let (status, _, body) = get(sim, &page_query, None).await;
        assert_eq!(status, 200, "{query}: {body}");
        for call in body["calls"].as_array().unwrap() {
            ids.push(call["id"].as_str().unwrap().to_owned());
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn sim_serves_no_call_that_starts_after_the_present() {
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let today = Day::new(callstats_domain::tz::to_tashkent(OffsetDateTime::now_utc()).date());
    let tomorrow = today.plus_days(1).unwrap();

    // Days that have not begun: nothing, up to the end of the calendar.
    for query in [
        day_query(tomorrow),
        "from=9999-12-31T00:00:00%2B05:00&to=9999-12-31T23:59:59%2B05:00".to_owned(),
        // A window from a minute ahead on: all of it still after the present when the sim
        // answers (from the very instant of formatting, a call may start before the answer).
        format!(
            "from={}&to={}",
            (OffsetDateTime::now_utc() + time::Duration::minutes(1))
                .format(&Rfc3339)
                .unwrap(),
            day_query(tomorrow.plus_days(1).unwrap())
                .rsplit_once("to=")
                .unwrap()
                .1
        ),
    ] {
        let ids = all_ids(&sim, &query).await;
        assert!(
            ids.is_empty(),
            "{query}: {} calls, the first {:?}",
            ids.len(),
            ids.first()
        );
    }

    // Today: the calls that had started when the sim answered, and none later.
    let before = OffsetDateTime::now_utc();
    let ids = all_ids(&sim, &day_query(today)).await;
    let after = OffsetDateTime::now_utc();
    let started_by = |instant: OffsetDateTime| -> Vec<String> {
        Generator::default()
            .calls_on(today)
            .into_iter()
            .filter(|call| call.started_at <= instant)
            .map(|call| call.id)
            .collect()
    };
    let (at_least, at_most) = (started_by(before), started_by(after));
    assert!(
        (at_least.len()..=at_most.len()).contains(&ids.len()),
        "today: {} calls served, {} had started before the request and {} by its answer",
        ids.len(),
        at_least.len(),
        at_most.len()
    );
    assert!(
        ids[..] == at_most[..ids.len()],
        "today: not the first calls of the day"
    );
    sim.stop().await;
}
