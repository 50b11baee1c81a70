//! Use cases against mockall mocks of every port.

use std::sync::Arc;

use time::OffsetDateTime;
use time::macros::datetime;

use super::*;
use crate::access::{ApiKeySecret, PresentedKey, RequestOrigin, Unauthorized};
use crate::calendar::Day;
use crate::limits::OverBudget;
use crate::model::{
    AgentNumber, CallRecord, LocalizedText, OffDay, OffDayKind, OffDayRecord, OffDaySource, Script,
    SheetContent,
};
use crate::params::{Compare, Direction, ScriptsLimit, ServiceRules, Team};
use crate::ports::{
    CallDaysError, Found, MockCallDaySource, MockClock, MockKeyStore, MockPortalStore,
    MockQuotaCounter, MockRequestLedger, StoreError, UpstreamError,
};
use crate::scope::{Scope, ScopeSet};
use crate::testing::{api_key, api_key_secret, call, days_of, month, operator, range, row, sheet};

const NOW: OffsetDateTime = datetime!(2026-11-21 06:15:30.123 UTC);
const IP: ClientAddress = ClientAddress::Ip(std::net::IpAddr::V4(std::net::Ipv4Addr::new(
    203, 0, 113, 9,
)));

fn secret() -> ApiKeySecret {
    api_key_secret()
}

/// The plaintext of the key [`key`] stores, as a request presents it.
fn bearer() -> String {
    secret().expose().to_owned()
}

fn key(scopes: &str) -> ApiKeyRecord {
    ApiKeyRecord {
        allowed_origin: Some("dash.example.uz".into()),
        ..api_key(42, "partner-dashboard", scopes)
    }
}

fn clock() -> Arc<MockClock> {
    let mut clock = MockClock::new();
    clock.expect_now().return_const(NOW);
    Arc::new(clock)
}

/// What the rate-limit headers of a request report, and its key or why it was refused.
struct Admission {
    quota: QuotaStatus,
    days: Option<DayBudgetStatus>,
    key: Result<ApiKeyRecord, DomainError>,
}

/// A request's whole admission, for a request without a cached answer: identified, then
/// counted.
async fn admit(access: &Gatekeeper, caller: &Caller<'_>, endpoint: Endpoint) -> Admission {
    match access.identify(caller).await {
        Err(refused) => Admission {
            quota: refused.quota,
            days: refused.days,
            key: Err(refused.error),
        },
        Ok(admitted) => {
            let counted = access.count(&admitted, endpoint, None).await;
            Admission {
                quota: counted.quota,
                days: counted.days,
                key: counted.verdict.map(|()| admitted.key),
            }
        }
    }
}

/// A store that finds `record` by the digest of `secret()` (a plain store: no list of recent
/// keys).
fn key_store(record: Option<ApiKeyRecord>) -> MockKeyStore {
    let mut store = MockKeyStore::new();
    let digest = secret().digest();
    store.expect_find_seen_key().returning(move |d| {
        Ok(match &record {
            Some(record) if *d == digest => KeyLookup::Found(record.clone()),
            _ => KeyLookup::Absent,
        })
    });
    store
}

/// A store that knows one key (by the digest of `secret()`), and counters that report `count`
/// for any request window (93 day fetches for a day budget's) and record the window names
/// they saw.
fn access_with(
    record: Option<ApiKeyRecord>,
    count: u64,
) -> (Gatekeeper, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut quota = MockQuotaCounter::new();
    let log = Arc::clone(&seen);
    quota.expect_increment().returning(move |bucket| {
        log.lock().unwrap().push(bucket.name());
        count
    });
    let mut ledger = MockRequestLedger::new();
    let log = Arc::clone(&seen);
    ledger.expect_count().returning(move |window, days, _| {
        log.lock().unwrap().push(window.name());
        log.lock().unwrap().extend(days.map(QuotaBucket::name));
        Found {
            requests: count,
            days_used: 93,
            answer: None,
        }
    });
    (
        Gatekeeper::new(
            Arc::new(key_store(record)),
            Arc::new(quota),
            Arc::new(ledger),
            clock(),
            60,
        ),
        seen,
    )
}

