//! CSV by negotiation (docs/behaviour.md, "CSV"): each CSV endpoint's CSV against its JSON,
//! the headers, validators and cache of a CSV answer, 406, JSON by default, errors never CSV.

use std::io::Read as _;

use actix_web::test::TestRequest;
use callstats_domain::calendar::LocalDateTime;
use callstats_domain::model::{AgentNumber, Operator};
use serde_json::Value;

use crate::helpers::*;

const ALL_SCOPES: &str = "calls,kpi:detail,operators,scripts";

/// Each CSV endpoint, with the JSON array that becomes its rows and its file name.
const CSV_ENDPOINTS: [(&str, &str, &str); 8] = [
    (
        "/api/v1/calls/trend?start=2026-10-20&end=2026-11-05",
        "buckets",
        "calls-trend-2026-10-20_2026-11-05.csv",
    ),
    (
        "/api/v1/calls/agents?start=2026-11-01&end=2026-11-05",
        "agents",
        "calls-agents-2026-11-01_2026-11-05.csv",
    ),
    (
        "/api/v1/calls/queues?start=2026-11-02&end=2026-11-03",
        "queues",
        "calls-queues-2026-11-02_2026-11-03.csv",
    ),
    (
        "/api/v1/calls/intervals?start=2026-11-02&interval=60",
        "intervals",
        "calls-intervals-2026-11-02_2026-11-02.csv",
    ),
    (
        // Clamped to its latest 7 days: the file is named after the days used.
        "/api/v1/calls/intervals?start=2026-10-01&end=2026-11-03&interval=15",
        "intervals",
        "calls-intervals-2026-10-28_2026-11-03.csv",
    ),
    ("/api/v1/operators", "operators", "operators.csv"),
    (
        "/api/v1/schedule?month=2026-11",
        "off_days",
        "schedule-2026-11.csv",
    ),
    (
        "/api/v1/scripts/stats?limit=7",
        "scripts",
        "scripts-stats.csv",
    ),
];

fn accepting(request: TestRequest, accept: &str) -> TestRequest {
    request.insert_header(("accept", accept))
}

/// The records of a CSV body, header row first, as a CSV reader reads them.
fn records(body: &[u8]) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(body)
        .records()
        .map(|record| record.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// `row`'s fields, nested objects flattened with a dot, each as the CSV writes it.
fn flattened(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                // A top-level field is named alone: the prefix is empty.
                let path = format!("{prefix}.{name}");
                flattened(path.trim_start_matches('.'), field, out);
            }
        }
        Value::Null => out.push((prefix.to_owned(), String::new())),
        Value::String(text) if text.starts_with(['=', '+', '-', '@', '\t', '\r']) => {
            out.push((prefix.to_owned(), format!("'{text}")));
        }
        Value::String(text) => out.push((prefix.to_owned(), text.clone())),
        other => out.push((prefix.to_owned(), other.to_string())),
    }
}

/// The CSV `body` holds exactly the rows of `json`'s `array`, in order.
fn assert_rows_match(body: &[u8], json: &Value, array: &str, uri: &str) {
    let rows = json[array].as_array().unwrap();
    let records = records(body);
    let (header, cells) = records.split_first().unwrap();
    assert_eq!(cells.len(), rows.len(), "{uri}");
    for (record, row) in cells.iter().zip(rows) {
        let mut leaves = Vec::new();
        flattened("", row, &mut leaves);
        // A null object stands for its fields: one empty field each.
        let mut fields: Vec<(String, String)> = Vec::new();
        for (name, value) in leaves {
            let prefix = format!("{name}.");
            let ahead = header.get(fields.len()..).unwrap_or_default();
            let inside = ahead
                .iter()
                .take_while(|column| column.starts_with(&prefix));
            let spread: Vec<(String, String)> =
                inside.map(|c| (c.clone(), String::new())).collect();
            if value.is_empty() && !spread.is_empty() {
                fields.extend(spread);
            } else {
                fields.push((name, value));
            }
        }
        let names: Vec<_> = fields.iter().map(|(name, _)| name.clone()).collect();
        let values: Vec<_> = fields.into_iter().map(|(_, value)| value).collect();
        assert_eq!(&names, header, "{uri}");
        assert_eq!(record, &values, "{uri}");
    }
}

