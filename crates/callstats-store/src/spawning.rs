//! The store as the API reads it: every read runs as a task of its own.

use std::sync::Arc;

use async_trait::async_trait;
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::calendar::{DateRange, Month};
use callstats_domain::model::{CallScore, OffDayRecord, Operator, Script, Sheet, SheetContent};
use callstats_domain::ports::{KeyStore, PortalStore, StoreError};
use tracing::Instrument as _;

use crate::Store;

/// Runs every read of the store as a task of its own, so a read the caller stops waiting for
/// (a concurrent fetch failed first, the client went away) finishes on its own instead of being
/// dropped half-way: a SQLite read dropped while its blocking part runs makes diesel-async call
/// `block_in_place`, which panics on the actix workers' current-thread runtimes (a 500 where the
/// upstream's failure should give a 503).
#[derive(Clone)]
pub struct SpawningStore(Arc<Store>);

impl SpawningStore {
    #[must_use]
    pub const fn new(store: Arc<Store>) -> Self {
        Self(store)
    }

    async fn run<T, F>(&self, read: impl FnOnce(Arc<Store>) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        // The read's lines name the request it is done for.
        tokio::spawn(read(Arc::clone(&self.0)).in_current_span())
            .await
            .map_err(|err| StoreError::from_source("store read task failed", err))?
    }
}

#[async_trait]
impl KeyStore for SpawningStore {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        let digest = *digest;
        self.run(|store| async move { store.find_key(&digest).await })
            .await
    }

    async fn key_digests(&self) -> Result<Vec<KeyDigest>, StoreError> {
        self.run(|store| async move { store.key_digests().await })
            .await
    }
}

#[async_trait]
impl PortalStore for SpawningStore {
    async fn operators(&self) -> Result<Vec<Operator>, StoreError> {
        self.run(|store| async move { store.operators().await })
            .await
    }

    async fn off_days(&self, month: Month) -> Result<Vec<OffDayRecord>, StoreError> {
        self.run(move |store| async move { store.off_days(month).await })
            .await
    }

    async fn published_sheets(&self, month: Option<Month>) -> Result<Vec<Sheet>, StoreError> {
        self.run(move |store| async move { store.published_sheets(month).await })
            .await
    }

    async fn sheet_content(&self, sheet_id: i64) -> Result<Option<SheetContent>, StoreError> {
        self.run(move |store| async move { store.sheet_content(sheet_id).await })
            .await
    }

    async fn scripts(&self) -> Result<Vec<Script>, StoreError> {
        self.run(|store| async move { store.scripts().await }).await
    }

    async fn call_scores(&self, range: DateRange) -> Result<Vec<CallScore>, StoreError> {
        self.run(move |store| async move { store.call_scores(range).await })
            .await
    }
}
