use callstats_domain::stats::AggregateMinRows;
use callstats_domain::use_cases::StatsSettings;

use serde_json::{Value, json};

use crate::helpers::*;

#[actix_web::test]
async fn summary_of_one_day_has_hourly_buckets_and_tashkent_peaks() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let body = ask_json(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!(body["total_calls"], 2);
    assert_eq!(body["timezone"], "+05:00");
    assert_eq!(body["hourly"].as_array().unwrap().len(), 24);
    assert_eq!(body["peak_hour"], json!({"hour": 9, "count": 2}));
    assert_eq!(body["peak_hour_count"], 2);
    let outbound = ask(
        &service,
        "/api/v1/calls/summary?start=2026-11-02&end=2026-11-03&direction=outbound",
        &key,
    )
    .await;
    let body = outbound.json();
    assert_eq!(
        (
            body["total_calls"].as_u64(),
            body["hourly"].is_null(),
            body["peak_hour_count"].as_u64()
        ),
        (Some(1), true, Some(0))
    );
    assert_eq!(
        body["daily"],
        json!([{"date": "2026-11-02", "count": 1}, {"date": "2026-11-03", "count": 0}])
    );
}

#[actix_web::test]
async fn agents_count_both_directions_and_accept_but_ignore_direction() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let uri = "/api/v1/calls/agents?start=2026-11-02&end=2026-11-03&direction=outbound";
    let body = ask_json(&service, uri, &key).await;
    assert_eq!(
        body["period"],
        json!({"start_date": "2026-11-02", "end_date": "2026-11-03"})
    );
    assert_eq!(
        columns(&body["agents"], &["agent_number", "calls"]),
        json!([["101", 2], ["102", 1]])
    );
    assert_eq!(body["agents"][0]["name"], "Oʻtkir Karimov");
    assert_eq!(body["agents"][0]["checklist_percent"], 90.0);
    assert_eq!(body["agents"][1]["positive_sentiment_percent"], Value::Null);
}

#[actix_web::test]
async fn kpi_months_lists_published_sheets_only() {
    let (_, key, service) = TestApp::new().serve("kpi:aggregate", 120).await;
    let body = ask_json(&service, "/api/v1/kpi/months?shift=night", &key).await;
    assert_eq!(
        columns(&body["sheets"], &["month", "shift"]),
        json!([["2026-11", "day"], ["2026-11", "night"]]),
        "the October draft is never shown; shift is ignored"
    );
}

#[actix_web::test]
async fn kpi_detail_shows_named_rows_and_reconciled_totals() {
    let (_, key, service) = TestApp::new().serve("kpi:detail", 120).await;
    let body = ask_json(&service, "/api/v1/kpi/2026-11?shift=night", &key).await;
    assert_eq!(body["granularity"], "detail");
    assert_eq!(body["sheet"]["shift"], "night");
    assert_eq!(body["currency"], "UZS");
    assert_eq!(body["operator_count"], 3);
    assert_eq!(body["totals"]["payout"], 8_700_000.0);
    assert_eq!(body["totals"]["fiksa"], Value::Null);
    assert_eq!(
        body["sheet_totals"]["payout"], 1.0,
        "as stated, even when it disagrees"
    );
    assert_eq!(body["operators"][1]["agent_number"], Value::Null);
}

#[actix_web::test]
async fn kpi_without_shift_shows_the_lowest_sorting_shift() {
    let (_, key, service) = TestApp::new().serve("kpi:aggregate", 120).await;
    let body = ask_json(&service, "/api/v1/kpi/2026-11", &key).await;
    assert_eq!(body["sheet"]["shift"], "day");
    assert_eq!(
        body["ranks"],
        json!([
            {"rank": 1, "kpi_percent": 0.92, "payout": 4_500_000.0},
            {"rank": 1, "kpi_percent": 0.92, "payout": null},
            {"rank": 3, "kpi_percent": 0.78, "payout": 4_200_000.0}
        ])
    );
}

