//! Reads run as tasks of their own.

use std::sync::Arc;
use std::time::Duration;

use callstats_domain::ports::PortalStore;
use callstats_store::SpawningStore;
use callstats_store::config::Access;
use callstats_store::testing::{Backend, TestDatabase};

/// Current-thread, like an actix worker: a read given up after its first poll (as `try_join!`
/// gives up the others when one fails) must neither panic nor break the store.
#[tokio::test]
async fn a_store_read_given_up_half_way_on_a_current_thread_runtime_does_not_panic() {
    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    drop(db.migrated_store().await);
    let portal = SpawningStore::new(Arc::new(db.store(Access::ReadOnly)));
    for _ in 0..5 {
        let given_up = tokio::time::timeout(Duration::ZERO, portal.operators()).await;
        assert!(given_up.is_err() || given_up.is_ok_and(|read| read.is_ok()));
    }
    assert!(portal.operators().await.unwrap().is_empty());
}
