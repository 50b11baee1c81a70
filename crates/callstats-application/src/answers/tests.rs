//! The request use case against mocks of the ports: what a cached answer costs, the order of
//! the checks, and computations that outlive their request.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use callstats_api::portal::OperatorsResponse;
use callstats_domain::access::{
    ApiKeyRecord, ApiKeySecret, ClientAddress, PresentedKey, RequestOrigin, Unauthorized,
};
use callstats_domain::model::Operator;
use callstats_domain::ports::{
    Found, KeyLookup, KeyStore, MockCallDaySource, MockClock, MockKeyStore, MockPortalStore,
    MockQuotaCounter, MockRequestLedger, MockResponseCache, StoreError,
};
use callstats_domain::scope::Scope;
use callstats_domain::testing::{api_key, api_key_secret};
use callstats_domain::use_cases::StatsSettings;
use time::OffsetDateTime;
use time::macros::datetime;

use super::*;

const NOW: OffsetDateTime = datetime!(2026-11-21 06:15:30 UTC);

fn secret() -> ApiKeySecret {
    api_key_secret()
}

fn record(scopes: &str) -> ApiKeyRecord {
    api_key(1, "partner", scopes)
}

/// A key store that knows one key, with these scopes.
fn key_store(scopes: &'static str) -> MockKeyStore {
    let mut store = MockKeyStore::new();
    let digest = secret().digest();
    store.expect_find_seen_key().returning(move |d| {
        Ok(if *d == digest {
            KeyLookup::Found(record(scopes))
        } else {
            KeyLookup::Absent
        })
    });
    store
}

/// [`key_store`] and a portal with an empty roster, counting its reads.
fn portal(scopes: &'static str, roster_reads: &Arc<AtomicUsize>) -> Stores {
    let mut store = MockPortalStore::new();
    let reads = Arc::clone(roster_reads);
    store.expect_operators().returning(move || {
        reads.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::<Operator>::new())
    });
    (key_store(scopes), store)
}

/// The key store and the portal.
type Stores = (MockKeyStore, MockPortalStore);

fn answers(stores: Stores, ledger: MockRequestLedger, cache: impl ResponseCache) -> Answers {
    answers_on(stores, ledger, Arc::new(cache))
}

fn answers_on(stores: Stores, ledger: MockRequestLedger, cache: Arc<dyn ResponseCache>) -> Answers {
    computing_on(stores, ledger, cache, Computing::default())
}

fn computing_on(
    stores: Stores,
    ledger: MockRequestLedger,
    cache: Arc<dyn ResponseCache>,
    computing: Computing,
) -> Answers {
    let (keys, store) = stores;
    assembled(Arc::new(keys), store, ledger, cache, computing)
}

/// [`computing_on`], with any key store.
fn assembled(
    keys: Arc<dyn KeyStore>,
    store: MockPortalStore,
    ledger: MockRequestLedger,
    cache: Arc<dyn ResponseCache>,
    computing: Computing,
) -> Answers {
    let mut clock = MockClock::new();
    clock.expect_now().return_const(NOW);
    let clock = Arc::new(clock);
    let access = Gatekeeper::new(
        keys,
        Arc::new(MockQuotaCounter::new()),
        Arc::new(ledger),
        clock.clone(),
        60,
    );
    let stats = CallStats::new(
        Arc::new(store),
        Arc::new(MockCallDaySource::new()),
        clock.clone(),
        StatsSettings::default(),
    );
    Answers::new(access, stats, cache, computing, clock)
}

/// What the ledger answers admission: `count` requests in the window, no day fetches, and
/// the answer stored.
fn found(count: u64, answer: Option<Bytes>) -> Found {
    Found {
        requests: count,
        days_used: 0,
        answer,
    }
}

/// A caller presenting `key` (the plaintext).
fn caller(key: &str) -> Caller<'_> {
    Caller {
        key: PresentedKey::parse(key).ok_or(Unauthorized::Invalid),
        origin: RequestOrigin::Absent,
        client_ip: ClientAddress::Unknown,
    }
}

async fn serve(answers: &Answers, endpoint: Endpoint, query: &str) -> Outcome {
    let bearer = secret().expose().to_owned();
    let asked = UnvalidatedRequest::from_query(endpoint, query, "").unwrap();
    answers
        .serve(&caller(&bearer), Some(&asked), Acceptable::JSON)
        .await
}

