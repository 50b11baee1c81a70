//! The text format's layer: the line tracing-subscriber's fmt layer writes with colours off
//! (`<timestamp> <LEVEL> <span>{<fields>}:…: <target>: <message> <name>=<value>…`), written
//! straight into a per-thread buffer instead of through fmt's event formatter, whose padded
//! level, painted span names, targets and colons each go through a format string and a styling
//! call even when colours are off. A test compares its lines with the fmt layer's. Measured
//! together with three smaller changes to the request path (`cargo xtask instructions`, cached
//! `/operators`: 62,448 instructions a request before the four, 59,603 after;
//! docs/architecture.md).

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::Write as _;

use arrayvec::ArrayString;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::timestamp;

/// Writes each event as one text line to `writer`.
pub(super) struct TextLayer<W> {
    writer: W,
    /// Whether lines start with the time (always, but in tests).
    timestamps: bool,
}

impl<W> TextLayer<W> {
    pub(super) const fn new(writer: W) -> Self {
        Self {
            writer,
            timestamps: true,
        }
    }

    #[cfg(test)]
    pub(super) const fn without_time(writer: W) -> Self {
        Self {
            writer,
            timestamps: false,
        }
    }
}

/// A span's fields as the line shows them, written once when the span is made: inline when
/// they are short (a request's id is 35 bytes), where a `String` would be allocated and freed
/// for every request.
enum SpanFields {
    Inline(ArrayString<INLINE_FIELDS>),
    Heap(String),
}

/// The longest fields a span keeps inline.
const INLINE_FIELDS: usize = 64;

impl SpanFields {
    fn of(fields: &str) -> Self {
        ArrayString::from(fields).map_or_else(|_| Self::Heap(fields.to_owned()), Self::Inline)
    }

    fn as_str(&self) -> &str {
        match self {
            Self::Inline(fields) => fields,
            Self::Heap(fields) => fields,
        }
    }
}

thread_local! {
    /// The line being written on this thread, its allocation kept from line to line.
    static LINE: RefCell<String> = const { RefCell::new(String::new()) };
    /// A new span's fields being written on this thread, its allocation kept likewise.
    static FIELDS: RefCell<String> = const { RefCell::new(String::new()) };
}

/// `write` given this thread's buffer in `buffer`, emptied; or a new one, should the thread's be
/// in use already (a line logged from a `Debug` impl while a line is written).
fn with_buffer<R>(
    buffer: &'static std::thread::LocalKey<RefCell<String>>,
    write: impl FnOnce(&mut String) -> R,
) -> R {
    buffer.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            write(&mut buffer)
        }
        Err(_) => write(&mut String::new()),
    })
}

impl<S, W> Layer<S> for TextLayer<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let fields = with_buffer(&FIELDS, |fields| {
            attrs.record(&mut PlainVisitor::new(fields));
            SpanFields::of(fields)
        });
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let fields = with_buffer(&FIELDS, |fields| {
            if let Some(recorded) = extensions.get_mut::<SpanFields>() {
                fields.push_str(recorded.as_str());
                if !fields.is_empty() {
                    fields.push(' ');
                }
            }
            values.record(&mut PlainVisitor::new(fields));
            SpanFields::of(fields)
        });
        extensions.replace(fields);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        with_buffer(&LINE, |line| {
            self.write_line(line, event, &ctx);
            // Nowhere to report a failing log writer: the line is dropped.
            let _ = self
                .writer
                .make_writer_for(event.metadata())
                .write_all(line.as_bytes());
        });
    }
}

