//! The portal database going away behind a proxy the test cuts: the endpoints that need it and
//! `/readyz` answer 503 within the connect timeout, and everything answers again when it
//! returns, with no pool left holding dead connections.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::time::Duration;

use callstats::app::Upstream;
use callstats_store::Store;
use callstats_store::config::{Access, DatabaseUrl, StoreConfig};
use callstats_store::testing::{Backend, TestDatabase};
use callstats_synthetic::Generator;

use crate::faults::harness::{Proxy, client, eventually, get, seed_with_key, start};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_postgres_gives_503_and_readyz_503_and_everything_recovers_when_it_returns()
{
    let Some(db) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
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
    let service = start(
        Store::open(&config).unwrap(),
        Upstream::Synthetic(Generator::default()),
    );
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
