//! The calls held by every day being fetched at once are bounded by the in-flight budget
//! (`CALLSTATS_CALL_DAY_IN_FLIGHT_MB`), counted by an allocator that counts (dhat): four days
//! of endless pages fetched at once, each allowed far more calls than the budget holds, never
//! take the heap past the budget and a fixed allowance for the pages being read.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use callstats_callplatform::{HttpCallPlatform, HttpPlatformConfig};
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::ports::{CallPlatform, UpstreamFailure};
use serde_json::json;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const MIB: u64 = 1024 * 1024;

/// Pages of 1,000 new valid calls with ids of 40 bytes and one agent, each with a next
/// cursor, for ever: a platform that would fill a day up to its calls bound.
fn endless(pages: Arc<AtomicUsize>) -> impl Fn(&wiremock::Request) -> ResponseTemplate {
    move |_| {
        let page = pages.fetch_add(1, Ordering::SeqCst);
        let calls: Vec<_> = (page * 1_000..(page + 1) * 1_000)
            .map(|n| {
                json!({
                    "id": format!("{n:040}"),
                    "direction": "inbound",
                    "agent_number": "101",
                    "started_at": format!("2026-11-01T{:02}:{:02}:00+05:00", n / 60 % 24, n % 60),
                    "duration_seconds": 60.5,
                })
            })
            .collect();
        ResponseTemplate::new(200)
            .set_body_json(json!({"calls": calls, "next_cursor": format!("after-{page}")}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn days_fetched_at_once_hold_no_more_than_the_in_flight_budget() {
    let _profiler = dhat::Profiler::builder().testing().build();
    callstats_callplatform::install_crypto_provider();
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    let pages = Arc::new(AtomicUsize::new(0));
    Mock::given(wiremock::matchers::method("GET"))
        .respond_with(endless(Arc::clone(&pages)))
        .mount(&server)
        .await;
    let budget = 2 * MIB;
    let mut config = HttpPlatformConfig::new(server.uri(), None);
    config.fetch_timeout = Duration::from_secs(60);
    config.breaker_threshold = 0;
    config.bounds.pages = 10_000;
    // Each day alone may hold 100,000 calls (some 6 MiB): four at once, 24 MiB without the
    // budget.
    config.bounds.calls = 100_000;
    config.in_flight_bytes = usize::try_from(budget).unwrap();
    let platform = Arc::new(HttpCallPlatform::new(config).unwrap());
    let day = Day::parse("2026-11-01").unwrap();
    let window = DateRange::up_to_31_days(day, day).unwrap();

    let before = dhat::HeapStats::get();
    let mut fetches = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let platform = Arc::clone(&platform);
        fetches.spawn(async move { platform.calls(window).await });
    }
    let outcomes = fetches.join_all().await;

    for outcome in &outcomes {
        let error = outcome.as_ref().unwrap_err();
        assert_eq!(error.kind, UpstreamFailure::Unavailable, "{error}");
        assert!(
            error.reason.contains("CALLSTATS_CALL_DAY_IN_FLIGHT_MB")
                && error.reason.contains("more than 2 MiB of calls"),
            "{error}"
        );
    }
    // The budget held about 45,000 calls in all, not the 400,000 the days' bounds allow.
    let fetched = pages.load(Ordering::SeqCst);
    assert!(fetched < 100, "{fetched} pages");
    // The client's pool and the mock server go too: what is left is what the fetches kept.
    drop(outcomes);
    drop(platform);
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = dhat::HeapStats::get();
    // The peak: the budget, and for each fetch the page it was reading (a body of some 170 KB
    // and its parsed calls) and the mock server's answer being written.
    let peak = u64::try_from(after.max_bytes.saturating_sub(before.curr_bytes)).unwrap();
    assert!(
        peak <= budget + 4 * MIB,
        "peak {peak} bytes over {budget} of budget"
    );
    assert!(
        u64::try_from(after.curr_bytes).unwrap() <= u64::try_from(before.curr_bytes).unwrap() + MIB,
        "the fetches gave their heap back: {} bytes before, {} after, peak {peak}",
        before.curr_bytes,
        after.curr_bytes
    );
}
