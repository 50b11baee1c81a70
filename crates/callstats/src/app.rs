//! Assembly: settings in, running service out. `serve` and `demo` use it, and so do the
//! end-to-end tests, so what they test is what runs.

use std::net::TcpListener;
use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use async_trait::async_trait;
use callstats_api::ops::{Probe, install_metrics, metrics_server};
use callstats_api::{ApiState, Application, ServerSettings};
use callstats_application::{Answers, CallDaySettings, CallDayStore};
use callstats_callplatform::{HttpCallPlatform, HttpPlatformConfig};
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::calendar::{DateRange, Month};
use callstats_domain::model::{CallScore, OffDayRecord, Operator, Script, Sheet, SheetContent};
use callstats_domain::ports::{
    CallDayCache, CallPlatform, Clock, PortalStore, QuotaCounter, ResponseCache, StoreError,
};
use callstats_domain::service::{Access, CallStats, StatsSettings};
use callstats_domain::stats::PriorWeight;
use callstats_memory::{
    KeyCache, MAX_KEY_CACHE_TTL, MemoryCache, MemoryCallDays, MemoryQuota, SystemClock,
};
use callstats_redis::{Redis, RedisCache, RedisCallDays, RedisQuota, RedisSettings};
use callstats_store::Store;
use callstats_synthetic::{Generator, SyntheticPlatform};

use crate::args::ServiceArgs;
use crate::failure::Failure;

/// Where call records come from.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A real call platform over HTTP.
    Http(HttpPlatformConfig),
    /// The built-in synthetic platform, in process (`callstats demo`).
    Synthetic(Generator),
}

/// Everything the service is built from.
pub struct Service {
    /// The API's read-only store.
    pub store: Store,
    pub upstream: Upstream,
    /// Shared cache and quota; `None` keeps both in process.
    pub redis: Option<RedisSettings>,
    pub prior_weight: PriorWeight,
    pub anon_rate_limit: u32,
    pub trust_proxy: bool,
    pub cache_max_bytes: u64,
    /// How the call-day store fetches and keeps days.
    pub call_days: CallDaySettings,
    /// Bound of the in-process tier of the call-day store.
    pub call_day_cache_max_bytes: u64,
    /// What quota windows and key expiry are measured against: the system clock, except in
    /// tests that need the next UTC minute now.
    pub clock: Arc<dyn Clock>,
}

impl Service {
    /// The service described by the command line's settings.
    pub fn from_args(
        store: Store,
        upstream: Upstream,
        args: &ServiceArgs,
    ) -> Result<Self, Failure> {
        Ok(Self {
            store,
            upstream,
            redis: args.redis(),
            prior_weight: args.prior_weight()?,
            anon_rate_limit: args.anon_rate_limit,
            trust_proxy: args.trust_proxy,
            cache_max_bytes: args.cache_max_mb.bytes(),
            call_days: args.call_day_settings(),
            call_day_cache_max_bytes: args.call_day_cache_mb.bytes(),
            clock: Arc::new(SystemClock),
        })
    }

    /// Builds every adapter and the API's state.
    pub fn state(self) -> anyhow::Result<ApiState> {
        let store = Arc::new(self.store);
        report_pool_usage(Arc::downgrade(&store));
        let portal: Arc<dyn PortalStore> = Arc::new(Detached(Arc::clone(&store)));
        let keys: Arc<dyn PortalStore> =
            Arc::new(KeyCache::new(Arc::clone(&portal), MAX_KEY_CACHE_TTL));
        let platform: Arc<dyn CallPlatform> = match self.upstream {
            Upstream::Http(config) => Arc::new(
                HttpCallPlatform::new(config).context("cannot build the call platform client")?,
            ),
            Upstream::Synthetic(generator) => Arc::new(SyntheticPlatform::new(generator)),
        };
        let mut probes: Vec<Arc<dyn Probe>> = vec![Arc::new(StoreProbe(store))];
        let shared = match self.redis {
            Some(settings) => {
                let redis = Redis::new(settings)?;
                probes.push(Arc::new(RedisProbe(Arc::clone(&redis))));
                Shared {
                    cache: Arc::new(RedisCache::new(Arc::clone(&redis))),
                    quota: Arc::new(RedisQuota::new(Arc::clone(&redis))),
                    days: Some(Arc::new(RedisCallDays::new(redis))),
                }
            }
            None => Shared {
                cache: Arc::new(MemoryCache::new(self.cache_max_bytes)),
                quota: Arc::new(MemoryQuota::new()),
                days: None,
            },
        };
        let call_days = CallDayStore::new(
            platform,
            Arc::new(MemoryCallDays::new(self.call_day_cache_max_bytes)),
            shared.days,
            Arc::clone(&self.clock),
            self.call_days,
        );
        let access = Access::new(keys, shared.quota, self.clock, self.anon_rate_limit);
        let stats = CallStats::new(
            portal,
            Arc::new(call_days),
            StatsSettings {
                prior_weight: self.prior_weight,
            },
        );
        let answers = Answers::new(access, stats, shared.cache);
        Ok(ApiState::new(answers, self.trust_proxy).with_probes(probes))
    }
}

