//! What one key may make the service ask of the call platform, at the HTTP edge: the history
//! horizon (400) and the day budget (the `"days"` policy, and 429 past it).

use crate::helpers::*;

#[actix_web::test]
async fn a_period_before_the_history_horizon_is_a_400_naming_the_earliest_start() {
    let (app, key, service) = TestApp::new().serve("calls", 1000).await;
    // The test clock is 2026-11-21 in Tashkent: the 400 days end there.
    for path in ["/api/v1/calls/summary", "/api/v1/calls/agents"] {
        let refused = ask(&service, &format!("{path}?start=2025-10-17"), &key).await;
        assert_eq!(
            (refused.status, refused.json()),
            (
                400,
                serde_json::json!({"error": "invalid query parameter 'start' \"2025-10-17\": call records are kept for 400 days, so the earliest start is 2025-10-18"})
            ),
            "{path}"
        );
        let first = ask(&service, &format!("{path}?start=2025-10-18"), &key).await;
        assert_eq!(first.status, 200, "{path}");
    }
    assert_eq!(
        app.fetches(),
        1,
        "nothing asked for the day before the horizon"
    );
}

#[actix_web::test]
async fn the_days_a_key_makes_the_service_fetch_are_counted_and_refused_past_its_budget() {
    let (app, key, service) = TestApp::new().serve("calls", 1000).await;
    let days_left = |answer: &Answer| {
        let reset = answer.header("x-ratelimit-reset");
        let ratelimit = answer.header("ratelimit");
        let (_, days) = ratelimit.split_once(", ").unwrap();
        assert!(days.ends_with(&format!(";t={reset}")), "{ratelimit}");
        days.trim_start_matches("\"days\";r=")
            .split(';')
            .next()
            .unwrap()
            .parse::<u32>()
            .unwrap()
    };
    // Four months of 31 days: the whole default budget of 124.
    let months = [
        ("2026-10-01", "2026-10-31", 93),
        ("2026-08-01", "2026-08-31", 62),
        ("2026-07-01", "2026-07-31", 31),
        ("2026-05-01", "2026-05-31", 0),
    ];
    for (start, end, left) in months {
        let answer = ask(
            &service,
            &format!("/api/v1/calls/summary?start={start}&end={end}"),
            &key,
        )
        .await;
        assert_eq!(answer.status, 200, "{start}");
        assert_eq!(days_left(&answer), left, "{start}");
    }
    assert_eq!(app.fetches(), 124);
    // Days already held cost nothing, whatever the endpoint or direction.
    let held = ask(
        &service,
        "/api/v1/calls/agents?start=2026-10-01&end=2026-10-31",
        &key,
    )
    .await;
    assert_eq!((held.status, days_left(&held)), (200, 0));
    // One more day not held: refused, and nothing fetched.
    let refused = ask(&service, "/api/v1/calls/summary?start=2026-04-30", &key).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.header("retry-after"),
        refused.header("x-ratelimit-reset")
    );
    assert_eq!(
        refused.json()["error"],
        format!(
            "day budget exceeded: this request needs 1 days that are not held, and the key's day budget of 124 day fetches a minute has 0 left; retry in {} s",
            refused.header("x-ratelimit-reset")
        )
    );
    assert_eq!(days_left(&refused), 0);
    assert_eq!(
        refused.header("ratelimit-policy"),
        "\"minute\";q=1000;w=60, \"days\";q=124;w=60"
    );
    assert_eq!(app.fetches(), 124);
    // Another key has its own budget; and the next minute, so has this one.
    let other = app.key(2, "calls", 1000, None);
    let theirs = ask(&service, "/api/v1/calls/summary?start=2026-04-30", &other).await;
    assert_eq!((theirs.status, days_left(&theirs)), (200, 123));
    app.clock
        .set(time::macros::datetime!(2026-11-21 06:16:30 UTC));
    let next_minute = ask(&service, "/api/v1/calls/summary?start=2026-04-29", &key).await;
    assert_eq!((next_minute.status, days_left(&next_minute)), (200, 123));
}