#[actix_web::test]
async fn a_small_sheet_shows_an_aggregate_key_its_totals_alone() {
    let bound = |rows| StatsSettings {
        kpi_aggregate_min_rows: AggregateMinRows::new(rows).unwrap(),
        ..StatsSettings::default()
    };
    // The sheet has 3 rows: under a minimum of 4 its distribution and ranks are withheld.
    let (app, aggregate, service) = TestApp::with_stats(bound(4))
        .serve("kpi:aggregate", 120)
        .await;
    let detail = app.key(2, "kpi:detail", 120, None);
    let body = ask_json(&service, "/api/v1/kpi/2026-11", &aggregate).await;
    assert_eq!(body["granularity"], "aggregate");
    assert_eq!(body["operator_count"], 3);
    assert_eq!(body["totals"]["payout"], 8_700_000.0, "the group's total");
    assert_eq!(body["distribution"], Value::Null);
    assert_eq!(body["ranks"], Value::Null);
    let named = ask_json(&service, "/api/v1/kpi/2026-11", &detail).await;
    assert_eq!(named["operators"].as_array().map(Vec::len), Some(3));
    // At the minimum, the sheet is shown whole.
    let (_, aggregate, service) = TestApp::with_stats(bound(3))
        .serve("kpi:aggregate", 120)
        .await;
    let body = ask_json(&service, "/api/v1/kpi/2026-11", &aggregate).await;
    assert_eq!(body["ranks"].as_array().map(Vec::len), Some(3));
    assert!(body["distribution"]["kpi_percent"].is_object());
}

#[actix_web::test]
async fn roster_schedule_and_scripts_are_ordered() {
    let (_, key, service) = TestApp::new().serve("operators,scripts", 120).await;
    let roster = ask_json(&service, "/api/v1/operators", &key).await;
    assert_eq!(
        column(&roster["operators"], "agent_number"),
        json!(["101", "102", "190"])
    );
    assert_eq!(roster["operators"][2]["staff_role"], "supervisor");
    let schedule = ask_json(&service, "/api/v1/schedule?month=2026-11", &key).await;
    assert_eq!(
        schedule["off_days"][0],
        json!({"agent_number": "101", "name": "Oʻtkir Karimov", "date": "2026-11-03", "kind": "dam", "source": "auto"})
    );
    let empty = ask(&service, "/api/v1/schedule?month=2027-01", &key).await;
    assert_eq!(
        (
            empty.status,
            empty.json()["off_days"].as_array().map(Vec::len)
        ),
        (200, Some(0))
    );
    let scripts = ask_json(&service, "/api/v1/scripts/stats?limit=3", &key).await;
    assert_eq!(column(&scripts["scripts"], "id"), json!([1, 2, 3]));
    let every = ask_json(&service, "/api/v1/scripts/stats", &key).await;
    assert_eq!(every["scripts"].as_array().map(Vec::len), Some(20));
}

#[actix_web::test]
async fn json_is_utf8_unescaped_with_charset_and_api_headers() {
    let (_, key, service) = TestApp::new().serve("operators,scripts", 120).await;
    let answer = ask(&service, "/api/v1/operators", &key).await;
    assert_eq!(
        answer.header("content-type"),
        "application/json; charset=utf-8"
    );
    let text = std::str::from_utf8(&answer.body).unwrap();
    assert!(text.contains("Oʻtkir") && !text.contains("\\u"), "{text}");
    let scripts = ask(&service, "/api/v1/scripts/stats", &key).await;
    assert!(
        std::str::from_utf8(&scripts.body)
            .unwrap()
            .contains("Приветствие")
    );
    assert_eq!(answer.header("x-content-type-options"), "nosniff");
    // Private to the partner: kept by its own client for what is left of the entry, never by a
    // shared cache.
    assert_eq!(answer.header("cache-control"), "private, max-age=60");
    assert!(!answer.header("x-request-id").is_empty());
    assert!(answer.headers.get("server").is_none());
}

