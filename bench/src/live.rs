//! `live`: /calls/live as Server-Sent Events (docs/behaviour.md, "Live"; docs/operations.md,
//! "Live streams"), measured on loopback against `callstats sim`, every stream a raw TCP
//! connection of this process read by a thread of its own.
//!
//! 1. **Memory a stream**: one replica (`CALLSTATS_LIVE_STREAMS_PER_KEY` as high as the
//!    streams asked, one key with a quota no run reaches) answers one JSON GET of /calls/live
//!    (so the poller, the roster and a frame exist), then holds the streams: its resident
//!    memory before them, once every one has read its first event, and the difference a
//!    stream.
//! 2. **How late an event is read**: with those streams open, each records for every `live`
//!    event after its first the time it read the event less the event's `as_of` (the instant
//!    the sim took the figures, during the poll that saw them change): p50 and p99 of them all.
//!    The delay includes the rest of that poll's round trip to the platform.
//! 3. **Polls for the deployment**: two replicas sharing a private Redis, in front of the same
//!    sim, each holding its own key's streams: the polls of the platform both made over the
//!    time measured (`callstats_live_polls_total`, every outcome), a minute.
//!
//! The figures are printed as they are: a missed target is a finding, not a failure.

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufReader, Read, Write as _};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use callstats_redis::testing::PrivateRedis;
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use xtask::process::{get, in_scratch_dir, require};
use xtask::serve::{Portal, Server, binary, sim};
use xtask::sse::{Block, EventSource};

use crate::harness::days::today;
use crate::harness::metrics::{counter, gauge};
use crate::harness::table::mebibytes;
use crate::harness::usage::rss_kib;
use crate::harness::{build_name, print};

const PATH: &str = "/api/v1/calls/live";
/// Most streams opened but not yet past their first event at once.
const OPENING: usize = 64;
/// How long a stream may take to give its first event.
const FIRST_EVENT_WAIT: Duration = Duration::from_secs(60);
/// The stack of a listener's thread: it reads lines and parses one JSON body at a time.
const LISTENER_STACK: usize = 128 * 1024;
/// Descriptors this process needs besides its streams and their clones.
const RESERVED_FILES: u64 = 256;
/// The quota of the keys: more requests a minute than any run sends.
const QUOTA: u32 = 1_000_000_000;
const POLLS_COUNTER: &str = "callstats_live_polls_total";
const STREAMS_GAUGE: &str = "callstats_live_streams_open";
const EVENTS_COUNTER: &str = "callstats_live_events_sent_total";

/// /calls/live as Server-Sent Events: the memory a stream takes (1,000 on one replica), how
/// late their `live` events are read after the sim took the figures (p50, p99), and the polls
/// of the platform a minute for two replicas sharing Redis, 100 streams on each.
///
/// Needs redis-server.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Streams held open on one replica (steps 1 and 2)
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1000))]
    streams: u32,
    /// How long the delays of the events are recorded (step 2), in seconds
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    delay_seconds: u64,
    /// Streams on each of the two replicas sharing Redis (step 3), each replica's its own key's
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    streams_per_replica: u32,
    /// How long the polls of the two replicas are counted (step 3), in seconds
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    poll_seconds: u64,
    /// CALLSTATS_LIVE_POLL_MS of every replica
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    poll_ms: u64,
    /// The debug binary instead of the release one: checks the task without a fat-LTO build,
    /// but its figures are not the service's
    #[arg(long)]
    debug: bool,
}

pub fn run(options: &Options) -> Result<()> {
    require("redis-server", "redis-server")?;
    let most = options
        .streams
        .max(options.streams_per_replica.saturating_mul(2));
    // Every stream is a socket and the clone it is shut down by.
    raise_file_limit(u64::from(most) * 2 + RESERVED_FILES)?;
    let binary = binary(options.debug)?;
    in_scratch_dir("live", |dir| print(&measure(options, &binary, dir)?))
}

