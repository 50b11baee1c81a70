//! Structured logs on stderr: tracing-subscriber's text format without colours by default, one
//! JSON object per line with `CALLSTATS_LOG_FORMAT=json`. `RUST_LOG` overrides the level.
//!
//! Servers write through tracing-appender's non-blocking writer, lossless: a worker hands its
//! line to a thread of its own and moves on, and waits only when that thread is far behind, so
//! no line is dropped. Its guard writes out what is still queued when `main` returns.

use clap::ValueEnum;
use tracing::Subscriber;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Where log lines go: straight to stderr, or through the writer thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogWriter {
    /// Each line is written before the logging call returns (one-shot commands, whose lines
    /// must interleave exactly with what they print).
    Direct,
    /// Lines are queued and written by a thread of their own (servers).
    Background,
}

/// Installs the subscriber; `default_level` applies when `RUST_LOG` is unset. Keep the guard
/// alive until the program ends: dropping it writes out what is still queued.
#[must_use = "dropping the guard stops the log writer"]
pub fn init(format: LogFormat, default_level: &str, writer: LogWriter) -> Option<WorkerGuard> {
    let filter = filter(
        std::env::var(EnvFilter::DEFAULT_ENV).ok().as_deref(),
        default_level,
    );
    let registry = tracing_subscriber::registry().with(filter);
    match writer {
        LogWriter::Direct => {
            registry.with(layer(format, std::io::stderr)).init();
            None
        }
        LogWriter::Background => {
            let (writer, guard) = NonBlockingBuilder::default()
                .lossy(false)
                .thread_name("callstats-log")
                .finish(std::io::stderr());
            registry.with(layer(format, writer)).init();
            Some(guard)
        }
    }
}

/// Off unless `RUST_LOG` names `actix_http`: actix-http's connection handler logs at ERROR each
/// request head a client got wrong (`stream error: request parse error: …`), which is the
/// client's error, not the service's (in the shipped topology nginx answers and logs those
/// heads). A general level such as `RUST_LOG=debug` leaves it off too.
const DISPATCHER_OFF: &str = "actix_http::h1::dispatcher=off";

/// `directives` with [`DISPATCHER_OFF`] added, unless they name `actix_http` themselves.
fn quiet_dispatcher(directives: &str) -> String {
    if directives.contains("actix_http") {
        directives.to_owned()
    } else if directives.trim().is_empty() {
        DISPATCHER_OFF.to_owned()
    } else {
        format!("{directives},{DISPATCHER_OFF}")
    }
}

/// `RUST_LOG`'s directives when they are valid, else `default_level`; either with actix-http's
/// connection handler off unless they name it.
fn filter(rust_log: Option<&str>, default_level: &str) -> EnvFilter {
    rust_log
        .and_then(|directives| EnvFilter::try_new(quiet_dispatcher(directives)).ok())
        .unwrap_or_else(|| EnvFilter::new(quiet_dispatcher(default_level)))
}

