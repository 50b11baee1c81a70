//! Structured logs on stderr: tracing-subscriber's text format without colours by default
//! (written by a layer of our own, `text.rs`, with the fmt layer's bytes), one JSON object per
//! line with `CALLSTATS_LOG_FORMAT=json`. `RUST_LOG` overrides the level.
//!
//! Servers write a line per request, so their lines go through a writer thread of their own
//! (`batch.rs`): a worker formats its line, appends it to a shared buffer and moves on; the
//! thread writes the buffer out in batches. No line is dropped (a full buffer makes the worker
//! wait), and everything pending is written when the returned guard is dropped, i.e. when
//! `main` returns.

mod batch;
mod text;
mod timestamp;

pub use batch::LogGuard;

use clap::ValueEnum;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Registry};

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
pub fn init(format: LogFormat, default_level: &str, writer: LogWriter) -> Option<LogGuard> {
    match writer {
        LogWriter::Direct => {
            install(format, default_level, std::io::stderr);
            None
        }
        LogWriter::Background => match batch::spawn(std::io::stderr()) {
            Ok((writer, guard)) => {
                install(format, default_level, writer);
                Some(guard)
            }
            // No thread to write with: each line is written directly instead.
            Err(_) => {
                install(format, default_level, std::io::stderr);
                None
            }
        },
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

fn install<W>(format: LogFormat, default_level: &str, writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter: Box<dyn Layer<Registry> + Send + Sync> = match std::env::var(EnvFilter::DEFAULT_ENV)
        .ok()
        .and_then(|directives| filter(&quiet_dispatcher(&directives)))
        .or_else(|| filter(&quiet_dispatcher(default_level)))
    {
        Some(Filter::Targets(targets)) => targets,
        Some(Filter::Env(filter)) => filter,
        None => Box::new(LevelFilter::INFO),
    };
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        // No colours: the same bytes whether a person or a log collector reads them.
        LogFormat::Text => registry.with(text::TextLayer::new(writer)).init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_timer(timestamp::Timestamp)
                    .with_writer(writer)
                    .json()
                    .flatten_event(true)
                    .with_current_span(false),
            )
            .init(),
    }
}

/// The filter `RUST_LOG`'s `directives` write, or `None` when they do not read as one. As
/// `Targets` when they name only targets with levels, nearly always: it decides
/// once for each callsite. As `EnvFilter` when they filter by a span or a field's value: it then
/// also looks every span up in a locked map when the span is made, entered, left and closed,
/// which the other filter spares each request (callgrind, cached `/operators`: 124 instructions
/// a request, measured in an earlier round; docs/architecture.md, "Tooling").
fn filter(directives: &str) -> Option<Filter> {
    // A span or a field is named in brackets (`target[span{field=value}]=level`); `Targets`
    // would read such a directive as its target alone.
    let targets = (!directives.contains('['))
        .then(|| directives.parse::<Targets>().ok())
        .flatten();
    match targets {
        Some(targets) => Some(Filter::Targets(Box::new(targets))),
        None => EnvFilter::try_new(directives)
            .ok()
            .map(|filter| Filter::Env(Box::new(filter))),
    }
}

