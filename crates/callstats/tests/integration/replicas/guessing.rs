//! Guessed keys against a real Postgres: a flood from one address costs the database one read of
//! the key digests per interval, not one look-up per guess.

use std::process::Command;
use std::time::Duration;

use callstats_domain::access::ApiKeySecret;
use callstats_store::testing::{Backend, TestDatabase};

use crate::replicas::{Replica, admin, client, get, key, with_minute_left};

/// Transactions committed in the test's database so far, as Postgres counts them.
fn transactions(db: &TestDatabase) -> u64 {
    let output = Command::new("psql")
        .args([
            db.url(),
            "-tAc",
            "select xact_commit from pg_stat_database where datname = current_database()",
        ])
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_guessed_keys_cost_postgres_a_handful_of_statements() {
    let Some(db) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let admin = admin(&db).await;
    let (valid, _) = key(&admin, "calls", 1_000).await;
    drop(admin);
    // No upstream is needed: nothing here reaches it.
    let replica = Replica::start(&db, None, "http://127.0.0.1:9");
    let client = client();
    // Postgres publishes a session's counts when it goes idle, within about 10 s.
    let settle = Duration::from_secs(11);
    tokio::time::sleep(settle).await;
    // One minute's anonymous quota: the flood must not straddle two.
    with_minute_left(Duration::from_secs(20)).await;
    let before = transactions(&db);
    for n in 0..2_000_u32 {
        let mut bytes = [0x5a_u8; 32];
        bytes[..4].copy_from_slice(&n.to_le_bytes());
        let guess = ApiKeySecret::from_random_bytes(&bytes);
        let status = get(&client, &replica.base, "/api/v1/ping", &guess)
            .await
            .status;
        assert!(matches!(status, 401 | 429), "guess {n}: {status}");
    }
    assert_eq!(
        get(&client, &replica.base, "/api/v1/ping", &valid)
            .await
            .status,
        200
    );
    tokio::time::sleep(settle).await;
    let spent = transactions(&db) - before;
    // 60 look-ups (the anonymous quota of a minute), one read of every digest, the valid key's
    // look-up, the new connections' session settings and this count's own query: about 70.
    // Before, every guess was a look-up: over 2,000.
    assert!(
        spent <= 75,
        "{spent} transactions for 2,000 guessed keys and one valid one"
    );
    eprintln!("{spent} transactions for 2,000 guessed keys and one valid one");
    replica.stop().await;
}
