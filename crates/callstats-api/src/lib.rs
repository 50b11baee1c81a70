//! The thin web layer: the eight GET endpoints under `/api/v1` and the OpenAPI document, served
//! by actix-web.
//!
//! Handlers extract, call the application layer's one use case ([`Answers`]) and write bytes;
//! there is no statistics logic and no caching policy here. Everything reaches the domain through its ports, so this crate never depends on
//! a database, an HTTP client or Redis.

mod caller;
mod connections;
mod document;
mod encoding;
mod error;
mod heads;
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

use actix_http::{HttpService, Protocol, error::DispatchError};
use actix_server::GracefulShutdownSignal;
use actix_service::{IntoServiceFactory as _, ServiceFactoryExt as _, fn_service, map_config};
use actix_web::body::MessageBody;
use actix_web::dev::{
    AppConfig, Server, ServerHandle, ServiceFactory, ServiceRequest, ServiceResponse,
};
use actix_web::http::KeepAlive;
use actix_web::{App, web};
use bytes::Bytes;
use callstats_application::{Answers, ETag};
use utoipa_actix_web::AppExt as _;

pub use encoding::MAX_COMPRESSED_BYTES;
pub use error::ErrorBody;

/// Where the API lives.
pub const PREFIX: &str = "/api/v1";

/// Everything the handlers share.
#[derive(Clone)]
pub struct ApiState {
    answers: Answers,
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
    /// `trust_proxy`: take the client IP from the first `X-Forwarded-For` hop (only behind a
    /// proxy that sets it) instead of the peer address.
    #[must_use]
    pub fn new(answers: Answers, trust_proxy: bool) -> Self {
        let document = openapi::document_bytes();
        let compressed = Arc::new(encoding::Compressed::new(answers.compute_pool().clone()));
        Self {
            answers,
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

/// Server tuning.
#[derive(Debug, Clone, Copy)]
pub struct ServerSettings {
    /// Worker threads (0: one per core).
    pub workers: usize,
    /// How long in-flight requests may run on after a stop signal.
    pub shutdown_timeout: Duration,
    /// How long a client may take to send its request head.
    pub client_request_timeout: Duration,
    /// Most connections open at once, all workers together; at it an idle connection gives way
    /// to a new one (`connections`), and when none is idle new connections wait in the listen
    /// backlog while the open ones are served.
    pub max_connections: usize,
}

impl ServerSettings {
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            workers: 0,
            shutdown_timeout: Self::DEFAULT_SHUTDOWN_TIMEOUT,
            client_request_timeout: Duration::from_secs(5),
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
        .configure(routes::register_all)
        .into_app()
        .app_data(web::Data::new(state))
        .default_service(web::to(routes::unrouted))
        .wrap(middleware::Observe)
}

/// A server bound to its listener.
pub struct Application {
    port: u16,
    server: Server,
    connections: Arc<connections::Connections>,
    stopping: GracefulShutdownSignal,
}

impl Application {
    /// Binds the app to an already bound listener (port 0 in tests): actix-server's workers
    /// and actix-http's HTTP/1.1 with actix-web's settings, each connection counted so that
    /// one past the bound makes an idle one give way (`connections`). The answers actix-http
    /// gives before a request exists (a malformed, slow or oversized head) are its own; in
    /// the shipped topology nginx answers those cases first (deploy/nginx/nginx.conf;
    /// docs/operations.md, "The reverse proxy").
    pub fn build(
        listener: TcpListener,
        state: ApiState,
        settings: ServerSettings,
    ) -> std::io::Result<Self> {
        let address = listener.local_addr()?;
        let workers = if settings.workers > 0 {
            settings.workers
        } else {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        };
        // At the bound less a connection a worker, an idle connection gives way to a new one;
        // actix's own per-worker bound (the bound shared out, rounded down) stops accepting
        // only when every open connection is being answered.
        let per_worker = (settings.max_connections / workers).max(1);
        let connections = Arc::new(connections::Connections::new(
            settings.max_connections.saturating_sub(workers),
        ));
        let builder = Server::build();
        let stopping = builder.graceful_shutdown_signal();
        let counted = Arc::clone(&connections);
        let server = builder
            .workers(workers)
            .max_concurrent_connections(per_worker)
            .shutdown_timeout(settings.shutdown_timeout.as_secs())
            .listen("callstats", listener, move || {
                let connections = Arc::clone(&counted);
                let app = app(state.clone())
                    .into_factory()
                    .map_err(|error| error.error_response());
                let http = HttpService::build()
                    .keep_alive(KeepAlive::Timeout(settings.client_request_timeout))
                    .client_request_timeout(settings.client_request_timeout)
                    .client_disconnect_timeout(Duration::from_secs(1))
                    .h1_allow_half_closed(true)
                    .local_addr(address)
                    .finish(map_config(app, |()| AppConfig::default()));
                fn_service(move |io: actix_rt::net::TcpStream| {
                    let peer = io.peer_addr().ok();
                    let tracked = connections.admit(io);
                    async move { Ok::<_, DispatchError>((tracked, Protocol::Http1, peer)) }
                })
                .and_then(http)
            })?
            .run();
        Ok(Self {
            port: address.port(),
            server,
            connections,
            stopping,
        })
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

    /// Serves until stopped; SIGINT and SIGTERM stop it gracefully, letting in-flight requests
    /// finish.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let Self {
            server,
            connections,
            stopping,
            ..
        } = self;
        let close_idle = async move {
            stopping.notified().await;
            connections.stop();
            std::future::pending().await
        };
        futures::future::select(server, std::pin::pin!(close_idle))
            .await
            .factor_first()
            .0
    }
}