/// A gatekeeper over `store` whose counters must not be asked anything but `quota`'s.
fn gatekeeper(store: MockKeyStore, quota: MockQuotaCounter) -> Gatekeeper {
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().never();
    Gatekeeper::new(
        Arc::new(store),
        Arc::new(quota),
        Arc::new(ledger),
        clock(),
        60,
    )
}

/// The web layer's words for a request without a key.
const NO_KEY: Unauthorized = Unauthorized::NotPresented("no key");

/// A caller presenting `key` (the plaintext), or none.
fn caller(key: Option<&str>) -> Caller<'_> {
    Caller {
        key: key.map_or(Err(NO_KEY), |raw| {
            PresentedKey::parse(raw).ok_or(Unauthorized::Invalid)
        }),
        origin: RequestOrigin::Absent,
        client_ip: IP,
    }
}

#[tokio::test]
async fn admit_accepts_a_valid_key_and_counts_it_against_its_own_quota() {
    let (access, seen) = access_with(Some(key("calls")), 1);
    let auth = bearer();
    let admission = admit(&access, &caller(Some(&auth)), Endpoint::CallsSummary).await;
    assert_eq!(admission.key.unwrap().id, 42);
    assert_eq!(
        (
            admission.quota.limit,
            admission.quota.remaining,
            admission.quota.reset_seconds
        ),
        (5, 4, 30)
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [format!("key:42:{}", NOW.unix_timestamp() / 60)]
    );
}

/// Counts requests from `start`, reads no day budget, and has `{}` cached under any key.
fn counting_from(start: u64) -> MockRequestLedger {
    let counted = std::sync::atomic::AtomicU64::new(start);
    let mut ledger = MockRequestLedger::new();
    ledger.expect_count().returning(move |_, _, answer| Found {
        requests: counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        days_used: 0,
        answer: answer.map(|_| Bytes::from_static(b"{}")),
    });
    ledger
}

#[tokio::test]
async fn a_key_is_identified_then_counted_with_its_cached_answer_read_on_the_same_trip() {
    // The key store is asked once a request; the anonymous quota only for the key it does
    // not know.
    let mut quota = MockQuotaCounter::new();
    quota.expect_increment().times(1).return_const(1_u64);
    let access = Gatekeeper::new(
        Arc::new(key_store(Some(key("calls")))),
        Arc::new(quota),
        Arc::new(counting_from(4)),
        clock(),
        60,
    );
    let bearer = bearer();
    let admitted = access.identify(&caller(Some(&bearer))).await.unwrap();
    assert_eq!(admitted.key, key("calls"));
    assert_eq!(
        (admitted.window, admitted.days, admitted.view, admitted.at),
        (
            QuotaBucket::new(&QuotaSubject::Key(42), NOW),
            None,
            KpiView::Aggregate,
            NOW
        )
    );
    // Not from an Origin the key is not pinned to.
    let elsewhere = Caller {
        origin: RequestOrigin::Host("elsewhere.example"),
        ..caller(Some(&bearer))
    };
    let mut peeks = MockQuotaCounter::new();
    peeks.expect_peek().return_const(0_u64);
    let pinned = Gatekeeper::new(
        Arc::new(key_store(Some(key("calls")))),
        Arc::new(peeks),
        Arc::new(MockRequestLedger::new()),
        clock(),
        60,
    );
    assert_eq!(
        pinned.identify(&elsewhere).await.unwrap_err().error,
        DomainError::OriginNotAllowed
    );
    let counted = access
        .count(&admitted, Endpoint::CallsSummary, Some("v1/calls/summary"))
        .await;
    assert_eq!(
        (counted.quota.remaining, counted.quota.exceeded),
        (0, false)
    );
    assert_eq!(counted.verdict, Ok(()));
    assert_eq!(counted.cached, Some(Bytes::from_static(b"{}")));
    // The next request is over the quota; nothing asked, nothing read.
    let over = access.count(&admitted, Endpoint::CallsSummary, None).await;
    assert!(matches!(over.verdict, Err(DomainError::RateLimited(_))));
    assert_eq!((over.quota.remaining, over.cached), (0, None));
    // Another key: the store finds nothing, and the client's quota counts it.
    let other = ApiKeySecret::from_random_bytes(&[8; 32])
        .expose()
        .to_owned();
    let refused = access.identify(&caller(Some(&other))).await.unwrap_err();
    assert_eq!(
        refused.error,
        DomainError::Unauthorized(Unauthorized::Invalid)
    );
}

