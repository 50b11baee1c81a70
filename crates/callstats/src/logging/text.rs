//! The text log line: the same line as tracing-subscriber's default (full) format without
//! colours, written with less machinery, since servers write one for every request.
//!
//! `2026-11-21T07:51:36.986126Z  INFO span{field=1}: target: message key=value text="quoted"`
//!
//! The line is built in a per-thread `String` with plain appends and handed to the subscriber's
//! writer in one piece; each thread keeps the timestamp's date and time of day for the current
//! second; strings that need no escaping are copied as they are; everything else is formatted
//! exactly as the default format does (a test compares the two line for line).

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_log::NormalizeEvent as _;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The formatter of text log lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextLine;

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        thread_local! {
            static LINE: RefCell<String> = const { RefCell::new(String::new()) };
        }
        LINE.with(|line| {
            let mut borrowed = line.try_borrow_mut();
            // A value's formatting logged something itself: a fresh line for that one.
            let mut fresh = String::new();
            let line = borrowed.as_deref_mut().unwrap_or(&mut fresh);
            line.clear();
            format_line(ctx, event, line)?;
            writer.write_str(line)
        })
    }
}

fn format_line<S, N>(
    ctx: &FmtContext<'_, S, N>,
    event: &Event<'_>,
    line: &mut String,
) -> fmt::Result
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    // Events from the `log` crate (actix-server's, for one) carry their real target and level
    // as fields.
    let normalized = event.normalized_metadata();
    let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());

    push_timestamp(line);
    line.push_str(level(meta.level()));
    line.push(' ');
    if let Some(scope) = ctx.event_scope() {
        let mut any = false;
        for span in scope.from_root() {
            any = true;
            line.push_str(span.metadata().name());
            let extensions = span.extensions();
            if let Some(fields) = extensions.get::<FormattedFields<N>>()
                && !fields.is_empty()
            {
                write!(line, "{{{fields}}}")?;
            }
            line.push(':');
        }
        if any {
            line.push(' ');
        }
    }
    line.push_str(meta.target());
    line.push_str(": ");
    let mut fields = Fields {
        line,
        first: true,
        result: Ok(()),
    };
    event.record(&mut fields);
    fields.result?;
    line.push('\n');
    Ok(())
}

/// The level, right-aligned in five columns.
const fn level(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => " INFO",
        Level::WARN => " WARN",
        Level::ERROR => "ERROR",
    }
}

/// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ ` in UTC.
fn push_timestamp(line: &mut String) {
    thread_local! {
        /// The last second formatted on this thread, and its text up to the seconds.
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = now.as_secs();
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != seconds {
            *second = seconds;
            text.clear();
            let time = i64::try_from(seconds)
                .ok()
                .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            let _ = write!(
                text,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                time.year(),
                u8::from(time.month()),
                time.day(),
                time.hour(),
                time.minute(),
                time.second()
            );
        }
        line.push_str(text);
        line.push('.');
        let micros = now.subsec_micros();
        for place in [100_000, 10_000, 1_000, 100, 10, 1] {
            line.push(char::from_digit(micros / place % 10, 10).unwrap_or('0'));
        }
        line.push_str("Z ");
    });
}

/// Writes an event's fields: the message first as it is, then ` name=value` for each other
/// field, as the default format does.
struct Fields<'a> {
    line: &'a mut String,
    first: bool,
    result: fmt::Result,
}

impl Fields<'_> {
    /// Starts a field: a space before all but the first, then `name=` unless it is the
    /// message. `None` for fields not written at all.
    fn start(&mut self, field: &Field) -> Option<bool> {
        let name = field.name();
        // Metadata of `log` records, already in the line's target and level.
        if self.result.is_err() || name.starts_with("log.") {
            return None;
        }
        if !std::mem::take(&mut self.first) {
            self.line.push(' ');
        }
        let message = name == "message";
        if !message {
            self.line.push_str(name.strip_prefix("r#").unwrap_or(name));
            self.line.push('=');
        }
        Some(message)
    }

    fn write(&mut self, write: impl FnOnce(&mut String) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = write(self.line);
        }
    }
}