#[actix_web::test]
async fn summary_gives_service_figures_against_the_threshold_asked_for() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let summary = |query: &'static str| {
        let (service, key) = (&service, &key);
        async move { ask_json(service, &format!("/api/v1/calls/summary?{query}"), key).await }
    };
    // Inbound 2026-11-02..03: answered after 5 s and 35 s (sales), abandoned after 50 s (support).
    let body = summary("start=2026-11-02&end=2026-11-03").await;
    assert_fields(
        &body,
        &json!({
            "abandon_rate_percent": 33.33,
            "service_level": {"threshold_seconds": 20, "answered_within_threshold": 1,
                              "calls_with_wait": 3, "percent": 33.33},
            "average_speed_of_answer_seconds": 20.0,
            "longest_wait_seconds": 50.0,
            "average_handle_time_seconds": 60.0,
            "speed_of_answer_percentiles": {"p50": 5.0, "p80": 35.0, "p90": 35.0, "p95": 35.0},
            "average_abandon_time_seconds": 50.0,
            "short_abandoned_calls": 0, "short_abandon_seconds": 0
        }),
    );
    let body = summary("start=2026-11-02&end=2026-11-03&sl_threshold=35").await;
    assert_eq!(body["service_level"]["percent"], 66.67);
    // The 50 s abandon is short below 51 s: it leaves the rate and the level, not the counts.
    let body = summary("start=2026-11-02&end=2026-11-03&short_abandon=51").await;
    assert_fields(
        &body,
        &json!({
            "total_calls": 3, "unanswered_calls": 1,
            "short_abandoned_calls": 1, "short_abandon_seconds": 51,
            "abandon_rate_percent": 0.0, "service_level.calls_with_wait": 2,
            "average_abandon_time_seconds": null
        }),
    );
    let body = summary("start=2026-11-02&end=2026-11-03&short_abandon=50").await;
    assert_eq!(body["short_abandoned_calls"], 0, "the bound is strict");
    let body = summary("start=2026-11-02&end=2026-11-03&queue=sales").await;
    let sales =
        json!({"total_calls": 2, "abandon_rate_percent": 0.0, "longest_wait_seconds": 35.0});
    assert_fields(&body, &sales);
    // Outbound calls have no wait: the service figures are null, never 0.
    let body = summary("start=2026-11-02&direction=outbound").await;
    assert_fields(
        &body,
        &json!({
            "service_level": null, "average_speed_of_answer_seconds": null,
            "longest_wait_seconds": null, "abandon_rate_percent": 0.0
        }),
    );
    // A queue with no calls: zeros, and null where nothing can be averaged.
    let body = summary("start=2026-11-02&queue=Sales").await;
    let none = json!({"total_calls": 0, "abandon_rate_percent": null, "service_level": null});
    assert_fields(&body, &none);
    // Its malformed parameters: errors.rs.
}

#[actix_web::test]
async fn agents_by_team_and_shift_and_a_400_listing_the_roster_s_values() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let request = |query: &str| {
        get(
            &format!("/api/v1/calls/agents?start=2026-11-02&{query}"),
            &key,
        )
    };
    let every = send(&service, request("end=2026-11-03")).await.json();
    let team = send(&service, request("end=2026-11-03&team=A&shift=day")).await;
    assert_eq!(team.status, 200);
    assert_eq!(
        team.json()["agents"],
        every["agents"],
        "the whole roster is team A, day"
    );
    for (query, error) in [
        (
            "team=a",
            r#"invalid query parameter 'team' "a": no operator of the roster has it; it has "A""#,
        ),
        (
            "team=A&shift=night",
            r#"invalid query parameter 'shift' "night": no operator of the roster has it; it has "day""#,
        ),
    ] {
        let refused = send(&service, request(query)).await;
        assert_eq!((refused.status, refused.error()), (400, error.to_owned()));
    }
}

#[actix_web::test]
async fn queues_list_each_queue_s_figures_and_the_calls_without_one_last() {
    let (app, key, service) = TestApp::new().serve("calls", 120).await;
    let uri = "/api/v1/calls/queues?start=2026-11-02&end=2026-11-03&sl_threshold=10";
    let body = ask_json(&service, uri, &key).await;
    let head = json!({"direction": "inbound", "clamped": false, "sl_threshold_seconds": 10});
    assert_fields(&body, &head);
    // Each field, its value for sales and for support.
    assert_columns(
        &body["queues"],
        &json!({
            "queue": ["sales", "support"],
            "offered": [2, 1],
            "answered": [2, 0],
            "unanswered": [0, 1],
            "short_abandoned_calls": [0, 0],
            "abandon_rate_percent": [0.0, 100.0],
            "service_level_percent": [50.0, 0.0],
            "answered_within_threshold": [1, 0],
            "calls_with_wait": [2, 1],
            "average_speed_of_answer_seconds": [20.0, null],
            "speed_of_answer_percentiles": [{"p50": 5.0, "p80": 35.0, "p90": 35.0, "p95": 35.0}, null],
            "average_handle_time_seconds": [60.0, null],
            "longest_wait_seconds": [35.0, 50.0],
            "average_abandon_time_seconds": [null, 50.0]
        }),
    );
    let uri = "/api/v1/calls/queues?start=2026-11-02&direction=outbound";
    let outbound = ask_json(&service, uri, &key).await;
    assert_eq!(outbound["queues"][0]["queue"], Value::Null);
    assert_eq!(outbound["queues"][0]["offered"], 1);
    assert_needs_calls_scope(&app, &service, "/api/v1/calls/queues?start=2026-11-02").await;
}