#[tokio::test]
async fn missing_key_is_401_counted_against_the_client_ip_without_a_store_lookup() {
    let mut store = MockKeyStore::new();
    store.expect_find_seen_key().never();
    store.expect_find_key().never();
    let mut quota = MockQuotaCounter::new();
    quota
        .expect_increment()
        .withf(|b| b.name().starts_with("ip:203.0.113.9:"))
        .times(1)
        .return_const(1_u64);
    let access = gatekeeper(store, quota);
    let admission = admit(&access, &caller(None), Endpoint::Ping).await;
    assert_eq!(admission.key, Err(DomainError::Unauthorized(NO_KEY)));
    assert_eq!((admission.quota.limit, admission.quota.remaining), (60, 59));
}

#[tokio::test]
async fn unknown_revoked_and_expired_keys_are_401() {
    let auth = bearer();
    let revoked = ApiKeyRecord {
        revoked_at: Some(datetime!(2026-11-21 06:00 UTC)),
        ..key("calls")
    };
    let expired = ApiKeyRecord {
        expires_at: Some(datetime!(2026-11-20 00:00 UTC)),
        ..key("calls")
    };
    for (stored, refused) in [
        (None, Unauthorized::Invalid),
        (Some(revoked), Unauthorized::Revoked),
        (Some(expired), Unauthorized::Expired),
    ] {
        let (access, seen) = access_with(stored, 1);
        let admission = admit(&access, &caller(Some(&auth)), Endpoint::Ping).await;
        assert_eq!(admission.key, Err(refused.into()));
        assert!(
            seen.lock().unwrap()[0].starts_with("ip:"),
            "an unusable key must not spend the key's quota: {refused:?}"
        );
    }
}

#[tokio::test]
async fn anonymous_quota_turns_401_into_429_once_exceeded() {
    let (access, _) = access_with(None, 61);
    let admission = admit(&access, &caller(None), Endpoint::Ping).await;
    assert!(
        matches!(admission.key, Err(DomainError::RateLimited(q)) if q.limit == 60 && q.remaining == 0)
    );
}

/// A gatekeeper over `key("calls")` whose quota counter must never count: `peek` reports
/// `key_count` for the key's bucket, and every address is far over its anonymous quota.
fn access_that_must_not_count(key_count: u64) -> Gatekeeper {
    let mut quota = MockQuotaCounter::new();
    quota.expect_increment().never();
    quota
        .expect_peek()
        .returning(move |bucket| match bucket.subject {
            QuotaSubject::Key(42) => key_count,
            QuotaSubject::KeyDays(42) => 0,
            _ => 1_000,
        });
    gatekeeper(key_store(Some(key("calls"))), quota)
}

#[tokio::test]
async fn a_valid_key_refused_for_its_origin_counts_against_no_quota_and_reports_the_keys() {
    let auth = bearer();
    let evil = Caller {
        origin: RequestOrigin::Host("evil.example"),
        ..caller(Some(&auth))
    };
    for (key_count, remaining) in [(0_u64, 5_u32), (3, 2), (5, 0), (9, 0)] {
        let access = access_that_must_not_count(key_count).with_day_budget(DayBudget::new(124));
        let Err(refused) = access.identify(&evil).await else {
            panic!("admitted from another domain");
        };
        let admission = Admission {
            quota: refused.quota,
            days: refused.days,
            key: Err(refused.error),
        };
        // Never a 429, whether the key's own window or the address's anonymous one is spent.
        assert_eq!(
            admission.key,
            Err(DomainError::OriginNotAllowed),
            "{key_count}"
        );
        assert_eq!(
            admission.quota,
            QuotaStatus {
                limit: 5,
                remaining,
                reset_seconds: 30,
                exceeded: false
            },
            "the key's window as it stands, {key_count} requests in it"
        );
        assert_eq!(
            admission.days.map(|days| days.remaining),
            Some(124),
            "its day budget as it stands"
        );
    }
}

