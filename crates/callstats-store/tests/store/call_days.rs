//! The call-day store's durable tier on both backends: a day reads back as written, another
//! version or a corrupt row is a miss, the sweep deletes the oldest days within its bound, and
//! a read-only database refuses to keep days with an error (never a panic).

use std::sync::Arc;

use callstats_domain::call_day::{CallDay, Held, HeldDay as _};
use callstats_domain::model::{AgentNumber, CallRecord, QueueName};
use callstats_domain::params::Direction;
use callstats_domain::ports::CallDayArchive;
use callstats_domain::rollup::DayRollup;
use callstats_domain::tz;
use callstats_infra::encoding::call_day::VERSION;
use callstats_store::StoredCallDays;
use callstats_store::backend_tests;
use callstats_store::config::Access;
use callstats_store::testing::TestDatabase;

use crate::support::day;

/// A day of `calls` calls, fetched at `fetched_at_ms`.
fn sample(date: &str, calls: i64, fetched_at_ms: i64) -> CallDay {
    let day = day(date);
    let midnight = tz::local_midnight_unix(day.date());
    let queues = ["support", "sales"].map(|q| QueueName::new(q).unwrap());
    CallDay::from_records(
        day,
        fetched_at_ms,
        (0..calls).map(|n| CallRecord {
            direction: if n % 3 == 0 {
                Direction::Outbound
            } else {
                Direction::Inbound
            },
            agent_number: (n % 5 != 0)
                .then(|| AgentNumber::new(&format!("{}", 101 + n % 40)).unwrap()),
            started_at: midnight + n * 13,
            duration_seconds: 30.0 + f64::from(u32::try_from(n % 97).unwrap()) / 4.0,
            wait_seconds: (n % 3 != 0).then_some(7.5),
            queue: (n % 3 != 0).then(|| queues[usize::try_from(n % 2).unwrap()].clone()),
        }),
    )
}

async fn tier(db: &TestDatabase) -> StoredCallDays {
    StoredCallDays::new(Arc::new(db.migrated_store().await))
}

async fn held(tier: &StoredCallDays, dates: &[&str]) -> Vec<CallDay> {
    let days: Vec<_> = dates.iter().map(|date| day(date)).collect();
    tier.get(&days)
        .await
        .unwrap()
        .into_iter()
        .map(|day| CallDay::clone(&day))
        .collect()
}

