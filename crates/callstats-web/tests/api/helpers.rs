use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test;
use async_trait::async_trait;
use callstats_application::live::{LiveFeed, LiveSettings, LiveStreams};
use callstats_application::{Answers, CallDaySettings, CallDayStore};
use callstats_domain::access::{ApiKeyRecord, ApiKeySecret, KeyDigest};
use callstats_domain::calendar::{DateRange, LocalDateTime, Month};
use callstats_domain::call_day::FetchedCalls;
use callstats_domain::live::{AgentNow, AgentState, LiveError, LiveSnapshot, QueueNow};
use callstats_domain::model::{
    CallRecord, CallScore, KpiOperatorRow, KpiTotals, LocalizedText, Metric, OffDayKind,
    OffDayRecord, OffDaySource, Operator, QueueName, Script, Sentiment, Sheet, SheetContent,
};
use callstats_domain::params::Direction;
use callstats_domain::ports::{CallPlatform, KeyStore, PortalStore, StoreError, UpstreamError};
use callstats_domain::scope::ScopeSet;
pub use callstats_domain::testing::day;
use callstats_domain::testing::{TestClock, agent, tashkent};
use callstats_domain::use_cases::{CallStats, Gatekeeper, StatsSettings};
use callstats_in_process::{
    KeyCache, LocalLiveRelay, LocalStreamSlots, MemoryCache, MemoryCallDays, MemoryLedger,
    MemoryQuota,
};
use callstats_web::ApiState;
use serde_json::Value;
use time::macros::datetime;

pub const CLIENT: &str = "203.0.113.9:40000";

/// `Vary` of every data answer, 200 or 304, JSON or CSV.
pub const DATA_VARY: &str = "accept, accept-encoding, authorization, x-api-key, origin";

/// The records of `items` whose start falls in `range`, as the fakes answer a period.
fn started_within<T: Clone>(items: &[T], range: DateRange, start: impl Fn(&T) -> i64) -> Vec<T> {
    let (from, to) = range.unix_window();
    let inside = |item: &&T| (from..to).contains(&start(item));
    items.iter().filter(inside).cloned().collect()
}

/// The portal in memory.
#[derive(Default)]
pub struct FakeStore {
    pub keys: Mutex<HashMap<KeyDigest, ApiKeyRecord>>,
    pub roster: Vec<Operator>,
    pub off_days: Vec<OffDayRecord>,
    pub sheets: Vec<(Sheet, bool, SheetContent)>,
    pub scripts: Vec<Script>,
    pub scores: Vec<CallScore>,
    pub down: AtomicBool,
    pub panics: AtomicBool,
    /// Key look-ups asked of the store.
    pub key_lookups: AtomicUsize,
}

