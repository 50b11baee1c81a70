//! The HTTP conventions partners expect (docs/behaviour.md, "HTTP conventions"): validators and
//! conditional requests, `Cache-Control` from the entry's lifetime, the IETF rate-limit headers
//! and `Cache-Status`, compressed bodies, and the headers every answer carries.

use std::io::Read as _;

use actix_web::test::TestRequest;

use crate::helpers::*;

const DATA: [&str; 7] = [
    "/api/v1/calls/summary?start=2026-11-02",
    "/api/v1/calls/agents?start=2026-11-02",
    "/api/v1/kpi/months",
    "/api/v1/kpi/2026-11",
    "/api/v1/operators",
    "/api/v1/schedule?month=2026-11",
    "/api/v1/scripts/stats",
];

const ALL_SCOPES: &str = "calls,kpi:detail,operators,scripts";

fn with(request: TestRequest, name: &str, value: &str) -> TestRequest {
    request.insert_header((name, value))
}

fn max_age(answer: &Answer) -> u32 {
    let control = answer.header("cache-control");
    control
        .strip_prefix("private, max-age=")
        .unwrap_or_else(|| panic!("{control}"))
        .parse()
        .unwrap()
}

#[actix_web::test]
async fn every_data_answer_has_a_weak_validator_and_the_seconds_its_entry_has_left() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 120).await;
    for uri in DATA {
        let lifetime = if uri.contains("/calls/") { 600 } else { 60 };
        let first = ask(&service, uri, &key).await;
        assert_eq!(first.status, 200, "{uri}");
        let etag = first.header("etag").to_owned();
        assert!(
            etag.len() == 20
                && etag.starts_with("W/\"")
                && etag.ends_with('"')
                && etag[3..19].bytes().all(|b| b.is_ascii_hexdigit()),
            "{uri}: {etag}"
        );
        // Whole seconds left on the service's clock (the test's, standing still): the whole
        // lifetime.
        assert_eq!(max_age(&first), lifetime, "{uri}");
        assert_eq!(first.header("vary"), DATA_VARY, "{uri}");
        assert_eq!(first.header("cache-status"), "callstats; fwd=miss", "{uri}");
        assert!(first.headers.get("content-encoding").is_none(), "{uri}");

        let second = ask(&service, uri, &key).await;
        assert_eq!(second.header("etag"), etag, "{uri}");
        assert_eq!(second.body, first.body, "{uri}");
        assert_eq!(max_age(&second), lifetime, "{uri}");
        assert_eq!(
            second.header("cache-status"),
            format!("callstats; hit; ttl={lifetime}"),
            "{uri}"
        );
    }
}

#[actix_web::test]
async fn answers_whose_body_follows_the_key_vary_on_both_key_headers_and_the_origin() {
    let app = TestApp::new();
    let detail = app.key(1, "kpi:detail", 120, None);
    let aggregate = app.key(2, "kpi:aggregate", 120, None);
    let pinned = app.key(3, "kpi:aggregate", 120, Some("dash.example"));
    let without = app.key(4, "calls", 120, None);
    let service = app.service().await;
    let uri = "/api/v1/kpi/2026-11";
    let named = ask(&service, uri, &detail).await;
    let anonymous = ask(&service, uri, &aggregate).await;
    // One URL, two bodies: a cache that did not vary on the key would serve one for the other.
    assert_ne!(named.header("etag"), anonymous.header("etag"));
    let site = || with(get(uri, &pinned), "origin", "https://dash.example");
    let from_site = send(&service, site()).await;
    let asked = [
        (&named, get(uri, &detail)),
        (&anonymous, get(uri, &aggregate)),
        (&from_site, site()),
    ];
    for (answer, again) in asked {
        assert_eq!(answer.status, 200);
        let varies: Vec<&str> = answer.header("vary").split(", ").collect();
        for header in ["authorization", "x-api-key", "origin", "accept"] {
            assert!(varies.contains(&header), "{varies:?}");
        }
        let revalidated = send(
            &service,
            with(again, "if-none-match", answer.header("etag")),
        )
        .await;
        assert_eq!(revalidated.status, 304);
        assert_eq!(
            revalidated.header("vary"),
            DATA_VARY,
            "a 304 varies as its 200"
        );
    }
    // What another key or site is refused is never kept by any cache.
    let refused = [
        ask(&service, uri, &without).await,
        send(
            &service,
            with(get(uri, &pinned), "origin", "https://evil.example"),
        )
        .await,
    ];
    for answer in refused {
        assert_eq!(answer.status, 403);
        assert_eq!(answer.header("cache-control"), "no-store");
    }
}

