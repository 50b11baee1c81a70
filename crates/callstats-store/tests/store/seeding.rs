//! Seeding replaces the portal data in one transaction, keeps keys, and nothing private is read.

use callstats_domain::access::ApiKeySecret;
use callstats_domain::error::cause_chain;
use callstats_domain::ports::{KeyStore, PortalStore};
use callstats_domain::scope::ScopeSet;
use callstats_store::Store;
use callstats_store::backend_tests;
use callstats_store::config::Access;
use callstats_store::fixture::ValidFixture;
use callstats_store::keys::NewKey;
use callstats_store::testing::Backend;
use time::macros::datetime;

use crate::support::{PORTAL, day, month, portal, seeded};

/// Everything the API can read, as text: equal snapshots mean equal data.
async fn snapshot(store: &Store) -> String {
    let mut text = format!("{:?}\n", store.operators().await.unwrap());
    for m in ["2026-09", "2026-10", "2026-11", "2026-12"] {
        text += &format!("{:?}\n", store.off_days(month(m)).await.unwrap());
    }
    let sheets = store.published_sheets(None).await.unwrap();
    text += &format!("{sheets:?}\n");
    for sheet in &sheets {
        text += &format!("{:?}\n", store.sheet_content(sheet.id).await.unwrap());
    }
    text += &format!("{:?}\n", store.scripts().await.unwrap());
    let range =
        callstats_domain::calendar::DateRange::up_to_31_days(day("2026-10-15"), day("2026-11-14"))
            .unwrap();
    text += &format!("{:?}\n", store.call_scores(range).await.unwrap());
    text
}

fn secret(byte: u8) -> ApiKeySecret {
    ApiKeySecret::from_random_bytes(&[byte; 32])
}

const ONE_OPERATOR: &str = r#"{"operators": [{"agent_number": "555", "name": "Nodira",
    "team": "C", "shift": "kunduzgi", "joined_at": "2026-01-05 09:00:00"}]}"#;

backend_tests! {
    async fn seeding_replaces_all_portal_data_but_keeps_keys(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        admin.seed(&portal(), callstats_store::Existing::Replace).await.unwrap();
        let key = NewKey::new("partner", ScopeSet::all()).unwrap();
        admin.create_key(&key, &secret(1), datetime!(2026-11-21 06:00 UTC)).await.unwrap();

        admin.seed(&ValidFixture::from_json(ONE_OPERATOR).unwrap(), callstats_store::Existing::Replace).await.unwrap();
        let store = db.store(Access::ReadOnly);
        let roster = store.operators().await.unwrap();
        assert_eq!(roster.len(), 1);
        assert_eq!(roster[0].name, "Nodira");
        assert!(store.published_sheets(None).await.unwrap().is_empty());
        assert_eq!(store.sheet_content(7).await.unwrap(), None);
        assert!(store.scripts().await.unwrap().is_empty());
        assert!(store.off_days(month("2026-11")).await.unwrap().is_empty());
        let range = callstats_domain::calendar::DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-02")).unwrap();
        assert!(store.call_scores(range).await.unwrap().is_empty());
        let found = store.find_key(&secret(1).digest()).await.unwrap().unwrap();
        assert_eq!(&*found.name, "partner");
    }

    async fn without_replace_a_database_holding_portal_data_is_left_as_it_is(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        admin.seed(&portal(), callstats_store::Existing::Refuse).await.unwrap();
        let store = db.store(Access::ReadOnly);
        let before = snapshot(&store).await;
        let refused = admin
            .seed(&ValidFixture::from_json(ONE_OPERATOR).unwrap(), callstats_store::Existing::Refuse)
            .await
            .unwrap_err();
        assert!(matches!(refused, callstats_store::SeedError::HoldsData), "{refused}");
        assert_eq!(snapshot(&store).await, before);
        // Scripts alone are portal data too.
        admin.seed(&ValidFixture::from_json(ONE_OPERATOR).unwrap(), callstats_store::Existing::Replace).await.unwrap();
        assert_eq!(store.operators().await.unwrap().len(), 1);
    }

    async fn seeding_the_same_fixture_twice_gives_the_same_data(db: &TestDatabase) {
        let store = seeded(db).await;
        let first = snapshot(&store).await;
        db.migrated_store().await.seed(&portal(), callstats_store::Existing::Replace).await.unwrap();
        assert_eq!(snapshot(&store).await, first);
    }

    async fn a_seed_that_fails_part_way_leaves_the_database_as_it_was(db: &TestDatabase) {
        let store = seeded(db).await;
        let before = snapshot(&store).await;
        // call_scores is written last, after every other table was emptied and refilled.
        db.execute_sql(match db.backend() {
            Backend::Sqlite => "CREATE TRIGGER refuse_scores BEFORE INSERT ON call_scores \
                                BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
            Backend::Postgres => "CREATE FUNCTION refuse_scores() RETURNS trigger LANGUAGE plpgsql \
                                  AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$; \
                                  CREATE TRIGGER refuse_scores BEFORE INSERT ON call_scores \
                                  FOR EACH ROW EXECUTE FUNCTION refuse_scores();",
        })
        .await;
        let other = ValidFixture::from_json(&PORTAL.replace("Salomlashish", "Assalomu alaykum"))
            .unwrap();
        let error = db.migrated_store().await.seed(&other, callstats_store::Existing::Replace).await.unwrap_err();
        let error = cause_chain(&error);
        assert!(error.contains("injected failure"), "{error}");
        assert_eq!(snapshot(&store).await, before);
        assert!(before.contains("Salomlashish"));
    }

    async fn no_read_returns_usernames_or_phones(db: &TestDatabase) {
        let store = seeded(db).await;
        let everything = snapshot(&store).await;
        assert!(everything.contains("Oʻtkir Rahimov"), "the snapshot reads the roster");
        for private in ["otkir.k.private", "otkir.r.private", "gayrat.private", "private", "+99890111", "998901110"] {
            assert!(!everything.contains(private), "{private} leaked: {everything}");
        }
    }

    async fn the_api_store_cannot_write(db: &TestDatabase) {
        let store = seeded(db).await;
        let error = store.seed(&portal(), callstats_store::Existing::Replace).await.unwrap_err();
        let error = cause_chain(&error);
        assert!(error.contains("readonly") || error.contains("read-only"), "{error}");
        assert_eq!(store.operators().await.unwrap().len(), 4);
    }
}