#[actix_web::test]
async fn intervals_list_every_interval_of_the_period_with_its_figures() {
    let (app, key, service) = TestApp::new().serve("calls", 120).await;
    let intervals = |query: &str| format!("/api/v1/calls/intervals?{query}");
    let body = ask_json(
        &service,
        &intervals("start=2026-11-02&end=2026-11-03"),
        &key,
    )
    .await;
    assert_fields(
        &body,
        &json!({
            "direction": "inbound", "interval_minutes": 30, "timezone": "+05:00",
            "clamped": false, "sl_threshold_seconds": 20, "queue": null
        }),
    );
    assert!(body.get("as_of").is_some() && body.get("provisional_from").is_some());
    let rows = body["intervals"].as_array().unwrap();
    assert_eq!(rows.len(), 96, "two days of 48 half hours");
    assert_eq!(rows[95]["start"], "2026-11-03T23:30:00+05:00");
    assert_eq!(rows[19]["service_level_percent"], 0.0, "a 35 s wait");
    // Each field, its value at midnight (no calls), at 09:00 on the 2nd and at 10:00 on the 3rd.
    assert_columns(
        &json!([rows[0], rows[18], rows[68]]),
        &json!({
            "start": ["2026-11-02T00:00:00+05:00", "2026-11-02T09:00:00+05:00",
                      "2026-11-03T10:00:00+05:00"],
            "offered": [0, 1, 1],
            "answered": [0, 1, 0],
            "unanswered": [0, 0, 1],
            "short_abandoned_calls": [0, 0, 0],
            "abandon_rate_percent": [null, 0.0, 100.0],
            "service_level_percent": [null, 100.0, 0.0],
            "answered_within_threshold": [0, 1, 0],
            "calls_with_wait": [0, 1, 1],
            "average_speed_of_answer_seconds": [null, 5.0, null],
            "average_handle_time_seconds": [null, 60.0, null],
            "longest_wait_seconds": [null, 5.0, 50.0]
        }),
    );
    // The sum of offered over a day is that day's daily count of /calls/summary.
    let uri = "/api/v1/calls/summary?start=2026-11-02&end=2026-11-03";
    let summary = ask_json(&service, uri, &key).await;
    for (day, chunk) in summary["daily"]
        .as_array()
        .unwrap()
        .iter()
        .zip(rows.chunks(48))
    {
        let offered: u64 = chunk.iter().map(|r| r["offered"].as_u64().unwrap()).sum();
        assert_eq!(json!(offered), day["count"]);
    }

    // 15 and 60 minutes, the queue and the direction.
    let quarter = intervals("start=2026-11-02&interval=15&queue=sales");
    let quarter = ask_json(&service, &quarter, &key).await;
    let rows = quarter["intervals"].as_array().unwrap();
    assert_eq!((rows.len(), &quarter["queue"]), (96, &json!("sales")));
    assert_eq!(rows[36]["start"], "2026-11-02T09:00:00+05:00");
    assert_eq!(
        (&rows[36]["offered"], &rows[38]["offered"]),
        (&json!(1), &json!(1))
    );
    let hours = intervals("start=2026-11-02&interval=60&direction=outbound");
    let hours = ask_json(&service, &hours, &key).await;
    let rows = hours["intervals"].as_array().unwrap();
    assert_eq!(rows.len(), 24);
    assert_eq!(
        (&rows[14]["offered"], &rows[14]["service_level_percent"]),
        (&json!(1), &Value::Null),
        "an outbound call has no wait"
    );

    // A period longer than 7 days keeps its latest 7.
    let long = intervals("start=2026-10-01&end=2026-11-03&interval=60");
    let long = ask_json(&service, &long, &key).await;
    assert_fields(
        &long,
        &json!({"period.start_date": "2026-10-28", "period.end_date": "2026-11-03", "clamped": true}),
    );
    assert_eq!(long["intervals"].as_array().unwrap().len(), 7 * 24);
    let week = intervals("start=2026-10-28&end=2026-11-03&interval=60");
    let week = ask_json(&service, &week, &key).await;
    assert_eq!(week["clamped"], false);

    // Its malformed parameters: errors.rs.
    assert_needs_calls_scope(&app, &service, "/api/v1/calls/intervals?start=2026-11-02").await;
}