#[actix_web::test]
async fn a_matching_if_none_match_gets_304_without_a_body_and_is_counted() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 120).await;
    let first = ask(&service, "/api/v1/operators", &key).await;
    let etag = first.header("etag").to_owned();
    let strong = etag.trim_start_matches("W/").to_owned();
    let remaining: u32 = first.header("x-ratelimit-remaining").parse().unwrap();
    for (n, validator) in [
        etag.clone(),
        strong,
        "*".to_owned(),
        format!("W/\"0000000000000000\", {etag}"),
    ]
    .into_iter()
    .enumerate()
    {
        let answer = send(
            &service,
            with(get("/api/v1/operators", &key), "if-none-match", &validator),
        )
        .await;
        assert_eq!(answer.status, 304, "{validator}");
        assert!(answer.body.is_empty(), "{validator}");
        assert_eq!(answer.header("etag"), etag);
        assert!(
            answer
                .header("cache-control")
                .starts_with("private, max-age=")
        );
        assert_eq!(answer.header("vary"), DATA_VARY);
        assert_eq!(answer.header("x-cache"), "HIT");
        assert!(
            answer
                .header("cache-status")
                .starts_with("callstats; hit; ttl=")
        );
        assert!(answer.headers.get("content-type").is_none());
        // A 304 counts like any request.
        let left: u32 = answer.header("x-ratelimit-remaining").parse().unwrap();
        assert_eq!(left, remaining - 1 - u32::try_from(n).unwrap());
        let reset = answer.header("x-ratelimit-reset");
        assert_eq!(
            answer.header("ratelimit"),
            format!("\"minute\";r={left};t={reset}, \"days\";r=124;t={reset}")
        );
    }
    // Another validator, or one of another body, gets the body.
    for validator in ["W/\"0000000000000000\"", "garbage", "\"\""] {
        let answer = send(
            &service,
            with(get("/api/v1/operators", &key), "if-none-match", validator),
        )
        .await;
        assert_eq!(
            (answer.status, &answer.body),
            (200, &first.body),
            "{validator}"
        );
    }
    let other = send(
        &service,
        with(get("/api/v1/scripts/stats", &key), "if-none-match", &etag),
    )
    .await;
    assert_eq!(other.status, 200);
    assert_ne!(other.header("etag"), etag);
}

/// Gives back a compressed body.
type Decoder = fn(&[u8]) -> Vec<u8>;

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[actix_web::test]
async fn gzip_and_br_bodies_decode_to_the_same_bytes_under_the_same_validator() {
    let (_, key, service) = TestApp::new().serve(ALL_SCOPES, 120).await;
    for uri in DATA.into_iter().chain(["/api/v1/openapi.json"]) {
        let plain = ask(&service, uri, &key).await;
        assert_eq!(plain.status, 200, "{uri}");
        let codings: [(&str, &str, Decoder); 4] = [
            ("gzip", "gzip", gunzip),
            ("br", "br", unbrotli),
            ("gzip;q=0.5, br", "br", unbrotli),
            ("deflate, gzip", "gzip", gunzip),
        ];
        for (accept, coding, decode) in codings {
            let answer = send(&service, with(get(uri, &key), "accept-encoding", accept)).await;
            assert_eq!(answer.status, 200, "{uri} {accept}");
            assert_eq!(answer.header("content-encoding"), coding, "{uri} {accept}");
            // A data answer's representation follows `Accept`; the document's does not.
            let vary = if uri.ends_with("openapi.json") {
                "accept-encoding"
            } else {
                DATA_VARY
            };
            assert_eq!(answer.header("vary"), vary, "{uri}");
            assert_eq!(
                answer.header("etag"),
                plain.header("etag"),
                "{uri} {accept}"
            );
            assert_eq!(decode(&answer.body), plain.body, "{uri} {accept}");
        }
        let refused = send(&service, with(get(uri, &key), "accept-encoding", "zstd")).await;
        assert!(refused.headers.get("content-encoding").is_none());
        assert_eq!(refused.body, plain.body);
    }
}