fn roster_bytes() -> Bytes {
    Bytes::from(serde_json::to_vec(&OperatorsResponse { operators: vec![] }).unwrap())
}

/// The roster as the response cache keeps it, with a minute to live.
fn roster_entry() -> CachedAnswer {
    CachedAnswer::new(roster_bytes(), Duration::from_secs(60), NOW)
}

/// The body and validator of a data answer, and where it came from.
fn body_of(served: &Outcome) -> (Bytes, crate::ETag, CacheStatus) {
    match &served.answer {
        Ok(Answer::Body(body)) => (body.entry.body.clone(), body.entry.etag, body.cache),
        other => panic!("not a body: {other:?}"),
    }
}

#[tokio::test]
async fn a_cached_answer_read_with_the_quota_count_needs_no_other_trip() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger
        .expect_count()
        .withf(|_, _, key| *key == Some("v1/operators"))
        .times(1)
        .returning(|_, _, _| {
            let entry = CachedAnswer::new(
                Bytes::from_static(b"{\"cached\":true}"),
                Duration::from_secs(9),
                NOW - time::Duration::milliseconds(500),
            );
            found(1, Some(entry.encode()))
        });
    // No expectation on the cache at all: any call to it fails the test.
    let served = answers(
        portal("operators", &reads),
        ledger,
        MockResponseCache::new(),
    )
    .serve_operators()
    .await;
    let (body, etag, cache) = body_of(&served);
    assert_eq!(
        (&body[..], etag, cache),
        (
            &b"{\"cached\":true}"[..],
            crate::ETag::of(b"{\"cached\":true}"),
            CacheStatus::Hit
        )
    );
    let Ok(Answer::Body(body)) = &served.answer else {
        unreachable!()
    };
    assert_eq!(
        body.seconds_left, 8,
        "9 s from half a second ago, on the domain's clock"
    );
    assert_eq!((served.quota.limit, served.quota.remaining), (5, 4));
    assert_eq!(reads.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_stored_value_that_is_no_entry_is_a_miss_and_is_computed_again() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    // A bare body, as written before entries had a header.
    ledger
        .expect_count()
        .returning(|_, _, _| found(1, Some(roster_bytes())));
    let mut cache = MockResponseCache::new();
    cache.expect_get().returning(|_| Some(roster_bytes()));
    cache.expect_try_lock().returning(|_, _| true);
    cache.expect_unlock().return_const(());
    // The JSON asked for, and the CSV of the same computation.
    cache.expect_put().times(2).return_const(());
    let served = answers(portal("operators", &reads), ledger, cache)
        .serve_operators()
        .await;
    assert_eq!(
        body_of(&served),
        (
            roster_bytes(),
            crate::ETag::of(&roster_bytes()),
            CacheStatus::Miss
        )
    );
    assert_eq!(reads.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_miss_read_with_the_count_is_computed_and_stored() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(|_, _, _| found(1, None));
    let stored = Arc::new(Mutex::new(Vec::new()));
    let mut cache = MockResponseCache::new();
    // UnvalidatedRequest again only after taking the lock, in case another replica stored it
    // meanwhile.
    cache.expect_get().times(1).returning(|_| None);
    cache.expect_try_lock().times(1).returning(|_, _| true);
    cache.expect_unlock().times(1).return_const(());
    let log = Arc::clone(&stored);
    cache
        .expect_put()
        .returning(move |key, bytes, ttl| log.lock().unwrap().push((key.to_owned(), bytes, ttl)));
    let served = answers(portal("operators", &reads), ledger, cache)
        .serve_operators()
        .await;
    assert_eq!(
        body_of(&served),
        (
            roster_bytes(),
            crate::ETag::of(&roster_bytes()),
            CacheStatus::Miss
        )
    );
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    let stored = stored.lock().unwrap();
    let [(key, bytes, ttl), (csv_key, csv_bytes, csv_ttl)] = &stored[..] else {
        panic!("stored {stored:?}")
    };
    assert_eq!(
        (key.as_str(), *ttl),
        ("v1/operators", Duration::from_secs(60))
    );
    // Its CSV, from the same computation, beside it with the same lifetime.
    assert_eq!(
        (csv_key.as_str(), *csv_ttl),
        ("v1/operators#csv", Duration::from_secs(60))
    );
    assert_eq!(
        CachedAnswer::decode(csv_bytes).map(|entry| entry.body),
        Some(Bytes::from_static(
            b"agent_number,name,team,shift,staff_role,joined_at\r\n"
        ))
    );
    // What is stored is the entry served: body, validator and expiry.
    let Ok(Answer::Body(body)) = &served.answer else {
        unreachable!()
    };
    assert_eq!(CachedAnswer::decode(bytes).as_ref(), Some(&body.entry));
    assert_eq!(body.seconds_left, 60);
}

#[tokio::test]
async fn the_scope_is_checked_before_the_parameters_and_both_after_the_count() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    // The answer would be read (the parameters parse) but the key lacks the scope.
    ledger
        .expect_count()
        .withf(|_, _, key| key.is_some())
        .times(1)
        .returning(|_, _, _| found(1, Some(roster_entry().encode())));
    ledger
        .expect_count()
        .withf(|_, _, key| key.is_none())
        .times(1)
        .returning(|_, _, _| found(2, None));
    let answers = answers(
        portal("operators", &reads),
        ledger,
        MockResponseCache::new(),
    );
    let no_scope = serve(&answers, Endpoint::ScriptsStats, "limit=20").await;
    assert_eq!(
        no_scope.answer,
        Err(DomainError::MissingScope(Scope::Scripts))
    );
    // Malformed parameters: nothing to read, counted all the same, then refused for the scope.
    let both = serve(&answers, Endpoint::ScriptsStats, "limit=0").await;
    assert_eq!(both.answer, Err(DomainError::MissingScope(Scope::Scripts)));
    assert_eq!(both.quota.remaining, 3);
}

