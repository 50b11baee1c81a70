//! `callstats demo` cannot reach a deployment (docs/security.md, "The demo reaching a deployment"):
//! it reads its database and Redis from its command line only, refuses a database holding keys it
//! did not issue, and its key expires within a day and is revoked when it stops; run again on the
//! same file, it works again.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use callstats::commands::demo::KEY_LIFETIME;
use callstats::commands::keys::issue;
use callstats_domain::access::ApiKeySecret;
use callstats_domain::ports::KeyStore as _;
use callstats_domain::scope::ScopeSet;
use callstats_store::Store;
use callstats_store::backend_tests;
use callstats_store::config::{Access, DatabaseUrl, StoreConfig};
use callstats_store::keys::{KeyListing, NewKey};
use time::OffsetDateTime;

use crate::cli::service::{
    client, command, free_address, logs, server, signal, spawn, terminate, wait_exit, wait_healthy,
    work_dir,
};
use crate::cli::{assert_exit, portal_state};

/// `callstats demo` in `dir` on `address`, plus `args`.
fn demo(dir: &Path, address: &str, args: &[&str]) -> Command {
    let mut command = server(dir, "demo", address);
    command.args(args);
    command
}

/// Starts `command` (a demo) and returns it with the key it printed, once it answers.
async fn started(command: Command, dir: &Path, address: &str) -> (Child, ApiKeySecret) {
    let mut child = spawn(command, dir);
    let stdout = child.stdout.take().unwrap();
    let (key_tx, key_rx) = std::sync::mpsc::channel();
    // Reads every line, so the demo never writes to a closed pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(key) = line.strip_prefix("key: ") {
                let _ = key_tx.send(key.to_owned());
            }
        }
    });
    let key = tokio::task::spawn_blocking(move || key_rx.recv_timeout(Duration::from_secs(120)))
        .await
        .unwrap()
        .unwrap_or_else(|_| panic!("no key printed; logs:\n{}", logs(dir)));
    wait_healthy(address, &mut child, dir).await;
    (child, ApiKeySecret::parse(&key).unwrap())
}

/// A read-only store on the SQLite file at `path`.
fn store_at(path: &Path) -> Store {
    let url = DatabaseUrl::parse(&format!("sqlite://{}", path.display())).unwrap();
    Store::open(&StoreConfig::new(url, Access::ReadOnly)).unwrap()
}

async fn ping(address: &str, key: &ApiKeySecret) -> u16 {
    client()
        .get(format!("http://{address}/api/v1/ping"))
        .bearer_auth(key.expose())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_uses_neither_the_database_nor_the_redis_of_the_environment() {
    let dir = work_dir("demo-environment");
    // A deployment's database, which the demo would refuse (it holds a partner's key).
    let deployment = dir.join("deployment.db");
    let deployment_url = format!("sqlite://{}", deployment.display());
    let created = command(
        &dir,
        &["keys", "create", "--name", "partner", "--scopes", "calls"],
    )
    .args(["--database-url", &deployment_url])
    .output()
    .unwrap();
    assert_exit(&created, 0);

    let address = free_address();
    let mut command = demo(&dir, &address, &[]);
    command
        .env("CALLSTATS_DATABASE_URL", &deployment_url)
        // Nothing listens there: with it, /readyz would answer 503 (redis unreachable).
        .env("CALLSTATS_REDIS_URL", "redis://127.0.0.1:1");
    let (child, key) = started(command, &dir, &address).await;
    assert_eq!(ping(&address, &key).await, 200);
    let ready = client()
        .get(format!("http://{address}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());
    assert!(
        store_at(&dir.join("callstats-demo.db"))
            .find_key(&key.digest())
            .await
            .unwrap()
            .is_some(),
        "the key is in the demo's own database"
    );
    let deployment_keys = store_at(&deployment).list_keys().await.unwrap();
    let names: Vec<&str> = deployment_keys
        .iter()
        .map(|key| key.name.as_str())
        .collect();
    assert_eq!(names, ["partner"]);
    let notes = logs(&dir);
    assert!(
        notes.contains("ignores CALLSTATS_DATABASE_URL")
            && notes.contains("ignores CALLSTATS_REDIS_URL"),
        "{notes}"
    );

    let mut child = child;
    terminate(&child);
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(30), &dir).code(),
        Some(0)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

backend_tests! {
    async fn demo_refuses_a_database_holding_a_partner_key_and_changes_nothing(db: &TestDatabase) {
        let admin = db.migrated_store().await;
        let partner = NewKey::new("partner", ScopeSet::parse_list("calls").unwrap()).unwrap();
        issue(&admin, &partner, OffsetDateTime::now_utc()).await.unwrap();
        let keys_before = admin.list_keys().await.unwrap();
        let data_before = portal_state(db).await;

        let dir = work_dir(&format!("demo-refused-{:?}", db.backend()));
        let mut child = spawn(demo(&dir, &free_address(), &["--database-url", db.url()]), &dir);
        let status = wait_exit(&mut child, Duration::from_secs(60), &dir);
        assert_eq!(status.code(), Some(2), "logs:\n{}", logs(&dir));
        let mut printed = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut printed).unwrap();
        assert!(printed.is_empty(), "printed {printed}");
        let message = logs(&dir);
        assert!(
            message.contains("1 key(s) the demo did not issue") && message.contains("nothing was changed"),
            "{message}"
        );
        assert_eq!(admin.list_keys().await.unwrap(), keys_before);
        assert_eq!(portal_state(db).await, data_before, "the demo data set was not loaded");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// The key of `secret` as `keys list` shows it.
async fn listed(store: &Store, secret: &ApiKeySecret) -> KeyListing {
    let id = store.find_key(&secret.digest()).await.unwrap().unwrap().id;
    let keys = store.list_keys().await.unwrap();
    keys.into_iter().find(|key| key.id == id).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_key_expires_within_a_day_is_revoked_on_a_clean_stop_and_a_rerun_works() {
    let dir = work_dir("demo-key");
    let database = dir.join("callstats-demo.db");
    let mut keys = Vec::new();
    // Two runs on the same file, stopped by each signal of a clean stop.
    for stop in ["TERM", "INT"] {
        let address = free_address();
        let (mut child, key) = started(demo(&dir, &address, &[]), &dir, &address).await;
        assert_eq!(ping(&address, &key).await, 200, "run stopped by SIG{stop}");
        let store = store_at(&database);
        let running = listed(&store, &key).await;
        assert_eq!(running.name, "demo");
        assert_eq!(running.revoked_at, None);
        assert_eq!(running.expires_at, Some(running.created_at + KEY_LIFETIME));
        assert_eq!(KEY_LIFETIME, Duration::from_secs(24 * 3600));

        signal(&child, stop);
        let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
        assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
        let stopped = listed(&store, &key).await;
        assert!(stopped.revoked_at.is_some(), "SIG{stop}: {stopped:?}");
        keys.push(key);
    }
    assert_ne!(keys[0].expose(), keys[1].expose());
    let all = store_at(&database).list_keys().await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|key| key.name == "demo" && key.revoked_at.is_some())
    );
    std::fs::remove_dir_all(dir).unwrap();
}