/// One line of the table.
struct Row {
    what: String,
    figure: String,
    target: String,
}

impl Row {
    fn new(what: impl Into<String>, figure: impl Into<String>, target: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            figure: figure.into(),
            target: target.into(),
        }
    }
}

fn measure(options: &Options, binary: &Path, dir: &Path) -> Result<String> {
    let (_sim, sim_url) = sim(binary, dir, "sim", &[])?;
    let portal = Portal::seeded_demo(binary, dir, "portal.db", sim_url)?;
    let poll = options.poll_ms.to_string();
    let mut rows = Vec::new();

    eprintln!("live: {} streams on one replica", options.streams);
    let streams = options.streams.to_string();
    let key = portal.key("live", QUOTA)?;
    let replica = portal.serve_with(
        "replica",
        None,
        0,
        &[
            ("RUST_LOG", "warn"),
            ("CALLSTATS_LIVE_POLL_MS", &poll),
            ("CALLSTATS_LIVE_STREAMS_PER_KEY", &streams),
        ],
    )?;
    let (status, _) = get(replica.port, PATH, &key)?;
    if status != 200 {
        bail!("GET {PATH} answered {status}");
    }
    rows.extend(memory(options, &replica, &key)?);
    drop(replica);

    eprintln!(
        "live: two replicas sharing Redis, {} streams on each",
        options.streams_per_replica
    );
    rows.push(polls(options, &portal, &poll)?);

    let mut report = format!(
        "\nlive: `callstats sim`, {} build, CALLSTATS_LIVE_POLL_MS={}, today in Tashkent {}\n\n\
         | what | figure | target |\n|---|---:|---|\n",
        build_name(options.debug),
        options.poll_ms,
        today(),
    );
    for row in rows {
        report += &format!("| {} | {} | {} |\n", row.what, row.figure, row.target);
    }
    Ok(report)
}

/// Steps 1 and 2 on `replica`.
fn memory(options: &Options, replica: &Server, key: &str) -> Result<Vec<Row>> {
    let pid = replica.process.0.id();
    let before = rss_kib(pid)?;
    let listeners = Listeners::open(replica.port, key, usize::try_from(options.streams)?)?;
    let after = rss_kib(pid)?;
    let open = gauge(&replica.metrics()?, STREAMS_GAUGE).unwrap_or(0.0);
    let opened = listeners.opened;
    let failed = failures(&listeners.failures);

    eprintln!("live: recording delays for {} s", options.delay_seconds);
    // The events the replica sent, its polls and those answered, so far.
    let sent_and_polled = || -> Result<(u64, u64, u64)> {
        let metrics = replica.metrics()?;
        Ok((
            counter(&metrics, EVENTS_COUNTER, "")?,
            counter(&metrics, POLLS_COUNTER, "")?,
            counter(&metrics, POLLS_COUNTER, "outcome=\"ok\"")?,
        ))
    };
    let before_window = sent_and_polled()?;
    listeners.shared.recording.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(options.delay_seconds));
    listeners.shared.recording.store(false, Ordering::SeqCst);
    let after_window = sent_and_polled()?;
    let sent = after_window.0.saturating_sub(before_window.0);
    let polled = after_window.1.saturating_sub(before_window.1);
    let polled_ok = after_window.2.saturating_sub(before_window.2);
    let heard = listeners.close();

    let per_stream = if opened == 0 {
        "-".to_owned()
    } else {
        format!(
            "{:.1} KiB",
            float(after.saturating_sub(before)) / float(u64::try_from(opened)?)
        )
    };
    let mut delays: Vec<time::Duration> = heard
        .iter()
        .flat_map(|heard| heard.delays.iter().map(|(_, delay)| *delay))
        .collect();
    delays.sort_unstable();
    let frames: BTreeSet<OffsetDateTime> = heard
        .iter()
        .flat_map(|heard| heard.delays.iter().map(|(as_of, _)| *as_of))
        .collect();
    let ended = heard.iter().filter(|heard| heard.ended_early).count();
    let unavailable: u64 = heard.iter().map(|heard| heard.unavailable).sum();
    let unreadable: u64 = heard.iter().map(|heard| heard.unreadable).sum();
    let mut odd = String::new();
    if ended > 0 {
        odd += &format!("; {ended} streams ended before the end");
    }
    if unavailable > 0 {
        odd += &format!("; {unavailable} `unavailable` events");
    }
    if unreadable > 0 {
        odd += &format!("; {unreadable} events without a readable `as_of`");
    }
    let delay = |percent| percentile(&delays, percent).map_or_else(|| "-".to_owned(), millis);
    Ok(vec![
        Row::new(
            "the replica's resident memory before the streams (after one JSON GET /calls/live)",
            mebibytes(before),
            "-",
        ),
        Row::new(
            format!(
                "the same once {opened} of {} streams read their first event \
                 ({open} open by {STREAMS_GAUGE}){failed}",
                options.streams
            ),
            mebibytes(after),
            "-",
        ),
        Row::new(
            "memory a stream: (after − before) / streams opened",
            per_stream,
            "≤ 64 KiB",
        ),
        Row::new(
            format!(
                "delay of a `live` event after a stream's first, read time − `as_of`, p50: \
                 {} events over {} s, {} frames, {sent} events sent by the replica, \
                 {polled} polls ({polled_ok} `ok`){odd}",
                delays.len(),
                options.delay_seconds,
                frames.len()
            ),
            delay(50),
            "-",
        ),
        Row::new(
            "the same, p99 (from `as_of`: the poll's own round trip to the platform included)",
            delay(99),
            "≤ 500 ms after the poll that sees the change",
        ),
    ])
}