#[tokio::test]
async fn malformed_parameters_are_a_400_after_admission_without_a_read() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger
        .expect_count()
        .withf(|_, _, key| key.is_none())
        .times(1)
        .returning(|_, _, _| found(1, None));
    let answers = answers(portal("calls", &reads), ledger, MockResponseCache::new());
    let served = serve(&answers, Endpoint::CallsSummary, "start=2026-02-30").await;
    assert!(
        matches!(served.answer, Err(DomainError::BadRequest(_))),
        "{:?}",
        served.answer
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_computed_and_stored_even_when_its_request_goes_away() {
    /// A cache that records what is stored.
    #[derive(Default)]
    struct Recording(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl ResponseCache for Recording {
        async fn get(&self, _key: &str) -> Option<Bytes> {
            None
        }
        async fn put(&self, key: &str, _value: Bytes, _ttl: Duration) {
            self.0.lock().unwrap().push(key.to_owned());
        }
    }

    let recording = Arc::new(Recording::default());
    let mut store = MockPortalStore::new();
    store.expect_operators().returning(|| {
        // Slower than the caller is willing to wait.
        std::thread::sleep(Duration::from_millis(100));
        Ok(Vec::new())
    });
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(|_, _, _| found(1, None));
    let answers = answers_on((key_store("operators"), store), ledger, recording.clone());
    let given_up = tokio::time::timeout(Duration::from_millis(20), answers.serve_operators()).await;
    assert!(given_up.is_err(), "the caller gave up first");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        *recording.0.lock().unwrap(),
        ["v1/operators", "v1/operators#csv"]
    );
}

#[tokio::test]
async fn a_computation_that_panics_is_an_internal_error_and_gives_its_lock_up() {
    let mut store = MockPortalStore::new();
    store
        .expect_operators()
        .returning(|| panic!("store exploded"));
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(|_, _, _| found(1, None));
    let mut cache = MockResponseCache::new();
    cache.expect_get().returning(|_| None);
    cache.expect_try_lock().returning(|_, _| true);
    // The lock is given up, so other replicas do not wait out its lifetime.
    cache.expect_unlock().times(1).return_const(());
    let served = answers((key_store("operators"), store), ledger, cache)
        .serve_operators()
        .await;
    assert_eq!(
        served.answer,
        Err(DomainError::Internal("store exploded".to_owned()))
    );
}

#[tokio::test]
async fn a_panic_past_admission_keeps_the_quota_the_request_was_counted_against() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(|_, _, _| found(3, None));
    let mut cache = MockResponseCache::new();
    cache.expect_try_lock().returning(|_, _| true);
    cache.expect_unlock().return_const(());
    cache
        .expect_get()
        .returning(|_| panic!("cache adapter exploded"));
    let served = answers(portal("operators", &reads), ledger, cache)
        .serve_operators()
        .await;
    assert_eq!(
        served.answer,
        Err(DomainError::Internal("cache adapter exploded".to_owned()))
    );
    assert_eq!((served.quota.limit, served.quota.remaining), (5, 2));
}