/// What replicas share through Redis, or what one process keeps alone without it.
struct Shared {
    cache: Arc<dyn ResponseCache>,
    quota: Arc<dyn QuotaCounter>,
    /// The shared tier of the call-day store (the in-process tier is always there).
    days: Option<Arc<dyn CallDayCache>>,
}

/// How often the pool gauges are refreshed.
const POOL_REPORT_INTERVAL: Duration = Duration::from_secs(5);

/// Keeps the store's pool gauges current while the store lives (outside a runtime there is
/// nothing to report to, and nothing is started).
fn report_pool_usage(store: Weak<Store>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut interval = tokio::time::interval(POOL_REPORT_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            let Some(store) = store.upgrade() else {
                break;
            };
            let status = store.pool_status();
            let value = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            metrics::gauge!("callstats_db_pool_max_connections").set(value(status.max_size));
            metrics::gauge!("callstats_db_pool_open_connections").set(value(status.open));
            metrics::gauge!("callstats_db_pool_in_use_connections")
                .set(value(status.open.saturating_sub(status.idle)));
            metrics::gauge!("callstats_db_pool_waiting").set(value(status.waiting));
        }
    });
}

/// Runs every read of the store as a task of its own, so a read the caller stops waiting for
/// (a concurrent fetch failed first, the client went away) finishes on its own instead of being
/// dropped half-way: a SQLite read dropped while its blocking part runs makes diesel-async call
/// `block_in_place`, which panics on the actix workers' current-thread runtimes (a 500 where the
/// upstream's failure should give a 503).
struct Detached(Arc<Store>);

impl Detached {
    async fn run<T, F>(&self, read: impl FnOnce(Arc<Store>) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        tokio::spawn(read(Arc::clone(&self.0)))
            .await
            .map_err(|err| StoreError::new(format!("store read task failed: {err}")))?
    }
}

#[async_trait]
impl PortalStore for Detached {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        let digest = *digest;
        self.run(|store| async move { store.find_key(&digest).await })
            .await
    }

    async fn key_digests(&self) -> Result<Vec<KeyDigest>, StoreError> {
        self.run(|store| async move { store.key_digests().await })
            .await
    }

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

/// The portal database answers.
struct StoreProbe(Arc<Store>);

#[async_trait]
impl Probe for StoreProbe {
    fn name(&self) -> &'static str {
        "portal database"
    }

    async fn check(&self) -> Result<(), String> {
        self.0
            .has_operators()
            .await
            .map(drop)
            .map_err(|err| err.to_string())
    }
}

/// Redis answers a PING.
struct RedisProbe(Arc<Redis>);

#[async_trait]
impl Probe for RedisProbe {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn check(&self) -> Result<(), String> {
        self.0.ping().await
    }
}

/// How the server listens and stops.
#[derive(Debug, Clone)]
pub struct Listen {
    pub bind: String,
    pub metrics_bind: Option<String>,
    pub server: ServerSettings,
}

impl Listen {
    #[must_use]
    pub fn from_args(args: &ServiceArgs) -> Self {
        Self {
            bind: args.bind.clone(),
            metrics_bind: args.metrics_bind.clone(),
            server: args.server(),
        }
    }

    /// Binds both listeners (so a taken port is a configuration error, exit 2) and returns the
    /// API server ready to run, with the metrics server already started.
    pub fn bind(&self, state: ApiState) -> Result<Application, Failure> {
        let listener = bind(&self.bind)?;
        if let Some(address) = &self.metrics_bind {
            let handle = install_metrics()
                .map_err(|err| anyhow!("cannot install the metrics recorder: {err}"))?;
            let server = metrics_server(bind(address)?, handle)?;
            tracing::info!(address, "serving metrics at /metrics");
            tokio::spawn(server);
        }
        let application = Application::build(listener, state, self.server)?;
        tracing::info!(address = self.bind, "serving the API under /api/v1");
        Ok(application)
    }
}

fn bind(address: &str) -> Result<TcpListener, Failure> {
    TcpListener::bind(address)
        .map_err(|err| Failure::config(anyhow!("cannot listen on {address}: {err}")))
}

#[cfg(test)]
mod tests {
    use callstats_store::config::Access;
    use callstats_store::testing::{Backend, TestDatabase};

    use super::*;

    /// Current-thread, like an actix worker: a read given up after its first poll (as
    /// `try_join!` gives up the others when one fails) must neither panic nor break the store.
    #[tokio::test]
    async fn a_store_read_given_up_half_way_on_a_current_thread_runtime_does_not_panic() {
        let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
        drop(db.migrated_store().await);
        let portal: Arc<dyn PortalStore> = Arc::new(Detached(Arc::new(db.store(Access::ReadOnly))));
        for _ in 0..5 {
            let given_up = tokio::time::timeout(Duration::ZERO, portal.operators()).await;
            assert!(given_up.is_err() || given_up.is_ok_and(|read| read.is_ok()));
        }
        assert!(portal.operators().await.unwrap().is_empty());
    }
}
