//! Structured logs on stderr: tracing-subscriber's text format without colours by default, one
//! JSON object per line with `CALLSTATS_LOG_FORMAT=json`. `RUST_LOG` overrides the level.
//!
//! Servers write a line per request, so their lines go through tracing-appender's non-blocking
//! writer: a thread of its own writes them, and a worker formats its line and moves on instead
//! of waiting for stderr. It is built lossless (a full queue makes the worker wait, no line is
//! dropped), and everything queued is written when the returned guard is dropped, i.e. when
//! `main` returns.

use clap::ValueEnum;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

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
    match writer {
        LogWriter::Direct => {
            install(format, default_level, std::io::stderr);
            None
        }
        LogWriter::Background => {
            let (writer, guard) = NonBlockingBuilder::default()
                .lossy(false)
                .thread_name("callstats-log")
                .finish(std::io::stderr());
            install(format, default_level, writer);
            Some(guard)
        }
    }
}

fn install<W>(format: LogFormat, default_level: &str, writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // No colours: the same bytes whether a person or a log collector reads them.
        .with_ansi(false)
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}