/// The two filters [`filter`] reads directives as.
#[derive(Debug)]
enum Filter {
    Targets(Box<Targets>),
    Env(Box<EnvFilter>),
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::text::TextLayer;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Logs a span and events within it and outside it, as the service does.
    fn log_some_lines() {
        let span = tracing::error_span!("request", request_id = %"67a-00002a", route = tracing::field::Empty);
        span.in_scope(|| {
            tracing::warn!(reason = "no usable answer: \"quoted\"", attempts = 3_u64, "call platform unavailable");
            span.record("route", "/api/v1/operators");
            let inner = tracing::info_span!("fetch", day = %"2026-11-25");
            inner.in_scope(|| {
                tracing::info!(r#type = %"HIT", ok = true, ratio = 0.5_f64, path = %"/api/v1/operators", "request");
            });
            tracing::error!("{} and {}", "a message", 7);
        });
        let empty = tracing::info_span!("quiet");
        empty.in_scope(|| tracing::debug!(text = "plain"));
        tracing::info!(status = 200_u16, offset = -7_i64, cache = ?Some("MISS"));
    }

    /// The lines `subscriber` writes into `buffer` for [`log_some_lines`].
    fn lines_of<S>(subscriber: S, buffer: &Buffer) -> String
    where
        S: tracing::Subscriber + Send + Sync + 'static,
    {
        tracing::subscriber::with_default(subscriber, log_some_lines);
        let bytes = buffer
            .0
            .lock()
            .map(|bytes| bytes.clone())
            .unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }

    #[test]
    fn the_text_layer_writes_what_the_fmt_layer_writes_without_colours() {
        let (fmt_buffer, text_buffer) = (Buffer::default(), Buffer::default());
        let writer = fmt_buffer.clone();
        let fmt = tracing_subscriber::fmt()
            .with_ansi(false)
            .without_time()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        let writer = text_buffer.clone();
        let text =
            tracing_subscriber::registry().with(TextLayer::without_time(move || writer.clone()));
        let expected = lines_of(fmt, &fmt_buffer);
        let written = lines_of(text, &text_buffer);
        assert_eq!(written, expected);
        assert_eq!(written.lines().count(), 5, "{written}");
        assert!(
            written.contains(r#" WARN request{request_id=67a-00002a}: callstats::logging::tests: call platform unavailable reason="no usable answer: \"quoted\"" attempts=3"#),
            "{written}"
        );
        assert!(
            written.contains(r#"request{request_id=67a-00002a route="/api/v1/operators"}:fetch{day=2026-11-25}: "#),
            "{written}"
        );
        assert!(
            written.contains("status=200 offset=-7 cache=Some(\"MISS\")"),
            "{written}"
        );
    }

    #[test]
    fn the_request_fields_given_as_text_are_written_bare_like_other_text_is_quoted() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let text =
            tracing_subscriber::registry().with(TextLayer::without_time(move || writer.clone()));
        tracing::subscriber::with_default(text, || {
            let span =
                tracing::error_span!("request", request_id = "3f9e02d76b0155ca00002a51c2e4b7d8");
            span.in_scope(|| {
                tracing::info!(
                    message = "request",
                    request_id = "3f9e02d76b0155ca00002a51c2e4b7d8",
                    method = "GET",
                    path = "/api/v1/operators",
                    status = 200_u16,
                    cache = "HIT",
                    reason = "the same text, quoted",
                );
            });
        });
        let written = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            written,
            " INFO request{request_id=3f9e02d76b0155ca00002a51c2e4b7d8}: callstats::logging::tests: \
             request request_id=3f9e02d76b0155ca00002a51c2e4b7d8 method=GET path=/api/v1/operators \
             status=200 cache=HIT reason=\"the same text, quoted\"\n"
        );
    }

    #[test]
    fn targets_and_levels_filter_as_targets_and_span_filters_as_an_env_filter() {
        use super::Filter;

        let is = |directives: &str| {
            super::filter(directives).map(|filter| match filter {
                Filter::Targets(_) => (true, false),
                Filter::Env(_) => (false, true),
            })
        };
        for directives in [
            "info,actix_http::h1::dispatcher=off",
            "warn",
            "callstats=debug,callstats_api::middleware=off",
        ] {
            assert_eq!(is(directives), Some((true, false)), "{directives}");
        }
        for directives in [
            "callstats[request]=debug",
            "warn,[{request_id=abc}]=trace",
            "callstats[{cause}]=warn",
        ] {
            assert_eq!(is(directives), Some((false, true)), "{directives}");
        }
        assert_eq!(is("callstats=loud"), None);
    }

    #[test]
    fn a_client_s_malformed_head_is_no_error_line_unless_rust_log_names_actix_http() {
        use tracing::Level;
        use tracing_subscriber::filter::Targets;

        let dispatcher = "actix_http::h1::dispatcher";
        for directives in [
            "debug",
            "trace",
            "warn",
            "",
            "callstats=debug,actix_web=trace",
        ] {
            let targets: Targets = super::quiet_dispatcher(directives).parse().unwrap();
            assert!(
                !targets.would_enable(dispatcher, &Level::ERROR),
                "{directives:?}"
            );
        }
        let debug: Targets = super::quiet_dispatcher("debug").parse().unwrap();
        assert!(debug.would_enable("actix_http::h1::decoder", &Level::DEBUG));
        assert!(debug.would_enable("callstats_api::middleware", &Level::DEBUG));
        for directives in ["debug,actix_http=trace", "actix_http::h1::dispatcher=error"] {
            let targets: Targets = super::quiet_dispatcher(directives).parse().unwrap();
            assert!(
                targets.would_enable(dispatcher, &Level::ERROR),
                "{directives:?}"
            );
        }
        // A span filter reads as an EnvFilter, with the handler off as well.
        assert!(
            super::quiet_dispatcher("callstats[request]=debug")
                .ends_with(",actix_http::h1::dispatcher=off")
        );
    }

    #[test]
    fn text_lines_start_with_the_time() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let text = tracing_subscriber::registry().with(TextLayer::new(move || writer.clone()));
        let written = lines_of(text, &buffer);
        let first = written.lines().next().unwrap_or_default();
        // `2026-11-25T16:22:44.426346Z  WARN request{…`
        assert_eq!(first.get(26..28), Some("Z "), "{first}");
        assert!(first.starts_with("20"), "{first}");
        assert_eq!(first.get(28..33), Some(" WARN"), "{first}");
    }
}