#[actix_web::test]
async fn every_csv_endpoint_gives_the_rows_of_its_json_array_in_order() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 600).await;
    for (uri, array, file_name) in CSV_ENDPOINTS {
        let json = ask(&service, uri, &key).await;
        assert_eq!(json.status, 200, "{uri}");
        assert_eq!(
            json.header("content-type"),
            "application/json; charset=utf-8"
        );
        assert_eq!(json.header("vary"), DATA_VARY, "{uri}");
        let csv = send(&service, accepting(get(uri, &key), "text/csv")).await;
        assert_eq!(csv.status, 200, "{uri}");
        assert_eq!(
            csv.header("content-type"),
            "text/csv; charset=utf-8; header=present",
            "{uri}"
        );
        assert_eq!(
            csv.header("content-disposition"),
            format!("attachment; filename=\"{file_name}\""),
            "{uri}"
        );
        assert_eq!(csv.header("vary"), DATA_VARY, "{uri}");
        assert_ne!(csv.header("etag"), json.header("etag"), "{uri}");
        // Written by the JSON's computation, so the two never disagree while cached.
        assert_eq!(
            csv.header("x-cache"),
            "HIT",
            "{uri}: the CSV of the JSON's computation"
        );
        assert!(
            csv.header("ratelimit").starts_with("\"minute\";r="),
            "{uri}"
        );
        assert!(csv.headers.contains_key("x-ratelimit-remaining"), "{uri}");
        // Lines end in CRLF, the last one too.
        let text = std::str::from_utf8(&csv.body).unwrap();
        assert!(text.ends_with("\r\n"), "{uri}");
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "{uri}"
        );
        assert_rows_match(&csv.body, &json.json(), array, uri);
    }
}

#[actix_web::test]
async fn a_csv_is_cached_apart_with_identical_bytes_its_own_304_and_compression() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 600).await;
    for (uri, _, _) in CSV_ENDPOINTS {
        let first = send(&service, accepting(get(uri, &key), "text/csv")).await;
        let json = ask(&service, uri, &key).await;
        assert_eq!(
            json.header("x-cache"),
            "HIT",
            "{uri}: the JSON is an entry of its own, written by the CSV's computation"
        );
        let again = send(&service, accepting(get(uri, &key), "text/csv")).await;
        assert_eq!(again.header("x-cache"), "HIT", "{uri}");
        assert_eq!(again.body, first.body, "{uri}");
        assert_eq!(again.header("etag"), first.header("etag"), "{uri}");
        assert_eq!(
            again.header("content-type"),
            "text/csv; charset=utf-8; header=present"
        );

        let etag = first.header("etag").to_owned();
        let not_modified = send(
            &service,
            accepting(get(uri, &key), "text/csv").insert_header(("if-none-match", etag.as_str())),
        )
        .await;
        assert_eq!(not_modified.status, 304, "{uri}");
        assert!(not_modified.body.is_empty());
        assert_eq!(not_modified.header("etag"), etag);
        assert_eq!(not_modified.header("vary"), DATA_VARY);
        // The CSV's validator is not the JSON's: a JSON request holding it gets the JSON.
        let json_again = send(
            &service,
            get(uri, &key).insert_header(("if-none-match", etag.as_str())),
        )
        .await;
        assert_eq!(json_again.status, 200, "{uri}");
        assert_eq!(json_again.body, json.body, "{uri}");

        let gzip = send(
            &service,
            accepting(get(uri, &key), "text/csv").insert_header(("accept-encoding", "gzip")),
        )
        .await;
        assert_eq!(gzip.header("content-encoding"), "gzip");
        assert_eq!(gzip.header("etag"), etag);
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&gzip.body[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, first.body, "{uri}");
    }
}

#[actix_web::test]
async fn text_is_quoted_where_needed_and_guarded_against_formulas_through_the_api() {
    let operator = |number: &str, name: &str, team: &str| Operator {
        agent_number: AgentNumber::new(number).unwrap(),
        name: name.to_owned(),
        team: team.to_owned(),
        shift: "day".to_owned(),
        staff_role: None,
        joined_at: LocalDateTime::parse("2025-03-01 09:00:00").unwrap(),
    };
    let store = FakeStore {
        roster: vec![
            operator("101", "Karimov, Oʻtkir", "=HYPERLINK(\"x\")"),
            operator("102", "O'Brien \"Bob\"", "-1"),
            operator("103", "Oʻzbek\nGʻulom", "@team"),
            operator("104", "+998 90 123", "\tTab"),
        ],
        ..portal()
    };
    let (_, key, service) = TestApp::with(store, FakePlatform::default(), false)
        .serve("operators", 60)
        .await;
    let csv = send(
        &service,
        accepting(get("/api/v1/operators", &key), "text/csv"),
    )
    .await;
    let text = std::str::from_utf8(&csv.body).unwrap();
    assert_eq!(
        text,
        "agent_number,name,team,shift,staff_role,joined_at\r\n\
         101,\"Karimov, Oʻtkir\",\"'=HYPERLINK(\"\"x\"\")\",day,,2025-03-01 09:00:00\r\n\
         102,\"O'Brien \"\"Bob\"\"\",'-1,day,,2025-03-01 09:00:00\r\n\
         103,\"Oʻzbek\nGʻulom\",'@team,day,,2025-03-01 09:00:00\r\n\
         104,'+998 90 123,'\tTab,day,,2025-03-01 09:00:00\r\n"
    );
    let json = ask(&service, "/api/v1/operators", &key).await;
    assert_rows_match(&csv.body, &json.json(), "operators", "/api/v1/operators");
}

