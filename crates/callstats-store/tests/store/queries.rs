//! Reads take a bounded number of statements, whatever the size of the data.

use callstats_domain::calendar::LocalDateTime;
use callstats_domain::model::AgentNumber;
use callstats_domain::ports::{KeyStore, PortalStore};
use callstats_store::backend_tests;
use callstats_store::config::Access;
use callstats_store::fixture::{
    Fixture, FixtureKpiRow, FixtureMetric, FixtureSheet, FixtureTotals,
};

use crate::support::month;

/// One published sheet of `rows` operator rows with `metrics` metrics each.
fn big_sheet(rows: u32, metrics: u32) -> Fixture {
    let operators = (1..=rows)
        .map(|row| FixtureKpiRow {
            agent_number: Some(AgentNumber::new(&format!("{}", 1000 + row)).unwrap()),
            name: format!("Operator {row}"),
            row: row + 4,
            kpi_percent: f64::from(row) / f64::from(rows),
            kpi_sum: f64::from(row) * 1000.0,
            fiksa: Some(3_000_000.0),
            bonus: None,
            fine: Some(0.0),
            payout: Some(3_000_000.0 + f64::from(row) * 1000.0),
            metrics: (0..metrics)
                .map(|m| FixtureMetric {
                    name: format!("M{m:02}"),
                    value: f64::from(m),
                    ratio: (m % 3 != 0).then_some(0.5),
                    kpi: f64::from(row * m),
                })
                .collect(),
        })
        .collect();
    Fixture {
        kpi_sheets: vec![FixtureSheet {
            id: 1,
            name: "Katta varaq".into(),
            month: month("2026-10"),
            shift: "kunduzgi".into(),
            published: true,
            updated_at: LocalDateTime::parse("2026-11-01 09:00:00").unwrap(),
            sheet_totals: FixtureTotals::default(),
            operators,
        }],
        ..Fixture::default()
    }
}

backend_tests! {
    async fn pool_status_shows_open_idle_and_bounded_connections(db: &TestDatabase) {
        let _admin = db.migrated_store().await;
        let store = db.store(Access::ReadOnly);
        let fresh = store.pool_status();
        assert_eq!((fresh.open, fresh.idle, fresh.waiting), (0, 0, 0), "nothing connects before a query");
        assert!(fresh.max_size >= 1);

        store.operators().await.unwrap();
        let used = store.pool_status();
        assert_eq!((used.open, used.idle, used.waiting), (1, 1, 0), "one connection, back in the pool");
        assert_eq!(used.max_size, fresh.max_size);
    }

    async fn a_sheet_of_300_rows_by_15_metrics_is_read_in_at_most_3_statements(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        admin.seed(&big_sheet(300, 15).validate().unwrap(), callstats_store::Existing::Replace).await.unwrap();
        let store = db.store(Access::ReadOnly);

        let before = store.queries_run();
        let content = store.sheet_content(1).await.unwrap().unwrap();
        let statements = store.queries_run() - before;

        assert!(statements <= 3, "{statements} statements");
        assert!(statements >= 1, "the counter sees the statements");
        assert_eq!(content.operators.len(), 300);
        assert!(content.operators.iter().all(|r| r.metrics.len() == 15));
        let row = &content.operators[299];
        assert_eq!((row.row, row.name.as_str()), (304, "Operator 300"));
        assert_eq!(row.metrics[14].name, "M14");
        assert_eq!(row.metrics[14].kpi, 300.0 * 14.0);
    }

    async fn every_other_read_is_one_statement(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        admin.seed(&big_sheet(50, 3).validate().unwrap(), callstats_store::Existing::Replace).await.unwrap();
        let store = db.store(Access::ReadOnly);
        let digest = callstats_domain::access::ApiKeySecret::from_random_bytes(&[9; 32]).digest();
        let range = callstats_domain::calendar::DateRange::up_to_31_days(
            crate::support::day("2026-10-01"),
            crate::support::day("2026-10-31"),
        )
        .unwrap();

        let mut counts = Vec::new();
        let mut count = |before: u64| counts.push(store.queries_run() - before);
        let before = store.queries_run();
        store.operators().await.unwrap();
        count(before);
        let before = store.queries_run();
        store.off_days(month("2026-10")).await.unwrap();
        count(before);
        let before = store.queries_run();
        store.published_sheets(None).await.unwrap();
        count(before);
        let before = store.queries_run();
        store.scripts().await.unwrap();
        count(before);
        let before = store.queries_run();
        store.call_scores(range).await.unwrap();
        count(before);
        let before = store.queries_run();
        store.find_key(&digest).await.unwrap();
        count(before);
        assert_eq!(counts, [1, 1, 1, 1, 1, 1]);
    }
}
