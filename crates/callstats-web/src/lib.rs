//! The thin web layer: the GET endpoints under `/api/v1` and the OpenAPI document, served by
//! actix-web.
//!
//! Handlers extract, call the application through its port ([`ApiUseCases`], which
//! `callstats_application::Answers` implements) and write bytes;
//! there is no statistics logic and no caching policy here. Everything reaches the domain
//! through its ports, so this crate never depends on a database, an HTTP client or Redis.

mod caller;
mod document;
mod encoding;
mod error;
mod middleware;
mod negotiation;
pub mod openapi;
pub mod ops;
pub mod problem;
mod query;
mod response;
mod routes;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServerHandle, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, HttpServer, web};
use bytes::Bytes;
use callstats_application::{ApiUseCases, ComputePool, ETag};
use utoipa_actix_web::AppExt as _;
use utoipa_actix_web::service_config::ServiceConfig;

pub use encoding::MAX_COMPRESSED_BYTES;
pub use problem::ErrorBody;

/// Where the API lives.
pub const PREFIX: &str = "/api/v1";

/// Everything the handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The application, as the handlers ask it (a mock of it in handler tests).
    use_cases: Arc<dyn ApiUseCases>,
    trust_proxy: bool,
    readiness: Arc<ops::Readiness>,
    /// The OpenAPI document as served, and its validator.
    document: Bytes,
    document_etag: ETag,
    /// The compressed forms of the bodies served.
    compressed: Arc<encoding::Compressed>,
    /// What the replica's resident memory should stay under, for the metrics.
    memory_bound: Option<u64>,
}

impl ApiState {
    /// `compute`: the pool bodies are compressed on (the application's, which answers are
    /// computed on). `trust_proxy`: take the client IP from the first `X-Forwarded-For` hop
    /// (only behind a proxy that sets it) instead of the peer address.
    #[must_use]
    pub fn new(use_cases: Arc<dyn ApiUseCases>, compute: ComputePool, trust_proxy: bool) -> Self {
        let document = openapi::document_bytes();
        let compressed = Arc::new(encoding::Compressed::new(compute));
        Self {
            use_cases,
            trust_proxy,
            readiness: Arc::new(ops::Readiness::new(Vec::new())),
            document_etag: ETag::of(&document),
            document,
            compressed,
            memory_bound: None,
        }
    }

    /// What the replica's resident memory should stay under (its caches' bounds and an
    /// allowance for the rest), reported as `callstats_memory_bound_bytes`.
    #[must_use]
    pub const fn with_memory_bound(mut self, bytes: u64) -> Self {
        self.memory_bound = Some(bytes);
        self
    }

    #[must_use]
    pub const fn memory_bound(&self) -> Option<u64> {
        self.memory_bound
    }

    /// What `/readyz` checks.
    #[must_use]
    pub fn with_probes(mut self, probes: Vec<Arc<dyn ops::Probe>>) -> Self {
        self.readiness = Arc::new(ops::Readiness::new(probes));
        self
    }
}

/// Server tuning: actix-web's `HttpServer` settings.
#[derive(Debug, Clone, Copy)]
pub struct ServerSettings {
    /// Worker threads (0: one per core).
    pub workers: usize,
    /// How long in-flight requests may run on after a stop signal.
    pub shutdown_timeout: Duration,
    /// How long a client may take to send a request head.
    pub client_request_timeout: Duration,
    /// How long a connection may stay open idle between two requests.
    pub keep_alive: Duration,
    /// How long a closing connection may take to shut down.
    pub client_disconnect_timeout: Duration,
    /// Most connections open at once, all workers together; past it new connections wait in
    /// the listen backlog while the open ones are served.
    pub max_connections: usize,
}

impl ServerSettings {
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

    /// The workers to start: `workers`, or one per core.
    fn worker_count(&self) -> usize {
        if self.workers > 0 {
            self.workers
        } else {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        }
    }
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            workers: 0,
            shutdown_timeout: Self::DEFAULT_SHUTDOWN_TIMEOUT,
            client_request_timeout: Duration::from_secs(5),
            keep_alive: Duration::from_secs(5),
            client_disconnect_timeout: Duration::from_secs(1),
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The application: the routes, the JSON fallback for unknown paths and methods, and the
/// request observer (request id, one log line, security headers, panics turned into 500s).
pub fn app(
    state: ApiState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .into_utoipa_app()
        .configure(register)
        .into_app()
        .app_data(web::Data::new(state))
        .default_service(web::to(routes::unrouted))
        .wrap(actix_web::middleware::from_fn(middleware::observe))
}

/// Every route: the API in a scope under [`PREFIX`], and the operations endpoints at the root.
/// A path or method that none of them has goes to the app's default service (`unrouted`).
pub(crate) fn register(cfg: &mut ServiceConfig<'_>) {
    cfg.service(utoipa_actix_web::scope(PREFIX).configure(routes::register))
        .configure(ops::register);
}

/// A server bound to its listener.
pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Serves the app with actix-web's `HttpServer` on an already bound listener (port 0 in
    /// tests). `max_connections` is shared out among the workers, as actix counts it per
    /// worker. The answers actix-http gives before a request exists (a malformed, slow or
    /// oversized head) are its own; in the shipped topology nginx answers those cases first
    /// (deploy/nginx/nginx.conf; docs/operations.md, "The reverse proxy").
    pub fn build(
        listener: TcpListener,
        state: ApiState,
        settings: ServerSettings,
    ) -> std::io::Result<Self> {
        let port = listener.local_addr()?.port();
        let workers = settings.worker_count();
        let use_cases = Arc::clone(&state.use_cases);
        let server = HttpServer::new(move || app(state.clone()))
            .workers(workers)
            .max_connections((settings.max_connections / workers).max(1))
            .client_request_timeout(settings.client_request_timeout)
            .keep_alive(settings.keep_alive)
            .client_disconnect_timeout(settings.client_disconnect_timeout)
            .shutdown_timeout(settings.shutdown_timeout.as_secs())
            .listen(listener)?
            .run();
        // actix stops the server on these signals itself; the live streams, which would hold
        // their connections through the whole drain, end on them too.
        let stopping = stop_signal();
        tokio::spawn(async move {
            stopping.await;
            use_cases.end_live_streams();
        });
        Ok(Self { port, server })
    }

    #[must_use]
    pub const fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server gracefully (or not) from elsewhere.
    #[must_use]
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped. SIGTERM (or [`ServerHandle::stop`] with `graceful`) stops it
    /// gracefully: no new connections, idle keep-alive connections closed at once, in-flight
    /// requests given up to the shutdown timeout to finish.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

/// The first of SIGTERM and SIGINT (Ctrl-C), the signals actix-web stops on, listened for from
/// now (not from the first poll, which a signal may precede); never without a signal driver.
fn stop_signal() -> impl Future<Output = ()> + Send + 'static {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    let listeners = signal(SignalKind::terminate())
        .and_then(|term| signal(SignalKind::interrupt()).map(|int| (term, int)));
    async move {
        let Ok((mut term, mut int)) = listeners else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}

/// docs/testing.md, whose Rust examples (the domain's use cases and this crate's handlers,
/// each against mocks) run as this crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/testing.md")]
pub struct TestingGuide;
