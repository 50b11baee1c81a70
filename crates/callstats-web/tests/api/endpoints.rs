use callstats_domain::stats::AggregateMinRows;
use callstats_domain::use_cases::StatsSettings;

use crate::helpers::*;

#[actix_web::test]
async fn summary_of_one_day_has_hourly_buckets_and_tashkent_peaks() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let answer = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(body["total_calls"], 2);
    assert_eq!(body["timezone"], "+05:00");
    assert_eq!(body["hourly"].as_array().unwrap().len(), 24);
    assert_eq!(
        body["peak_hour"],
        serde_json::json!({"hour": 9, "count": 2})
    );
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
        serde_json::json!([{"date": "2026-11-02", "count": 1}, {"date": "2026-11-03", "count": 0}])
    );
}

#[actix_web::test]
async fn agents_count_both_directions_and_accept_but_ignore_direction() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let answer = ask(
        &service,
        "/api/v1/calls/agents?start=2026-11-02&end=2026-11-03&direction=outbound",
        &key,
    )
    .await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(
        body["period"],
        serde_json::json!({"start_date": "2026-11-02", "end_date": "2026-11-03"})
    );
    let agents: Vec<(&str, u64)> = body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent_number"].as_str().unwrap(),
                a["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(agents, [("101", 2), ("102", 1)]);
    assert_eq!(body["agents"][0]["name"], "Oʻtkir Karimov");
    assert_eq!(body["agents"][0]["checklist_percent"], 90.0);
    assert_eq!(
        body["agents"][1]["positive_sentiment_percent"],
        serde_json::Value::Null
    );
}

#[actix_web::test]
async fn kpi_months_lists_published_sheets_only() {
    let app = TestApp::new();
    let key = app.key(1, "kpi:aggregate", 120, None);
    let service = app.service().await;
    let body = ask(&service, "/api/v1/kpi/months?shift=night", &key)
        .await
        .json();
    let listed: Vec<(&str, &str)> = body["sheets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["month"].as_str().unwrap(), s["shift"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [("2026-11", "day"), ("2026-11", "night")],
        "the October draft is never shown; shift is ignored"
    );
}

#[actix_web::test]
async fn kpi_detail_shows_named_rows_and_reconciled_totals() {
    let app = TestApp::new();
    let key = app.key(1, "kpi:detail", 120, None);
    let service = app.service().await;
    let body = ask(&service, "/api/v1/kpi/2026-11?shift=night", &key)
        .await
        .json();
    assert_eq!(body["granularity"], "detail");
    assert_eq!(body["sheet"]["shift"], "night");
    assert_eq!(body["currency"], "UZS");
    assert_eq!(body["operator_count"], 3);
    assert_eq!(body["totals"]["payout"], 8_700_000.0);
    assert_eq!(body["totals"]["fiksa"], serde_json::Value::Null);
    assert_eq!(
        body["sheet_totals"]["payout"], 1.0,
        "as stated, even when it disagrees"
    );
    assert_eq!(
        body["operators"][1]["agent_number"],
        serde_json::Value::Null
    );
}

