use std::time::{Duration, Instant};

use callstats_sim::SimOptions;
use callstats_store::Store;
use callstats_store::backend_tests;
use callstats_store::config::{Access, DatabaseUrl, StoreConfig};
use callstats_store::testing::Backend;
use serde_json::json;

use crate::e2e::helpers::*;

backend_tests! {
    async fn a_failing_upstream_gives_503_while_portal_data_still_answers(db: &TestDatabase) {
        let sim = SimOptions { fail_rate: 1.0, ..Spawn::default().sim };
        let app = spawn_app_with(db, Spawn { sim, upstream_retries: 0, ..Spawn::default() }).await;
        let key = app.detail_key().await;
        for path in [format!("/calls/summary?start={DAY}"), format!("/calls/agents?start={DAY}")] {
            for _ in 0..2 {
                let answer = app.get(&path, &key).await;
                assert_eq!(answer.status, 503, "{path}: {}", answer.text());
                assert_eq!(answer.json(), json!({"error": "the upstream call platform is unavailable"}));
                answer.assert_common_headers(&path);
                assert_eq!(answer.header("x-cache"), "MISS", "errors are never cached");
            }
        }
        assert_eq!(app.get("/operators", &key).await.status, 200);
        app.stop().await;
    }

    async fn an_unreachable_portal_database_gives_503(db: &TestDatabase) {
        // A server that is not there: nothing listens on port 1, and no file can be made in a
        // directory that does not exist.
        let url = match db.backend() {
            Backend::Postgres => "postgres://callstats@127.0.0.1:1/portal".to_owned(),
            Backend::Sqlite => format!(
                "sqlite://{}",
                std::env::temp_dir().join("callstats-e2e-missing-dir/sub/portal.db").display()
            ),
        };
        let mut config = StoreConfig::new(DatabaseUrl::parse(&url).unwrap(), Access::ReadOnly);
        config.connect_timeout = Duration::from_secs(1);
        let store = Store::open(&config).unwrap();
        let app = spawn_app_with(db, Spawn { api_store: Some(store), ..Spawn::default() }).await;
        let key = app.detail_key().await;
        let started = Instant::now();
        for path in ["/ping".to_owned(), "/operators".to_owned(), format!("/calls/summary?start={DAY}")] {
            let answer = app.get(&path, &key).await;
            assert_eq!(answer.status, 503, "{path}: {}", answer.text());
            assert_eq!(answer.json(), json!({"error": "portal database unavailable"}));
            answer.assert_common_headers(&path);
        }
        assert!(started.elapsed() < Duration::from_secs(30), "bounded by the connect timeout");
        let anonymous = app.get_with("/ping", &[]).await;
        assert_eq!(anonymous.status, 401, "a missing key needs no database");
        app.stop().await;
    }
}
