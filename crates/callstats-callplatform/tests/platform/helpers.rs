use std::io;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use callstats_callplatform::{BearerToken, HttpCallPlatform, HttpPlatformConfig};
use callstats_domain::calendar::{DateRange, Day};
use serde_json::{Value, json};
use tracing::subscriber::DefaultGuard;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

pub const TOKEN: &str = "tok-3f9a1c7e-never-print-me";

pub fn day(raw: &str) -> Day {
    Day::parse(raw).unwrap()
}

pub fn range(start: &str, end: &str) -> DateRange {
    DateRange::up_to_31_days(day(start), day(end)).unwrap()
}

/// Settings for tests: the token, short backoffs and bounds, no breaker unless a test wants one.
pub fn test_config(base_url: impl Into<String>) -> HttpPlatformConfig {
    let mut config = HttpPlatformConfig::new(base_url, Some(BearerToken::new(TOKEN)));
    config.retry_backoff = Duration::from_millis(5);
    config.retry_backoff_max = Duration::from_millis(20);
    config.request_timeout = Duration::from_secs(2);
    config.fetch_timeout = Duration::from_secs(5);
    config.breaker_threshold = 0;
    config
}

/// [`test_config`] with no retries and a breaker that opens after `threshold` failed fetches,
/// for `open_for`.
pub fn breaker_config(
    base_url: impl Into<String>,
    threshold: u32,
    open_for: Duration,
) -> HttpPlatformConfig {
    let mut config = test_config(base_url);
    config.max_retries = 0;
    config.breaker_threshold = threshold;
    config.breaker_open_for = open_for;
    config
}

/// Answers every GET `server` receives (that no mock mounted earlier answers) with `answer`.
pub async fn answer_gets(server: &MockServer, answer: impl Respond + 'static) {
    Mock::given(method("GET"))
        .respond_with(answer)
        .mount(server)
        .await;
}

/// Answers the first GET `server` receives with `answer`, before any other mock: a fault that
/// happens once.
pub async fn answer_first_get(server: &MockServer, answer: impl Respond + 'static) {
    Mock::given(method("GET"))
        .respond_with(answer)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(server)
        .await;
}

/// A mock upstream answering every GET with `answer`.
pub async fn upstream_answering(answer: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    answer_gets(&server, answer).await;
    server
}

pub fn platform(config: HttpPlatformConfig) -> HttpCallPlatform {
    HttpCallPlatform::new(config).unwrap()
}

/// One call in the upstream's JSON.
pub fn call(id: &str, started_at: &str) -> Value {
    json!({
        "id": id,
        "direction": "inbound",
        "agent_number": "101",
        "started_at": started_at,
        "duration_seconds": 60.5,
    })
}

/// A 200 page of these calls.
pub fn page(calls: &[Value], next_cursor: Option<&str>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"calls": calls, "next_cursor": next_cursor}))
}

/// Everything logged (at every level, from every crate) on this thread while the guard lives.
pub struct CapturedLogs {
    buffer: Arc<Mutex<Vec<u8>>>,
    _guard: DefaultGuard,
}

impl CapturedLogs {
    /// Tracing caches per call site, for the whole process, whether anyone listens; a site first
    /// reached by a thread without a subscriber would stay silent for this thread's capture too.
    /// So a global subscriber that listens to everything (and writes nowhere) comes first, and
    /// the cache is rebuilt once the capture is in place.
    pub fn start() -> Self {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            let sink = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_writer(io::sink)
                .finish();
            // Err only if something else set one first, which listens as well.
            let _ = tracing::subscriber::set_global_default(sink);
        });
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || BufferWriter(Arc::clone(&writer)))
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        tracing::callsite::rebuild_interest_cache();
        Self {
            buffer,
            _guard: guard,
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().unwrap()).into_owned()
    }
}

struct BufferWriter(Arc<Mutex<Vec<u8>>>);

impl io::Write for BufferWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