#[tokio::test]
async fn a_pinned_key_from_its_own_domain_is_counted_and_limited_as_usual() {
    let auth = bearer();
    let own = Caller {
        origin: RequestOrigin::Host("dash.example.uz"),
        ..caller(Some(&auth))
    };
    let (access, seen) = access_with(Some(key("calls")), 1);
    assert!(
        admit(&access, &own, Endpoint::CallsSummary)
            .await
            .key
            .is_ok()
    );
    assert!(seen.lock().unwrap()[0].starts_with("key:42:"));
    let (access, _) = access_with(Some(key("calls")), 6);
    assert!(matches!(
        admit(&access, &own, Endpoint::CallsSummary).await.key,
        Err(DomainError::RateLimited(q)) if q.limit == 5
    ));
}

#[tokio::test]
async fn quota_is_checked_before_the_scope() {
    let (access, _) = access_with(Some(key("calls")), 6);
    let auth = bearer();
    let admission = admit(&access, &caller(Some(&auth)), Endpoint::Operators).await;
    assert!(
        matches!(admission.key, Err(DomainError::RateLimited(q)) if q.limit == 5 && q.remaining == 0 && q.exceeded)
    );
}

#[tokio::test]
async fn key_without_the_endpoint_scope_is_403_naming_it() {
    let (access, _) = access_with(Some(key("calls")), 1);
    let auth = bearer();
    let kpi = admit(&access, &caller(Some(&auth)), Endpoint::KpiMonth).await;
    assert_eq!(kpi.key, Err(DomainError::MissingScope(Scope::KpiAggregate)));
    assert_eq!(
        admit(&access, &caller(Some(&auth)), Endpoint::ScriptsStats)
            .await
            .key,
        Err(DomainError::MissingScope(Scope::Scripts))
    );
    assert!(
        admit(&access, &caller(Some(&auth)), Endpoint::Ping)
            .await
            .key
            .is_ok(),
        "/ping needs no scope"
    );
}

#[tokio::test]
async fn a_key_the_store_could_not_check_is_503_and_counts_against_no_quota() {
    // A key the store fails to look up, from an address far over its anonymous quota; and a
    // key the key cache has not seen, from an address under it, whose look-up fails.
    for (seen_from_address, unseen) in [(1_000_u64, false), (3, true)] {
        let mut store = MockKeyStore::new();
        if unseen {
            store
                .expect_find_seen_key()
                .returning(|_| Ok(KeyLookup::Unseen));
            store
                .expect_find_key()
                .times(1)
                .returning(|_| Err(StoreError::new("connection refused")));
        } else {
            store
                .expect_find_seen_key()
                .returning(|_| Err(StoreError::new("connection refused")));
        }
        let mut quota = MockQuotaCounter::new();
        quota.expect_increment().never();
        quota.expect_peek().return_const(seen_from_address);
        let access = gatekeeper(store, quota);
        let auth = bearer();
        let admission = admit(&access, &caller(Some(&auth)), Endpoint::Ping).await;
        assert_eq!(
            admission.key,
            Err(DomainError::StoreUnavailable(StoreError::new(
                "connection refused"
            ))),
            "{seen_from_address} requests seen"
        );
        assert_eq!(
            admission.quota,
            QuotaStatus {
                limit: 60,
                remaining: 60_u32.saturating_sub(u32::try_from(seen_from_address).unwrap()),
                reset_seconds: 30,
                exceeded: false,
            },
            "the address's window as it stands"
        );
    }
}

#[tokio::test]
async fn a_guess_from_an_address_over_its_anonymous_quota_is_refused_without_a_look_up() {
    for (seen_from_address, looked_up) in [(59_u64, 1_usize), (60, 0)] {
        let mut store = MockKeyStore::new();
        // The key cache read every digest a moment ago, and this one was not among them.
        store
            .expect_find_seen_key()
            .returning(|_| Ok(KeyLookup::Unseen));
        store
            .expect_find_key()
            .times(looked_up)
            .returning(|_| Ok(None));
        let mut quota = MockQuotaCounter::new();
        quota.expect_peek().return_const(seen_from_address);
        quota.expect_increment().return_const(seen_from_address + 1);
        let access = gatekeeper(store, quota);
        let auth = bearer();
        let admission = admit(&access, &caller(Some(&auth)), Endpoint::Ping).await;
        let expected = if looked_up == 1 { 401 } else { 429 };
        let status = match admission.key {
            Err(DomainError::Unauthorized(_)) => 401,
            Err(DomainError::RateLimited(_)) => 429,
            other => panic!("{other:?}"),
        };
        assert_eq!(status, expected, "{seen_from_address} requests seen");
    }
}

