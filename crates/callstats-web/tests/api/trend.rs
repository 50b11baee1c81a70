//! /calls/trend and `compare` on /calls/summary, end to end over the test platform's calls
//! (helpers.rs: three inbound calls on 2026-11-02 and 2026-11-03, one outbound).

use serde_json::{Value, json};

use crate::helpers::{
    TestApp, ask_json, assert_fields, assert_needs_calls_scope, column, columns, get, send,
};

#[actix_web::test]
async fn a_trend_lists_every_bucket_cut_to_the_period_with_the_summary_s_figures() {
    let (app, key, service) = TestApp::new().serve("calls", 600).await;
    let request = |query: &str| get(&format!("/api/v1/calls/trend?{query}"), &key);

    // 2026-10-28 is a Wednesday: the first week is cut to five days.
    let body = send(&service, request("start=2026-10-28&end=2026-11-10")).await;
    assert_eq!(body.status, 200);
    let body = body.json();
    assert_fields(
        &body,
        &json!({
            "granularity": "week", "direction": "inbound", "timezone": "+05:00", "clamped": false,
            "sl_threshold_seconds": 20, "short_abandon_seconds": 0, "queue": null
        }),
    );
    assert!(body.get("as_of").is_some() && body.get("provisional_from").is_some());
    let buckets = body["buckets"].as_array().unwrap();
    assert_eq!(
        columns(&body["buckets"], &["start", "end", "days"]),
        json!([
            ["2026-10-28", "2026-11-01", 5],
            ["2026-11-02", "2026-11-08", 7],
            ["2026-11-09", "2026-11-10", 2],
        ])
    );
    assert_fields(
        &buckets[1],
        &json!({
            "start": "2026-11-02", "end": "2026-11-08", "days": 7,
            "offered": 3, "answered": 2, "unanswered": 1, "short_abandoned_calls": 0,
            "abandon_rate_percent": 33.33,
            "answered_within_threshold": 1, "calls_with_wait": 3,
            "service_level_percent": 33.33,
            "average_speed_of_answer_seconds": 20.0, "average_handle_time_seconds": 60.0,
            "longest_wait_seconds": 50.0
        }),
    );
    // The bucket's figures are the summary's over its days.
    let uri = "/api/v1/calls/summary?start=2026-11-02&end=2026-11-08";
    let summary = ask_json(&service, uri, &key).await;
    assert_eq!(buckets[1]["offered"], summary["total_calls"]);
    assert_eq!(
        buckets[1]["abandon_rate_percent"],
        summary["abandon_rate_percent"]
    );
    assert_eq!(
        buckets[1]["service_level_percent"],
        summary["service_level"]["percent"]
    );
    assert_eq!(
        buckets[1]["average_speed_of_answer_seconds"],
        summary["average_speed_of_answer_seconds"]
    );

    // Days, months, a queue, short abandons, the other direction.
    let days = send(
        &service,
        request("start=2026-11-01&end=2026-11-03&granularity=day"),
    )
    .await
    .json();
    assert_eq!(column(&days["buckets"], "offered"), json!([0, 2, 1]));
    let months = send(
        &service,
        request("start=2026-10-15&end=2026-11-20&granularity=month"),
    )
    .await
    .json();
    assert_eq!(months["buckets"][0]["days"], 17);
    assert_eq!(months["buckets"][1]["start"], "2026-11-01");
    assert_eq!(months["buckets"][1]["offered"], 3);
    let sales = send(
        &service,
        request("start=2026-11-02&queue=sales&short_abandon=10"),
    )
    .await
    .json();
    let sales_figures = json!({"buckets.0.offered": 2, "short_abandon_seconds": 10});
    assert_fields(&sales, &sales_figures);
    let outbound = send(&service, request("start=2026-11-02&direction=outbound"))
        .await
        .json();
    let no_wait = json!({"buckets.0.offered": 1, "buckets.0.service_level_percent": null});
    assert_fields(&outbound, &no_wait);

    // Over 366 days: the latest 366 kept, all of them to fetch. More than a minute's day
    // budget (124), so a key with few of them held is refused whole, before any is fetched.
    let year = send(
        &service,
        request("start=2025-01-01&end=2026-11-20&granularity=month"),
    )
    .await;
    assert_eq!(year.status, 429);
    assert!(year.headers.contains_key("retry-after"));
    let error = year.error();
    assert!(error.contains("days that are not held"), "{error}");
    // Its malformed parameters: errors.rs.
    assert_needs_calls_scope(&app, &service, "/api/v1/calls/trend?start=2026-11-02").await;
}

#[actix_web::test]
async fn compare_sets_the_earlier_period_s_figures_beside_the_summary() {
    let (_, key, service) = TestApp::new().serve("calls", 600).await;
    let request = |query: &str| get(&format!("/api/v1/calls/summary?{query}"), &key);

    let plain = send(&service, request("start=2026-11-09&end=2026-11-10"))
        .await
        .json();
    assert_eq!(plain["comparison"], Value::Null);

    let answer = send(
        &service,
        request("start=2026-11-09&end=2026-11-10&compare=previous_week&short_abandon=10"),
    )
    .await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(body["total_calls"], 0);
    assert_eq!(
        body["comparison"],
        json!({
            "compare": "previous_week",
            "period": {"start_date": "2026-11-02", "end_date": "2026-11-03"},
            "total_calls": 3, "answered_calls": 2, "unanswered_calls": 1,
            "short_abandoned_calls": 0,
            "abandon_rate_percent": 33.33,
            "service_level": {
                "threshold_seconds": 20, "answered_within_threshold": 1,
                "calls_with_wait": 3, "percent": 33.33
            },
            "average_speed_of_answer_seconds": 20.0,
            "average_handle_time_seconds": 60.0,
            "longest_wait_seconds": 50.0
        })
    );
    // The comparison is the summary of the earlier period.
    let earlier = send(
        &service,
        request("start=2026-11-02&end=2026-11-03&short_abandon=10"),
    )
    .await
    .json();
    for field in [
        "total_calls",
        "answered_calls",
        "unanswered_calls",
        "short_abandoned_calls",
        "abandon_rate_percent",
        "service_level",
        "average_speed_of_answer_seconds",
        "average_handle_time_seconds",
        "longest_wait_seconds",
    ] {
        assert_eq!(body["comparison"][field], earlier[field], "{field}");
    }
    let period = send(
        &service,
        request("start=2026-11-04&end=2026-11-05&compare=previous_period"),
    )
    .await
    .json();
    assert_eq!(
        period["comparison"]["period"],
        json!({"start_date": "2026-11-02", "end_date": "2026-11-03"})
    );
    let year = send(&service, request("start=2026-11-02&compare=previous_year"))
        .await
        .json();
    assert_eq!(
        year["comparison"]["period"],
        json!({"start_date": "2025-11-03", "end_date": "2025-11-03"})
    );
    // Its malformed `compare`: errors.rs.
}
