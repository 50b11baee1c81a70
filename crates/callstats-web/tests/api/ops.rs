use std::sync::Arc;

use actix_web::test::TestRequest;
use async_trait::async_trait;
use callstats_web::ops::Probe;

use crate::helpers::*;

struct Fixed(&'static str, Result<(), String>);

#[async_trait]
impl Probe for Fixed {
    fn name(&self) -> &'static str {
        self.0
    }

    async fn check(&self) -> Result<(), String> {
        self.1.clone()
    }
}

#[actix_web::test]
async fn healthz_answers_without_key_or_quota() {
    let app = TestApp::new();
    let service = app.service().await;
    for _ in 0..70 {
        let answer = send(&service, TestRequest::get().uri("/healthz")).await;
        assert_eq!(
            (answer.status, answer.json()),
            (200, serde_json::json!({"status": "ok"}))
        );
        assert!(
            answer.headers.get("x-ratelimit-limit").is_none(),
            "not counted in any quota"
        );
    }
}

#[actix_web::test]
async fn readyz_is_503_naming_the_unreachable_dependency_but_not_its_cause() {
    let mut app = TestApp::new();
    app.state = app.state.clone().with_probes(vec![
        Arc::new(Fixed("portal database", Ok(()))),
        Arc::new(Fixed(
            "redis",
            Err("connection refused to redis://:secret@10.0.0.5".into()),
        )),
    ]);
    let service = app.service().await;
    let answer = send(&service, TestRequest::get().uri("/readyz")).await;
    assert_eq!(answer.status, 503);
    assert_eq!(
        answer.json(),
        serde_json::json!({"status": "unavailable", "reason": "redis unreachable"})
    );
    assert_eq!(
        answer.header("retry-after"),
        "1",
        "the probes run again at most once a second"
    );

    let mut healthy = TestApp::new();
    healthy.state = healthy
        .state
        .clone()
        .with_probes(vec![Arc::new(Fixed("portal database", Ok(())))]);
    let service = healthy.service().await;
    let answer = send(&service, TestRequest::get().uri("/readyz")).await;
    assert_eq!(
        (answer.status, answer.json()),
        (200, serde_json::json!({"status": "ready"}))
    );
}

/// A probe that counts its checks and takes a while.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

#[async_trait]
impl Probe for Counting {
    fn name(&self) -> &'static str {
        "portal database"
    }

    async fn check(&self) -> Result<(), String> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Ok(())
    }
}

#[actix_web::test]
async fn readyz_probes_at_most_once_a_second_whatever_the_request_rate() {
    let probe = Arc::new(Counting::default());
    let mut app = TestApp::new();
    app.state = app.state.clone().with_probes(vec![probe.clone()]);
    let service = app.service().await;
    let checks = || probe.0.load(std::sync::atomic::Ordering::SeqCst);
    let burst = (0..20).map(|_| send(&service, TestRequest::get().uri("/readyz")));
    let answers = futures::future::join_all(burst).await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert_eq!(
        checks(),
        1,
        "one probe in flight, the others wait for its result"
    );
    let ready = || async {
        send(&service, TestRequest::get().uri("/readyz"))
            .await
            .status
    };
    for _ in 0..10 {
        assert_eq!(ready().await, 200);
    }
    assert_eq!(checks(), 1, "a result is reused for a second");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(ready().await, 200);
    assert_eq!(checks(), 2, "then probed again");
}

#[actix_web::test]
async fn metrics_count_requests_by_route_and_status_cache_results_and_quota_rejections() {
    let handle =
        callstats_web::ops::install_metrics().expect("the only recorder of this test binary");
    let (_, key, service) = TestApp::new().serve("calls", 1).await;
    ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = callstats_web::ops::metrics_server(listener, handle).unwrap();
    let stop = server.handle();
    tokio::spawn(server);
    let text = exchange(
        port,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    stop.stop(false).await;
    assert!(
        text.contains(
            r#"callstats_http_requests_total{route="/api/v1/calls/summary",status="200"}"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"callstats_http_requests_total{route="/api/v1/calls/summary",status="429"}"#
        ),
        "{text}"
    );
    assert!(
        text.contains("callstats_http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(
        text.contains(r#"callstats_cache_lookups_total{result="miss"}"#),
        "{text}"
    );
    assert!(text.contains("callstats_quota_rejections_total"), "{text}");
}

/// Sends `request` on a new connection to `port` and reads until the server closes it.
async fn exchange(port: u16, request: &'static [u8]) -> String {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read as _, Write as _};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(request).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap()
}