#[tokio::test]
async fn ping_reports_the_key_and_server_time_in_utc_with_milliseconds() {
    let (access, _) = access_with(None, 1);
    let info = access.ping(&key("kpi:detail,calls"));
    assert_eq!(
        info,
        KeyInfo {
            name: "partner-dashboard".into(),
            scopes: ScopeSet::parse_list("calls,kpi:detail").unwrap(),
            rate_limit_per_minute: 5,
            server_time: "2026-11-21T06:15:30.123Z".into(),
        }
    );
}

fn stats(store: MockPortalStore, calls: MockCallDaySource) -> CallStats {
    CallStats::new(
        Arc::new(store),
        Arc::new(calls),
        clock(),
        StatsSettings::default(),
    )
}

fn requester() -> Requester {
    Requester::key(42)
}

/// /calls/summary of inbound calls over `range` with the default rules, set beside `compare`,
/// through [`CallStats::answer`] as the service asks for it.
async fn summary(
    stats: &CallStats,
    range: DateRange,
    compare: Option<Compare>,
) -> Result<Summary, DomainError> {
    let asked = ApiRequest::CallsSummary {
        range,
        direction: Direction::Inbound,
        rules: ServiceRules::default(),
        queue: None,
        compare,
    };
    match stats.answer(&asked, &requester()).await? {
        Response::CallSummary(summary) => Ok(summary),
        other => panic!("not a summary: {other:?}"),
    }
}

/// `call_days` answers `wanted`, asked once for key 42, with the held days of `calls`.
fn answers_once(call_days: &mut MockCallDaySource, wanted: DateRange, calls: Vec<CallRecord>) {
    call_days
        .expect_days()
        .withf(move |r, who| *r == wanted && who.key_id() == 42)
        .times(1)
        .returning(move |r, _| Ok(days_of(r, &calls)));
}

#[tokio::test]
async fn summary_asks_for_the_days_of_the_requested_range() {
    let mut call_days = MockCallDaySource::new();
    answers_once(
        &mut call_days,
        range("2026-11-01", "2026-11-01"),
        vec![call(
            Direction::Inbound,
            Some("101"),
            "2026-11-01T10:00:00+05:00",
            30.0,
        )],
    );
    let summary = summary(
        &stats(MockPortalStore::new(), call_days),
        range("2026-11-01", "2026-11-01"),
        None,
    )
    .await
    .unwrap();
    assert_eq!(summary.tally.offered(), 1);
}

#[tokio::test]
async fn a_comparison_reads_the_earlier_period_and_counts_it_as_the_period_itself() {
    let earlier = range("2026-10-31", "2026-11-01");
    let mut call_days = MockCallDaySource::new();
    answers_once(
        &mut call_days,
        range("2026-11-02", "2026-11-03"),
        vec![call(
            Direction::Inbound,
            Some("101"),
            "2026-11-02T10:00:00+05:00",
            30.0,
        )],
    );
    answers_once(
        &mut call_days,
        earlier,
        vec![
            call(
                Direction::Inbound,
                Some("101"),
                "2026-10-31T09:00:00+05:00",
                60.0,
            ),
            call(Direction::Inbound, None, "2026-11-01T09:00:00+05:00", 0.0),
            call(
                Direction::Outbound,
                Some("101"),
                "2026-11-01T09:30:00+05:00",
                20.0,
            ),
        ],
    );
    let summary = summary(
        &stats(MockPortalStore::new(), call_days),
        range("2026-11-02", "2026-11-03"),
        Some(Compare::PreviousPeriod),
    )
    .await
    .unwrap();
    assert_eq!(summary.tally.offered(), 1);
    let comparison = summary.comparison.unwrap();
    assert_eq!(comparison.compare, Compare::PreviousPeriod);
    assert_eq!(comparison.range, earlier);
    assert_eq!(
        (
            comparison.tally.offered(),
            comparison.tally.answered(),
            comparison.tally.unanswered()
        ),
        (2, 1, 1),
        "the inbound calls of the earlier period only, as the period's own figures count"
    );
}