#[tokio::test]
async fn an_answer_past_the_body_bound_is_refused_and_not_stored() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(|_, _, _| found(1, None));
    let mut cache = MockResponseCache::new();
    cache.expect_get().returning(|_| None);
    cache.expect_try_lock().returning(|_, _| true);
    cache.expect_unlock().return_const(());
    cache.expect_put().never();
    let computing = Computing {
        max_body_bytes: 10,
        ..Computing::default()
    };
    let served = computing_on(
        portal("operators", &reads),
        ledger,
        Arc::new(cache),
        computing,
    )
    .serve_operators()
    .await;
    // The empty roster is {"operators":[]}: 16 bytes.
    assert_eq!(
        served.answer,
        Err(DomainError::BodyTooLarge { limit_bytes: 10 })
    );
}

#[tokio::test]
async fn a_csv_answer_is_an_entry_of_its_own_with_its_own_validator_and_file_name() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger
        .expect_count()
        .withf(|_, _, key| *key == Some("v1/operators#csv"))
        .times(1)
        .returning(|_, _, _| found(1, None));
    let stored = Arc::new(Mutex::new(Vec::new()));
    let mut cache = MockResponseCache::new();
    cache.expect_get().returning(|_| None);
    cache.expect_try_lock().returning(|_, _| true);
    cache.expect_unlock().return_const(());
    let log = Arc::clone(&stored);
    cache
        .expect_put()
        .returning(move |key, bytes, _| log.lock().unwrap().push((key.to_owned(), bytes)));
    let bearer = secret().expose().to_owned();
    let served = answers(portal("operators", &reads), ledger, cache)
        .serve(
            &caller(&bearer),
            Some(&UnvalidatedRequest::Operators),
            Acceptable::CSV_ONLY,
        )
        .await;
    let Ok(Answer::Body(body)) = &served.answer else {
        panic!("{served:?}")
    };
    let header = "agent_number,name,team,shift,staff_role,joined_at\r\n";
    assert_eq!(&body.entry.body[..], header.as_bytes());
    assert_ne!(body.entry.etag, crate::ETag::of(&roster_bytes()));
    assert_eq!(body.csv_file_name.as_deref(), Some("operators.csv"));
    let stored = stored.lock().unwrap();
    let [(key, bytes), (json_key, json_bytes)] = &stored[..] else {
        panic!("stored {stored:?}")
    };
    assert_eq!(key, "v1/operators#csv");
    assert_eq!(CachedAnswer::decode(bytes).as_ref(), Some(&body.entry));
    // The JSON of the same computation, beside it.
    assert_eq!(json_key, "v1/operators");
    assert_eq!(
        CachedAnswer::decode(json_bytes).map(|entry| entry.body),
        Some(roster_bytes())
    );
}

#[tokio::test]
async fn an_accept_excluding_json_is_a_406_after_admission_and_parameters_without_a_read() {
    let reads = Arc::new(AtomicUsize::new(0));
    let mut ledger = MockRequestLedger::new();
    ledger
        .expect_count()
        .times(2)
        .returning(|_, _, _| found(1, None));
    // No expectation on the cache: nothing is read or computed.
    let answers = answers(
        portal("operators,kpi:aggregate", &reads),
        ledger,
        MockResponseCache::new(),
    );
    let bearer = secret().expose().to_owned();
    let asked = UnvalidatedRequest::from_query(Endpoint::KpiMonths, "", "").unwrap();
    let served = answers
        .serve(&caller(&bearer), Some(&asked), Acceptable::CSV_ONLY)
        .await;
    assert_eq!(
        served.answer,
        Err(DomainError::NotAcceptable {
            representations: "application/json"
        })
    );
    // A bad parameter is told first.
    let asked = UnvalidatedRequest::from_query(Endpoint::Schedule, "month=2026-13", "").unwrap();
    let neither = Acceptable {
        json: false,
        csv_preferred: false,
    };
    let served = answers.serve(&caller(&bearer), Some(&asked), neither).await;
    assert!(
        matches!(served.answer, Err(DomainError::BadRequest(_))),
        "{served:?}"
    );
    assert_eq!(reads.load(Ordering::SeqCst), 0);
}