impl FakeStore {
    fn check(&self) -> Result<(), StoreError> {
        assert!(!self.panics.load(Ordering::SeqCst), "store exploded");
        if self.down.load(Ordering::SeqCst) {
            // As a database adapter fails: its driver's error under its own words.
            Err(StoreError::from_source(
                "query failed",
                std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused"),
            ))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl KeyStore for FakeStore {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.check()?;
        self.key_lookups.fetch_add(1, Ordering::SeqCst);
        Ok(self.keys.lock().unwrap().get(digest).cloned())
    }

    async fn key_digests(&self) -> Result<Vec<KeyDigest>, StoreError> {
        self.check()?;
        Ok(self.keys.lock().unwrap().keys().copied().collect())
    }
}

#[async_trait]
impl PortalStore for FakeStore {
    async fn operators(&self) -> Result<Vec<Operator>, StoreError> {
        self.check()?;
        Ok(self.roster.clone())
    }

    async fn off_days(&self, month: Month) -> Result<Vec<OffDayRecord>, StoreError> {
        self.check()?;
        Ok(self
            .off_days
            .iter()
            .filter(|d| month.contains(d.date))
            .cloned()
            .collect())
    }

    async fn published_sheets(&self, month: Option<Month>) -> Result<Vec<Sheet>, StoreError> {
        self.check()?;
        Ok(self
            .sheets
            .iter()
            .filter(|(sheet, published, _)| *published && month.is_none_or(|m| sheet.month == m))
            .map(|(sheet, _, _)| sheet.clone())
            .collect())
    }

    async fn sheet_content(&self, sheet_id: i64) -> Result<Option<SheetContent>, StoreError> {
        self.check()?;
        Ok(self
            .sheets
            .iter()
            .find(|(s, published, _)| s.id == sheet_id && *published)
            .map(|(_, _, c)| c.clone()))
    }

    async fn scripts(&self) -> Result<Vec<Script>, StoreError> {
        self.check()?;
        Ok(self.scripts.clone())
    }

    async fn call_scores(&self, range: DateRange) -> Result<Vec<CallScore>, StoreError> {
        self.check()?;
        Ok(started_within(&self.scores, range, |s| s.started_at))
    }
}

/// The call platform in memory, counting its fetches.
#[derive(Default)]
pub struct FakePlatform {
    pub calls: Vec<CallRecord>,
    pub fetches: AtomicUsize,
    pub delay: Option<Duration>,
    pub down: AtomicBool,
    /// What its `/live` answers; `None`: no live figures (404).
    pub live: Mutex<Option<LiveSnapshot>>,
    /// How many times `/live` was asked.
    pub live_polls: AtomicUsize,
}

#[async_trait]
impl CallPlatform for FakePlatform {
    async fn calls(&self, range: DateRange) -> Result<FetchedCalls, UpstreamError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        if self.down.load(Ordering::SeqCst) {
            // As the real adapter does, where the day's fetch runs: a task of its own.
            tracing::warn!("fake call platform down");
            return Err(UpstreamError::new("HTTP 502 from upstream"));
        }
        Ok(started_within(&self.calls, range, |c| c.started_at).into())
    }

    async fn live(&self) -> Result<LiveSnapshot, LiveError> {
        self.live_polls.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(LiveError::Unavailable(UpstreamError::new(
                "HTTP 502 from upstream",
            )));
        }
        self.live
            .lock()
            .unwrap()
            .clone()
            .ok_or(LiveError::NotReported)
    }
}

/// The centre now: sales with two callers waiting, agent 102 on a sales call, 101 free, and
/// 999 (not on the roster) away.
pub fn live_snapshot(waiting: u32) -> LiveSnapshot {
    let as_of = datetime!(2026-11-21 11:15:00 +05:00);
    let queue = |name: &str| QueueName::new(name).unwrap();
    let agent_now = |number: &str, state, queue_of: Option<&str>| AgentNow {
        agent_number: agent(number),
        state,
        since: as_of - time::Duration::minutes(3),
        queue: queue_of.map(queue),
    };
    LiveSnapshot::new(
        as_of,
        vec![
            QueueNow {
                queue: queue("support"),
                waiting: 0,
                oldest_wait_seconds: None,
            },
            QueueNow {
                queue: queue("sales"),
                waiting,
                oldest_wait_seconds: (waiting > 0).then_some(41.25),
            },
        ],
        vec![
            agent_now("999", AgentState::Away, None),
            agent_now("102", AgentState::OnCall, Some("sales")),
            agent_now("101", AgentState::Available, None),
        ],
    )
    .unwrap()
}

/// The Unix seconds of a time (`"2026-11-01T10:00:00+05:00"`, or Tashkent local), for the
/// fakes' records.
fn at(text: &str) -> i64 {
    tashkent(text).unix_timestamp()
}

fn operator(n: &str, name: &str, staff_role: Option<&str>) -> Operator {
    Operator {
        agent_number: agent(n),
        name: name.into(),
        team: "A".into(),
        shift: "day".into(),
        staff_role: staff_role.map(Into::into),
        joined_at: LocalDateTime::parse("2025-03-01 09:00:00").unwrap(),
    }
}

fn sheet(id: i64, month: &str, shift: &str) -> Sheet {
    Sheet {
        id,
        name: format!("Sheet {id}"),
        month: Month::parse(month).unwrap(),
        shift: shift.into(),
        updated_at: LocalDateTime::parse("2026-11-20 18:00:00").unwrap(),
    }
}

fn row(
    row: u32,
    agent_number: Option<&str>,
    name: &str,
    kpi_percent: f64,
    payout: Option<f64>,
) -> KpiOperatorRow {
    KpiOperatorRow {
        agent_number: agent_number.map(agent),
        name: name.into(),
        row,
        kpi_percent,
        kpi_sum: 1_000_000.0,
        fiksa: None,
        bonus: Some(50_000.0),
        fine: None,
        payout,
        metrics: vec![Metric {
            name: "AHT".into(),
            value: 182.0,
            ratio: Some(0.95),
            kpi: 400_000.0,
        }],
    }
}

