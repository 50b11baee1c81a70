//! The service as `serve` assembles it, served in process.

use std::net::TcpListener;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use callstats::app::Assembly;
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