/// Whether `value` is printable ASCII, which no escaping changes.
fn printable_ascii(value: &str) -> bool {
    value.bytes().all(|b| (b' '..=b'~').contains(&b))
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let Some(message) = self.start(field) else {
            return;
        };
        self.write(|w| {
            if message {
                Sanitizing(w).write_str(value)
            } else if printable_ascii(value) && !value.contains(['"', '\\']) {
                // What Debug would write, without going through it.
                w.push('"');
                w.push_str(value);
                w.push('"');
                Ok(())
            } else {
                write!(w, "{value:?}")
            }
        });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.start(field).is_some() {
            self.write(|w| write!(w, "{value}"));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.start(field).is_some() {
            self.write(|w| write!(w, "{value}"));
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.start(field).is_some() {
            self.write(|w| w.write_str(if value { "true" } else { "false" }));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if self.start(field).is_none() {
            return;
        }
        let name = field.name();
        self.write(|w| {
            write!(Sanitizing(&mut *w), "{value}")?;
            let mut source = value.source();
            if source.is_some() {
                write!(w, " {name}.sources=[")?;
            }
            let mut first = true;
            while let Some(error) = source {
                if !std::mem::take(&mut first) {
                    w.write_str(", ")?;
                }
                write!(Sanitizing(&mut *w), "{error}")?;
                source = error.source();
            }
            if !first {
                w.write_char(']')?;
            }
            Ok(())
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let Some(message) = self.start(field) else {
            return;
        };
        self.write(|w| {
            if message {
                // A message built from arguments: escaped like a plain one as it is written.
                write!(Sanitizing(w), "{value:?}")
            } else {
                write!(w, "{value:?}")
            }
        });
    }
}

/// Writes a message or error text through to `W` as the default format does: as it is, but
/// with the control characters a terminal acts on written out (`\x1b`), so no log line can
/// drive a terminal.
struct Sanitizing<W>(W);

impl<W: fmt::Write> fmt::Write for Sanitizing<W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if printable_ascii(text) {
            return self.0.write_str(text);
        }
        for c in text.chars() {
            match c {
                '\x1b' => self.0.write_str("\\x1b")?,
                '\x07' => self.0.write_str("\\x07")?,
                '\x08' => self.0.write_str("\\x08")?,
                '\x0c' => self.0.write_str("\\x0c")?,
                '\x7f' => self.0.write_str("\\x7f")?,
                '\u{80}'..='\u{9f}' => write!(self.0, "\\u{{{:x}}}", u32::from(c))?,
                c => self.0.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Self;
        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("outer failed")
        }
    }
    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("inner \"cause\"")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    impl std::error::Error for Inner {}

    /// Every kind of field and value the service logs, and some it should survive.
    fn emit_everything() {
        let request_id = "6b014d6f-07be36";
        tracing::info!(
            %request_id,
            method = "GET",
            path = "/api/v1/operators",
            status = 200_u16,
            latency_ms = 0.013_943,
            whole = 2.0_f64,
            cache = "HIT",
            "request"
        );
        tracing::warn!(
            path = "/a \"quoted\" \\ path\nwith a newline \u{1b}[31m and ünïcode",
            negative = -7_i64,
            flag = true,
            "escapes {}",
            "in the \u{1b} message"
        );
        let outer = Outer(Inner);
        let error: &(dyn std::error::Error + 'static) = &outer;
        tracing::error!(error, "failed");
        tracing::error!(r#type = "raw", "raw identifier");
        let span = tracing::info_span!("call_platform_fetch", start = "2026-11-01", n = 3);
        let _entered = span.enter();
        let inner = tracing::debug_span!("page", cursor = "abc");
        let _inner = inner.enter();
        tracing::warn!(reason = "timed out", "call platform unavailable");
        tracing::info!("");
    }

    fn without_timestamp(line: &str) -> &str {
        line.split_once(' ').map_or(line, |(_, rest)| rest)
    }

    #[test]
    fn writes_the_same_lines_as_the_default_format_without_colours() {
        let ours = Captured::default();
        let theirs = Captured::default();
        tracing::subscriber::with_default(
            tracing_subscriber::fmt()
                .with_max_level(Level::TRACE)
                .with_ansi(false)
                .event_format(TextLine)
                .with_writer(ours.clone())
                .finish(),
            emit_everything,
        );
        tracing::subscriber::with_default(
            tracing_subscriber::fmt()
                .with_max_level(Level::TRACE)
                .with_ansi(false)
                .with_writer(theirs.clone())
                .finish(),
            emit_everything,
        );
        let (ours, theirs) = (ours.lines(), theirs.lines());
        assert_eq!(ours.len(), 6, "{ours:#?}");
        assert_eq!(ours.len(), theirs.len());
        for (ours, theirs) in ours.iter().zip(&theirs) {
            assert_eq!(without_timestamp(ours), without_timestamp(theirs));
        }
        assert_eq!(
            without_timestamp(&ours[0]),
            r#" INFO callstats::logging::text::tests: request request_id=6b014d6f-07be36 method="GET" path="/api/v1/operators" status=200 latency_ms=0.013943 whole=2.0 cache="HIT""#
        );
        assert!(ours[1].contains(r"\u{1b}[31m"), "{}", ours[1]);
        assert!(
            ours[1].contains(r"escapes in the \x1b message"),
            "{}",
            ours[1]
        );
        assert!(
            ours[2].contains(r#"failed error=outer failed error.sources=[inner "cause"]"#),
            "{}",
            ours[2]
        );
        assert!(
            ours[4].contains(
                r#"call_platform_fetch{start="2026-11-01" n=3}:page{cursor="abc"}: callstats::logging::text::tests: call platform unavailable reason="timed out""#
            ),
            "{}",
            ours[4]
        );
    }

    #[test]
    fn timestamps_are_utc_with_microseconds() {
        let ours = Captured::default();
        tracing::subscriber::with_default(
            tracing_subscriber::fmt()
                .event_format(TextLine)
                .with_writer(ours.clone())
                .finish(),
            || {
                tracing::info!("one");
                tracing::info!("two");
            },
        );
        let today = time::OffsetDateTime::now_utc().date();
        for line in ours.lines() {
            let (stamp, _) = line.split_once(' ').unwrap();
            // 2026-11-21T07:51:36.986126Z
            assert_eq!(stamp.len(), 27, "{stamp}");
            assert!(stamp.ends_with('Z'), "{stamp}");
            let parsed = time::PrimitiveDateTime::parse(
                stamp.trim_end_matches('Z'),
                time::macros::format_description!(
                    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
                ),
            )
            .unwrap();
            // The date of now, unless the test ran across midnight.
            assert!(
                parsed.date() == today || parsed.date().next_day() == Some(today),
                "{stamp}"
            );
        }
    }
}
