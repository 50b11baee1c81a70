//! The portal database going away behind a proxy the test cuts: the endpoints that need it and
//! `/readyz` answer 503 within the connect timeout, keys in use and cached answers go on, and
//! everything answers again when it returns, with no pool left holding dead connections.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use callstats::app::Upstream;
use callstats_domain::use_cases::DEFAULT_ANON_RATE_LIMIT;
use callstats_in_process::MAX_KEY_CACHE_TTL;
use callstats_store::Store;
use callstats_store::config::{Access, DatabaseUrl, StoreConfig};
use callstats_store::testing::{Backend, TestDatabase};
use callstats_synthetic::Generator;

use crate::faults::harness::{
    Proxy, client, eventually, get, issue_key, see, seed_with_key, start, start_with,
};

/// `postgres://USER@HOST:PORT/DB` split into the server's address and the URL with that
/// address replaced by `via`.
fn through(url: &str, via: SocketAddr) -> (SocketAddr, String) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user, rest) = rest.split_once('@').unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let authority_with_port = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:5432")
    };
    let server = authority_with_port
        .to_socket_addrs()
        .unwrap()
        .next()
        .unwrap();
    (server, format!("{scheme}://{user}@{via}/{path}"))
}

/// A seeded Postgres database with a key, reached through a proxy the test can cut, and a
/// store on it with short timeouts; `None` without a Postgres to test against.
async fn behind_a_proxy() -> Option<(TestDatabase, String, Proxy, Store)> {
    let db = TestDatabase::create(Backend::Postgres).await?;
    let url = db.url().to_owned();
    let key = tokio::task::spawn_blocking(move || seed_with_key(&url))
        .await
        .unwrap();
    let (server, _) = through(db.url(), "127.0.0.1:1".parse().unwrap());
    let proxy = Proxy::start(server).await;
    let (_, proxied) = through(db.url(), proxy.address);
    let mut config = StoreConfig::new(DatabaseUrl::parse(&proxied).unwrap(), Access::ReadOnly);
    config.pool_size = 4;
    config.connect_timeout = Duration::from_secs(1);
    config.statement_timeout = Duration::from_secs(2);
    Some((db, key, proxy, Store::open(&config).unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_postgres_gives_503_and_readyz_503_and_everything_recovers_when_it_returns()
{
    let Some((_db, key, proxy, store)) = behind_a_proxy().await else {
        return;
    };
    let service = start(store, Upstream::Synthetic(Generator::default()));
    let client = client();
    let needs_the_store = [
        "/api/v1/operators",
        "/api/v1/kpi/months",
        "/api/v1/scripts/stats",
    ];
    for path in needs_the_store {
        assert_eq!(
            get(&client, &service.base, path, &key).await.0,
            200,
            "{path}"
        );
    }
    assert_eq!(get(&client, &service.base, "/readyz", "").await.0, 200);

    proxy.cut();
    // Connect timeout (1 s) and the probe's own bound (2 s), with room for a loaded machine.
    let bound = Duration::from_secs(6);
    for path in needs_the_store {
        let (status, took) = get(&client, &service.base, path, &key).await;
        assert_eq!(status, 503, "{path}");
        assert!(took < bound, "{path} took {took:?}");
    }
    // /readyz answers from a probe at most 1 s old: the one before the cut may still be reused.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let (status, took) = get(&client, &service.base, "/readyz", "").await;
    assert_eq!(status, 503);
    assert!(took < bound, "/readyz took {took:?}");
    assert_eq!(get(&client, &service.base, "/healthz", "").await.0, 200);

    proxy.restore();
    eventually(
        &client,
        &service.base,
        "/readyz",
        "",
        200,
        Duration::from_secs(10),
    )
    .await;
    // Every pooled connection is usable again: more requests at once than the pool holds.
    let answers = futures_join_all((0..12).map(|i| {
        let (client, base, key) = (client.clone(), service.base.clone(), key.clone());
        let path = needs_the_store[i % needs_the_store.len()];
        async move { (path, get(&client, &base, path, &key).await.0) }
    }))
    .await;
    for (path, status) in answers {
        assert_eq!(status, 200, "{path} after Postgres returned");
    }
}

/// The issue-53 outage: Postgres gone for longer than a key look-up is reused, with more
/// requests than the anonymous quota allows in a minute from the one client address. Keys in
/// use keep working from their last known state: cached answers and call statistics stay 200,
/// never a 429; what needs the portal's data, and keys not seen before the cut, get 503 with
/// `Retry-After`, which counts against no quota; all of it answers again once Postgres is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_cut_keys_in_use_get_no_429_their_cached_answers_stay_200_and_the_rest_503() {
    let Some((db, key, proxy, store)) = behind_a_proxy().await else {
        return;
    };
    let url = db.url().to_owned();
    let unused_key = tokio::task::spawn_blocking(move || issue_key(&url, "unused"))
        .await
        .unwrap();
    let guessed_key = format!("cs_{}", "A".repeat(43));
    let service = start_with(
        store,
        Upstream::Synthetic(Generator::default()),
        |service| {
            service.cache_max_bytes = 16 << 20;
            service.anon_rate_limit = DEFAULT_ANON_RATE_LIMIT;
        },
    );
    let client = client();
    let base = &service.base;
    let cached = [
        "/api/v1/operators",
        "/api/v1/kpi/months",
        "/api/v1/scripts/stats",
        "/api/v1/calls/summary?start=2026-11-20",
    ];
    for path in cached {
        assert_eq!(see(&client, base, path, &key).await.status, 200, "{path}");
    }

    proxy.cut();
    let cut_at = Instant::now();
    let needs_the_portal = [
        "/api/v1/schedule?month=2026-11",
        "/api/v1/kpi/2026-10",
        "/api/v1/scripts/stats?limit=3",
    ];
    let anonymous = u64::from(DEFAULT_ANON_RATE_LIMIT);
    let (mut rounds, mut unchecked) = (0_u32, 0_u64);
    // Past the key look-up's reuse, and twice the anonymous quota in requests whose key could
    // not be checked (so that one UTC minute holds more than the quota, wherever it turns).
    while cut_at.elapsed() < MAX_KEY_CACHE_TTL + Duration::from_secs(2)
        || unchecked <= 2 * anonymous
    {
        rounds += 1;
        for path in cached {
            let seen = see(&client, base, path, &key).await;
            assert_eq!(
                (seen.status, seen.cache.as_deref()),
                (200, Some("HIT")),
                "{path}, round {rounds}: {seen:?}"
            );
        }
        let fresh = format!("/api/v1/calls/summary?start=2026-10-{:02}", 1 + rounds % 28);
        let seen = see(&client, base, &fresh, &key).await;
        assert_eq!(
            seen.status, 200,
            "call statistics need no portal data: {seen:?}"
        );
        for (path, asking) in needs_the_portal.iter().map(|path| (*path, &key)).chain([
            ("/api/v1/operators", &unused_key),
            ("/api/v1/operators", &guessed_key),
        ]) {
            let seen = see(&client, base, path, asking).await;
            assert_eq!(
                (seen.status, seen.retry_after.as_deref(), seen.body.as_str()),
                (503, Some("5"), r#"{"error":"portal database unavailable"}"#),
                "{path}, round {rounds}"
            );
            if asking != &key {
                unchecked += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    proxy.restore();
    eventually(
        &client,
        base,
        needs_the_portal[0],
        &key,
        200,
        Duration::from_secs(10),
    )
    .await;
    for path in needs_the_portal {
        assert_eq!(see(&client, base, path, &key).await.status, 200, "{path}");
    }
    assert_eq!(
        see(&client, base, "/api/v1/operators", &unused_key)
            .await
            .status,
        200
    );
    assert_eq!(
        see(&client, base, "/api/v1/operators", &guessed_key)
            .await
            .status,
        401,
        "a guess is a bad key again, and the outage spent none of the address's quota"
    );
}

/// Runs the futures concurrently on the runtime and collects their outputs in order.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(handles.len());
    for handle in handles {
        outputs.push(handle.await.unwrap());
    }
    outputs
}