#[actix_web::test]
async fn json_stays_the_default_unless_csv_is_preferred() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 600).await;
    let json = ask(&service, "/api/v1/operators", &key).await;
    for accept in [
        "*/*",
        "application/json",
        "application/json, text/csv",
        "text/csv;q=0.5, application/json",
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "application/problem+json",
    ] {
        let answer = send(&service, accepting(get("/api/v1/operators", &key), accept)).await;
        assert_eq!(answer.status, 200, "{accept}");
        assert_eq!(answer.body, json.body, "{accept}");
        assert_eq!(
            answer.header("content-type"),
            "application/json; charset=utf-8"
        );
    }
    for accept in ["text/csv", "text/csv, */*;q=0.1", "text/*", "TEXT/CSV; q=1"] {
        let answer = send(&service, accepting(get("/api/v1/operators", &key), accept)).await;
        assert_eq!(
            answer.header("content-type"),
            "text/csv; charset=utf-8; header=present",
            "{accept}"
        );
    }
}

#[actix_web::test]
async fn an_endpoint_without_csv_answers_406_when_json_is_excluded_and_json_otherwise() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 600).await;
    for uri in [
        "/api/v1/kpi/2026-11",
        "/api/v1/kpi/months",
        "/api/v1/calls/summary?start=2026-11-02",
        "/api/v1/ping",
    ] {
        let refused = send(&service, accepting(get(uri, &key), "text/csv")).await;
        assert_eq!(refused.status, 406, "{uri}");
        assert_eq!(
            refused.json(),
            serde_json::json!({"error": "the Accept header excludes every representation of this endpoint: application/json"}),
            "{uri}"
        );
        assert_eq!(
            refused.header("content-type"),
            "application/json; charset=utf-8"
        );
        assert_eq!(refused.header("cache-control"), "no-store");
        assert!(refused.header("vary").contains("accept"), "{uri}");
        assert!(
            refused.headers.contains_key("x-ratelimit-remaining"),
            "{uri}"
        );
        let json = send(&service, accepting(get(uri, &key), "text/csv, */*;q=0.1")).await;
        assert_eq!(json.status, 200, "{uri}");
        assert_eq!(
            json.header("content-type"),
            "application/json; charset=utf-8"
        );
    }
    // An endpoint with CSV refuses only an Accept that excludes both.
    let refused = send(
        &service,
        accepting(get("/api/v1/operators", &key), "image/png"),
    )
    .await;
    assert_eq!(refused.status, 406);
    assert_eq!(
        refused.json()["error"],
        "the Accept header excludes every representation of this endpoint: application/json, text/csv"
    );
}

#[actix_web::test]
async fn errors_are_never_csv() {
    let (_, key, service) = TestApp::new().serve("calls", 600).await;
    let errors = [
        ("/api/v1/calls/agents?start=2026-02-30", 400),
        ("/api/v1/calls/intervals?start=2026-11-02&interval=45", 400),
        ("/api/v1/operators", 403),
        ("/api/v1/nope", 404),
    ];
    for (uri, status) in errors {
        let answer = send(&service, accepting(get(uri, &key), "text/csv")).await;
        assert_eq!(answer.status, status, "{uri}");
        assert_eq!(
            answer.header("content-type"),
            "application/json; charset=utf-8",
            "{uri}"
        );
        assert!(answer.json()["error"].is_string(), "{uri}");
        assert!(answer.headers.get("content-disposition").is_none());
    }
    let unauthorized = send(
        &service,
        accepting(TestRequest::get().uri("/api/v1/operators"), "text/csv"),
    )
    .await;
    assert_eq!(unauthorized.status, 401);
    assert!(unauthorized.json()["error"].is_string());
    // Problem details stay problem details.
    let problem = send(
        &service,
        accepting(
            get("/api/v1/calls/agents?start=nope", &key),
            "text/csv, application/problem+json",
        ),
    )
    .await;
    assert_eq!(problem.status, 400);
    assert_eq!(problem.header("content-type"), "application/problem+json");
}
