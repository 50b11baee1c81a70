//! The service keeps what it learned (docs/behaviour.md, "When the call platform fails"): a
//! settled day fetched by one server is read back from the database by the next one on the
//! same database, with the platform failing; a day past its lifetime answers 200 marked
//! stale; without persistence the same restart is a 503.

use std::sync::Arc;
use std::time::Duration;

use callstats_application::CallDaySettings;
use callstats_domain::calendar::Day;
use callstats_domain::ports::CallDayArchive;
use callstats_sim::SimOptions;
use callstats_store::StoredCallDays;
use callstats_store::backend_tests;
use callstats_store::config::Access;
use callstats_store::testing::TestDatabase;
use serde_json::Value;

use crate::e2e::helpers::*;

const SUMMARY: &str = "/calls/summary?start=2026-10-05";

/// The platform down: every request answered 500, at once.
fn failing() -> SimOptions {
    SimOptions {
        fail_rate: 1.0,
        ..Spawn::default().sim
    }
}

/// Asks DAY on a healthy server, waits until the day is in the database, stops the server;
/// answers the body it served.
async fn fetched_once(db: &TestDatabase, spawn: Spawn) -> Value {
    let app = spawn_app_with(db, spawn).await;
    let key = app.detail_key().await;
    let answer = app.get(SUMMARY, &key).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let stored = StoredCallDays::new(Arc::new(db.store(Access::ReadOnly)));
    let day = Day::parse(DAY).unwrap();
    for _ in 0..200 {
        if !stored.get(&[day]).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        stored.get(&[day]).await.unwrap().len(),
        1,
        "the day was persisted"
    );
    app.stop().await;
    answer.json()
}

backend_tests! {
    async fn a_restarted_server_answers_a_final_day_from_the_database(db: &TestDatabase) {
        let first = fetched_once(db, Spawn { persist: true, ..Spawn::default() }).await;
        let app = spawn_app_with(db, Spawn {
            sim: failing(),
            upstream_retries: 0,
            persist: true,
            ..Spawn::default()
        })
        .await;
        let key = app.detail_key().await;
        let answer = app.get(SUMMARY, &key).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        // Weeks old, the day is final: fresh, not stale.
        assert_eq!(answer.header("cache-status"), "callstats; fwd=miss");
        assert_eq!(answer.json(), first);
        app.stop().await;
    }

    async fn a_day_past_its_lifetime_answers_stale_while_the_platform_fails(db: &TestDatabase) {
        // Revised for a year, kept one second: the copy is past its lifetime at once.
        let call_days = CallDaySettings {
            ttl: Duration::from_secs(1),
            revision_days: 400,
            ..CallDaySettings::default()
        };
        let first = fetched_once(db, Spawn { persist: true, call_days, ..Spawn::default() }).await;
        let app = spawn_app_with(db, Spawn {
            sim: failing(),
            upstream_retries: 0,
            persist: true,
            call_days,
            ..Spawn::default()
        })
        .await;
        // Each server's clock starts at the next real minute: this one is moved past the
        // copy's lifetime whichever minute the first one started in.
        app.clock.advance(Duration::from_secs(65));
        let key = app.detail_key().await;
        for _ in 0..2 {
            let answer = app.get(SUMMARY, &key).await;
            assert_eq!(answer.status, 200, "{}", answer.text());
            assert_eq!(answer.header("cache-status"), "callstats; fwd=miss; detail=stale");
            assert_eq!(answer.header("x-cache"), "MISS", "a stale answer is not cached");
            assert_eq!(answer.header("cache-control"), "private, max-age=0");
            let body = answer.json();
            assert_eq!(body["as_of"], first["as_of"], "as of the copy's fetch");
            assert_eq!(body, first);
        }
        app.stop().await;
    }

    async fn without_persistence_a_restart_with_the_platform_down_is_503(db: &TestDatabase) {
        let app = spawn_app_with(db, Spawn::default()).await;
        let key = app.detail_key().await;
        assert_eq!(app.get(SUMMARY, &key).await.status, 200);
        app.stop().await;
        let app = spawn_app_with(db, Spawn {
            sim: failing(),
            upstream_retries: 0,
            ..Spawn::default()
        })
        .await;
        let key = app.detail_key().await;
        let answer = app.get(SUMMARY, &key).await;
        assert_eq!(answer.status, 503, "{}", answer.text());
        app.stop().await;
    }
}
