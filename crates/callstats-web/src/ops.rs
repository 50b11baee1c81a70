//! Operations endpoints outside `/api/v1`, needing no key and counted in no quota: liveness,
//! readiness, and the Prometheus metrics served on a separate bind.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use actix_web::dev::Server;
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderValue, RETRY_AFTER};
use actix_web::{App, HttpResponse, HttpServer, get, web};
use async_trait::async_trait;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::ApiState;
use crate::response::json;

/// How long one readiness probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a readiness result is answered again: `/readyz` needs no key and no quota, so
/// however often it is asked, the database and Redis see at most one probe a second.
const READINESS_REUSE: Duration = Duration::from_secs(1);

/// The probes `/readyz` runs, and their latest result: one round of probes at a time, reused
/// for [`READINESS_REUSE`].
pub(crate) struct Readiness {
    probes: Vec<Arc<dyn Probe>>,
    /// When the latest round ended, and the name of the first probe that failed in it.
    latest: std::sync::Mutex<Option<(Instant, Option<&'static str>)>>,
    /// Held by the one round under way; the others wait for its result.
    round: tokio::sync::Mutex<()>,
}

impl Readiness {
    pub(crate) fn new(probes: Vec<Arc<dyn Probe>>) -> Self {
        Self {
            probes,
            latest: std::sync::Mutex::new(None),
            round: tokio::sync::Mutex::new(()),
        }
    }

    fn recent(&self) -> Option<Option<&'static str>> {
        let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        latest
            .filter(|(at, _)| at.elapsed() < READINESS_REUSE)
            .map(|(_, failed)| failed)
    }

    /// The name of the first probe that fails, or `None` when all pass.
    async fn failing(&self) -> Option<&'static str> {
        if let Some(failed) = self.recent() {
            return failed;
        }
        let _round = self.round.lock().await;
        if let Some(failed) = self.recent() {
            return failed;
        }
        let mut failed = None;
        for probe in &self.probes {
            let outcome = tokio::time::timeout(PROBE_TIMEOUT, probe.check())
                .await
                .unwrap_or_else(|_| Err("timed out".into()));
            if let Err(cause) = outcome {
                tracing::warn!(probe = probe.name(), cause, "not ready");
                failed = Some(probe.name());
                break;
            }
        }
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), failed));
        failed
    }
}

/// Something `/readyz` checks, such as the portal database or Redis.
#[async_trait]
pub trait Probe: Send + Sync + 'static {
    /// What is checked, as the 503 reason names it.
    fn name(&self) -> &'static str;
    /// `Err` with the cause (logged, not sent) when it is not usable.
    async fn check(&self) -> Result<(), String>;
}

/// The body of `/healthz` and `/readyz`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`, `ready` or `unavailable`.
    pub status: &'static str,
    /// What is not reachable, when unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub reason: Option<String>,
}

pub(crate) fn register(cfg: &mut ServiceConfig<'_>) {
    cfg.service(healthz).service(readyz);
}

/// Liveness: the process answers.
///
/// No key and no quota: for load balancers and orchestrators. It checks nothing beyond the
/// process itself, so a dependency that is down never restarts a replica.
#[utoipa::path(tag = "operations", security(()), responses((status = 200, description = "Alive.", body = Health)))]
#[get("/healthz")]
async fn healthz() -> HttpResponse {
    json(
        StatusCode::OK,
        &Health {
            status: "ok",
            reason: None,
        },
    )
}

/// Readiness: the portal database (and Redis, when configured) can be reached.
///
/// No key and no quota. One round of probes a second at most, whatever the number of callers;
/// the warm-up of the recent call days is never waited for.
#[utoipa::path(
    tag = "operations",
    security(()),
    responses(
        (status = 200, description = "Ready.", body = Health),
        (status = 503, description = "A dependency is unreachable; `reason` names it.", body = Health,
            headers(("Retry-After" = u32, description = "Always 1: the probes run again at most once a second.")))
    )
)]
#[get("/readyz")]
async fn readyz(state: web::Data<ApiState>) -> HttpResponse {
    if let Some(failed) = state.readiness.failing().await {
        let mut response = json(
            StatusCode::SERVICE_UNAVAILABLE,
            &Health {
                status: "unavailable",
                reason: Some(format!("{failed} unreachable")),
            },
        );
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(READINESS_REUSE.as_secs()));
        return response;
    }
    json(
        StatusCode::OK,
        &Health {
            status: "ready",
            reason: None,
        },
    )
}

/// Set once the process-wide recorder is installed ([`install_metrics`], the only place that
/// installs one).
static RECORDER_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether requests are counted: only once the recorder is installed.
pub(crate) fn recorder_installed() -> bool {
    RECORDER_INSTALLED.load(Ordering::Acquire)
}

/// Installs the process-wide Prometheus recorder; call once, before serving.
pub fn install_metrics() -> Result<PrometheusHandle, metrics_exporter_prometheus::BuildError> {
    PrometheusBuilder::new()
        .set_buckets(&[
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0,
        ])?
        .install_recorder()
        .inspect(|_| RECORDER_INSTALLED.store(true, Ordering::Release))
}

/// Reports what the replica's resident memory should stay under, as the gauge
/// `callstats_memory_bound_bytes` (once the recorder is installed).
pub fn report_memory_bound(bytes: u64) {
    // In KiB through u32 (4 TiB at most): a gauge is an f64, and no `as` conversion is allowed.
    let kib = u32::try_from(bytes / 1024).unwrap_or(u32::MAX);
    metrics::gauge!("callstats_memory_bound_bytes").set(f64::from(kib) * 1024.0);
}

/// Serves `GET /metrics` in the Prometheus text format on its own listener, kept off the
/// public bind: the service's metrics, and the process's own (`process_resident_memory_bytes`,
/// `process_open_fds`, CPU seconds, threads: metrics-process, read from /proc at each scrape).
pub fn metrics_server(listener: TcpListener, handle: PrometheusHandle) -> std::io::Result<Server> {
    let process = metrics_process::Collector::default();
    process.describe();
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(handle.clone()))
            .app_data(web::Data::new(process.clone()))
            .route("/metrics", web::get().to(render))
    })
    .workers(1)
    .listen(listener)?
    .run())
}

async fn render(
    handle: web::Data<PrometheusHandle>,
    process: web::Data<metrics_process::Collector>,
) -> HttpResponse {
    process.collect();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(handle.render())
}