/// Step 3: two replicas sharing a private Redis, each with its key's streams.
fn polls(options: &Options, portal: &Portal<'_>, poll: &str) -> Result<Row> {
    let redis = PrivateRedis::start().context("cannot start redis-server")?;
    let redis_url = redis.url();
    let per_key = options.streams_per_replica.to_string();
    let env = [
        ("RUST_LOG", "warn"),
        ("CALLSTATS_LIVE_POLL_MS", poll),
        ("CALLSTATS_LIVE_STREAMS_PER_KEY", per_key.as_str()),
    ];
    let a = portal.serve_with("replica-a", Some(&redis_url), 0, &env)?;
    let b = portal.serve_with("replica-b", Some(&redis_url), 0, &env)?;
    let count = usize::try_from(options.streams_per_replica)?;
    let on_a = Listeners::open(a.port, &portal.key("live-a", QUOTA)?, count)?;
    let on_b = Listeners::open(b.port, &portal.key("live-b", QUOTA)?, count)?;
    let failed = failures(&[on_a.failures.as_slice(), &on_b.failures].concat());
    let opened = on_a.opened + on_b.opened;

    // Every poll each replica made so far, and those that were answered.
    let polled = |server: &Server| -> Result<(u64, u64)> {
        let metrics = server.metrics()?;
        Ok((
            counter(&metrics, POLLS_COUNTER, "")?,
            counter(&metrics, POLLS_COUNTER, "outcome=\"ok\"")?,
        ))
    };
    let before = (polled(&a)?, polled(&b)?);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(options.poll_seconds));
    let after = (polled(&a)?, polled(&b)?);
    let elapsed = started.elapsed();
    let ended = on_a
        .close()
        .into_iter()
        .chain(on_b.close())
        .filter(|heard| heard.ended_early)
        .count();

    let (by_a, by_b) = (
        after.0.0.saturating_sub(before.0.0),
        after.1.0.saturating_sub(before.1.0),
    );
    let ok = after.0.1.saturating_sub(before.0.1) + after.1.1.saturating_sub(before.1.1);
    let a_minute = float(by_a + by_b) * 60.0 / elapsed.as_secs_f64();
    let most = 60_000.0 / float(options.poll_ms);
    let ended = if ended > 0 {
        format!("; {ended} streams ended before the end")
    } else {
        String::new()
    };
    Ok(Row::new(
        format!(
            "polls of the platform a minute for the deployment: two replicas sharing Redis, \
             {opened} of {} streams open, over {:.0} s ({by_a} by one, {by_b} by the other, \
             {ok} of them answered `ok`){failed}{ended}",
            2 * count,
            elapsed.as_secs_f64(),
        ),
        format!("{a_minute:.1}"),
        format!("≤ {most:.0} (60,000 / CALLSTATS_LIVE_POLL_MS)"),
    ))
}