/// A small portal: two agents and a staff member, two shifts in November, a draft in October.
pub fn portal() -> FakeStore {
    let text = |uz: &str, ru: &str| LocalizedText {
        uz: uz.into(),
        ru: ru.into(),
    };
    let content = SheetContent {
        sheet_totals: KpiTotals {
            kpi_sum: Some(1.0),
            fiksa: None,
            bonus: None,
            fine: None,
            payout: Some(1.0),
        },
        operators: vec![
            row(5, Some("101"), "Oʻtkir Karimov", 0.92, Some(4_500_000.0)),
            row(6, None, "Sardor Aliyev", 0.78, Some(4_200_000.0)),
            row(7, Some("102"), "O'tkir Rahimov", 0.92, None),
        ],
    };
    FakeStore {
        roster: vec![
            operator("102", "O'tkir Rahimov", None),
            operator("101", "Oʻtkir Karimov", None),
            operator("190", "Malika Rahimova", Some("supervisor")),
        ],
        off_days: vec![
            OffDayRecord {
                agent_number: agent("102"),
                date: day("2026-11-03"),
                kind: OffDayKind::Unpaid,
                source: OffDaySource::Swap,
            },
            OffDayRecord {
                agent_number: agent("101"),
                date: day("2026-11-03"),
                kind: OffDayKind::Dam,
                source: OffDaySource::Auto,
            },
        ],
        sheets: vec![
            (sheet(1, "2026-11", "night"), true, content.clone()),
            (sheet(2, "2026-11", "day"), true, content.clone()),
            (sheet(3, "2026-10", "day"), false, content),
        ],
        scripts: (1..=30)
            .map(|id| Script {
                id,
                title: text("Salomlashish", "Приветствие"),
                category: text("Kirish", "Вступление"),
                views: 100 - u64::try_from(id).unwrap(),
            })
            .collect(),
        scores: vec![CallScore {
            agent_number: agent("101"),
            started_at: at("2026-11-02T09:00:00+05:00"),
            checklist_percent: 90.0,
            sentiment: Sentiment::Positive,
        }],
        ..FakeStore::default()
    }
}

pub fn calls() -> Vec<CallRecord> {
    let call = |agent_number: Option<&str>, direction, time: &str| CallRecord {
        direction,
        agent_number: agent_number.map(agent),
        started_at: at(time),
        duration_seconds: 60.0,
        wait_seconds: None,
        queue: None,
    };
    // Inbound calls wait in a queue; the outbound one has neither.
    let queued = |record: CallRecord, wait: f64, queue: &str| CallRecord {
        wait_seconds: Some(wait),
        queue: Some(QueueName::new(queue).unwrap()),
        ..record
    };
    vec![
        queued(
            call(Some("101"), Direction::Inbound, "2026-11-02T09:00:00+05:00"),
            5.0,
            "sales",
        ),
        queued(
            call(Some("101"), Direction::Inbound, "2026-11-02T09:30:00+05:00"),
            35.0,
            "sales",
        ),
        call(
            Some("102"),
            Direction::Outbound,
            "2026-11-02T14:00:00+05:00",
        ),
        queued(
            call(None, Direction::Inbound, "2026-11-03T10:00:00+05:00"),
            50.0,
            "support",
        ),
    ]
}

pub struct TestApp {
    pub store: Arc<FakeStore>,
    pub platform: Arc<FakePlatform>,
    pub clock: Arc<TestClock>,
    pub state: ApiState,
}

/// A key with these scopes (comma list) and quota, registered in the store.
pub struct Key {
    pub secret: String,
}

impl FakePlatform {
    /// The platform with the demo calls and no live figures.
    pub fn with_calls() -> Self {
        Self {
            calls: calls(),
            ..Self::default()
        }
    }

    /// The demo calls, every fetch of them failing.
    pub fn failing() -> Self {
        let platform = Self::with_calls();
        platform.down.store(true, Ordering::SeqCst);
        platform
    }
}

impl TestApp {
    pub fn new() -> Self {
        let platform = FakePlatform {
            live: Mutex::new(Some(live_snapshot(2))),
            ..FakePlatform::with_calls()
        };
        Self::with(portal(), platform, false)
    }

