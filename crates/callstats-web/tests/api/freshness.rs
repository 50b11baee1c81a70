//! `as_of` and `provisional_from` on /calls/summary and /calls/agents, across settled,
//! unsettled, future and mixed periods. The app's clock stands at 11:15:30 in Tashkent on
//! 2026-11-21: the 20th and earlier are settled, the 21st is under way, the 22nd has not begun.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;

/// `(as_of, provisional_from)` of both call endpoints over `start..=end`.
async fn freshness<S, B>(service: &S, key: &Key, start: &str, end: &str) -> [(Value, Value); 2]
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let mut both = Vec::new();
    for endpoint in ["summary", "agents"] {
        let answer = ask(
            service,
            &format!("/api/v1/calls/{endpoint}?start={start}&end={end}"),
            key,
        )
        .await;
        assert_eq!(answer.status, 200, "{endpoint} {start}..{end}");
        let body = answer.json();
        both.push((body["as_of"].clone(), body["provisional_from"].clone()));
    }
    [both[0].clone(), both[1].clone()]
}

#[actix_web::test]
async fn as_of_and_provisional_from_across_settled_unsettled_future_and_mixed_periods() {
    let (_, key, service) = TestApp::new().serve("calls", 10_000).await;
    let now = Value::from("2026-11-21T06:15:30.000Z");
    let cases = [
        // Settled: as of the fetch, final.
        ("2026-11-01", "2026-11-05", now.clone(), Value::Null),
        // Mixed: final up to yesterday, today may change.
        (
            "2026-11-18",
            "2026-11-21",
            now.clone(),
            Value::from("2026-11-21"),
        ),
        // Today and days not begun: as of today's fetch, provisional from today.
        (
            "2026-11-21",
            "2026-11-24",
            now.clone(),
            Value::from("2026-11-21"),
        ),
        // Only days not begun: nobody was asked, and they will change.
        (
            "2026-11-22",
            "2026-11-25",
            Value::Null,
            Value::from("2026-11-22"),
        ),
    ];
    for (start, end, as_of, provisional_from) in cases {
        for answer in freshness(&service, &key, start, end).await {
            assert_eq!(
                answer,
                (as_of.clone(), provisional_from.clone()),
                "{start}..{end}"
            );
        }
    }
}

#[actix_web::test]
async fn as_of_is_the_oldest_fetch_among_the_days_of_the_period() {
    let (app, key, service) = TestApp::new().serve("calls", 10_000).await;
    freshness(&service, &key, "2026-11-01", "2026-11-05").await;
    freshness(&service, &key, "2026-11-20", "2026-11-21").await;
    // Two minutes on: the held settled days keep their fetch time, the new days and today
    // (kept a minute) are fetched again.
    app.clock.advance(Duration::from_secs(120));
    let first = Value::from("2026-11-21T06:15:30.000Z");
    let [summary, agents] = freshness(&service, &key, "2026-11-01", "2026-11-07").await;
    assert_eq!((summary.0, agents.0), (first.clone(), first.clone()));
    // The 20th held from the first question, the 19th and today fetched now.
    for answer in freshness(&service, &key, "2026-11-19", "2026-11-21").await {
        assert_eq!(answer, (first.clone(), Value::from("2026-11-21")));
    }
    // A period fetched entirely now is as of now.
    let [summary, _] = freshness(&service, &key, "2026-11-10", "2026-11-12").await;
    assert_eq!(summary.0, Value::from("2026-11-21T06:17:30.000Z"));
}