/// A ledger in memory: every request is the window's first, and any answer asked for is
/// `cached`.
fn first_in_window(cached: Option<Bytes>) -> MockRequestLedger {
    let mut ledger = MockRequestLedger::new();
    ledger
        .expect_count()
        .returning(move |_, _, answer| found(1, answer.and(cached.clone())));
    ledger
}

#[tokio::test]
async fn a_key_the_key_cache_knows_gets_its_cached_answer_and_a_miss_is_computed_once() {
    let reads = Arc::new(AtomicUsize::new(0));
    // The key cache in front of a key store that knows the test key, as `serve` assembles it.
    let assemble = |cached: Option<Bytes>, cache: MockResponseCache| {
        let keys = key_store_as(Arc::new(Mutex::new(Some(record("operators")))));
        let key_cache =
            callstats_in_process::KeyCache::new(Arc::new(keys), Duration::from_secs(10));
        let (_, store) = portal("operators", &reads);
        assembled(
            Arc::new(key_cache),
            store,
            first_in_window(cached),
            Arc::new(cache),
            Computing::default(),
        )
    };
    let bearer = secret().expose().to_owned();
    let asked = UnvalidatedRequest::Operators;
    let caller = caller(&bearer);
    let hit = || {
        (
            roster_bytes(),
            crate::ETag::of(&roster_bytes()),
            CacheStatus::Hit,
        )
    };

    // The roster cached, and no call to the response cache: the first request asks the key
    // store, the next the key cache only, and both are answered alike.
    let cached = assemble(Some(roster_entry().encode()), MockResponseCache::new());
    let first = cached.serve(&caller, Some(&asked), Acceptable::JSON).await;
    assert_eq!(body_of(&first), hit());
    assert_eq!((first.quota.limit, first.quota.remaining), (5, 4));
    let served = cached.serve(&caller, Some(&asked), Acceptable::JSON).await;
    assert_eq!(first, served);
    assert_eq!(reads.load(Ordering::SeqCst), 0);

    // A miss is computed, once.
    let mut cache = MockResponseCache::new();
    cache.expect_get().times(1).returning(|_| None);
    cache.expect_try_lock().times(1).returning(|_, _| true);
    cache.expect_unlock().times(1).return_const(());
    // The JSON asked for, and the CSV of the same computation.
    cache.expect_put().times(2).return_const(());
    let missed = assemble(None, cache);
    let computed = missed.serve(&caller, Some(&asked), Acceptable::JSON).await;
    assert_eq!(body_of(&computed).2, CacheStatus::Miss);
    assert_eq!(reads.load(Ordering::SeqCst), 1);
}

/// The request use case as `serve` assembles it (the key cache in front of `keys`, asked
/// first, reusing a look-up for 1 ms), over a portal that always fails, a ledger holding the
/// roster's cached answer, and `quota` for the addresses' anonymous quotas.
fn with_the_portal_down(keys: MockKeyStore, quota: MockQuotaCounter) -> Answers {
    let key_reuse = Duration::from_millis(1);
    let key_cache = Arc::new(callstats_in_process::KeyCache::new(
        Arc::new(keys),
        key_reuse,
    ));
    let mut portal = MockPortalStore::new();
    portal
        .expect_operators()
        .returning(|| Err(StoreError::new("connection refused")));
    portal
        .expect_off_days()
        .returning(|_| Err(StoreError::new("connection refused")));
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(|_, _, key| {
        found(
            1,
            (key == Some("v1/operators")).then(|| roster_entry().encode()),
        )
    });
    let mut cache = MockResponseCache::new();
    cache.expect_get().returning(|_| None);
    cache.expect_try_lock().returning(|_, _| true);
    cache.expect_unlock().return_const(());
    cache.expect_put().never();
    let mut clock = MockClock::new();
    clock.expect_now().return_const(NOW);
    let clock = Arc::new(clock);
    let access = Gatekeeper::new(
        key_cache,
        Arc::new(quota),
        Arc::new(ledger),
        clock.clone(),
        60,
    );
    let stats = CallStats::new(
        Arc::new(portal),
        Arc::new(MockCallDaySource::new()),
        clock.clone(),
        StatsSettings::default(),
    );
    Answers::new(access, stats, Arc::new(cache), Computing::default(), clock)
}