    pub fn with(store: FakeStore, platform: FakePlatform, trust_proxy: bool) -> Self {
        Self::with_settings(store, platform, trust_proxy, StatsSettings::default())
    }

    /// The demo data with these settings of the statistics.
    pub fn with_stats(settings: StatsSettings) -> Self {
        Self::with_settings(portal(), FakePlatform::with_calls(), false, settings)
    }

    fn with_settings(
        store: FakeStore,
        platform: FakePlatform,
        trust_proxy: bool,
        stats: StatsSettings,
    ) -> Self {
        let store = Arc::new(store);
        let platform = Arc::new(platform);
        let clock = TestClock::at(datetime!(2026-11-21 06:15:30 UTC));
        let keys: Arc<dyn KeyStore> =
            Arc::new(KeyCache::new(store.clone(), Duration::from_secs(10)));
        // Assembled as the service is: the day budgets counted with the request quotas.
        let (quota, cache) = (MemoryQuota::new(), MemoryCache::new(16 << 20));
        let ledger = Arc::new(MemoryLedger::new(quota.clone(), cache.clone()));
        let (quota, cache) = (Arc::new(quota), Arc::new(cache));
        let settings = CallDaySettings::default();
        let access = Gatekeeper::new(keys, quota.clone(), ledger, clock.clone(), 60)
            .with_day_budget(settings.day_budget);
        let call_days = CallDayStore::new(
            platform.clone(),
            Arc::new(MemoryCallDays::new(16 << 20)),
            None,
            quota,
            clock.clone(),
            settings,
        );
        let live = LiveFeed::new(
            platform.clone(),
            store.clone(),
            Arc::new(LocalLiveRelay::new()),
            clock.clone(),
            LiveSettings::default(),
        );
        let streams = LiveStreams::new(
            live.clone(),
            Arc::new(LocalStreamSlots::new()),
            store.clone(),
            clock.clone(),
        );
        let stats = CallStats::new(store.clone(), Arc::new(call_days), clock.clone(), stats)
            .with_live(Arc::new(live));
        let answers = Answers::new(
            access,
            stats,
            cache,
            callstats_application::Computing::default(),
            clock.clone(),
        )
        .with_live_streams(streams);
        let compute = answers.compute_pool().clone();
        let state = ApiState::new(Arc::new(answers), compute, trust_proxy);
        Self {
            store,
            platform,
            clock,
            state,
        }
    }

    pub fn key(&self, id: i64, scopes: &str, rate_limit: u32, origin: Option<&str>) -> Key {
        let secret = ApiKeySecret::from_random_bytes(&[u8::try_from(id).unwrap(); 32]);
        let record = ApiKeyRecord {
            id,
            name: format!("partner-{id}").into(),
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            rate_limit_per_minute: rate_limit,
            allowed_origin: origin.map(Into::into),
            expires_at: None,
            revoked_at: None,
        };
        self.store
            .keys
            .lock()
            .unwrap()
            .insert(secret.digest(), record);
        Key {
            secret: secret.expose().to_owned(),
        }
    }

    /// How many times the call platform was asked for calls.
    pub fn fetches(&self) -> usize {
        self.platform.fetches.load(Ordering::SeqCst)
    }

    pub fn edit_key(&self, key: &Key, edit: impl FnOnce(&mut ApiKeyRecord)) {
        let digest = ApiKeySecret::parse(&key.secret).unwrap().digest();
        edit(self.store.keys.lock().unwrap().get_mut(&digest).unwrap());
    }

    pub async fn service(
        &self,
    ) -> impl Service<
        actix_http::Request,
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
    > {
        start(self.state.clone()).await
    }

    /// The set-up most tests share: key 1 with these scopes and quota (no origin), and the
    /// service, beside the app itself.
    pub async fn serve(
        self,
        scopes: &str,
        rate_limit: u32,
    ) -> (
        Self,
        Key,
        impl Service<
            actix_http::Request,
            Response = ServiceResponse<impl MessageBody>,
            Error = actix_web::Error,
        >,
    ) {
        let key = self.key(1, scopes, rate_limit, None);
        let service = start(self.state.clone()).await;
        (self, key, service)
    }
}

/// The app of `state`, as a service answering test requests.
async fn start(
    state: ApiState,
) -> impl Service<
    actix_http::Request,
    Response = ServiceResponse<impl MessageBody>,
    Error = actix_web::Error,