#[tokio::test]
async fn upstream_failure_is_503_upstream_unavailable() {
    let mut call_days = MockCallDaySource::new();
    call_days
        .expect_days()
        .returning(|_, _| Err(UpstreamError::new("HTTP 500").into()));
    let result = summary(
        &stats(MockPortalStore::new(), call_days),
        range("2026-11-01", "2026-11-01"),
        None,
    )
    .await;
    assert_eq!(
        result,
        Err(DomainError::UpstreamUnavailable(UpstreamError::new(
            "HTTP 500"
        )))
    );
    assert_eq!(
        result.unwrap_err().cause_chain(),
        "the upstream call platform is unavailable: call platform unavailable: HTTP 500",
        "the cause is kept for the log"
    );
}

#[tokio::test]
async fn a_budget_refusal_is_a_429_and_a_shed_a_503_naming_when_to_retry() {
    let refused = OverBudget {
        key: 42,
        needed: 31,
        status: DayBudgetStatus {
            limit: 124,
            remaining: 0,
            reset_seconds: 30,
        },
        filling: None,
    };
    for (error, expected) in [
        (
            CallDaysError::OverBudget(refused),
            DomainError::DayBudgetExceeded(refused),
        ),
        (
            CallDaysError::Busy {
                retry_after_secs: 7,
            },
            DomainError::UpstreamBusy {
                retry_after_secs: 7,
            },
        ),
    ] {
        let mut call_days = MockCallDaySource::new();
        call_days
            .expect_days()
            .returning(move |_, _| Err(error.clone()));
        let result = summary(
            &stats(MockPortalStore::new(), call_days),
            range("2026-11-01", "2026-11-01"),
            None,
        )
        .await;
        assert_eq!(result, Err(expected));
    }
    assert_eq!(
        DomainError::UpstreamBusy {
            retry_after_secs: 7
        }
        .to_string(),
        "the upstream call platform is busy; retry in 7 s"
    );
}

#[test]
fn call_periods_may_start_no_earlier_than_the_history_horizon_from_today() {
    let earliest = stats(MockPortalStore::new(), MockCallDaySource::new()).earliest_call_day();
    // 2026-11-21 in Tashkent, and the 399 days before it.
    assert_eq!(
        earliest.map(|e| (e.day.to_string(), e.horizon_days)),
        Some(("2025-10-18".to_owned(), 400))
    );
    let unbounded = CallStats::new(
        Arc::new(MockPortalStore::new()),
        Arc::new(MockCallDaySource::new()),
        clock(),
        StatsSettings {
            history: HistoryHorizon::new(0),
            ..StatsSettings::default()
        },
    );
    assert_eq!(unbounded.earliest_call_day(), None);
}

#[test]
fn the_small_group_bound_keys_aggregate_kpi_bodies_apart_and_leaves_other_keys_alone() {
    let with_bound = |rows| {
        CallStats::new(
            Arc::new(MockPortalStore::new()),
            Arc::new(MockCallDaySource::new()),
            clock(),
            StatsSettings {
                kpi_aggregate_min_rows: AggregateMinRows::new(rows).unwrap(),
                ..StatsSettings::default()
            },
        )
    };
    let (default, five) = (with_bound(1), with_bound(5));
    let aggregate = ApiRequest::KpiMonth {
        month: month("2026-11"),
        shift: None,
        view: KpiView::Aggregate,
    };
    assert_eq!(
        default.cache_key(&aggregate),
        aggregate.cache_key(),
        "the default bound hides nothing: the key the specification's answer always had"
    );
    assert_eq!(
        five.cache_key(&aggregate),
        "v1/kpi/2026-11?granularity=aggregate&min_rows=5"
    );
    assert_ne!(
        with_bound(6).cache_key(&aggregate),
        five.cache_key(&aggregate)
    );
    let detail = ApiRequest::KpiMonth {
        month: month("2026-11"),
        shift: None,
        view: KpiView::Detail,
    };
    let operators = ApiRequest::Operators;
    for other in [detail, operators] {
        assert_eq!(five.cache_key(&other), other.cache_key());
    }
}

