//! Assembly: settings in, running service out. `serve` and `demo` use it, and so do the
//! end-to-end tests, so what they test is what runs.

use std::net::TcpListener;
use std::sync::Arc;

use anyhow::{Context as _, anyhow};
use callstats_application::live::{LiveFeed, LiveSettings, LiveStreams};
use callstats_application::{
    Answers, Backfill, BackfillSettings, CallDaySettings, CallDayStore, Computing, Warmer,
    WarmerSettings,
};
use callstats_callplatform::{HttpCallPlatform, HttpPlatformConfig};
use callstats_domain::calendar::Day;
use callstats_domain::limits::HistoryHorizon;
use callstats_domain::ports::{
    CallDayCache, CallPlatform, Clock, KeyStore, Lease, LiveRelay, PortalStore, QuotaCounter,
    RequestLedger, ResponseCache, StreamSlots,
};
use callstats_domain::stats::{AggregateMinRows, PriorWeight};
use callstats_domain::use_cases::{CallStats, Gatekeeper, StatsSettings};
use callstats_in_process::{
    KeyCache, LocalLiveRelay, LocalStreamSlots, MAX_KEY_CACHE_TTL, MemoryCache, MemoryCallDays,
    MemoryLedger, MemoryQuota, SoleLease,
};
use callstats_infra::clock::SystemClock;
use callstats_redis::{
    Redis, RedisCache, RedisCallDays, RedisLease, RedisLiveRelay, RedisQuota, RedisSettings,
    RedisStreamSlots,
};
use callstats_store::{SpawningStore, Store, StoredCallDays};
use callstats_synthetic::{Generator, SyntheticPlatform};
use callstats_web::ops::{Probe, install_metrics, metrics_server, report_memory_bound};
use callstats_web::{ApiState, Application, MAX_COMPRESSED_BYTES, ServerSettings};
use tracing::Instrument as _;

use crate::args::ServiceArgs;
use crate::failure::Failure;
use crate::probes::{RedisProbe, StoreProbe};

/// Where call records come from.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A real call platform over HTTP.
    Http(HttpPlatformConfig),
    /// The built-in synthetic platform, in process (`callstats demo`): no call after the
    /// assembly's clock's present.
    Synthetic(Generator),
}

/// Everything the service is built from.
pub struct Assembly {
    /// The API's read-only store.
    pub store: Store,
    /// A read-write store on the same database, where settled call days are persisted
    /// (`CALLSTATS_CALL_DAY_PERSIST`); `None` keeps them in memory and Redis only.
    pub archive: Option<Store>,
    pub upstream: Upstream,
    /// Shared cache and quota; `None` keeps both in process.
    pub redis: Option<RedisSettings>,
    pub prior_weight: PriorWeight,
    /// The fewest rows a KPI sheet needs for an aggregate-only key to see its distribution and
    /// ranks.
    pub kpi_aggregate_min_rows: AggregateMinRows,
    /// How far back call periods may reach.
    pub history: HistoryHorizon,
    pub anon_rate_limit: u32,
    pub trust_proxy: bool,
    pub cache_max_bytes: u64,
    /// How the call-day store fetches and keeps days.
    pub call_days: CallDaySettings,
    /// Bound of the in-process tier of the call-day store.
    pub call_day_cache_max_bytes: u64,
    /// Days the warmer keeps held (0: no warmer).
    pub warm_days: u32,
    /// How the backfill fills the history horizon (`per_minute` 0: no backfill; none without
    /// persistence).
    pub backfill: BackfillSettings,
    /// Where answers are computed (off the request threads) and how large they may be.
    pub computing: Computing,
    /// How the live figures are polled and streamed.
    pub live: LiveSettings,
    /// What quota windows and key expiry are measured against: the system clock, except in
    /// tests that need the next UTC minute now.
    pub clock: Arc<dyn Clock>,
}

impl Assembly {
    /// The service described by the command line's settings.
    pub fn from_args(
        store: Store,
        archive: Option<Store>,
        upstream: Upstream,
        args: &ServiceArgs,
    ) -> Result<Self, Failure> {
        Ok(Self {
            store,
            archive: archive.filter(|_| args.call_day_persist),
            upstream,
            redis: args.redis(),
            prior_weight: args.prior_weight()?,
            kpi_aggregate_min_rows: args.kpi_aggregate_min_rows()?,
            history: HistoryHorizon::new(args.call_history_days),
            anon_rate_limit: args.anon_rate_limit,
            trust_proxy: args.trust_proxy,
            cache_max_bytes: args.cache_max_mb.bytes(),
            call_days: args.call_day_settings(),
            call_day_cache_max_bytes: args.call_day_cache_mb.bytes(),
            warm_days: args.call_day_warm_days,
            backfill: BackfillSettings {
                per_minute: args.call_day_backfill_per_minute,
                ..BackfillSettings::default()
            },
            computing: args.computing()?,
            live: args.live(),
            clock: Arc::new(SystemClock),
        })
    }