impl<W> TextLayer<W> {
    fn write_line<S>(&self, line: &mut String, event: &Event<'_>, ctx: &Context<'_, S>)
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        if self.timestamps {
            timestamp::push_now(line);
            line.push(' ');
        }
        let meta = event.metadata();
        line.push_str(match *meta.level() {
            Level::TRACE => "TRACE ",
            Level::DEBUG => "DEBUG ",
            Level::INFO => " INFO ",
            Level::WARN => " WARN ",
            Level::ERROR => "ERROR ",
        });
        if let Some(scope) = ctx.event_scope(event) {
            let mut seen = false;
            for span in scope.from_root() {
                line.push_str(span.metadata().name());
                seen = true;
                if let Some(fields) = span.extensions().get::<SpanFields>()
                    && !fields.as_str().is_empty()
                {
                    line.push('{');
                    line.push_str(fields.as_str());
                    line.push('}');
                }
                line.push(':');
            }
            if seen {
                line.push(' ');
            }
        }
        // A record of the `log` crate, bridged: its own target, as the fmt layer shows it.
        let mut log_target = None;
        if meta.fields().field("log.target").is_some() {
            event.record(&mut LogTarget(&mut log_target));
        }
        line.push_str(log_target.as_deref().unwrap_or(meta.target()));
        line.push_str(": ");
        event.record(&mut PlainVisitor::new(line));
        line.push('\n');
    }
}

/// Finds a bridged `log` record's target.
struct LogTarget<'a>(&'a mut Option<String>);

impl Visit for LogTarget<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "log.target" {
            *self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
}

/// Writes fields as tracing-subscriber's `DefaultFields` writes them with colours off
/// (`name=value` by `Debug`, separated by spaces, the message bare, `log.` fields of bridged
/// `log` records left out), without its styling: `DefaultFields` paints every name and `=`
/// through nu-ansi-term even when colours are off. Measured with callgrind on the release
/// demo's cached `/operators` (one log line and one span a request): 68,634 instructions a
/// request with `DefaultFields`, 65,119 with this (5 % fewer).
struct PlainVisitor<'a> {
    line: &'a mut String,
    first: bool,
}

impl<'a> PlainVisitor<'a> {
    const fn new(line: &'a mut String) -> Self {
        Self { line, first: true }
    }

    /// Writes the separator and `name=` (nothing for the message), or `false` to skip the
    /// field: a `log.` field of a bridged `log` record.
    fn start(&mut self, field: &Field) -> bool {
        let name = field.name();
        if name.starts_with("log.") {
            return false;
        }
        if !std::mem::take(&mut self.first) {
            self.line.push(' ');
        }
        if name != "message" {
            self.line.push_str(name.strip_prefix("r#").unwrap_or(name));
            self.line.push('=');
        }
        true
    }
}

/// The fields' names and plain values are written as they are, not through a format string,
/// and integers and booleans without the formatter. Measured with callgrind on the release
/// demo's cached `/operators`: the request line's fields cost 3,393 instructions with one
/// `write!` a field, 2,306 this way (the whole request 67,939 before, 66,293 after).
impl Visit for PlainVisitor<'_> {
    /// Text is quoted (as `Debug` writes it), but for the message and the fields a request's
    /// span and line give as text (`request_id=3f9e02d76b0155ca09996a51c2e4b7d8`), which are written
    /// bare as `%` would write them: text that never needs quotes (an id, a method, a path and
    /// a cache status). Given as text rather than through `%` or a `Debug` wrapper, they skip
    /// the formatter: `core::fmt::write` and two dynamic calls, about 120 instructions a field,
    /// five fields a request.
    fn record_str(&mut self, field: &Field, value: &str) {
        if matches!(
            field.name(),
            "message" | "request_id" | "method" | "path" | "cache"
        ) {
            if self.start(field) {
                self.line.push_str(value);
            }
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.start(field) {
            self.line.push_str(itoa::Buffer::new().format(value));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.start(field) {
            self.line.push_str(itoa::Buffer::new().format(value));
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.start(field) {
            self.line.push_str(if value { "true" } else { "false" });
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.start(field) {
            // Writing into a String cannot fail.
            let _ = write!(self.line, "{value:?}");
        }
    }
}