#[tokio::test]
async fn admission_reports_the_key_s_day_budget_read_on_the_same_trip() {
    let (access, seen) = access_with(Some(key("calls")), 1);
    let access = access.with_day_budget(DayBudget::new(124));
    let auth = bearer();
    let admission = admit(&access, &caller(Some(&auth)), Endpoint::CallsSummary).await;
    assert_eq!(
        admission.days,
        Some(DayBudgetStatus {
            limit: 124,
            remaining: 31,
            reset_seconds: 30
        })
    );
    let minute = NOW.unix_timestamp() / 60;
    assert_eq!(
        *seen.lock().unwrap(),
        [format!("key:42:{minute}"), format!("days:42:{minute}")]
    );
    // Without a budget nothing is read for it, and nothing reported.
    let (access, seen) = access_with(Some(key("calls")), 1);
    let admission = admit(&access, &caller(Some(&auth)), Endpoint::CallsSummary).await;
    assert_eq!(admission.days, None);
    assert_eq!(seen.lock().unwrap().len(), 1);
    // A request without a valid key has no day budget.
    let anonymous = admit(&access, &caller(None), Endpoint::Ping).await;
    assert_eq!(anonymous.days, None);
}

#[tokio::test]
async fn agents_combine_calls_scores_and_roster_names() {
    let mut call_days = MockCallDaySource::new();
    call_days.expect_days().returning(|r, _| {
        Ok(days_of(
            r,
            &[call(
                Direction::Outbound,
                Some("101"),
                "2026-11-01T10:00:00+05:00",
                30.0,
            )],
        ))
    });
    let mut store = MockPortalStore::new();
    store
        .expect_call_scores()
        .times(1)
        .returning(|_| Ok(vec![]));
    store
        .expect_operators()
        .times(1)
        .returning(|| Ok(vec![operator("101", "Oʻtkir Karimov", None)]));
    let body = stats(store, call_days)
        .call_agents(
            range("2026-11-01", "2026-11-01"),
            None,
            &RosterFilter::default(),
            &requester(),
        )
        .await
        .unwrap();
    assert_eq!(body.agents[0].name, "Oʻtkir Karimov");
    assert_eq!(body.range.start().to_string(), "2026-11-01");
}