/// `; 3 failed to open: 429 …`, or nothing when every stream opened.
fn failures(failures: &[String]) -> String {
    match failures.first() {
        Some(first) => format!("; {} failed to open: {first}", failures.len()),
        None => String::new(),
    }
}

/// Raises this process's soft file limit to `needed`, or as near as the hard limit allows.
fn raise_file_limit(needed: u64) -> Result<()> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_none_or(|soft| soft >= needed) {
        return Ok(());
    }
    let target = limit.maximum.map_or(needed, |hard| hard.min(needed));
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: limit.maximum,
        },
    )
    .context("cannot raise the file limit")?;
    if target < needed {
        eprintln!("live: the file limit is {target}, below the {needed} files the streams need");
    }
    Ok(())
}

/// What the listeners share with the thread that measures.
#[derive(Default)]
struct Shared {
    /// Whether the delays of the events read now are recorded.
    recording: AtomicBool,
    /// Set before the streams are shut down: a stream ending afterwards ends as asked.
    stopping: AtomicBool,
}

/// What one stream read.
#[derive(Default)]
struct Heard {
    /// Each recorded event's `as_of`, and the time it was read less it.
    delays: Vec<(OffsetDateTime, time::Duration)>,
    /// `unavailable` events, recorded or not.
    unavailable: u64,
    /// Recorded `live` events whose `as_of` could not be read.
    unreadable: u64,
    /// Whether it ended before it was shut down.
    ended_early: bool,
}

/// Streams open on one replica, each read by a thread of its own.
struct Listeners {
    shared: Arc<Shared>,
    /// A clone of each stream's socket, to shut it down by.
    sockets: Vec<TcpStream>,
    threads: Vec<JoinHandle<Heard>>,
    /// Streams that read their first `live` event.
    opened: usize,
    /// Why the others did not.
    failures: Vec<String>,
}

impl Listeners {
    /// Opens `count` streams on `port` with `key`, [`OPENING`] at a time: returns once each
    /// has read its first `live` event or failed.
    fn open(port: u16, key: &str, count: usize) -> Result<Self> {
        let mut listeners = Self {
            shared: Arc::default(),
            sockets: Vec::with_capacity(count),
            threads: Vec::with_capacity(count),
            opened: 0,
            failures: Vec::new(),
        };
        let (sender, receiver) = mpsc::channel();
        let mut answered = 0;
        for index in 0..count {
            let socket = TcpStream::connect(("127.0.0.1", port))
                .with_context(|| format!("cannot connect stream {index}"))?;
            listeners.sockets.push(socket.try_clone()?);
            let (shared, sender, key) = (
                Arc::clone(&listeners.shared),
                sender.clone(),
                key.to_owned(),
            );
            let thread = std::thread::Builder::new()
                .name(format!("stream-{index}"))
                .stack_size(LISTENER_STACK)
                .spawn(move || listen(socket, port, &key, &shared, &sender))
                .context("cannot start a listener thread")?;
            listeners.threads.push(thread);
            while listeners.threads.len() - answered >= OPENING {
                listeners.first_event(&receiver)?;
                answered += 1;
            }
        }
        while answered < listeners.threads.len() {
            listeners.first_event(&receiver)?;
            answered += 1;
        }
        Ok(listeners)
    }

