//! The metrics a replica reports besides requests, cache and quota: upstream calls and
//! failures, pool usage, and answers given without Redis. This is the only test of the binary
//! that installs the process-wide recorder.

use std::net::TcpListener;
use std::time::Duration;

use callstats_redis::RedisSettings;
use callstats_sim::{SimOptions, spawn_sim};
use callstats_store::testing::{Backend, TestDatabase};
use callstats_web::ops::{install_metrics, metrics_server};

use crate::replicas::{Replica, SUMMARY, admin, client, eventually, get, key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_report_upstream_calls_and_failures_pool_usage_and_redis_fallbacks() {
    let handle = install_metrics().expect("the only recorder of this test binary");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let server = metrics_server(listener, handle).unwrap();
    let stop_metrics = server.handle();
    tokio::spawn(server);
    // As `serve` reports it once the recorder is installed: 64 MiB of allowance, the
    // call-day cache (48), compressed bodies (32) and the in-process response cache (64).
    callstats_web::ops::report_memory_bound(208 << 20);

    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let (key, _) = key(&admin(&db).await, "calls", 1000).await;
    let healthy = spawn_sim(SimOptions::default()).unwrap();
    let failing = spawn_sim(SimOptions {
        fail_rate: 1.0,
        ..SimOptions::default()
    })
    .unwrap();
    // Nothing listens on this port: every Redis call fails.
    let dead_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let without_redis = Replica::start(
        &db,
        Some(RedisSettings::new(format!("redis://127.0.0.1:{dead_port}"))),
        &healthy.base_url(),
    );
    let upstream_down = Replica::start(&db, None, &failing.base_url());
    // A platform whose every page carries a new cursor: each day is past its page bound.
    let endless = wiremock::MockServer::start().await;
    let pages = std::sync::atomic::AtomicUsize::new(0);
    wiremock::Mock::given(wiremock::matchers::method("GET"))
        .respond_with(move |_: &wiremock::Request| {
            let n = pages.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            wiremock::ResponseTemplate::new(200)
                .set_body_json(serde_json::json!({"calls": [], "next_cursor": format!("page-{n}")}))
        })
        .mount(&endless)
        .await;
    let unusable = Replica::start(&db, None, &endless.uri());

    let client = client();
    let answer = get(&client, &without_redis.base, SUMMARY, &key).await;
    assert_eq!(answer.status, 200);
    let answer = get(&client, &upstream_down.base, SUMMARY, &key).await;
    assert_eq!(answer.status, 503);
    for _ in 0..2 {
        let answer = get(&client, &unusable.base, SUMMARY, &key).await;
        assert_eq!(answer.status, 503);
    }
    assert_eq!(
        endless.received_requests().await.unwrap().len(),
        500,
        "the page bound, once: the day rests after it"
    );

    let expected = [
        r#"callstats_upstream_requests_total{outcome="ok"}"#,
        r#"callstats_upstream_requests_total{outcome="transient_error"}"#,
        r#"callstats_upstream_fetches_total{outcome="ok"}"#,
        r#"callstats_upstream_fetches_total{outcome="failed"}"#,
        r#"callstats_call_days_unusable_total{cause="pages"}"#,
        "callstats_call_days_held_back_total ",
        r#"callstats_redis_fallbacks_total{operation="cache read"}"#,
        r#"callstats_redis_fallbacks_total{operation="quota"}"#,
        "callstats_db_pool_max_connections ",
        "callstats_db_pool_open_connections ",
        "callstats_db_pool_in_use_connections ",
        "callstats_db_pool_waiting ",
        // The process's own, read at each scrape (metrics-process), and its memory bound.
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "callstats_memory_bound_bytes ",
    ];
    let (client, url) = (&client, metrics_url.as_str());
    eventually(
        Duration::from_secs(10),
        "every metric reported",
        move || async move {
            let text = client.get(url).send().await.unwrap().text().await.unwrap();
            let missing: Vec<_> = expected
                .iter()
                .filter(|name| !text.contains(**name))
                .collect();
            if !missing.is_empty() {
                eprintln!("not yet reported: {missing:?}");
            }
            missing.is_empty()
        },
    )
    .await;
    let text = client.get(url).send().await.unwrap().text().await.unwrap();
    let gauge = |name: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .unwrap()
            .parse()
            .unwrap()
    };
    let max = gauge("callstats_db_pool_max_connections");
    assert!(max >= 1.0, "pool bound {max}");
    let bound = gauge("callstats_memory_bound_bytes");
    assert_eq!(bound, f64::from(208_u32 << 20));

    without_redis.stop().await;
    upstream_down.stop().await;
    unusable.stop().await;
    healthy.stop().await;
    failing.stop().await;
    stop_metrics.stop(false).await;
}
