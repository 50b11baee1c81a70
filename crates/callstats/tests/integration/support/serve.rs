//! The service as `serve` assembles it, served in process.

use std::net::TcpListener;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use callstats::app::{Assembly, Upstream};
use callstats_domain::stats::{AggregateMinRows, PriorWeight};
use callstats_store::Store;
use callstats_web::{Application, ServerSettings};

/// Serves `service` with `workers` workers on a free loopback port, on the current Tokio
/// runtime: its base URL and the handle that stops it.
pub fn serve(service: Assembly, workers: usize) -> (String, ServerHandle) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let settings = ServerSettings {
        workers,
        shutdown_timeout: Duration::from_secs(1),
        ..ServerSettings::default()
    };
    let application = Application::build(listener, service.state().unwrap(), settings).unwrap();
    let base = format!("http://127.0.0.1:{}", application.port());
    let handle = application.handle();
    tokio::spawn(application.run_until_stopped());
    (base, handle)
}

/// The service on `store` and `upstream` as the in-process tests assemble it: no archive, no
/// Redis, default limits, the system clock, and no warmer or backfill (these tests count the
/// upstream's requests). Tests change what they need with `Assembly { …, ..assembly(…) }`.
pub fn assembly(store: Store, upstream: Upstream) -> Assembly {
    Assembly {
        store,
        archive: None,
        upstream,
        redis: None,
        prior_weight: PriorWeight::new(10.0).unwrap(),
        kpi_aggregate_min_rows: AggregateMinRows::DEFAULT,
        history: callstats_domain::limits::HistoryHorizon::default(),
        anon_rate_limit: 60,
        trust_proxy: false,
        cache_max_bytes: 16 << 20,
        call_days: callstats_application::CallDaySettings::default(),
        call_day_cache_max_bytes: 16 << 20,
        warm_days: 0,
        backfill: callstats_application::BackfillSettings {
            per_minute: 0,
            ..callstats_application::BackfillSettings::default()
        },
        computing: callstats_application::Computing::default(),
        live: callstats_application::live::LiveSettings::default(),
        clock: std::sync::Arc::new(callstats_infra::clock::SystemClock),
    }
}
