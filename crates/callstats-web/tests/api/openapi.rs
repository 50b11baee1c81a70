use std::collections::BTreeSet;

use actix_web::test::TestRequest;
use callstats_domain::request::Endpoint;
use callstats_web::ErrorBody;
use callstats_web::problem::ProblemDetails;

use crate::helpers::*;

async fn served_document() -> serde_json::Value {
    let app = TestApp::new();
    let service = app.service().await;
    let answer = send(&service, TestRequest::get().uri("/api/v1/openapi.json")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("x-ratelimit-limit"),
        "60",
        "counted against the per-IP quota"
    );
    answer.json()
}

#[actix_web::test]
async fn the_document_is_openapi_3_1_and_lists_exactly_the_served_routes() {
    let doc = served_document().await;
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<String> = doc["paths"].as_object().unwrap().keys().cloned().collect();
    let served: BTreeSet<String> = Endpoint::ALL
        .iter()
        .map(|e| format!("/api/v1{}", e.path()))
        .chain(
            [
                "/api/v1/openapi.json",
                "/api/v1/problems/{name}",
                "/healthz",
                "/readyz",
            ]
            .map(str::to_owned),
        )
        .collect();
    assert_eq!(documented, served);
}

/// The OpenAPI Initiative's JSON Schema of OpenAPI 3.1 documents (2022-10-07), as shipped by
/// the openapi-spec-validator package.
const OAS_31_SCHEMA: &str = include_str!("data/oas-3.1-schema-2022-10-07.json");

#[actix_web::test]
async fn the_document_validates_against_the_openapi_3_1_schema() {
    let doc = served_document().await;
    let schema: serde_json::Value = serde_json::from_str(OAS_31_SCHEMA).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The validator must be able to fail: a document without `info` is rejected.
    let mut broken = doc;
    broken.as_object_mut().unwrap().remove("info");
    assert!(!validator.is_valid(&broken));
}

#[actix_web::test]
async fn every_documented_path_is_served() {
    let doc = served_document().await;
    let (_, key, service) = TestApp::new()
        .serve("calls,kpi:detail,operators,scripts", 1000)
        .await;
    for path in doc["paths"].as_object().unwrap().keys() {
        let uri = path.replace("{month}", "2026-11");
        let answer = ask(&service, &uri, &key).await;
        let error = answer.json().get("error").cloned();
        assert!(
            !error
                .as_ref()
                .and_then(|e| e.as_str())
                .is_some_and(|e| e.starts_with("no such endpoint")),
            "{path} is documented but not served"
        );
    }
}

#[actix_web::test]
async fn every_operation_documents_its_errors_headers_and_security() {
    let doc = served_document().await;
    for (path, item) in doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(p, _)| p.starts_with("/api/v1"))
    {
        let operation = &item["get"];
        let responses = operation["responses"].as_object().unwrap();
        assert!(responses.contains_key("429"), "{path}");
        for (status, response) in responses {
            for header in [
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                "X-Cache",
            ] {
                assert!(
                    response["headers"].get(header).is_some(),
                    "{path} {status}: {header}"
                );
            }
            let content = &response["content"]["application/json"];
            // A 304 has no body, so no example.
            if path != "/api/v1/openapi.json" && status != "304" {
                assert!(
                    content.get("example").is_some() || content.get("examples").is_some(),
                    "{path} {status} has no example"
                );
            }
        }
        for status in ["429", "503"] {
            assert!(
                responses
                    .get(status)
                    .is_none_or(|response| response["headers"].get("Retry-After").is_some()),
                "{path} {status}"
            );
        }
        // The keyless ones: the document and the problem types its errors name.
        if path == "/api/v1/openapi.json" || path == "/api/v1/problems/{name}" {
            assert!(!responses.contains_key("401"));
            assert_eq!(operation["security"], serde_json::json!([{}]), "{path}");
        } else {
            for status in ["401", "403", "503"] {
                assert!(responses.contains_key(status), "{path} lacks {status}");
            }
            assert_eq!(
                operation["security"],
                serde_json::json!([{"bearer": []}, {"api_key": []}]),
                "{path}"
            );
        }
    }
    assert!(
        doc["paths"]["/readyz"]["get"]["responses"]["503"]["headers"]
            .get("Retry-After")
            .is_some(),
        "every 503 says when to ask again"
    );
    for path in ["/healthz", "/readyz"] {
        let responses = doc["paths"][path]["get"]["responses"].as_object().unwrap();
        assert!(
            !responses.contains_key("429"),
            "{path} is counted in no quota"
        );
        assert!(
            responses["200"]["headers"]
                .get("X-RateLimit-Limit")
                .is_none(),
            "{path}"
        );
    }
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["api_key"]["name"], "X-API-Key");
}

#[actix_web::test]
async fn parameters_document_their_formats_defaults_and_bounds() {
    let doc = served_document().await;
    let params = |path: &str| {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .clone()
    };
    let summary = params("/api/v1/calls/summary");
    let start = summary.iter().find(|p| p["name"] == "start").unwrap();
    assert_eq!(
        (
            start["required"].as_bool(),
            start["schema"]["format"].as_str()
        ),
        (Some(true), Some("date"))
    );
    let limit = params("/api/v1/scripts/stats")
        .into_iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(
        (
            limit["schema"]["minimum"].as_u64(),
            limit["schema"]["maximum"].as_u64(),
            limit["schema"]["default"].as_u64()
        ),
        (Some(1), Some(100), Some(20))
    );
    let month = params("/api/v1/kpi/{month}")
        .into_iter()
        .find(|p| p["name"] == "month")
        .unwrap();
    assert_eq!(month["in"], "path");
}

#[actix_web::test]
async fn the_committed_copy_in_docs_is_up_to_date() {
    let app = TestApp::new();
    let service = app.service().await;
    let served = send(&service, TestRequest::get().uri("/api/v1/openapi.json"))
        .await
        .body;
    let committed = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/openapi.json"
    ))
    .unwrap_or_default();
    assert!(
        served == committed,
        "docs/openapi.json is out of date: run `cargo xtask openapi`"
    );
}

#[test]
fn the_proxy_answers_the_document_shows_are_those_of_the_shipped_nginx_conf() {
    let conf = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/nginx/nginx.conf"
    ))
    .unwrap();
    let answered: BTreeSet<&str> = conf
        .lines()
        .filter_map(|line| line.trim().strip_prefix("return 200 '"))
        .filter_map(|body| body.strip_suffix("';"))
        .collect();
    // Each in both forms: `{error}`, and problem details.
    let documented: BTreeSet<String> = callstats_web::openapi::PROXY_ERRORS
        .iter()
        .flat_map(|(error, problem)| {
            [
                serde_json::json!({ "error": error }).to_string(),
                serde_json::to_string(&ProblemDetails::new(*problem, ErrorBody::new(*error)))
                    .unwrap(),
            ]
        })
        .collect();
    assert_eq!(
        answered,
        documented
            .iter()
            .map(String::as_str)
            .collect::<BTreeSet<_>>()
    );
}