    /// Builds every adapter and the API's state, and starts the warmer (a task of the current
    /// Tokio runtime) unless it is off. Nothing waits for it.
    pub fn state(self) -> anyhow::Result<ApiState> {
        let store = Arc::new(self.store);
        store.report_pool_usage();
        let spawning = SpawningStore::new(Arc::clone(&store));
        let uncached_keys: Arc<dyn KeyStore> = Arc::new(spawning.clone());
        let keys: Arc<dyn KeyStore> =
            Arc::new(KeyCache::new(Arc::clone(&uncached_keys), MAX_KEY_CACHE_TTL));
        let portal: Arc<dyn PortalStore> = Arc::new(spawning);
        let mut call_day_settings = self.call_days;
        // The calls of the days being fetched at once are held within the in-flight budget.
        let in_flight_bytes = match &self.upstream {
            Upstream::Http(config) => u64::try_from(config.in_flight_bytes).unwrap_or(u64::MAX),
            Upstream::Synthetic(_) => 0,
        };
        let platform: Arc<dyn CallPlatform> = match self.upstream {
            Upstream::Http(config) => {
                // A day whose answer was unusable rests as long as a tripped breaker does.
                call_day_settings.unusable_hold = config.breaker_open_for;
                Arc::new(
                    HttpCallPlatform::new(config)
                        .context("cannot build the call platform client")?,
                )
            }
            Upstream::Synthetic(generator) => {
                Arc::new(SyntheticPlatform::new(generator, Arc::clone(&self.clock)))
            }
        };
        let mut probes: Vec<Arc<dyn Probe>> = vec![Arc::new(StoreProbe(Arc::clone(&store)))];
        // docs/operations.md, "Memory": the caches' bounds (the response cache's only when it
        // is in process), the in-flight budget and an allowance for the rest.
        let memory_bound = MEMORY_ALLOWANCE
            .saturating_add(self.call_day_cache_max_bytes)
            .saturating_add(in_flight_bytes)
            .saturating_add(MAX_COMPRESSED_BYTES)
            .saturating_add(if self.redis.is_none() {
                self.cache_max_bytes
            } else {
                0
            });
        let shared = match self.redis {
            Some(settings) => {
                let redis = Redis::new(settings)?;
                probes.push(Arc::new(RedisProbe(Arc::clone(&redis))));
                let ledger = Arc::new(RedisQuota::new(Arc::clone(&redis)));
                let quota: Arc<dyn QuotaCounter> = ledger.clone();
                Shared {
                    cache: Arc::new(RedisCache::new(Arc::clone(&redis))),
                    quota,
                    ledger,
                    days: Some(Arc::new(RedisCallDays::new(Arc::clone(&redis)))),
                    lease: Arc::new(RedisLease::new(Arc::clone(&redis), "warmer")),
                    backfill_lease: Arc::new(RedisLease::new(Arc::clone(&redis), "backfill")),
                    live_relay: Arc::new(RedisLiveRelay::new(Arc::clone(&redis))),
                    stream_slots: Arc::new(RedisStreamSlots::new(redis)),
                }
            }
            None => {
                let (cache, quota) = (MemoryCache::new(self.cache_max_bytes), MemoryQuota::new());
                Shared {
                    ledger: Arc::new(MemoryLedger::new(quota.clone(), cache.clone())),
                    cache: Arc::new(cache),
                    quota: Arc::new(quota),
                    days: None,
                    lease: Arc::new(SoleLease),
                    backfill_lease: Arc::new(SoleLease),
                    live_relay: Arc::new(LocalLiveRelay::new()),
                    stream_slots: Arc::new(LocalStreamSlots::new()),
                }
            }
        };
        let live = LiveFeed::new(
            Arc::clone(&platform),
            Arc::clone(&portal),
            shared.live_relay,
            Arc::clone(&self.clock),
            self.live,
        );
        let streams = LiveStreams::new(
            live.clone(),
            shared.stream_slots,
            uncached_keys,
            Arc::clone(&self.clock),
        );
        // The keys' day budgets are counted where their request quotas are.
        let call_days = CallDayStore::new(
            platform,
            Arc::new(MemoryCallDays::new(self.call_day_cache_max_bytes)),
            shared.days,
            Arc::clone(&shared.quota),
            Arc::clone(&self.clock),
            call_day_settings,
        );
        let call_days = match self.archive {
            Some(archive) => {
                let stored = StoredCallDays::new(Arc::new(archive));
                let call_days = call_days.with_archive(Arc::new(stored.clone()));
                if self.backfill.per_minute > 0 {
                    let backfill = Backfill::new(
                        call_days.clone(),
                        Arc::new(stored.clone()),
                        shared.backfill_lease,
                        Arc::clone(&self.clock),
                        self.history,
                        self.backfill,
                    );
                    tokio::spawn(backfill.run().instrument(tracing::info_span!("backfill")));
                }
                tokio::spawn(
                    upkeep(
                        call_days.clone(),
                        stored,
                        self.history,
                        Arc::clone(&self.clock),
                    )
                    .instrument(tracing::info_span!("call_days_upkeep")),
                );
                call_days
            }
            None => call_days,
        };
        if self.warm_days > 0 {
            let warmer = Warmer::new(
                call_days.clone(),
                shared.lease,
                Arc::clone(&self.clock),
                WarmerSettings {
                    days: self.warm_days,
                    ..WarmerSettings::default()
                },
            );
            // Its lines (a day it could not fetch) name it, as a request's name the request.
            tokio::spawn(warmer.run().instrument(tracing::info_span!("warmer")));
        }
        let access = Gatekeeper::new(
            keys,
            shared.quota,
            shared.ledger,
            Arc::clone(&self.clock),
            self.anon_rate_limit,
        )
        .with_day_budget(call_day_settings.day_budget);
        let stats = CallStats::new(
            portal,
            Arc::new(call_days),
            Arc::clone(&self.clock),
            StatsSettings {
                prior_weight: self.prior_weight,
                history: self.history,
                kpi_aggregate_min_rows: self.kpi_aggregate_min_rows,
            },
        )
        .with_live(Arc::new(live));
        let answers = Answers::new(access, stats, shared.cache, self.computing, self.clock)
            .with_live_streams(streams);
        let compute = answers.compute_pool().clone();
        Ok(ApiState::new(Arc::new(answers), compute, self.trust_proxy)
            .with_probes(probes)
            .with_memory_bound(memory_bound))
    }
}