#[actix_web::test]
async fn ping_and_errors_are_not_to_be_stored_and_carry_no_validator() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    for (uri, status) in [
        ("/api/v1/ping", 200),
        ("/api/v1/calls/summary?start=2026-02-30", 400),
        ("/api/v1/operators", 403),
        ("/api/v1/nowhere", 404),
    ] {
        let answer = ask(&service, uri, &key).await;
        assert_eq!(answer.status, status, "{uri}");
        assert_eq!(answer.header("cache-control"), "no-store", "{uri}");
        assert!(answer.headers.get("etag").is_none(), "{uri}");
        assert_eq!(answer.header("x-cache"), "MISS", "{uri}");
        assert_eq!(
            answer.header("cache-status"),
            "callstats; fwd=miss",
            "{uri}"
        );
        assert_eq!(
            answer.header("ratelimit-policy"),
            "\"minute\";q=120;w=60, \"days\";q=124;w=60",
            "{uri}"
        );
    }
}

#[actix_web::test]
async fn the_document_is_revalidated_by_its_validator() {
    let app = TestApp::new();
    let service = app.service().await;
    let first = send(&service, TestRequest::get().uri("/api/v1/openapi.json")).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("cache-control"), "no-cache");
    let etag = first.header("etag").to_owned();
    let again = send(
        &service,
        TestRequest::get()
            .uri("/api/v1/openapi.json")
            .insert_header(("if-none-match", etag.as_str())),
    )
    .await;
    assert_eq!((again.status, again.body.len()), (304, 0));
    assert_eq!(again.header("etag"), etag);
    assert!(again.headers.get("ratelimit").is_some());
}

#[actix_web::test]
async fn oversized_requests_are_admitted_first_and_carry_the_rate_limit_headers() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let long = format!("/api/v1/ping?pad={}", "a".repeat(9 * 1024));
    let big_headers = with(
        get("/api/v1/ping", &key),
        "x-padding",
        &"b".repeat(17 * 1024),
    );
    let big_body = with(get("/api/v1/ping", &key), "content-length", "100000");
    for (request, status) in [(get(&long, &key), 414), (big_headers, 431), (big_body, 413)] {
        let answer = send(&service, request).await;
        assert_eq!(answer.status, status);
        assert!(!answer.json()["error"].as_str().unwrap().is_empty());
        assert_eq!(answer.header("x-ratelimit-limit"), "120", "{status}");
        assert!(answer.headers.get("ratelimit").is_some(), "{status}");
        assert_eq!(answer.header("x-cache"), "MISS");
        assert_eq!(answer.header("x-content-type-options"), "nosniff");
        assert!(!answer.header("x-request-id").is_empty());
        assert_eq!(answer.header("cache-control"), "no-store");
    }
    // Without a key, admission's answer comes first.
    let answer = send(&service, TestRequest::get().uri(&long)).await;
    assert_eq!(answer.status, 401);
    assert!(answer.headers.get("x-ratelimit-limit").is_some());
    // The document needs no key: counted against the address's quota, like its every request.
    let document = format!("/api/v1/openapi.json?pad={}", "a".repeat(9 * 1024));
    let answer = send(&service, TestRequest::get().uri(&document)).await;
    assert_eq!(answer.status, 414);
    assert_eq!(answer.header("x-ratelimit-limit"), "60");
    // The operations endpoints count nothing.
    let health = format!("/healthz?pad={}", "a".repeat(9 * 1024));
    let answer = send(&service, TestRequest::get().uri(&health)).await;
    assert_eq!(answer.status, 414);
    assert!(answer.headers.get("x-ratelimit-limit").is_none());
    assert_eq!(answer.header("x-content-type-options"), "nosniff");
}
