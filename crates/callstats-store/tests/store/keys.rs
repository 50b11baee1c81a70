//! Keys: only digests are stored; look-ups return revoked and expired keys for the domain to
//! judge; revocation by id or by name.

use callstats_domain::access::{ApiKeySecret, DEFAULT_RATE_LIMIT, Unauthorized};
use callstats_domain::ports::KeyStore;
use callstats_domain::scope::ScopeSet;
use callstats_store::backend_tests;
use callstats_store::config::Access;
use callstats_store::keys::{KeyError, NewKey};
use time::macros::datetime;

fn secret(byte: u8) -> ApiKeySecret {
    ApiKeySecret::from_random_bytes(&[byte; 32])
}

backend_tests! {
    async fn key_digests_are_every_keys_revoked_ones_included(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let now = datetime!(2026-11-21 06:00:00 UTC);
        let store = db.store(Access::ReadOnly);
        assert!(store.key_digests().await.unwrap().is_empty());
        let new = |name: &str| NewKey::new(name, ScopeSet::parse_list("calls").unwrap()).unwrap();
        admin.create_key(&new("a"), &secret(1), now).await.unwrap();
        admin.create_key(&new("b"), &secret(2), now).await.unwrap();
        admin.revoke_keys("b", now).await.unwrap();
        let mut digests = store.key_digests().await.unwrap();
        digests.sort_by_key(|digest| digest.0);
        let mut expected = vec![secret(1).digest(), secret(2).digest()];
        expected.sort_by_key(|digest| digest.0);
        assert_eq!(digests, expected);
    }

    async fn a_created_key_is_found_by_its_digest_with_everything_it_may_do(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let now = datetime!(2026-11-21 06:00:00 UTC);
        let key = NewKey::new("Partner Dash", ScopeSet::parse_list("kpi:detail,calls").unwrap())
            .unwrap()
            .rate_limit(30)
            .unwrap()
            .origin("Dash.Example.uz")
            .unwrap()
            .expires_at(datetime!(2027-01-01 00:00:00 UTC));
        let listed = admin.create_key(&key, &secret(7), now).await.unwrap();
        assert_eq!(listed.name, "Partner Dash");
        assert_eq!(listed.display_prefix, secret(7).display_prefix());
        assert_eq!(listed.created_at, now);

        let store = db.store(Access::ReadOnly);
        let found = store.find_key(&secret(7).digest()).await.unwrap().unwrap();
        assert_eq!(found.id, listed.id);
        assert_eq!(&*found.name, "Partner Dash");
        assert_eq!(found.scopes.to_list(), "calls,kpi:aggregate,kpi:detail");
        assert_eq!(found.rate_limit_per_minute, 30);
        assert_eq!(found.allowed_origin.as_deref(), Some("dash.example.uz"));
        assert_eq!(found.expires_at, Some(datetime!(2027-01-01 00:00:00 UTC)));
        assert_eq!(found.revoked_at, None);
        assert_eq!(store.find_key(&secret(8).digest()).await.unwrap(), None);
    }

    async fn keys_are_stored_as_digests_only(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let key = NewKey::new("partner", ScopeSet::all()).unwrap();
        admin.create_key(&key, &secret(3), datetime!(2026-11-21 06:00 UTC)).await.unwrap();
        let listing = format!("{:?}", admin.list_keys().await.unwrap());
        let plaintext = secret(3).expose().to_owned();
        assert!(!listing.contains(&plaintext), "{listing}");
        assert!(!listing.contains(&plaintext[7..]), "{listing}");
        assert!(listing.contains(secret(3).display_prefix()), "{listing}");
        // The same key cannot be stored twice: its digest is unique.
        assert!(admin.create_key(&key, &secret(3), datetime!(2026-11-21 06:00 UTC)).await.is_err());
    }

    async fn revoked_and_expired_keys_are_still_found_for_the_domain_to_refuse(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let now = datetime!(2026-11-21 06:00:00 UTC);
        let expired = NewKey::new("old", ScopeSet::all())
            .unwrap()
            .expires_at(datetime!(2026-01-01 00:00:00 UTC));
        admin.create_key(&expired, &secret(1), now).await.unwrap();
        let live = NewKey::new("live", ScopeSet::all()).unwrap();
        let listed = admin.create_key(&live, &secret(2), now).await.unwrap();
        let revocation = admin.revoke_keys(&listed.id.to_string(), now).await.unwrap();
        assert_eq!(revocation.revoked, [(listed.id, "live".to_owned())]);

        let store = db.store(Access::ReadOnly);
        let old = store.find_key(&secret(1).digest()).await.unwrap().unwrap();
        assert_eq!(old.check_usable(now), Err(Unauthorized::Expired));
        let revoked = store.find_key(&secret(2).digest()).await.unwrap().unwrap();
        assert_eq!(revoked.revoked_at, Some(now));
        assert_eq!(revoked.check_usable(now), Err(Unauthorized::Revoked));
    }

    async fn revoking_by_name_revokes_every_key_of_that_name_once(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let now = datetime!(2026-11-21 06:00:00 UTC);
        let demo = NewKey::new("demo", ScopeSet::all()).unwrap();
        let first = admin.create_key(&demo, &secret(1), now).await.unwrap();
        let second = admin.create_key(&demo, &secret(2), now).await.unwrap();
        let other = admin
            .create_key(&NewKey::new("other", ScopeSet::all()).unwrap(), &secret(3), now)
            .await
            .unwrap();

        let revocation = admin.revoke_keys("demo", now).await.unwrap();
        assert_eq!(
            revocation.revoked,
            [(first.id, "demo".to_owned()), (second.id, "demo".to_owned())]
        );
        assert_eq!(revocation.already_revoked, 0);

        let later = datetime!(2026-11-22 06:00:00 UTC);
        let again = admin.revoke_keys("demo", later).await.unwrap();
        assert!(again.revoked.is_empty());
        assert_eq!(again.already_revoked, 2);

        let keys = admin.list_keys().await.unwrap();
        let states: Vec<_> = keys.iter().map(|k| (k.id, k.revoked_at)).collect();
        assert_eq!(states, [(first.id, Some(now)), (second.id, Some(now)), (other.id, None)]);
        assert_eq!(keys[2].rate_limit_per_minute, DEFAULT_RATE_LIMIT);
        assert!(matches!(admin.revoke_keys("nobody", now).await, Err(KeyError::NotFound(_))));
        assert!(matches!(admin.revoke_keys("999", now).await, Err(KeyError::NotFound(_))));
    }

    async fn extending_a_key_moves_its_expiry_only_while_it_is_usable(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let now = datetime!(2026-11-21 06:00:00 UTC);
        let day_later = datetime!(2026-11-22 06:00:00 UTC);
        let create = |name: &str, byte: u8, expires_at| {
            let key = NewKey::new(name, ScopeSet::all()).unwrap().expires_at(expires_at);
            let admin = &admin;
            async move { admin.create_key(&key, &secret(byte), now).await.unwrap().id }
        };
        let live = create("live", 1, day_later).await;
        let expired = create("expired", 2, now).await;
        let revoked = create("revoked", 3, day_later).await;
        admin.revoke_keys("revoked", now).await.unwrap();

        let two_days_later = datetime!(2026-11-23 06:00:00 UTC);
        assert!(admin.extend_key(live, two_days_later, now).await.unwrap());
        assert!(!admin.extend_key(expired, two_days_later, now).await.unwrap());
        assert!(!admin.extend_key(revoked, two_days_later, now).await.unwrap());
        assert!(!admin.extend_key(999, two_days_later, now).await.unwrap());
        let expiries: Vec<_> = admin.list_keys().await.unwrap().iter().map(|k| k.expires_at).collect();
        assert_eq!(expiries, [Some(two_days_later), Some(now), Some(day_later)]);
    }
}

#[test]
fn key_requests_are_checked_before_anything_is_stored() {
    let all = ScopeSet::all();
    assert!(matches!(NewKey::new("", all), Err(KeyError::InvalidName)));
    assert!(matches!(NewKey::new("42", all), Err(KeyError::InvalidName)));
    assert!(matches!(
        NewKey::new("a\nb", all),
        Err(KeyError::InvalidName)
    ));
    assert!(matches!(
        NewKey::new(&"k".repeat(101), all),
        Err(KeyError::InvalidName)
    ));
    assert_eq!(NewKey::new("  partner  ", all).unwrap().name(), "partner");
    let key = NewKey::new("partner", all).unwrap();
    assert!(matches!(
        key.clone().rate_limit(0),
        Err(KeyError::InvalidRateLimit(0))
    ));
    for bad in [
        "https://dash.example.uz",
        "dash.example.uz:443",
        "dash.example.uz/x",
        "",
        ".uz",
        "a b",
    ] {
        assert!(
            matches!(key.clone().origin(bad), Err(KeyError::InvalidOrigin(_))),
            "{bad}"
        );
    }
}