/// How often the durable tier is swept and its size reported.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(300);
/// When the first upkeep runs after the assembly: once the server has installed the metrics
/// recorder (it does so right after), so that the first size reported is not lost.
const UPKEEP_FIRST: std::time::Duration = std::time::Duration::from_secs(10);

/// Keeps the durable tier to the history horizon (a bounded sweep) and its size in the gauges
/// `callstats_call_days_table_bytes` and `callstats_call_days_table_days`,
/// [`UPKEEP_FIRST`] after the start and every [`UPKEEP_EVERY`].
async fn upkeep(
    call_days: CallDayStore,
    stored: StoredCallDays,
    history: HistoryHorizon,
    clock: Arc<dyn Clock>,
) {
    let mut every =
        tokio::time::interval_at(tokio::time::Instant::now() + UPKEEP_FIRST, UPKEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if let Some(earliest) = history.earliest(Day::of(clock.now())) {
            call_days.sweep(earliest.day).await;
        }
        match stored.size().await {
            Ok(size) => {
                metrics::gauge!("callstats_call_days_table_bytes")
                    .set(u32::try_from(size.bytes).map_or(f64::MAX, f64::from));
                metrics::gauge!("callstats_call_days_table_days")
                    .set(u32::try_from(size.days).map_or(f64::MAX, f64::from));
            }
            Err(err) => tracing::debug!(error = %err, "the call days' table size is unknown"),
        }
    }
}

/// What a replica's resident memory holds besides its caches: code, threads, pools, buffers
/// (about 18 MiB at rest) and the transient fetches and answers (docs/operations.md, "Memory").
const MEMORY_ALLOWANCE: u64 = 64 << 20;

/// What replicas share through Redis, or what one process keeps alone without it.
struct Shared {
    cache: Arc<dyn ResponseCache>,
    quota: Arc<dyn QuotaCounter>,
    /// Admission's count and cached read: one round trip with Redis.
    ledger: Arc<dyn RequestLedger>,
    /// The shared tier of the call-day store (the in-process tier is always there).
    days: Option<Arc<dyn CallDayCache>>,
    /// Which replica warms the recent days.
    lease: Arc<dyn Lease>,
    /// Which replica fills the history horizon.
    backfill_lease: Arc<dyn Lease>,
    /// Which replica polls the live figures, and how they reach the others.
    live_relay: Arc<dyn LiveRelay>,
    /// The keys' open live streams.
    stream_slots: Arc<dyn StreamSlots>,
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
            if let Some(bound) = state.memory_bound() {
                report_memory_bound(bound);
            }
            callstats_application::call_days::report_no_stale_answers_yet();
            callstats_application::live::report_no_live_streams_yet();
            callstats_in_process::report_no_key_lookup_failures_yet();
            tracing::info!(address, "serving metrics at /metrics");
            tokio::spawn(server);
        }
        let server = ServerSettings {
            max_connections: crate::files::connection_bound(self.server.max_connections),
            ..self.server
        };
        let application = Application::build(listener, state, server)?;
        tracing::info!(address = self.bind, "serving the API under /api/v1");
        Ok(application)
    }
}

fn bind(address: &str) -> Result<TcpListener, Failure> {
    TcpListener::bind(address)
        .map_err(|err| Failure::config(anyhow!("cannot listen on {address}: {err}")))
}