#[actix_web::test]
async fn kpi_without_shift_shows_the_lowest_sorting_shift() {
    let app = TestApp::new();
    let key = app.key(1, "kpi:aggregate", 120, None);
    let service = app.service().await;
    let body = ask(&service, "/api/v1/kpi/2026-11", &key).await.json();
    assert_eq!(body["sheet"]["shift"], "day");
    assert_eq!(
        body["ranks"],
        serde_json::json!([
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
    let app = TestApp::with_stats(bound(4));
    let aggregate = app.key(1, "kpi:aggregate", 120, None);
    let detail = app.key(2, "kpi:detail", 120, None);
    let service = app.service().await;
    let body = ask(&service, "/api/v1/kpi/2026-11", &aggregate)
        .await
        .json();
    assert_eq!(body["granularity"], "aggregate");
    assert_eq!(body["operator_count"], 3);
    assert_eq!(body["totals"]["payout"], 8_700_000.0, "the group's total");
    assert_eq!(body["distribution"], serde_json::Value::Null);
    assert_eq!(body["ranks"], serde_json::Value::Null);
    let named = ask(&service, "/api/v1/kpi/2026-11", &detail).await.json();
    assert_eq!(named["operators"].as_array().map(Vec::len), Some(3));
    // At the minimum, the sheet is shown whole.
    let app = TestApp::with_stats(bound(3));
    let aggregate = app.key(1, "kpi:aggregate", 120, None);
    let service = app.service().await;
    let body = ask(&service, "/api/v1/kpi/2026-11", &aggregate)
        .await
        .json();
    assert_eq!(body["ranks"].as_array().map(Vec::len), Some(3));
    assert!(body["distribution"]["kpi_percent"].is_object());
}

#[actix_web::test]
async fn roster_schedule_and_scripts_are_ordered() {
    let app = TestApp::new();
    let key = app.key(1, "operators,scripts", 120, None);
    let service = app.service().await;
    let roster = ask(&service, "/api/v1/operators", &key).await;
    let roster_json = roster.json();
    let numbers: Vec<&str> = roster_json["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["agent_number"].as_str().unwrap())
        .collect();
    assert_eq!(numbers, ["101", "102", "190"]);
    assert_eq!(roster_json["operators"][2]["staff_role"], "supervisor");
    let schedule = ask(&service, "/api/v1/schedule?month=2026-11", &key)
        .await
        .json();
    assert_eq!(
        schedule["off_days"][0],
        serde_json::json!({"agent_number": "101", "name": "Oʻtkir Karimov", "date": "2026-11-03", "kind": "dam", "source": "auto"})
    );
    let empty = ask(&service, "/api/v1/schedule?month=2027-01", &key).await;
    assert_eq!(
        (
            empty.status,
            empty.json()["off_days"].as_array().map(Vec::len)
        ),
        (200, Some(0))
    );
    let scripts = ask(&service, "/api/v1/scripts/stats?limit=3", &key)
        .await
        .json();
    let ids: Vec<u64> = scripts["scripts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3]);
    assert_eq!(
        ask(&service, "/api/v1/scripts/stats", &key).await.json()["scripts"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
}

#[actix_web::test]
async fn json_is_utf8_unescaped_with_charset_and_api_headers() {
    let app = TestApp::new();
    let key = app.key(1, "operators,scripts", 120, None);
    let service = app.service().await;
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
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let summary = |query: &'static str| {
        let service = &service;
        let key = &key;
        async move {
            let answer = ask(service, &format!("/api/v1/calls/summary?{query}"), key).await;
            assert_eq!(answer.status, 200, "{query}");
            answer.json()
        }
    };
    // Inbound 2026-11-02..03: answered after 5 s and 35 s (sales), abandoned after 50 s (support).
    let body = summary("start=2026-11-02&end=2026-11-03").await;
    assert_eq!(body["abandon_rate_percent"], 33.33);
    assert_eq!(
        body["service_level"],
        serde_json::json!({"threshold_seconds": 20, "answered_within_threshold": 1,
                           "calls_with_wait": 3, "percent": 33.33})
    );
    assert_eq!(body["average_speed_of_answer_seconds"], 20.0);
    assert_eq!(body["longest_wait_seconds"], 50.0);
    assert_eq!(body["average_handle_time_seconds"], 60.0);
    assert_eq!(
        body["speed_of_answer_percentiles"],
        serde_json::json!({"p50": 5.0, "p80": 35.0, "p90": 35.0, "p95": 35.0})
    );
    assert_eq!(body["average_abandon_time_seconds"], 50.0);
    assert_eq!(
        (
            &body["short_abandoned_calls"],
            &body["short_abandon_seconds"]
        ),
        (&serde_json::json!(0), &serde_json::json!(0))
    );
    let body = summary("start=2026-11-02&end=2026-11-03&sl_threshold=35").await;
    assert_eq!(body["service_level"]["percent"], 66.67);
    // The 50 s abandon is short below 51 s: it leaves the rate and the level, not the counts.
    let body = summary("start=2026-11-02&end=2026-11-03&short_abandon=51").await;
    assert_eq!(
        (
            &body["total_calls"],
            &body["unanswered_calls"],
            &body["short_abandoned_calls"],
            &body["short_abandon_seconds"],
            &body["abandon_rate_percent"],
            &body["service_level"]["calls_with_wait"],
            &body["average_abandon_time_seconds"],
        ),
        (
            &serde_json::json!(3),
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(51),
            &serde_json::json!(0.0),
            &serde_json::json!(2),
            &serde_json::Value::Null,
        )
    );
    let body = summary("start=2026-11-02&end=2026-11-03&short_abandon=50").await;
    assert_eq!(body["short_abandoned_calls"], 0, "the bound is strict");
    let body = summary("start=2026-11-02&end=2026-11-03&queue=sales").await;
    assert_eq!(
        (
            &body["total_calls"],
            &body["abandon_rate_percent"],
            &body["longest_wait_seconds"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(0.0),
            &serde_json::json!(35.0)
        )
    );
    // Outbound calls have no wait: the service figures are null, never 0.
    let body = summary("start=2026-11-02&direction=outbound").await;
    assert_eq!(
        (
            &body["service_level"],
            &body["average_speed_of_answer_seconds"],
            &body["longest_wait_seconds"],
            &body["abandon_rate_percent"]
        ),
        (
            &serde_json::Value::Null,
            &serde_json::Value::Null,
            &serde_json::Value::Null,
            &serde_json::json!(0.0)
        )
    );
    // A queue with no calls: zeros, and null where nothing can be averaged.
    let body = summary("start=2026-11-02&queue=Sales").await;
    assert_eq!(
        (
            &body["total_calls"],
            &body["abandon_rate_percent"],
            &body["service_level"]
        ),
        (
            &serde_json::json!(0),
            &serde_json::Value::Null,
            &serde_json::Value::Null
        )
    );
    for bad in [
        "sl_threshold=0",
        "sl_threshold=3601",
        "sl_threshold=2.5",
        "queue=",
    ] {
        let answer = ask(
            &service,
            &format!("/api/v1/calls/summary?start=2026-11-02&{bad}"),
            &key,
        )
        .await;
        assert_eq!(answer.status, 400, "{bad}");
    }
}

#[actix_web::test]
async fn agents_by_team_and_shift_and_a_400_listing_the_roster_s_values() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
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
    let refused = send(&service, request("team=a")).await;
    assert_eq!(refused.status, 400);
    assert_eq!(
        refused.json()["error"],
        r#"invalid query parameter 'team' "a": no operator of the roster has it; it has "A""#
    );
    let refused = send(&service, request("team=A&shift=night")).await;
    assert_eq!(refused.status, 400);
    assert_eq!(
        refused.json()["error"],
        r#"invalid query parameter 'shift' "night": no operator of the roster has it; it has "day""#
    );
}

#[actix_web::test]
async fn queues_list_each_queue_s_figures_and_the_calls_without_one_last() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let answer = ask(
        &service,
        "/api/v1/calls/queues?start=2026-11-02&end=2026-11-03&sl_threshold=10",
        &key,
    )
    .await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(
        (
            &body["direction"],
            &body["clamped"],
            &body["sl_threshold_seconds"]
        ),
        (
            &serde_json::json!("inbound"),
            &serde_json::json!(false),
            &serde_json::json!(10)
        )
    );
    assert_eq!(
        body["queues"],
        serde_json::json!([
            {"queue": "sales", "offered": 2, "answered": 2, "unanswered": 0,
             "short_abandoned_calls": 0,
             "abandon_rate_percent": 0.0, "service_level_percent": 50.0,
             "answered_within_threshold": 1, "calls_with_wait": 2,
             "average_speed_of_answer_seconds": 20.0,
             "speed_of_answer_percentiles": {"p50": 5.0, "p80": 35.0, "p90": 35.0, "p95": 35.0},
             "average_handle_time_seconds": 60.0,
             "longest_wait_seconds": 35.0, "average_abandon_time_seconds": null},
            {"queue": "support", "offered": 1, "answered": 0, "unanswered": 1,
             "short_abandoned_calls": 0,
             "abandon_rate_percent": 100.0, "service_level_percent": 0.0,
             "answered_within_threshold": 0, "calls_with_wait": 1,
             "average_speed_of_answer_seconds": null, "speed_of_answer_percentiles": null,
             "average_handle_time_seconds": null,
             "longest_wait_seconds": 50.0, "average_abandon_time_seconds": 50.0}
        ])
    );
    let outbound = ask(
        &service,
        "/api/v1/calls/queues?start=2026-11-02&direction=outbound",
        &key,
    )
    .await
    .json();
    assert_eq!(outbound["queues"][0]["queue"], serde_json::Value::Null);
    assert_eq!(outbound["queues"][0]["offered"], 1);
    let scripts_only = app.key(2, "scripts", 120, None);
    let refused = ask(
        &service,
        "/api/v1/calls/queues?start=2026-11-02",
        &scripts_only,
    )
    .await;
    assert_eq!(refused.status, 403);
}

#[actix_web::test]
async fn intervals_list_every_interval_of_the_period_with_its_figures() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let request = |query: &str| get(&format!("/api/v1/calls/intervals?{query}"), &key);
    let answer = send(&service, request("start=2026-11-02&end=2026-11-03")).await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(
        (
            &body["direction"],
            &body["interval_minutes"],
            &body["timezone"],
            &body["clamped"],
            &body["sl_threshold_seconds"],
            &body["queue"],
        ),
        (
            &serde_json::json!("inbound"),
            &serde_json::json!(30),
            &serde_json::json!("+05:00"),
            &serde_json::json!(false),
            &serde_json::json!(20),
            &serde_json::Value::Null,
        )
    );
    assert!(body.get("as_of").is_some() && body.get("provisional_from").is_some());
    let rows = body["intervals"].as_array().unwrap();
    assert_eq!(rows.len(), 96, "two days of 48 half hours");
    assert_eq!(rows[0]["start"], "2026-11-02T00:00:00+05:00");
    assert_eq!(rows[95]["start"], "2026-11-03T23:30:00+05:00");
    assert_eq!(
        rows[18],
        serde_json::json!({
            "start": "2026-11-02T09:00:00+05:00", "offered": 1, "answered": 1,
            "unanswered": 0, "short_abandoned_calls": 0,
            "abandon_rate_percent": 0.0, "service_level_percent": 100.0,
            "answered_within_threshold": 1, "calls_with_wait": 1,
            "average_speed_of_answer_seconds": 5.0, "average_handle_time_seconds": 60.0,
            "longest_wait_seconds": 5.0
        })
    );
    assert_eq!(rows[19]["service_level_percent"], 0.0, "a 35 s wait");
    assert_eq!(
        rows[68],
        serde_json::json!({
            "start": "2026-11-03T10:00:00+05:00", "offered": 1, "answered": 0,
            "unanswered": 1, "short_abandoned_calls": 0,
            "abandon_rate_percent": 100.0, "service_level_percent": 0.0,
            "answered_within_threshold": 0, "calls_with_wait": 1,
            "average_speed_of_answer_seconds": null, "average_handle_time_seconds": null,
            "longest_wait_seconds": 50.0
        })
    );
    assert_eq!(
        rows[0],
        serde_json::json!({
            "start": "2026-11-02T00:00:00+05:00", "offered": 0, "answered": 0,
            "unanswered": 0, "short_abandoned_calls": 0,
            "abandon_rate_percent": null, "service_level_percent": null,
            "answered_within_threshold": 0, "calls_with_wait": 0,
            "average_speed_of_answer_seconds": null, "average_handle_time_seconds": null,
            "longest_wait_seconds": null
        })
    );
    // The sum of offered over a day is that day's daily count of /calls/summary.
    let summary = ask(
        &service,
        "/api/v1/calls/summary?start=2026-11-02&end=2026-11-03",
        &key,
    )
    .await
    .json();
    for (day, chunk) in summary["daily"]
        .as_array()
        .unwrap()
        .iter()
        .zip(rows.chunks(48))
    {
        let offered: u64 = chunk.iter().map(|r| r["offered"].as_u64().unwrap()).sum();
        assert_eq!(serde_json::json!(offered), day["count"]);
    }

    // 15 and 60 minutes, the queue and the direction.
    let quarter = send(
        &service,
        request("start=2026-11-02&interval=15&queue=sales"),
    )
    .await
    .json();
    let rows = quarter["intervals"].as_array().unwrap();
    assert_eq!(
        (rows.len(), &quarter["queue"]),
        (96, &serde_json::json!("sales"))
    );
    assert_eq!(rows[36]["start"], "2026-11-02T09:00:00+05:00");
    assert_eq!(
        (&rows[36]["offered"], &rows[38]["offered"]),
        (&serde_json::json!(1), &serde_json::json!(1))
    );
    let hours = send(
        &service,
        request("start=2026-11-02&interval=60&direction=outbound"),
    )
    .await
    .json();
    let rows = hours["intervals"].as_array().unwrap();
    assert_eq!(rows.len(), 24);
    assert_eq!(
        (&rows[14]["offered"], &rows[14]["service_level_percent"]),
        (&serde_json::json!(1), &serde_json::Value::Null),
        "an outbound call has no wait"
    );

    // A period longer than 7 days keeps its latest 7.
    let long = send(
        &service,
        request("start=2026-10-01&end=2026-11-03&interval=60"),
    )
    .await
    .json();
    assert_eq!(
        (
            &long["period"]["start_date"],
            &long["period"]["end_date"],
            &long["clamped"]
        ),
        (
            &serde_json::json!("2026-10-28"),
            &serde_json::json!("2026-11-03"),
            &serde_json::json!(true)
        )
    );
    assert_eq!(long["intervals"].as_array().unwrap().len(), 7 * 24);
    let week = send(
        &service,
        request("start=2026-10-28&end=2026-11-03&interval=60"),
    )
    .await
    .json();
    assert_eq!(week["clamped"], false);

    for bad in [
        "",
        "start=2026-11-02&interval=45",
        "start=2026-11-02&interval=",
        "start=2026-11-02&interval=PT30M",
        "start=2026-11-02&direction=Inbound",
        "start=2026-11-02&sl_threshold=0",
        "start=2026-11-02&queue=",
        "start=2026-11-03&end=2026-11-02",
        "start=2026-02-30",
    ] {
        let answer = send(&service, request(bad)).await;
        assert_eq!(answer.status, 400, "{bad}");
        assert!(answer.json()["error"].is_string(), "{bad}");
    }
    let scripts_only = app.key(2, "scripts", 120, None);
    let refused = ask(
        &service,
        "/api/v1/calls/intervals?start=2026-11-02",
        &scripts_only,
    )
    .await;
    assert_eq!(refused.status, 403);
}