    /// Waits for one more stream to read its first event or fail.
    fn first_event(&mut self, receiver: &Receiver<Result<(), String>>) -> Result<()> {
        match receiver.recv_timeout(FIRST_EVENT_WAIT) {
            Ok(Ok(())) => self.opened += 1,
            Ok(Err(failure)) => self.failures.push(failure),
            Err(_) => bail!("a stream read no first event within {FIRST_EVENT_WAIT:?}"),
        }
        Ok(())
    }

    /// Shuts every stream down: what each read.
    fn close(mut self) -> Vec<Heard> {
        self.shut_down();
        std::mem::take(&mut self.threads)
            .into_iter()
            .map(|thread| thread.join().unwrap_or_default())
            .collect()
    }

    fn shut_down(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for socket in &self.sockets {
            // Already shut when its stream ended: nothing left to do.
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// One stream: asks for it on `socket`, says on `opened` once its first `live` event is read (or
/// why none will be), then reads its events until it ends, recording their delays while asked.
fn listen(
    socket: TcpStream,
    port: u16,
    key: &str,
    shared: &Shared,
    opened: &Sender<Result<(), String>>,
) -> Heard {
    let mut heard = Heard::default();
    let mut events = match ask(socket, port, key) {
        Ok(body) => EventSource::new(body),
        Err(err) => {
            let _ = opened.send(Err(format!("{err:#}")));
            return heard;
        }
    };
    let mut first = true;
    loop {
        let (name, data) = match events.next_block() {
            Ok(Some(Block::Event { name, data, .. })) => (name, data),
            Ok(Some(Block::Other)) => continue,
            Ok(None) | Err(_) => {
                if first {
                    let _ = opened.send(Err("the stream ended before its first event".to_owned()));
                }
                heard.ended_early = !shared.stopping.load(Ordering::SeqCst);
                return heard;
            }
        };
        let read_at = OffsetDateTime::now_utc();
        match name.as_str() {
            "live" if first => {
                first = false;
                let _ = opened.send(Ok(()));
            }
            "live" if shared.recording.load(Ordering::SeqCst) => match as_of(&data) {
                Some(as_of) => heard.delays.push((as_of, read_at - as_of)),
                None => heard.unreadable += 1,
            },
            "unavailable" => heard.unavailable += 1,
            _ => {}
        }
    }
}

/// Sends the stream's request on `socket` and reads the answer's head: its body, unchunked,
/// when it is a 200.
fn ask(socket: TcpStream, port: u16, key: &str) -> Result<Box<dyn BufRead + Send>> {
    let mut socket = socket;
    write!(
        socket,
        "GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n\
         Accept: text/event-stream\r\n\r\n"
    )
    .context("cannot send the request")?;
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .context("cannot read the status line")?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse::<u16>().ok())
        .ok_or_else(|| anyhow!("not an HTTP answer: {line:?}"))?;
    let mut chunked = false;
    loop {
        line.clear();
        if reader
            .read_line(&mut line)
            .context("cannot read a header")?
            == 0
        {
            bail!("the answer ended in its head");
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("transfer-encoding")
            && value.trim().eq_ignore_ascii_case("chunked")
        {
            chunked = true;
        }
    }
    if status != 200 {
        bail!("answered {status}");
    }
    Ok(if chunked {
        Box::new(BufReader::new(Chunked::new(reader)))
    } else {
        Box::new(reader)
    })
}

/// A body sent in chunks (`Transfer-Encoding: chunked`), read as the bytes it carries.
struct Chunked<R> {
    inner: R,
    /// Bytes left in the chunk being read.
    left: u64,
    /// Whether the last (empty) chunk was read.
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.left == 0 {
            if self.done {
                return Ok(0);
            }
            let mut line = String::new();
            if self.inner.read_line(&mut line)? == 0 {
                return Ok(0);
            }
            // The line break after a chunk's bytes is an empty line before the next size.
            let size = line.trim();
            if size.is_empty() {
                continue;
            }
            let size = size.split(';').next().unwrap_or_default().trim();
            self.left = u64::from_str_radix(size, 16).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad chunk size {size:?}"),
                )
            })?;
            self.done = self.left == 0;
        }
        let most = usize::try_from(self.left).map_or(buf.len(), |left| left.min(buf.len()));
        let read = self.inner.read(buf.get_mut(..most).unwrap_or_default())?;
        if read == 0 {
            return Ok(0);
        }
        self.left = self
            .left
            .saturating_sub(u64::try_from(read).unwrap_or(u64::MAX));
        Ok(read)
    }
}