backend_tests! {
    async fn a_day_reads_back_as_written_and_a_new_copy_replaces_it(db: &TestDatabase) {
        let tier = tier(db).await;
        assert!(held(&tier, &["2026-11-02"]).await.is_empty());
        let first = sample("2026-11-02", 500, 1_790_000_000_123);
        let other = sample("2026-11-03", 3, 1_790_000_000_456).with_held(Held::Provisional);
        tier.put(&first).await.unwrap();
        tier.put(&other).await.unwrap();
        assert_eq!(
            held(&tier, &["2026-11-03", "2026-11-01", "2026-11-02"]).await,
            [first, other.clone()]
        );
        let again = sample("2026-11-02", 501, 1_790_000_086_000);
        tier.put(&again).await.unwrap();
        assert_eq!(held(&tier, &["2026-11-02", "2026-11-03"]).await, [again, other]);
        let size = tier.size().await.unwrap();
        assert_eq!(size.days, 2);
        assert!(size.bytes > 100, "{size:?}");
    }

    async fn another_version_or_a_corrupt_row_is_a_miss(db: &TestDatabase) {
        let tier = tier(db).await;
        for date in ["2026-11-02", "2026-11-03", "2026-11-04"] {
            tier.put(&sample(date, 200, 1_790_000_000_000)).await.unwrap();
        }
        db.execute_sql(&format!(
            "UPDATE call_days SET version = {} WHERE day = '2026-11-02'",
            VERSION + 1
        ))
        .await;
        db.execute_sql("UPDATE call_days SET encoded = substr(encoded, 1, 20) WHERE day = '2026-11-03'")
            .await;
        let read = held(&tier, &["2026-11-02", "2026-11-03", "2026-11-04"]).await;
        assert_eq!(read, [sample("2026-11-04", 200, 1_790_000_000_000)]);
        // A row holding another day's bytes is not that day.
        db.execute_sql(
            "UPDATE call_days SET encoded = (SELECT encoded FROM call_days WHERE day = '2026-11-04') \
             WHERE day = '2026-11-02'",
        )
        .await;
        db.execute_sql(&format!("UPDATE call_days SET version = {VERSION}")).await;
        assert_eq!(held(&tier, &["2026-11-02"]).await, []);
        // The day fetched again replaces the row that could not be read.
        let fetched = sample("2026-11-03", 5, 1_790_100_000_000);
        tier.put(&fetched).await.unwrap();
        assert_eq!(held(&tier, &["2026-11-03"]).await, [fetched]);
    }

    async fn each_day_is_kept_with_its_rollup_and_an_unreadable_one_is_left_out(db: &TestDatabase) {
        let tier = tier(db).await;
        let dates = ["2026-11-02", "2026-11-03", "2026-11-04"];
        for date in dates {
            tier.put(&sample(date, 300, 1_790_000_000_000)).await.unwrap();
        }
        let days: Vec<_> = dates.iter().map(|date| day(date)).collect();
        let read: Vec<DayRollup> = tier
            .rollups(&days)
            .await
            .unwrap()
            .into_iter()
            .map(|rollup| DayRollup::clone(&rollup))
            .collect();
        let expected: Vec<DayRollup> = dates
            .iter()
            .map(|date| DayRollup::of(&sample(date, 300, 1_790_000_000_000)))
            .collect();
        assert_eq!(read, expected);
        // A row written before the column (no rollup), and one whose rollup is corrupt.
        db.execute_sql("UPDATE call_days SET rollup = NULL WHERE day = '2026-11-02'").await;
        db.execute_sql("UPDATE call_days SET rollup = substr(rollup, 1, 9) WHERE day = '2026-11-03'")
            .await;
        let left: Vec<_> = tier
            .rollups(&days)
            .await
            .unwrap()
            .iter()
            .map(|rollup| rollup.day())
            .collect();
        assert_eq!(left, [day("2026-11-04")]);
        // The day itself still reads back.
        assert_eq!(held(&tier, &["2026-11-02"]).await.len(), 1);
    }

    async fn the_sweep_deletes_the_oldest_days_within_its_bound(db: &TestDatabase) {
        let tier = tier(db).await;
        let dates = ["2026-10-30", "2026-10-31", "2026-11-01", "2026-11-02", "2026-11-03"];
        for date in dates {
            tier.put(&sample(date, 2, 0)).await.unwrap();
        }
        assert_eq!(tier.delete_before(day("2026-11-02"), 2).await.unwrap(), 2);
        assert_eq!(held(&tier, &dates).await.len(), 3);
        assert_eq!(
            held(&tier, &["2026-10-30", "2026-10-31"]).await,
            [],
            "the oldest go first"
        );
        assert_eq!(tier.delete_before(day("2026-11-02"), 10).await.unwrap(), 1);
        assert_eq!(tier.delete_before(day("2026-11-02"), 10).await.unwrap(), 0);
        assert_eq!(
            held(&tier, &dates).await,
            [sample("2026-11-02", 2, 0), sample("2026-11-03", 2, 0)]
        );
    }

    async fn a_read_only_database_refuses_to_keep_a_day(db: &TestDatabase) {
        let writer = tier(db).await;
        writer.put(&sample("2026-11-02", 2, 0)).await.unwrap();
        let reader = StoredCallDays::new(Arc::new(db.store(Access::ReadOnly)));
        let refused = reader.put(&sample("2026-11-03", 2, 0)).await.unwrap_err();
        assert_eq!(refused.message, "query failed");
        assert_eq!(held(&reader, &["2026-11-02"]).await, [sample("2026-11-02", 2, 0)]);
    }
}
