use callstats_store::backend_tests;

use crate::e2e::helpers::*;

/// Every operator name and agent number of the fixture's October sheets.
const NAMES: [&str; 5] = ["O'tkir", "Oʻtkir", "Елена", "Shahnoza", "Gʻayrat"];
const AGENT_NUMBERS: [&str; 4] = ["\"101\"", "\"102\"", "\"103\"", "\"150\""];

backend_tests! {
    async fn aggregate_kpi_bodies_hold_no_names_and_no_agent_numbers(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.key("aggregate", "kpi:aggregate").await;
        for path in [format!("/kpi/{MONTH}"), format!("/kpi/{MONTH}?shift=tungi")] {
            let answer = app.get(&path, &key).await;
            assert_eq!(answer.status, 200, "{path}: {}", answer.text());
            let body = answer.json();
            assert_eq!(body["granularity"], "aggregate");
            assert!(body.get("operators").is_none(), "{body}");
            let text = answer.text();
            assert!(!text.contains("agent_number"), "{path}: {text}");
            for needle in NAMES.iter().chain(&AGENT_NUMBERS) {
                assert!(!text.contains(needle), "{path}: {needle} in {text}");
            }
            for rank in body["ranks"].as_array().unwrap() {
                let mut fields: Vec<_> = rank.as_object().unwrap().keys().cloned().collect();
                fields.sort();
                assert_eq!(fields, ["kpi_percent", "payout", "rank"], "{rank}");
            }
        }
        let day_sheet = app.get(&format!("/kpi/{MONTH}"), &key).await.json();
        assert_eq!(day_sheet["operator_count"], 3);
        assert_eq!(day_sheet["ranks"].as_array().unwrap().len(), 3);
        assert_eq!(day_sheet["distribution"]["payout"]["max"], 4_500_000.0);
        app.stop().await;
    }

    async fn no_body_of_any_endpoint_holds_a_username_or_phone(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let detail = app.detail_key().await;
        let aggregate = app.key("aggregate", "calls,kpi:aggregate,operators,scripts").await;
        let mut bodies = Vec::new();
        for key in [&detail, &aggregate] {
            for path in [
                "/ping".to_owned(),
                format!("/calls/summary?start={DAY}"),
                format!("/calls/agents?start={DAY}&end=2026-10-06"),
                "/kpi/months".to_owned(),
                format!("/kpi/{MONTH}"),
                format!("/kpi/{MONTH}?shift=tungi"),
                format!("/kpi/{MONTH}?shift=kechki"),
                "/operators".to_owned(),
                format!("/schedule?month={MONTH}"),
                "/schedule?month=2026-13".to_owned(),
                "/scripts/stats?limit=100".to_owned(),
                "/nowhere".to_owned(),
            ] {
                let answer = app.get(&path, key).await;
                assert!(matches!(answer.status, 200 | 400 | 404), "{path}: {}", answer.text());
                bodies.push((path, answer.text()));
            }
        }
        for (path, body) in &bodies {
            assert!(!body.contains("username") && !body.contains("phone"), "{path}: {body}");
        }
        // The document mentions the words (to say they are never returned), never the values.
        bodies.push(("/openapi.json".to_owned(), app.get_with("/openapi.json", &[]).await.text()));
        for (path, body) in &bodies {
            for private in PRIVATE {
                assert!(!body.contains(private), "{path} shows {private}");
            }
        }
        app.stop().await;
    }
}