/// The `as_of` of a `live` event's data. The service writes it first: it is read from there
/// without parsing the rest, for every listener parsing a whole body at once on this
/// machine would delay their own reads (and the server's writes). Anywhere else, the whole body
/// is parsed.
fn as_of(data: &str) -> Option<OffsetDateTime> {
    let first = data
        .strip_prefix("{\"as_of\":\"")
        .and_then(|rest| rest.split_once('"'))
        .and_then(|(as_of, _)| OffsetDateTime::parse(as_of, &Rfc3339).ok());
    first.or_else(|| {
        let body: serde_json::Value = serde_json::from_str(data).ok()?;
        OffsetDateTime::parse(body.get("as_of")?.as_str()?, &Rfc3339).ok()
    })
}

/// The nearest-rank `percent` percentile of `sorted`.
fn percentile(sorted: &[time::Duration], percent: usize) -> Option<time::Duration> {
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

fn millis(delay: time::Duration) -> String {
    format!("{:.0} ms", delay.as_seconds_f64() * 1000.0)
}

/// A count as a float, for a ratio printed: exact below 2^32.
fn float(count: u64) -> f64 {
    u32::try_from(count).map_or(f64::from(u32::MAX), f64::from)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn a_chunked_body_reads_as_the_bytes_it_carries() {
        let body = "5\r\nretry\r\n3;x=1\r\n: 5\r\nE\r\n000\n\nevent: li\r\n0\r\n\r\nafter";
        let mut read = String::new();
        Chunked::new(Cursor::new(body))
            .read_to_string(&mut read)
            .unwrap();
        assert_eq!(read, "retry: 5000\n\nevent: li");
        let mut bad = Chunked::new(Cursor::new("zz\r\n"));
        assert!(bad.read(&mut [0; 8]).is_err());
    }

    #[test]
    fn as_of_is_read_from_the_start_of_the_data_or_from_the_whole_body() {
        assert_eq!(
            as_of("{\"as_of\":\"2026-11-28T12:22:38.171Z\"}").unwrap(),
            time::macros::datetime!(2026-11-28 12:22:38.171 UTC)
        );
        assert_eq!(
            as_of("{\"queues\":[], \"as_of\": \"2026-11-28T12:22:38Z\"}").unwrap(),
            time::macros::datetime!(2026-11-28 12:22:38 UTC)
        );
        assert_eq!(as_of("{\"as_of\":\"yesterday\"}"), None);
        assert_eq!(as_of("not json"), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let delays: Vec<_> = (1..=200).map(time::Duration::milliseconds).collect();
        assert_eq!(
            percentile(&delays, 50),
            Some(time::Duration::milliseconds(100))
        );
        assert_eq!(
            percentile(&delays, 99),
            Some(time::Duration::milliseconds(198))
        );
        assert_eq!(
            percentile(&delays[..1], 99),
            Some(time::Duration::milliseconds(1))
        );
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(millis(time::Duration::microseconds(12_600)), "13 ms");
    }
}
