//! A use case with a mocked port that fails, written against the public API only.

use std::sync::Arc;

use callstats_domain::DomainError;
use callstats_domain::limits::Requester;
use callstats_domain::params::{Direction, RosterFilter};
use callstats_domain::ports::{
    CallDaysError, MockCallDaySource, MockPortalStore, StoreError, UpstreamError,
};
use callstats_domain::testing::{
    CallExt, TestClock, call, days_of, operator, predicate, range, tashkent,
};
use callstats_domain::use_cases::{CallStats, StatsSettings};

fn stats(store: MockPortalStore, call_days: MockCallDaySource) -> CallStats {
    CallStats::new(
        Arc::new(store),
        Arc::new(call_days),
        TestClock::at(tashkent("2026-11-03 12:00")),
        StatsSettings::default(),
    )
}

#[tokio::test]
async fn the_leaderboard_is_a_503_while_the_call_platform_fails_then_names_the_roster() {
    let week = range("2026-11-01", "2026-11-07");
    let mut call_days = MockCallDaySource::new();
    let mut down = true;
    call_days
        .expect_days()
        .with(predicate::eq(week), predicate::always())
        .times(2)
        .returning(move |range, _| {
            if std::mem::take(&mut down) {
                return Err(CallDaysError::Unavailable(UpstreamError::new("HTTP 500")));
            }
            Ok(days_of(
                range,
                &[
                    call(Direction::Inbound, Some("101"), "2026-11-02 09:00", 60.0),
                    call(Direction::Outbound, Some("101"), "2026-11-02 09:05", 30.0),
                    call(Direction::Inbound, None, "2026-11-03 10:00", 0.0).waited(45.0),
                ],
            ))
        });
    let mut store = MockPortalStore::new();
    store.expect_call_scores().returning(|_| Ok(Vec::new()));
    store
        .expect_operators()
        .returning(|| Ok(vec![operator("101", "Dilnoza", None)]));
    let stats = stats(store, call_days);
    let requester = Requester::key(7);

    let failed = stats
        .call_agents(week, None, &RosterFilter::default(), &requester)
        .await;
    assert!(
        matches!(failed, Err(DomainError::UpstreamUnavailable(_))),
        "{failed:?}"
    );
    let board = stats
        .call_agents(week, None, &RosterFilter::default(), &requester)
        .await
        .unwrap();
    let names: Vec<_> = board
        .agents
        .iter()
        .map(|a| (a.name.as_str(), a.calls))
        .collect();
    assert_eq!(
        names,
        [("Dilnoza", 2)],
        "the answered calls, by the roster's name"
    );
}

#[tokio::test]
async fn the_kpi_months_are_a_503_when_the_portal_store_fails() {
    let mut store = MockPortalStore::new();
    store
        .expect_published_sheets()
        .with(predicate::eq(None))
        .times(1)
        .returning(|_| Err(StoreError::new("connection refused")));
    let result = stats(store, MockCallDaySource::new()).kpi_months().await;
    assert!(
        matches!(result, Err(DomainError::StoreUnavailable(_))),
        "{result:?}"
    );
}
