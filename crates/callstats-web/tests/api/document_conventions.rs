//! The HTTP conventions of docs/behaviour.md as the OpenAPI document states them: conditional
//! requests and compression on the data endpoints, validators and `Cache-Control`, and the
//! headers every answer carries.

use serde_json::Value;

fn document() -> Value {
    serde_json::from_slice(&callstats_web::openapi::document_bytes()).unwrap()
}

const DATA: [&str; 7] = [
    "/api/v1/calls/summary",
    "/api/v1/calls/agents",
    "/api/v1/kpi/months",
    "/api/v1/kpi/{month}",
    "/api/v1/operators",
    "/api/v1/schedule",
    "/api/v1/scripts/stats",
];

const COUNTED: [&str; 9] = [
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "RateLimit-Policy",
    "RateLimit",
    "X-Cache",
    "Cache-Status",
    "X-Request-Id",
    "X-Content-Type-Options",
];

fn header_names(operation: &Value) -> Vec<String> {
    operation["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["in"] == "header")
        .map(|p| {
            assert_eq!(p["required"], false, "{p}");
            assert_eq!(p["schema"]["type"], "string", "{p}");
            p["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn has(response: &Value, header: &str) -> bool {
    response["headers"].get(header).is_some()
}

/// Whether `value` is an instance of the header's schema.
fn matches(response: &Value, header: &str, value: &str) -> bool {
    let schema = &response["headers"][header]["schema"];
    assert!(schema.is_object(), "no {header} header");
    jsonschema::draft202012::new(schema)
        .unwrap()
        .is_valid(&Value::from(value))
}

#[test]
fn data_endpoints_document_conditional_requests_compression_and_validators() {
    let doc = document();
    for path in DATA {
        let operation = &doc["paths"][path]["get"];
        assert_eq!(
            header_names(operation),
            ["If-None-Match", "Accept-Encoding"],
            "{path}"
        );
        assert!(operation["responses"]["406"].is_object(), "{path}");
        let responses = &operation["responses"];
        let not_modified = &responses["304"];
        assert!(
            not_modified["description"]
                .as_str()
                .unwrap()
                .starts_with("Not Modified")
        );
        assert!(
            not_modified.get("content").is_none(),
            "{path}: a 304 has no body"
        );
        for status in ["200", "304"] {
            let response = &responses[status];
            for header in ["ETag", "Cache-Control", "Vary"] {
                assert!(has(response, header), "{path} {status} lacks {header}");
            }
            assert!(matches(response, "ETag", r#"W/"0123456789abcdef""#));
            assert!(!matches(response, "ETag", r#""0123456789abcdef""#));
            assert!(!matches(response, "ETag", r#"W/"0123456789ABCDEF""#));
            assert!(matches(response, "Cache-Control", "private, max-age=599"));
            assert!(!matches(response, "Cache-Control", "no-store"));
            assert!(matches(
                response,
                "Vary",
                "Accept, Accept-Encoding, Authorization, X-API-Key, Origin"
            ));
            assert!(matches(
                response,
                "Vary",
                "accept, accept-encoding, authorization, x-api-key, origin"
            ));
            assert!(!matches(response, "Vary", "accept, accept-encoding"));
            assert!(!matches(response, "Vary", "accept-encoding"));
        }
        assert!(matches(&responses["200"], "Content-Encoding", "gzip"));
        assert!(matches(&responses["200"], "Content-Encoding", "br"));
        assert!(!has(&responses["304"], "Content-Encoding"), "{path}");
    }
}

#[test]
fn the_csv_endpoints_document_text_csv_with_their_columns_and_a_real_example() {
    let doc = document();
    for (path, columns) in [
        ("/api/v1/calls/agents", "agent_number,name,calls,"),
        (
            "/api/v1/calls/intervals",
            "start,offered,answered,unanswered,",
        ),
        ("/api/v1/calls/queues", "queue,offered,answered,"),
        (
            "/api/v1/operators",
            "agent_number,name,team,shift,staff_role,joined_at",
        ),
        ("/api/v1/schedule", "agent_number,name,date,kind,source"),
        (
            "/api/v1/scripts/stats",
            "id,title.uz,title.ru,category.uz,category.ru,views",
        ),
    ] {
        let ok = &doc["paths"][path]["get"]["responses"]["200"];
        let csv = &ok["content"]["text/csv"];
        let description = csv["schema"]["description"].as_str().unwrap();
        assert!(description.contains(columns), "{path}: {description}");
        let example = csv["example"].as_str().unwrap();
        assert!(example.starts_with(columns), "{path}: {example}");
        assert!(
            example.ends_with("\r\n") && example.lines().count() >= 2,
            "{path}: {example}"
        );
        assert!(matches(
            ok,
            "Content-Disposition",
            "attachment; filename=\"calls-agents-2026-11-01_2026-11-30.csv\""
        ));
        assert!(matches(
            ok,
            "Content-Disposition",
            "attachment; filename=\"operators.csv\""
        ));
    }
    for path in [
        "/api/v1/calls/summary",
        "/api/v1/kpi/{month}",
        "/api/v1/ping",
    ] {
        let operation = &doc["paths"][path]["get"];
        assert!(
            operation["responses"]["200"]["content"]
                .get("text/csv")
                .is_none()
        );
        let refused = &operation["responses"]["406"];
        assert_eq!(
            refused["content"]["application/json"]["example"]["error"],
            "the Accept header excludes every representation of this endpoint: application/json",
            "{path}"
        );
        assert!(refused["content"].get("application/problem+json").is_none());
    }
}

#[test]
fn the_document_is_revalidated_and_ping_never_kept() {
    let doc = document();
    let operation = &doc["paths"]["/api/v1/openapi.json"]["get"];
    assert_eq!(
        header_names(operation),
        ["If-None-Match", "Accept-Encoding"]
    );
    for status in ["200", "304"] {
        let response = &operation["responses"][status];
        assert!(matches(response, "ETag", r#"W/"00000000deadbeef""#));
        assert!(matches(response, "Cache-Control", "no-cache"));
        assert!(!matches(response, "Cache-Control", "private, max-age=60"));
        assert!(matches(response, "Vary", "accept-encoding"));
    }
    assert!(matches(
        &operation["responses"]["200"],
        "Content-Encoding",
        "br"
    ));
    let ping = &doc["paths"]["/api/v1/ping"]["get"];
    assert!(header_names(ping).is_empty());
    assert!(ping["responses"].get("304").is_none());
    assert!(matches(
        &ping["responses"]["200"],
        "Cache-Control",
        "no-store"
    ));
    assert!(!has(&ping["responses"]["200"], "ETag"));
}

#[test]
fn every_answer_carries_its_request_id_and_every_counted_one_the_quota_and_cache_headers() {
    let doc = document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let responses = item["get"]["responses"].as_object().unwrap();
        // What the reverse proxy may answer before a request reaches a replica (the operations
        // endpoints are not behind it).
        if path.starts_with("/api/v1/") {
            for status in ["400", "413", "414", "429", "431", "503"] {
                assert!(responses.contains_key(status), "{path} lacks {status}");
            }
        }
        for (status, response) in responses {
            assert!(has(response, "X-Request-Id"), "{path} {status}");
            assert!(matches(response, "X-Content-Type-Options", "nosniff"));
            if !path.starts_with("/api/v1/") {
                // The probes pass no key check and count in no quota.
                assert!(!has(response, "X-RateLimit-Limit"), "{path} {status}");
                continue;
            }
            for header in COUNTED {
                assert!(has(response, header), "{path} {status} lacks {header}");
            }
            assert!(matches(
                response,
                "RateLimit-Policy",
                r#""minute";q=120;w=60"#
            ));
            assert!(!matches(
                response,
                "RateLimit-Policy",
                r#""minute";q=120;w=30"#
            ));
            assert!(matches(response, "RateLimit", r#""minute";r=119;t=42"#));
            assert!(matches(response, "Cache-Status", "callstats; hit; ttl=581"));
            assert!(matches(response, "Cache-Status", "callstats; fwd=miss"));
            assert!(!matches(response, "Cache-Status", "callstats; miss"));
            if status.starts_with('4') || status.starts_with('5') {
                assert!(
                    matches(response, "Cache-Control", "no-store"),
                    "{path} {status}"
                );
            }
        }
    }
}
