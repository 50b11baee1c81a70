use callstats_store::backend_tests;
use serde_json::json;

use crate::e2e::helpers::*;

backend_tests! {
    async fn every_endpoint_answers_200_from_the_seeded_store_and_the_upstream(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.detail_key().await;

        let ping = app.get("/ping", &key).await;
        assert_eq!(ping.status, 200, "{}", ping.text());
        ping.assert_common_headers("/ping");
        assert_eq!(ping.json()["key_name"], "everything");
        assert_eq!(
            ping.json()["scopes"],
            json!(["calls", "kpi:aggregate", "kpi:detail", "operators", "scripts"])
        );

        let summary = app.get(&format!("/calls/summary?start={DAY}"), &key).await;
        assert_eq!(summary.status, 200, "{}", summary.text());
        summary.assert_common_headers("/calls/summary");
        let body = summary.json();
        assert_eq!(body["period"], json!({"start_date": DAY, "end_date": DAY}));
        assert_eq!((body["direction"].as_str(), body["clamped"].as_bool()), (Some("inbound"), Some(false)));
        assert_eq!(body["timezone"], "+05:00");
        assert!(body["total_calls"].as_u64().unwrap() > 0, "{body}");
        let hourly = body["hourly"].as_array().unwrap();
        assert_eq!(hourly.len(), 24);
        let by_hour: u64 = hourly.iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(by_hour, body["total_calls"].as_u64().unwrap());

        let week = app.get("/calls/summary?start=2026-10-05&end=2026-10-11&direction=outbound", &key).await;
        assert_eq!(week.status, 200, "{}", week.text());
        let body = week.json();
        assert_eq!(body["daily"].as_array().unwrap().len(), 7);
        assert_eq!((body["hourly"].clone(), body["peak_hour"].clone(), body["peak_hour_count"].as_u64()), (json!(null), json!(null), Some(0)));

        let agents = app.get(&format!("/calls/agents?start={DAY}"), &key).await;
        assert_eq!(agents.status, 200, "{}", agents.text());
        agents.assert_common_headers("/calls/agents");
        let list = agents.json()["agents"].as_array().unwrap().clone();
        assert!(!list.is_empty());
        // The roster names agents the upstream knows only by number (both apostrophes intact);
        // an agent missing from the roster is named by their number.
        let roster = [("101", "O'tkir Karimov"), ("102", "Oʻtkir Rahimov"), ("103", "Елена Ким"), ("150", "Gʻayrat Toshmatov")];
        let mut named_from_roster = 0;
        for agent in &list {
            let number = agent["agent_number"].as_str().unwrap();
            let expected = roster.iter().find(|(n, _)| *n == number).map_or(number, |(_, name)| *name);
            named_from_roster += usize::from(expected != number);
            assert_eq!(agent["name"], expected, "{agent}");
        }
        assert!(named_from_roster > 0 && named_from_roster < list.len(), "{list:?}");
        let share: f64 = list.iter().map(|a| a["share_percent"].as_f64().unwrap()).sum();
        assert!((share - 100.0).abs() < 0.5, "{share}");

        let months = app.get("/kpi/months", &key).await;
        assert_eq!(months.status, 200, "{}", months.text());
        months.assert_common_headers("/kpi/months");
        let shifts: Vec<_> = months.json()["sheets"].as_array().unwrap().iter()
            .map(|s| (s["id"].as_i64().unwrap(), s["shift"].as_str().unwrap().to_owned())).collect();
        assert_eq!(shifts, [(11, "kunduzgi".to_owned()), (12, "tungi".to_owned())], "published only, no draft");

        let kpi = app.get(&format!("/kpi/{MONTH}"), &key).await;
        assert_eq!(kpi.status, 200, "{}", kpi.text());
        kpi.assert_common_headers("/kpi/{month}");
        let body = kpi.json();
        assert_eq!(body["granularity"], "detail");
        assert_eq!(body["sheet"]["shift"], "kunduzgi", "lowest-sorting shift by default");
        assert_eq!(body["currency"], "UZS");
        assert_eq!(body["operator_count"], 3, "the row without agent number counts");
        let rows = body["operators"].as_array().unwrap();
        assert_eq!(rows[0]["name"], "O'tkir Karimov");
        assert_eq!(rows[1]["name"], "Елена Ким");
        assert_eq!(rows[2]["agent_number"], json!(null));
        assert_eq!(body["totals"]["fiksa"], json!(null), "not tracked, not zero");
        assert_eq!(body["totals"]["payout"], 6_800_000.0);
        assert_eq!(body["sheet_totals"]["payout"], 7_000_000.0, "the sheet's own, disagreeing figure");

        let night = app.get(&format!("/kpi/{MONTH}?shift=tungi"), &key).await;
        assert_eq!(night.status, 200, "{}", night.text());
        assert_eq!(night.json()["operators"][0]["name"], "Oʻtkir Rahimov");

        let roster = app.get("/operators", &key).await;
        assert_eq!(roster.status, 200, "{}", roster.text());
        roster.assert_common_headers("/operators");
        let operators = roster.json()["operators"].as_array().unwrap().clone();
        let numbers: Vec<_> = operators.iter().map(|o| o["agent_number"].as_str().unwrap()).collect();
        assert_eq!(numbers, ["101", "102", "103", "150"]);
        assert_eq!(operators[3]["staff_role"], "supervisor", "staff are listed, labelled");
        assert_eq!(operators[2]["name"], "Елена Ким");

        let schedule = app.get(&format!("/schedule?month={MONTH}"), &key).await;
        assert_eq!(schedule.status, 200, "{}", schedule.text());
        schedule.assert_common_headers("/schedule");
        assert_eq!(
            schedule.json(),
            json!({"month": MONTH, "off_days": [
                {"agent_number": "101", "name": "O'tkir Karimov", "date": "2026-10-03", "kind": "dam", "source": "auto"},
                {"agent_number": "102", "name": "Oʻtkir Rahimov", "date": "2026-10-03", "kind": "unpaid", "source": "admin"},
                {"agent_number": "103", "name": "Елена Ким", "date": "2026-10-17", "kind": "dam", "source": "swap"}
            ]})
        );
        let empty = app.get("/schedule?month=2026-12", &key).await;
        assert_eq!((empty.status, empty.json()["off_days"].clone()), (200, json!([])));

        let scripts = app.get("/scripts/stats?limit=2", &key).await;
        assert_eq!(scripts.status, 200, "{}", scripts.text());
        scripts.assert_common_headers("/scripts/stats");
        assert_eq!(
            scripts.json(),
            json!({"scripts": [
                {"id": 1, "title": {"uz": "Salomlashish", "ru": "Приветствие"},
                 "category": {"uz": "Kirish", "ru": "Вступление"}, "views": 42},
                {"id": 3, "title": {"uz": "Toʻlovni tekshirish", "ru": "Проверка оплаты"},
                 "category": {"uz": "Toʻlovlar", "ru": "Платежи"}, "views": 42}
            ]})
        );
        assert!(scripts.text().contains("Приветствие"), "UTF-8, not escaped: {}", scripts.text());
        app.stop().await;
    }

    async fn malformed_parameters_are_400_naming_the_parameter(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.detail_key().await;
        for (path, parameter) in [
            ("/calls/summary", "start"),
            ("/calls/summary?start=2026-02-30", "start"),
            ("/calls/summary?start=2026-10-05&end=2026-10-01", "end"),
            ("/calls/summary?start=2026-10-05&direction=Inbound", "direction"),
            ("/calls/summary?start=2026-10-05&direction=", "direction"),
            ("/calls/agents", "start"),
            ("/calls/agents?start=2026-10-05&direction=sideways", "direction"),
            ("/kpi/2026-13", "month"),
            ("/kpi/2026-00", "month"),
            ("/schedule", "month"),
            ("/schedule?month=2026-1", "month"),
            ("/scripts/stats?limit=0", "limit"),
            ("/scripts/stats?limit=101", "limit"),
            ("/scripts/stats?limit=", "limit"),
        ] {
            let answer = app.get(path, &key).await;
            assert_eq!(answer.status, 400, "{path}: {}", answer.text());
            answer.assert_common_headers(path);
            assert_eq!(answer.header("x-cache"), "MISS", "{path}");
            assert!(answer.error().contains(&format!("'{parameter}'")), "{path}: {}", answer.error());
        }
        app.stop().await;
    }

    async fn missing_data_is_404_and_names_the_shifts_that_exist(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.detail_key().await;
        let draft_only = app.get("/kpi/2026-11", &key).await;
        assert_eq!(draft_only.status, 404, "a month with only a draft: {}", draft_only.text());
        draft_only.assert_common_headers("/kpi/2026-11");
        assert!(!draft_only.text().contains("DRAFT"));
        let nothing = app.get("/kpi/2025-01", &key).await;
        assert_eq!(nothing.status, 404);
        let shift = app.get(&format!("/kpi/{MONTH}?shift=kechki"), &key).await;
        assert_eq!(shift.status, 404);
        let message = shift.error();
        assert!(message.contains("kunduzgi") && message.contains("tungi"), "{message}");
        let unknown = app.get("/nowhere", &key).await;
        assert_eq!(unknown.status, 404);
        unknown.assert_common_headers("/nowhere");
        assert_eq!(unknown.header("x-ratelimit-limit"), "120", "the key's quota");
        app.stop().await;
    }

    async fn the_openapi_document_needs_no_key_and_carries_the_anonymous_quota(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let first = app.get_with("/openapi.json", &[]).await;
        assert_eq!(first.status, 200);
        first.assert_common_headers("/openapi.json");
        assert_eq!(first.json()["openapi"], "3.1.0");
        assert!(first.json()["paths"]["/api/v1/calls/summary"].is_object(), "{}", first.json()["paths"]);
        assert_eq!(first.header("x-ratelimit-limit"), "60");
        let second = app.get_with("/openapi.json", &[]).await;
        assert_eq!(
            second.header("x-ratelimit-remaining").parse::<u32>().unwrap() + 1,
            first.header("x-ratelimit-remaining").parse::<u32>().unwrap(),
            "each request counts against the per-IP quota"
        );
        app.stop().await;
    }
}
