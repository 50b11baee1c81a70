//! Structured logs on stderr: tracing-subscriber's text format without colours by default, one
//! JSON object per line with `CALLSTATS_LOG_FORMAT=json`. `RUST_LOG` overrides the level.
//!
//! Servers write a line per request, so their lines go through a writer thread of their own
//! (`batch.rs`): a worker formats its line, appends it to a shared buffer and moves on; the
//! thread writes the buffer out in batches. No line is dropped (a full buffer makes the worker
//! wait), and everything pending is written when the returned guard is dropped, i.e. when
//! `main` returns.

mod batch;

pub use batch::LogGuard;

use clap::ValueEnum;
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

/// Off unless `RUST_LOG` asks for it: actix-http's connection handler logs at ERROR each
/// request head a client got wrong, which is the client's error, not the service's (in the
/// shipped topology nginx answers and logs those heads).
const DISPATCHER_OFF: &str = "actix_http::h1::dispatcher=off";

fn install<W>(format: LogFormat, default_level: &str, writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{default_level},{DISPATCHER_OFF}")));
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