> {
    test::init_service(callstats_web::app(state)).await
}

/// The app's service as the tests drive it: one name for actix's bounds.
pub trait TestService<B>:
    Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>
{
}

impl<S, B> TestService<B> for S where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>
{
}

/// A finished response: status, headers and body bytes.
pub struct Answer {
    pub status: u16,
    pub headers: actix_web::http::header::HeaderMap,
    pub body: bytes::Bytes,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The `error` text of a JSON error body.
    pub fn error(&self) -> String {
        let body = self.json();
        body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error text: {body}"))
            .to_owned()
    }

    /// The status beside the header `name`, for asserting both at once.
    pub fn status_with(&self, name: &str) -> (u16, &str) {
        (self.status, self.header(name))
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
    }
}

pub async fn send<S: TestService<B>, B: MessageBody>(
    service: &S,
    request: test::TestRequest,
) -> Answer {
    let response = test::call_service(
        service,
        request.peer_addr(CLIENT.parse().unwrap()).to_request(),
    )
    .await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = test::read_body(response).await;
    Answer {
        status,
        headers,
        body,
    }
}

/// `GET uri` with `key` as a Bearer token, answered by `service`.
pub async fn ask<S: TestService<B>, B: MessageBody>(service: &S, uri: &str, key: &Key) -> Answer {
    send(service, get(uri, key)).await
}

/// The JSON body of `GET uri`, which must be a 200.
pub async fn ask_json<S: TestService<B>, B: MessageBody>(
    service: &S,
    uri: &str,
    key: &Key,
) -> Value {
    let answer = ask(service, uri, key).await;
    assert_eq!(answer.status, 200, "{uri}");
    answer.json()
}

/// A key of `app` with only the `scripts` scope is refused `uri` with a 403.
pub async fn assert_needs_calls_scope<S: TestService<B>, B: MessageBody>(
    app: &TestApp,
    service: &S,
    uri: &str,
) {
    let scripts_only = app.key(2, "scripts", 120, None);
    assert_eq!(ask(service, uri, &scripts_only).await.status, 403, "{uri}");
}

/// `GET uri` with `secret` (a key's, or not) in `X-API-Key`.
pub fn get_with_api_key(uri: &str, secret: &str) -> test::TestRequest {
    test::TestRequest::get()
        .uri(uri)
        .insert_header(("X-API-Key", secret))
}

pub fn get(uri: &str, key: &Key) -> test::TestRequest {
    test::TestRequest::get()
        .uri(uri)
        .insert_header(("Authorization", format!("Bearer {}", key.secret)))
}

fn array(rows: &Value) -> &Vec<Value> {
    rows.as_array()
        .unwrap_or_else(|| panic!("not an array: {rows}"))
}

/// `name` of each row of the JSON array `rows`, as a JSON array.
pub fn column(rows: &Value, name: &str) -> Value {
    array(rows).iter().map(|row| row[name].clone()).collect()
}

/// `names` of each row of the JSON array `rows`: a JSON array of arrays.
pub fn columns(rows: &Value, names: &[&str]) -> Value {
    let pick = |row: &Value| {
        names
            .iter()
            .map(|name| row[*name].clone())
            .collect::<Value>()
    };
    array(rows).iter().map(pick).collect()
}

/// Each field of `expected` (a JSON object; a dotted name reaches into nested objects, a
/// number into an array) has that value in `body`.
pub fn assert_fields(body: &Value, expected: &Value) {
    fn step<'v>(node: &'v Value, name: &str) -> &'v Value {
        match name.parse::<usize>() {
            Ok(index) => &node[index],
            Err(_) => &node[name],
        }
    }
    for (path, value) in expected.as_object().unwrap() {
        let actual = path.split('.').fold(body, step);
        assert_eq!(actual, value, "{path}");
    }
}

/// The rows of the JSON array `rows` hold the fields of `expected` (a JSON object giving each
/// field's value in every row, in order), with those values. Which fields a row holds in all is
/// the document's to say, and `document_truth` holds every answer to it.
pub fn assert_columns(rows: &Value, expected: &Value) {
    let expected = expected.as_object().unwrap();
    for (name, values) in expected {
        assert_eq!(&column(rows, name), values, "{name}");
    }
}
