//! The thin web layer: the eight GET endpoints under `/api/v1` and the OpenAPI document, served
//! by actix-web.
//!
//! Handlers extract, call the application layer's one use case ([`Answers`]) and write bytes;
//! there is no statistics logic and no caching policy here. Everything reaches the domain through its ports, so this crate never depends on
//! a database, an HTTP client or Redis.

mod caller;
mod encoding;
mod error;
mod middleware;
pub mod openapi;
pub mod ops;
mod query;
mod response;
mod routes;
mod wire;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_http::HttpService;
use actix_http::error::DispatchError;
use actix_rt::net::TcpStream;
use actix_service::{ServiceFactoryExt as _, map_config};
use actix_web::body::MessageBody;
use actix_web::dev::{
    AppConfig, Server, ServerHandle, ServiceFactory, ServiceRequest, ServiceResponse, fn_service,
};
use actix_web::{App, web};
use bytes::Bytes;
use callstats_application::{Answers, ETag};
use futures::future::ready;
use utoipa_actix_web::AppExt as _;

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
        }
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
    /// Most connections open at once, all workers together; past it new connections wait in
    /// the listen backlog while the open ones are served.
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
        .wrap(actix_web::middleware::from_fn(middleware::observe))
}

/// A server bound to its listener.
pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Binds the app to an already bound listener (port 0 in tests).
    ///
    /// This is what actix-web's `HttpServer::listen` does, with one difference: every accepted
    /// connection is wrapped in `wire::Guarded`, so the answers actix-http writes before a
    /// request exists (408, 400, 431) are JSON with the headers every answer carries.
    pub fn build(
        listener: TcpListener,
        state: ApiState,
        settings: ServerSettings,
    ) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let workers = if settings.workers > 0 {
            settings.workers
        } else {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        };
        // actix-server bounds connections per worker: the bound shared out, rounded down, so
        // that all workers together stay within it.
        let per_worker = (settings.max_connections / workers).max(1);
        let builder = Server::build()
            .shutdown_timeout(settings.shutdown_timeout.as_secs())
            .workers(workers)
            .max_concurrent_connections(per_worker);
        let stopping = builder.graceful_shutdown_signal();
        let timeout = settings.client_request_timeout;
        let builder = builder.listen("callstats", listener, move || {
            let stopping = stopping.clone();
            let http = HttpService::build()
                // On a stop signal, idle keep-alive connections close at once instead of at
                // their timeout: the same (hidden) call `HttpServer` makes; the graceful-stop
                // tests hold it.
                .graceful_shutdown_signal(move || {
                    let stopping = stopping.clone();
                    async move { stopping.notified().await }
                })
                .client_request_timeout(timeout)
                // HttpServer's default (actix-http's own is none).
                .client_disconnect_timeout(Duration::from_secs(1))
                .local_addr(local)
                // Nothing of ours reads the app config's host or address (the caller's IP comes
                // from the peer address or X-Forwarded-For), so its default serves.
                .h1(map_config(app(state.clone()), |()| AppConfig::default()));
            fn_service(move |io: TcpStream| {
                let peer = io.peer_addr().ok();
                ready(Ok::<_, DispatchError>((
                    wire::Guarded::new(io, timeout),
                    peer,
                )))
            })
            .and_then(http)
        })?;
        Ok(Self {
            port: local.port(),
            server: builder.run(),
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
        self.server.await
    }
}