/// tracing-subscriber's formatter writing to `writer`, without colours: the same bytes whether
/// a person or a log collector reads them.
fn layer<S, W>(format: LogFormat, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(writer);
    match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .boxed(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::{LogFormat, filter, layer};

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines the service's subscriber writes for `log`, under `RUST_LOG=rust_log` (or
    /// unset) with `info` as the default level.
    fn lines(format: LogFormat, rust_log: Option<&str>, log: impl FnOnce()) -> Vec<String> {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::registry()
            .with(filter(rust_log, "info"))
            .with(layer(format, move || writer.clone()));
        tracing::subscriber::with_default(subscriber, log);
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }

    /// A request's line and a line logged within its span, as the middleware writes them.
    fn a_request() {
        let span = tracing::error_span!("request", request_id = "67a-00002a");
        span.in_scope(|| tracing::warn!(reason = "refused", "call platform unavailable"));
        tracing::info!(
            message = "request",
            request_id = "67a-00002a",
            method = "GET",
            path = "/api/v1/operators",
            status = 200_u16,
            latency_us = 10_u64,
            cache = "HIT",
        );
    }

    #[test]
    fn json_lines_carry_the_request_fields_by_name_and_the_request_span() {
        let lines = lines(LogFormat::Json, None, a_request);
        let [warning, request] = lines.as_slice() else {
            panic!("{lines:?}")
        };
        let warning: serde_json::Value = serde_json::from_str(warning).unwrap();
        assert_eq!(warning["level"], "WARN");
        assert_eq!(warning["message"], "call platform unavailable");
        assert_eq!(warning["spans"][0]["name"], "request");
        assert_eq!(warning["spans"][0]["request_id"], "67a-00002a");
        let request: serde_json::Value = serde_json::from_str(request).unwrap();
        for (field, value) in [
            ("message", serde_json::json!("request")),
            ("request_id", serde_json::json!("67a-00002a")),
            ("method", serde_json::json!("GET")),
            ("path", serde_json::json!("/api/v1/operators")),
            ("status", serde_json::json!(200)),
            ("latency_us", serde_json::json!(10)),
            ("cache", serde_json::json!("HIT")),
            ("level", serde_json::json!("INFO")),
        ] {
            assert_eq!(request[field], value, "{field} in {request}");
        }
        let timestamp = request["timestamp"].as_str().unwrap();
        assert!(
            timestamp.starts_with("20") && timestamp.ends_with('Z'),
            "{timestamp}"
        );
    }

    #[test]
    fn text_lines_start_with_the_time_and_have_no_colours() {
        let lines = lines(LogFormat::Text, None, a_request);
        let [warning, request] = lines.as_slice() else {
            panic!("{lines:?}")
        };
        // `2026-11-25T16:22:44.426346Z  WARN request{…`
        assert_eq!(warning.get(26..33), Some("Z  WARN"), "{warning}");
        assert!(
            warning.ends_with(
                r#" WARN request{request_id="67a-00002a"}: callstats::logging::tests: call platform unavailable reason="refused""#
            ),
            "{warning}"
        );
        assert!(
            request.ends_with(
                r#" INFO callstats::logging::tests: request request_id="67a-00002a" method="GET" path="/api/v1/operators" status=200 latency_us=10 cache="HIT""#
            ),
            "{request}"
        );
        assert!(!lines.concat().contains('\u{1b}'), "{lines:?}");
    }

    /// What actix-http's connection handler logs of a head a client got wrong, and lines at
    /// other levels and targets.
    fn a_malformed_head() {
        tracing::error!(target: "actix_http::h1::dispatcher", "stream error: request parse error");
        tracing::debug!(target: "actix_http::h1::decoder", "a decoder line");
        tracing::debug!("a debug line");
        tracing::info!("an info line");
    }

    fn lines_at(rust_log: Option<&str>) -> Vec<String> {
        lines(LogFormat::Text, rust_log, a_malformed_head)
    }

    #[test]
    fn by_default_the_level_is_the_commands_and_actix_https_connection_handler_is_off() {
        let lines = lines_at(None);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].ends_with("an info line"), "{lines:?}");
    }

    #[test]
    fn rust_log_overrides_the_default_and_an_invalid_one_is_ignored() {
        let debug = lines_at(Some("debug"));
        assert_eq!(debug.len(), 3, "{debug:?}");
        assert!(debug.iter().any(|line| line.ends_with("a decoder line")));
        let invalid = lines_at(Some("callstats=loud"));
        assert_eq!(invalid.len(), 1, "the default: {invalid:?}");
        assert!(invalid[0].ends_with("an info line"), "{invalid:?}");
    }

    #[test]
    fn a_client_s_malformed_head_is_no_error_line_unless_rust_log_names_actix_http() {
        let names_the_head =
            |lines: &[String]| lines.iter().any(|line| line.contains("stream error"));
        for directives in [
            "debug",
            "trace",
            "warn",
            "",
            "callstats=debug,actix_web=trace",
        ] {
            assert!(
                !names_the_head(&lines_at(Some(directives))),
                "{directives:?}"
            );
        }
        for directives in ["debug,actix_http=trace", "actix_http::h1::dispatcher=error"] {
            assert!(
                names_the_head(&lines_at(Some(directives))),
                "{directives:?}"
            );
        }
        // A span filter, with the handler off as well.
        assert!(!names_the_head(&lines_at(Some("callstats[request]=debug"))));
    }
}
