//! The harness: the service assembled by `callstats::app::Assembly` exactly as `serve` builds it,
//! on a real, seeded test database, with the synthetic call platform served over HTTP as its
//! upstream, and a reqwest client speaking real HTTP to it.

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use callstats::app::{Assembly, Upstream};
use callstats::commands::keys::issue;
use callstats_callplatform::HttpPlatformConfig;
use callstats_domain::scope::ScopeSet;
use callstats_domain::testing::TestClock;
use callstats_infra::clock::SystemClock;
use callstats_sim::{RunningSim, SimOptions, spawn_sim};
use callstats_store::Store;
use callstats_store::config::Access;
use callstats_store::fixture::ValidFixture;
use callstats_store::keys::NewKey;
use callstats_store::testing::TestDatabase;
use reqwest::header::HeaderMap;
use serde_json::Value;
use time::OffsetDateTime;

use crate::support::serve::{assembly, serve};

/// The portal every test starts from (the fixture format of docs/portal-schema.md).
pub const PORTAL: &str = include_str!("data/portal.json");

/// A day the sim serves calls for, and the month of the fixture's published sheets.
pub const DAY: &str = "2026-10-05";
pub const MONTH: &str = "2026-10";

/// Usernames and phones of the fixture: stored, never returned.
pub const PRIVATE: [&str; 8] = [
    "otkir.karimov.login",
    "otkir.rahimov.login",
    "elena.kim.login",
    "gayrat.login",
    "+998901110101",
    "+998901110102",
    "+998901110103",
    "+998901110150",
];

/// How a test wants its service.
pub struct Spawn {
    pub sim: SimOptions,
    /// Retries of the call-platform adapter (0 makes a failing upstream answer fast).
    pub upstream_retries: u32,
    pub anon_rate_limit: u32,
    /// The API's store; `None`: the test database, read-only.
    pub api_store: Option<Store>,
    /// Settled call days persisted in the test database (`CALLSTATS_CALL_DAY_PERSIST`).
    pub persist: bool,
    pub call_days: callstats_application::CallDaySettings,
}

impl Default for Spawn {
    fn default() -> Self {
        Self {
            sim: SimOptions {
                calls_per_day: 400,
                ..SimOptions::default()
            },
            upstream_retries: 2,
            anon_rate_limit: 60,
            api_store: None,
            persist: false,
            call_days: callstats_application::CallDaySettings::default(),
        }
    }
}

pub struct TestApp {
    /// `http://127.0.0.1:PORT/api/v1`
    pub base: String,
    pub client: reqwest::Client,
    /// Read-write store on the same database: seeding and key administration.
    pub admin: Store,
    pub clock: Arc<TestClock>,
    server: ServerHandle,
    sim: Option<RunningSim>,
}

/// A key issued through the store, as the admin panel would.
pub struct Key {
    pub secret: String,
    pub id: i64,
}

/// A finished response.
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("UTF-8 body")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header (status {})", self.status))
            .to_str()
            .unwrap()
    }

    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message: {}", self.text()))
            .to_owned()
    }

    /// The headers every response carries (docs/behaviour.md, Quota and Cache), whatever its
    /// status.
    #[track_caller]
    pub fn assert_common_headers(&self, context: &str) {
        assert_eq!(
            self.header("content-type"),
            "application/json; charset=utf-8",
            "{context}"
        );
        for name in [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
        ] {
            let value = self.header(name);
            assert!(
                value.parse::<u32>().is_ok(),
                "{context}: {name} = {value:?}"
            );
        }
        let reset: u32 = self.header("x-ratelimit-reset").parse().unwrap();
        assert!((1..=60).contains(&reset), "{context}: reset {reset}");
        assert!(
            matches!(self.header("x-cache"), "HIT" | "MISS"),
            "{context}: x-cache {}",
            self.header("x-cache")
        );
    }
}

/// The service of `callstats serve` on `db`, seeded with [`PORTAL`], and a healthy upstream.
pub async fn spawn_app(db: &TestDatabase) -> TestApp {
    spawn_app_with(db, Spawn::default()).await
}

pub async fn spawn_app_with(db: &TestDatabase, spawn: Spawn) -> TestApp {
    callstats_callplatform::install_crypto_provider();
    let admin = db.migrated_store().await;
    let fixture = ValidFixture::from_json(PORTAL).expect("the e2e fixture is valid");
    admin
        .seed(&fixture, callstats_store::Existing::Replace)
        .await
        .expect("seed the e2e fixture");

    let sim = spawn_sim(spawn.sim).expect("start the sim");
    let mut upstream = HttpPlatformConfig::new(sim.base_url(), None);
    upstream.max_retries = spawn.upstream_retries;
    upstream.retry_backoff = Duration::from_millis(10);
    // The real time, as the keys the store issues, expires and revokes are dated in it; moved
    // forward only, for tests that cannot wait for the next quota window.
    let clock = TestClock::following(Arc::new(SystemClock));
    // Every test starts at the first second of a quota window, so the counts it checks cannot
    // be split by a real minute boundary.
    clock.advance_to_next_minute();
    let store = spawn
        .api_store
        .unwrap_or_else(|| db.store(Access::ReadOnly));
    let service = Assembly {
        archive: spawn.persist.then(|| db.store(Access::ReadWrite)),
        anon_rate_limit: spawn.anon_rate_limit,
        call_days: spawn.call_days,
        clock: clock.clone(),
        ..assembly(store, Upstream::Http(upstream))
    };
    let (base, server) = serve(service, 0);
    TestApp {
        base: format!("{base}/api/v1"),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        admin,
        clock,
        server,
        sim: Some(sim),
    }
}

impl TestApp {
    /// Issues a key through the store with these scopes (comma list) and quota.
    pub async fn key(&self, name: &str, scopes: &str) -> Key {
        self.key_with(name, scopes, |key| key).await
    }

    pub async fn key_with(
        &self,
        name: &str,
        scopes: &str,
        edit: impl FnOnce(NewKey) -> NewKey,
    ) -> Key {
        let scopes = ScopeSet::parse_list(scopes).unwrap();
        let key = edit(NewKey::new(name, scopes).unwrap());
        let (secret, listing) = issue(&self.admin, &key, OffsetDateTime::now_utc())
            .await
            .expect("issue a key");
        Key {
            secret: secret.expose().to_owned(),
            id: listing.id,
        }
    }

    /// Every key with all scopes.
    pub async fn detail_key(&self) -> Key {
        self.key("everything", "calls,kpi:detail,operators,scripts")
            .await
    }

    /// GET `{base}{path}` with these headers.
    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        let mut request = self.client.get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the service answers");
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.bytes().await.expect("a body").to_vec(),
        }
    }

    /// GET `{base}{path}` with the key as a bearer token.
    pub async fn get(&self, path: &str, key: &Key) -> Answer {
        let bearer = format!("Bearer {}", key.secret);
        self.get_with(path, &[("Authorization", &bearer)]).await
    }

    /// Stops the server and the sim (tests that end early drop them with the runtime anyway).
    pub async fn stop(mut self) {
        self.server.stop(true).await;
        if let Some(sim) = self.sim.take() {
            sim.stop().await;
        }
    }
}
