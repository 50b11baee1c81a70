use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use callstats::app::{Assembly, Upstream};
use callstats_callplatform::HttpPlatformConfig;
use callstats_store::Store;
use callstats_store::testing::TestDatabase;
use tokio::sync::watch;

use crate::support::serve::{assembly, serve};

/// Runs the binary against `db_url`; its stdout.
fn run(db_url: &str, args: &[&str]) -> String {
    crate::support::callstats_stdout(args, |command| {
        command
            .env("CALLSTATS_DATABASE_URL", db_url)
            .current_dir(std::env::temp_dir());
    })
}

/// Seeds the demo data set into `db` and issues a key with every scope, through the binary.
pub fn seed_with_key(db_url: &str) -> String {
    run(db_url, &["seed", "--demo", "--anchor", "2026-11-21"]);
    issue_key(db_url, "faults")
}

/// Issues a key named `name` with every scope, through the binary.
pub fn issue_key(db_url: &str, name: &str) -> String {
    run(
        db_url,
        &[
            "keys",
            "create",
            "--name",
            name,
            "--scopes",
            "calls,kpi:detail,operators,scripts",
            "--rate-limit",
            "100000",
        ],
    )
    .trim()
    .to_owned()
}

/// Upstream settings short enough for a test: one retry, a 1.5 s fetch deadline, and a
/// breaker that opens after three failed fetches for a quarter of a second.
pub fn short_upstream(base_url: String) -> HttpPlatformConfig {
    let mut config = HttpPlatformConfig::new(base_url, None);
    config.connect_timeout = Duration::from_millis(300);
    config.request_timeout = Duration::from_millis(500);
    config.fetch_timeout = FETCH_DEADLINE;
    config.max_retries = 1;
    config.retry_backoff = Duration::from_millis(20);
    config.retry_backoff_max = Duration::from_millis(50);
    config.breaker_threshold = 3;
    config.breaker_open_for = Duration::from_millis(250);
    config
}

pub const FETCH_DEADLINE: Duration = Duration::from_millis(1500);

/// The service on a free loopback port, served on this runtime; stopped when dropped.
pub struct Running {
    pub base: String,
    handle: actix_web::dev::ServerHandle,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Stopping is asynchronous; the runtime ends it with the test.
        drop(self.handle.stop(false));
    }
}

pub fn start(store: Store, upstream: Upstream) -> Running {
    start_with(store, upstream, |_| {})
}

/// [`start`], its settings changed by `adjust` first.
pub fn start_with(store: Store, upstream: Upstream, adjust: impl FnOnce(&mut Assembly)) -> Running {
    let mut service = Assembly {
        anon_rate_limit: 100_000,
        // No response cache: every request must reach the faulty dependency.
        cache_max_bytes: 0,
        call_days: callstats_application::CallDaySettings {
            fetch_timeout: FETCH_DEADLINE,
            // The fault suites ask failing days again and again, each time a fetch: no day
            // budget, which has suites of its own.
            day_budget: callstats_domain::limits::DayBudget::new(0),
            ..callstats_application::CallDaySettings::default()
        },
        ..assembly(store, upstream)
    };
    adjust(&mut service);
    let (base, handle) = serve(service, 2);
    Running { base, handle }
}

pub fn client() -> reqwest::Client {
    callstats_callplatform::install_crypto_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// GET with the key: status, and how long it took (the body read too).
pub async fn get(client: &reqwest::Client, base: &str, path: &str, key: &str) -> (u16, Duration) {
    let started = Instant::now();
    let status = see(client, base, path, key).await.status;
    (status, started.elapsed())
}

/// What a client sees of one answer.
#[derive(Debug)]
pub struct Seen {
    pub status: u16,
    pub retry_after: Option<String>,
    pub cache: Option<String>,
    pub body: String,
}

/// GET with the key: what the client sees (the body read, so the connection goes back to the
/// pool).
pub async fn see(client: &reqwest::Client, base: &str, path: &str, key: &str) -> Seen {
    let response = client
        .get(format!("{base}{path}"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap_or_else(|err| panic!("{path}: {err}"));
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };
    let (status, retry_after, cache) = (
        response.status().as_u16(),
        header("retry-after"),
        header("x-cache"),
    );
    Seen {
        status,
        retry_after,
        cache,
        body: response.text().await.unwrap_or_default(),
    }
}

/// Polls until `path` answers `want`, or panics after `within`.
pub async fn eventually(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    key: &str,
    want: u16,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    loop {
        let (status, _) = get(client, base, path, key).await;
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path} still answers {status}, not {want}, after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A TCP proxy the test can cut (dropping every open connection and refusing new ones),
/// restore, and point elsewhere. Every change drops the open connections, so a client's
/// kept-alive connection cannot outlive it.
pub struct Proxy {
    pub address: SocketAddr,
    /// Whether new connections are let through, and a counter bumped on every change.
    state: watch::Sender<(bool, u64)>,
    target: Arc<Mutex<SocketAddr>>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (state, _) = watch::channel((true, 0));
        let target = Arc::new(Mutex::new(target));
        let (shared_state, shared_target) = (state.clone(), Arc::clone(&target));
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut changes = shared_state.subscribe();
                if !changes.borrow_and_update().0 {
                    continue;
                }
                let target = *shared_target.lock().unwrap();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = changes.changed() => {}
                    }
                });
            }
        });
        Self {
            address,
            state,
            target,
        }
    }

    fn set(&self, up: bool) {
        self.state.send_modify(|(now, generation)| {
            *now = up;
            *generation = generation.wrapping_add(1);
        });
    }

    pub fn cut(&self) {
        self.set(false);
    }

    pub fn restore(&self) {
        self.set(true);
    }

    pub fn point_at(&self, target: SocketAddr) {
        *self.target.lock().unwrap() = target;
        self.set(true);
    }
}

/// A SQLite database with the demo data and a key, for the tests that fault the upstream.
pub async fn seeded_sqlite() -> (TestDatabase, String) {
    let db = TestDatabase::create(callstats_store::testing::Backend::Sqlite)
        .await
        .unwrap();
    let url = db.url().to_owned();
    let key = tokio::task::spawn_blocking(move || seed_with_key(&url))
        .await
        .unwrap();
    (db, key)
}