/// A key store that finds `secret()`'s key as `state` says (its record, or `None`: the store
/// fails).
fn key_store_as(state: Arc<Mutex<Option<ApiKeyRecord>>>) -> MockKeyStore {
    let mut keys = MockKeyStore::new();
    let digest = secret().digest();
    keys.expect_find_key()
        .returning(move |asked| match &*state.lock().unwrap() {
            Some(record) => Ok((*asked == digest).then(|| record.clone())),
            None => Err(StoreError::new("connection refused")),
        });
    keys.expect_key_digests()
        .returning(move || Ok(vec![digest]));
    keys
}

#[tokio::test]
async fn with_the_portal_database_down_a_key_seen_before_gets_its_cached_answers_and_the_rest_503()
{
    let state = Arc::new(Mutex::new(Some(record("operators"))));
    // Every address far over its anonymous quota, and never counted.
    let mut quota = MockQuotaCounter::new();
    quota.expect_increment().never();
    quota.expect_peek().return_const(1_000_u64);
    let answers = with_the_portal_down(key_store_as(Arc::clone(&state)), quota);
    let hit = (
        roster_bytes(),
        crate::ETag::of(&roster_bytes()),
        CacheStatus::Hit,
    );
    assert_eq!(body_of(&answers.serve_operators().await), hit);
    *state.lock().unwrap() = None;
    // Past the key look-up's reuse: only the store could tell now, and it fails.
    tokio::time::sleep(Duration::from_millis(5)).await;

    let cached = answers.serve_operators().await;
    assert_eq!(
        body_of(&cached),
        hit,
        "admitted from the key's last known state"
    );
    assert_eq!(
        (cached.quota.limit, cached.quota.remaining),
        (5, 4),
        "counted against its key"
    );
    let uncached = serve(&answers, Endpoint::Schedule, "month=2026-11").await;
    assert!(
        matches!(uncached.answer, Err(DomainError::StoreUnavailable(_))),
        "{uncached:?}"
    );
    let never_seen = ApiKeySecret::from_random_bytes(&[8; 32])
        .expose()
        .to_owned();
    let asked = UnvalidatedRequest::from_query(Endpoint::Operators, "", "").unwrap();
    let unchecked = answers
        .serve(&caller(&never_seen), Some(&asked), Acceptable::JSON)
        .await;
    assert!(
        matches!(unchecked.answer, Err(DomainError::StoreUnavailable(_))),
        "a 503, never the 429 of the address's anonymous quota: {unchecked:?}"
    );
    assert_eq!(
        (unchecked.quota.limit, unchecked.quota.exceeded),
        (60, false)
    );
}

#[tokio::test]
async fn a_key_revoked_while_the_portal_database_was_up_stays_refused_when_it_goes_down() {
    let state = Arc::new(Mutex::new(Some(record("operators"))));
    // A revoked key is a bad key: it counts against its address's anonymous quota.
    let mut quota = MockQuotaCounter::new();
    quota.expect_increment().times(2).return_const(1_u64);
    let answers = with_the_portal_down(key_store_as(Arc::clone(&state)), quota);
    assert!(answers.serve_operators().await.answer.is_ok());
    *state.lock().unwrap() = Some(ApiKeyRecord {
        revoked_at: Some(NOW - time::Duration::seconds(1)),
        ..record("operators")
    });
    for store in ["up", "down"] {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let refused = answers.serve_operators().await;
        assert_eq!(
            refused.answer,
            Err(DomainError::Unauthorized(Unauthorized::Revoked)),
            "the store {store}"
        );
        *state.lock().unwrap() = None;
    }
}

impl Answers {
    async fn serve_operators(&self) -> Outcome {
        serve(self, Endpoint::Operators, "").await
    }
}