#[tokio::test]
async fn a_team_the_roster_lacks_is_a_400_listing_its_teams_before_any_day_is_asked() {
    let mut call_days = MockCallDaySource::new();
    call_days.expect_days().never();
    let mut store = MockPortalStore::new();
    store.expect_call_scores().never();
    store.expect_operators().times(1).returning(|| {
        Ok(vec![
            Operator {
                team: "B".into(),
                ..operator("102", "B", None)
            },
            operator("101", "A", None),
            operator("103", "A", None),
        ])
    });
    let filter = RosterFilter {
        team: Some(Team::parse("a").unwrap()),
        shift: None,
    };
    let refused = stats(store, call_days)
        .call_agents(
            range("2026-11-01", "2026-11-01"),
            None,
            &filter,
            &requester(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        r#"invalid query parameter 'team' "a": no operator of the roster has it; it has "A", "B""#
    );
    assert!(matches!(refused, DomainError::BadRequest(_)));
}

#[tokio::test]
async fn agents_fail_with_503_when_the_store_does() {
    let mut call_days = MockCallDaySource::new();
    call_days
        .expect_days()
        .returning(|r, _| Ok(days_of(r, &[])));
    let mut store = MockPortalStore::new();
    store
        .expect_call_scores()
        .returning(|_| Err(StoreError::new("timeout")));
    store.expect_operators().returning(|| Ok(vec![]));
    let result = stats(store, call_days)
        .call_agents(
            range("2026-11-01", "2026-11-01"),
            None,
            &RosterFilter::default(),
            &requester(),
        )
        .await;
    assert_eq!(
        result,
        Err(DomainError::StoreUnavailable(StoreError::new("timeout")))
    );
}

#[tokio::test]
async fn kpi_month_reads_the_content_of_the_selected_sheet_only() {
    let mut store = MockPortalStore::new();
    store
        .expect_published_sheets()
        .withf(|m| *m == Some(month("2026-11")))
        .returning(|_| {
            Ok(vec![
                sheet(1, "2026-11", "night"),
                sheet(2, "2026-11", "day"),
            ])
        });
    store
        .expect_sheet_content()
        .withf(|id| *id == 2)
        .times(1)
        .returning(|_| {
            Ok(Some(SheetContent {
                operators: vec![row(5, Some("101"), 0.9, Some(100.0))],
                ..SheetContent::default()
            }))
        });
    let body = stats(store, MockCallDaySource::new())
        .kpi_month(month("2026-11"), None, KpiView::Aggregate)
        .await
        .unwrap();
    let KpiMonth::Aggregate(aggregate) = body else {
        panic!("expected aggregate")
    };
    assert_eq!((aggregate.sheet.id, aggregate.operator_count), (2, 1));
}

#[tokio::test]
async fn kpi_month_without_published_sheet_is_404_without_reading_content() {
    let mut store = MockPortalStore::new();
    store.expect_published_sheets().returning(|_| Ok(vec![]));
    store.expect_sheet_content().never();
    let result = stats(store, MockCallDaySource::new())
        .kpi_month(month("2026-08"), None, KpiView::Detail)
        .await;
    assert_eq!(
        result,
        Err(DomainError::NotFound(
            "no published KPI sheet for 2026-08".into()
        ))
    );
}

#[tokio::test]
async fn kpi_month_whose_sheet_was_unpublished_meanwhile_is_404() {
    let mut store = MockPortalStore::new();
    store
        .expect_published_sheets()
        .returning(|_| Ok(vec![sheet(1, "2026-11", "day")]));
    store.expect_sheet_content().returning(|_| Ok(None));
    let result = stats(store, MockCallDaySource::new())
        .kpi_month(month("2026-11"), None, KpiView::Detail)
        .await;
    assert!(matches!(result, Err(DomainError::NotFound(_))));
}

#[tokio::test]
async fn kpi_months_lists_every_published_sheet_in_order() {
    let mut store = MockPortalStore::new();
    store
        .expect_published_sheets()
        .withf(Option::is_none)
        .returning(|_| Ok(vec![sheet(1, "2026-10", "day"), sheet(2, "2026-11", "day")]));
    let body = stats(store, MockCallDaySource::new())
        .kpi_months()
        .await
        .unwrap();
    assert_eq!(body.iter().map(|s| s.id).collect::<Vec<_>>(), [2, 1]);
}

#[tokio::test]
async fn schedule_joins_off_days_with_the_roster() {
    let mut store = MockPortalStore::new();
    store
        .expect_off_days()
        .withf(|m| *m == month("2026-11"))
        .returning(|_| {
            Ok(vec![OffDayRecord {
                agent_number: AgentNumber::new("101").unwrap(),
                date: Day::parse("2026-11-03").unwrap(),
                kind: OffDayKind::Unpaid,
                source: OffDaySource::Swap,
            }])
        });
    store
        .expect_operators()
        .returning(|| Ok(vec![operator("101", "O'tkir", None)]));
    let body = stats(store, MockCallDaySource::new())
        .schedule(month("2026-11"))
        .await
        .unwrap();
    assert_eq!(
        body,
        Schedule {
            month: month("2026-11"),
            off_days: vec![OffDay {
                agent_number: AgentNumber::new("101").unwrap(),
                name: "O'tkir".into(),
                date: Day::parse("2026-11-03").unwrap(),
                kind: OffDayKind::Unpaid,
                source: OffDaySource::Swap,
            }],
        }
    );
}

#[tokio::test]
async fn answer_dispatches_a_parsed_request_to_its_use_case() {
    let mut store = MockPortalStore::new();
    store.expect_scripts().returning(|| {
        let text = |s: &str| LocalizedText {
            uz: s.into(),
            ru: s.into(),
        };
        Ok((1..=30)
            .map(|id| Script {
                id,
                title: text("Salomlashish"),
                category: text("Kirish"),
                views: 100,
            })
            .collect())
    });
    let request = ApiRequest::ScriptsStats {
        limit: ScriptsLimit::parse("2").unwrap(),
    };
    let body = stats(store, MockCallDaySource::new())
        .answer(&request, &requester())
        .await
        .unwrap();
    let Response::Scripts(body) = body else {
        panic!("a scripts request answered {body:?}");
    };
    assert_eq!(body.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2]);
}
