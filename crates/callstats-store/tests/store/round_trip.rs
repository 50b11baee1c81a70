//! Seed the portal fixture, read every resource back, compare field by field.

use callstats_domain::calendar::{DateRange, LocalDateTime};
use callstats_domain::model::{
    AgentNumber, KpiTotals, LocalizedText, Metric, OffDayKind, OffDaySource, Sentiment,
};
use callstats_domain::ports::PortalStore;
use callstats_store::backend_tests;
use time::macros::datetime;

use crate::support::{day, month, seeded};

fn agent(raw: &str) -> AgentNumber {
    AgentNumber::new(raw).unwrap()
}

fn at(raw: &str) -> LocalDateTime {
    LocalDateTime::parse(raw).unwrap()
}

backend_tests! {
    async fn roster_reads_back_every_field_in_agent_number_order(db: &TestDatabase) {
        let store = seeded(db).await;
        let roster = store.operators().await.unwrap();
        let summary: Vec<_> = roster
            .iter()
            .map(|o| {
                (
                    o.agent_number.as_str(),
                    o.name.as_str(),
                    o.team.as_str(),
                    o.shift.as_str(),
                    o.staff_role.as_deref(),
                    o.joined_at,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("090", "Gʻayrat Toshmatov", "B", "kunduzgi", Some("supervisor"), at("2021-06-01 09:00:00")),
                ("101", "O'tkir Karimov", "A", "kunduzgi", None, at("2025-03-01 09:00:00")),
                ("102", "Oʻtkir Rahimov", "A", "tungi", None, at("2024-11-15 08:30:00")),
                ("103", "Елена Ким", "B", "kunduzgi", None, at("2023-01-09 10:00:00")),
            ]
        );
    }

    async fn off_days_are_those_dated_in_the_month_by_date_then_agent(db: &TestDatabase) {
        let store = seeded(db).await;
        let days = store.off_days(month("2026-11")).await.unwrap();
        let summary: Vec<_> = days
            .iter()
            .map(|d| (d.date.to_string(), d.agent_number.as_str(), d.kind, d.source))
            .collect();
        assert_eq!(
            summary,
            [
                ("2026-11-01".to_owned(), "101", OffDayKind::Dam, OffDaySource::Admin),
                ("2026-11-03".to_owned(), "101", OffDayKind::Dam, OffDaySource::Auto),
                ("2026-11-03".to_owned(), "102", OffDayKind::Unpaid, OffDaySource::Admin),
                ("2026-11-12".to_owned(), "199", OffDayKind::Dam, OffDaySource::Auto),
                ("2026-11-30".to_owned(), "103", OffDayKind::Dam, OffDaySource::Swap),
            ]
        );
        assert!(store.off_days(month("2026-08")).await.unwrap().is_empty());
        assert_eq!(store.off_days(month("2026-12")).await.unwrap().len(), 1);
        // The calendar's first and last months are months like any other.
        assert!(store.off_days(month("9999-12")).await.unwrap().is_empty());
        assert!(store.off_days(month("0001-01")).await.unwrap().is_empty());
    }

    async fn published_sheets_read_back_without_drafts(db: &TestDatabase) {
        let store = seeded(db).await;
        let sheets = store.published_sheets(None).await.unwrap();
        let summary: Vec<_> = sheets
            .iter()
            .map(|s| (s.id, s.name.as_str(), s.month.to_string(), s.shift.as_str(), s.updated_at))
            .collect();
        assert_eq!(
            summary,
            [
                (7, "Oktyabr 2026 — kunduzgi", "2026-10".to_owned(), "kunduzgi", at("2026-11-02 18:00:00")),
                (8, "Oktyabr 2026 — tungi", "2026-10".to_owned(), "tungi", at("2026-11-02 18:05:00")),
                (3, "Sentyabr 2026", "2026-09".to_owned(), "kunduzgi", at("2026-10-01 09:00:00")),
            ]
        );
        let october: Vec<_> = store
            .published_sheets(Some(month("2026-10")))
            .await
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(october, [7, 8]);
    }

    async fn sheet_content_reads_back_totals_rows_and_metrics_in_order(db: &TestDatabase) {
        let store = seeded(db).await;
        let content = store.sheet_content(7).await.unwrap().unwrap();
        assert_eq!(
            content.sheet_totals,
            KpiTotals {
                kpi_sum: Some(999.0),
                fiksa: Some(6_000_000.0),
                bonus: Some(0.0),
                fine: Some(50_000.0),
                payout: None,
            }
        );
        let rows = &content.operators;
        assert_eq!(rows.iter().map(|r| r.row).collect::<Vec<_>>(), [5, 9, 12]);

        let first = &rows[0];
        assert_eq!(first.agent_number, Some(agent("101")));
        assert_eq!(first.name, "O'tkir Karimov");
        assert_eq!(
            (first.kpi_percent, first.kpi_sum, first.fiksa, first.bonus, first.fine, first.payout),
            (0.92, 1_000_000.0, Some(3_000_000.0), None, Some(50_000.0), Some(3_950_000.0))
        );
        assert_eq!(
            first.metrics,
            [
                Metric { name: "AHT".into(), value: 182.0, ratio: Some(0.95), kpi: 300_000.0 },
                Metric { name: "FCR".into(), value: 0.74, ratio: Some(0.9), kpi: 300_000.0 },
                Metric { name: "Sifat".into(), value: 88.5, ratio: Some(0.93), kpi: 400_000.0 },
            ]
        );

        let second = &rows[1];
        assert_eq!(second.agent_number, Some(agent("103")));
        assert_eq!(second.name, "Елена Ким");
        assert_eq!(
            (second.kpi_percent, second.kpi_sum, second.fiksa, second.bonus, second.fine, second.payout),
            (1.0312, 1_250_000.5, Some(3_000_000.0), Some(100_000.0), None, Some(4_350_000.5))
        );
        assert_eq!(
            second.metrics.iter().map(|m| (m.name.as_str(), m.value, m.ratio, m.kpi)).collect::<Vec<_>>(),
            [("AHT", 171.5, Some(1.05), 400_000.0), ("FCR", 0.81, None, 350_000.5), ("Sifat", 92.0, Some(0.98), 500_000.0)]
        );

        let unnamed = &rows[2];
        assert_eq!(unnamed.agent_number, None);
        assert_eq!(unnamed.name, "Shahnoza (shartnoma)");
        assert_eq!(
            (unnamed.kpi_percent, unnamed.kpi_sum, unnamed.fiksa, unnamed.bonus, unnamed.fine, unnamed.payout),
            (0.5, 0.0, None, None, None, None)
        );
        assert!(unnamed.metrics.is_empty());

        let night = store.sheet_content(8).await.unwrap().unwrap();
        assert_eq!(night.operators.len(), 1);
        assert_eq!(night.operators[0].metrics[0].ratio, None);
        assert_eq!(night.sheet_totals.fiksa, None);
    }

    async fn scripts_read_back_with_both_languages_and_large_counts(db: &TestDatabase) {
        let store = seeded(db).await;
        let scripts = store.scripts().await.unwrap();
        let summary: Vec<_> = scripts.iter().map(|s| (s.id, s.views)).collect();
        assert_eq!(summary, [(5, 9_007_199_254_740_993), (1, 42), (2, 0)]);
        let greeting = scripts.iter().find(|s| s.id == 1).unwrap();
        assert_eq!(
            greeting.title,
            LocalizedText { uz: "Salomlashish".into(), ru: "Приветствие".into() }
        );
        assert_eq!(
            greeting.category,
            LocalizedText { uz: "Kirish".into(), ru: "Вступление".into() }
        );
        let payment = scripts.iter().find(|s| s.id == 5).unwrap();
        assert_eq!(payment.title.uz, "Toʻlovni tekshirish");
        assert_eq!(payment.category.ru, "Платежи");
    }

    async fn call_scores_are_those_started_in_the_tashkent_days_of_the_range(db: &TestDatabase) {
        let store = seeded(db).await;
        let range = DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-02")).unwrap();
        let scores = store.call_scores(range).await.unwrap();
        let summary: Vec<_> = scores
            .iter()
            .map(|s| (s.agent_number.as_str(), s.started_at, s.checklist_percent, s.sentiment))
            .collect();
        assert_eq!(
            summary,
            [
                ("102", datetime!(2026-11-01 00:00:00 +5).unix_timestamp(), 0.0, Sentiment::Negative),
                ("101", datetime!(2026-11-01 09:15:22 +5).unix_timestamp(), 87.5, Sentiment::Positive),
                ("103", datetime!(2026-11-02 23:59:59 +5).unix_timestamp(), 100.0, Sentiment::Neutral),
            ]
        );
        let next_day = DateRange::up_to_31_days(day("2026-11-03"), day("2026-11-03")).unwrap();
        let scores = store.call_scores(next_day).await.unwrap();
        assert_eq!(scores.len(), 1);
        assert_eq!(scores[0].started_at, datetime!(2026-11-03 00:00:00 +5).unix_timestamp());
    }

    async fn drafts_are_invisible_to_every_read(db: &TestDatabase) {
        let store = seeded(db).await;
        assert!(store.published_sheets(Some(month("2026-11"))).await.unwrap().is_empty());
        assert_eq!(store.sheet_content(9).await.unwrap(), None);
        assert_eq!(store.sheet_content(404).await.unwrap(), None);
        let all = store.published_sheets(None).await.unwrap();
        assert!(all.iter().all(|s| s.id != 9), "{all:?}");
        for sheet in &all {
            let content = store.sheet_content(sheet.id).await.unwrap().unwrap();
            let text = format!("{content:?}");
            assert!(!text.contains("DRAFT"), "sheet {}: {text}", sheet.id);
        }
    }
}
