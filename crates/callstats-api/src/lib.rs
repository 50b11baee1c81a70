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

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServerHandle, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, HttpServer, web};
use bytes::Bytes;
use callstats_application::{Answers, ETag};
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
        Self {
            answers,
            trust_proxy,
            readiness: Arc::new(ops::Readiness::new(Vec::new())),
            document_etag: ETag::of(&document),
            document,
            compressed: Arc::default(),
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
}

impl ServerSettings {
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            workers: 0,
            shutdown_timeout: Self::DEFAULT_SHUTDOWN_TIMEOUT,
            client_request_timeout: Duration::from_secs(5),
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
    pub fn build(
        listener: TcpListener,
        state: ApiState,
        settings: ServerSettings,
    ) -> std::io::Result<Self> {
        let port = listener.local_addr()?.port();
        let mut server = HttpServer::new(move || app(state.clone()))
            .shutdown_timeout(settings.shutdown_timeout.as_secs())
            .client_request_timeout(settings.client_request_timeout)
            .listen(listener)?;
        if settings.workers > 0 {
            server = server.workers(settings.workers);
        }
        Ok(Self {
            port,
            server: server.run(),
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
