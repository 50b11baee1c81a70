//! `callstats sim`: the synthetic call platform served over the upstream contract, so the HTTP
//! adapter and the whole service run end to end, and under faults, on one machine.
//!
//! `GET /calls?from=…&to=…&limit=…[&cursor=…]` answers the generator's calls of every Tashkent
//! day the `[from, to)` window touches, filtered to the window, in start order, at most `limit`
//! a page, with an opaque `next_cursor`. Like a real platform it has no call that starts after
//! the present instant (its clock's, [`SimOptions::clock`]): today is partial, later days are
//! empty. `GET /live` answers what is happening at that instant, read off the same calls
//! (callers waiting, agents' states), unless [`SimOptions::live`] is off: then 404, as a
//! platform without live figures answers. Options add a bearer-token check (401), injected
//! failures (500 with a JSON body, for a share of requests), latency, and a request rate past
//! which it answers 429, on both paths.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use actix_web::dev::{Server, ServerHandle};
use actix_web::http::StatusCode;
use actix_web::http::header::{AUTHORIZATION, ContentType};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use callstats_domain::calendar::Day;
use callstats_domain::ports::Clock;
use callstats_domain::tz;
use callstats_infra::clock::SystemClock;
use callstats_synthetic::{
    CachedGenerator, DEFAULT_CALLS_PER_DAY, DEFAULT_SEED, Generator, SyntheticCall,
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use callstats_callplatform::wire::live::LiveOut;
use callstats_callplatform::wire::{CallOut, PageOut, format_instant};

/// Where `callstats sim` listens when `--bind` is not given.
pub const DEFAULT_SIM_BIND: &str = "127.0.0.1:9090";
/// Largest `limit` the sim accepts (and its default).
pub const MAX_LIMIT: usize = 1000;
/// Longest window the sim serves, in days.
pub const MAX_WINDOW_DAYS: i64 = 92;

const SECONDS_PER_DAY: i64 = 86_400;

/// What `callstats sim` serves and how it misbehaves.
#[derive(Clone)]
pub struct SimOptions {
    /// Generator seed (`--seed`).
    pub seed: u64,
    /// Calls on an ordinary weekday (`--calls-per-day`).
    pub calls_per_day: u32,
    /// When set, a request without `Authorization: Bearer <token>` gets 401 (`--token`).
    pub token: Option<String>,
    /// Share of requests, 0.0 to 1.0, answered 500 with a JSON body (`--fail-rate`).
    pub fail_rate: f64,
    /// Delay before every answer (`--latency-ms`).
    pub latency: Duration,
    /// When set, requests past this many in one second get 429 with `Retry-After: 1`, as a
    /// rate-limited platform answers (`--max-rps`).
    pub max_rps: Option<u32>,
    /// Serves `GET /live`; off, it answers 404 as a platform without live figures does
    /// (`--no-live`).
    pub live: bool,
    /// The present: no call that starts after it is served. The real clock by default.
    pub clock: Arc<dyn Clock>,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            seed: DEFAULT_SEED,
            calls_per_day: DEFAULT_CALLS_PER_DAY,
            token: None,
            fail_rate: 0.0,
            latency: Duration::ZERO,
            max_rps: None,
            live: true,
            clock: Arc::new(SystemClock),
        }
    }
}

impl fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimOptions")
            .field("seed", &self.seed)
            .field("calls_per_day", &self.calls_per_day)
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("fail_rate", &self.fail_rate)
            .field("latency", &self.latency)
            .field("max_rps", &self.max_rps)
            .field("live", &self.live)
            .finish_non_exhaustive()
    }
}

/// Options the sim cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimOptionsError {
    #[error("fail rate must be a number from 0 to 1, got {0}")]
    FailRate(f64),
    #[error("the token must not be empty")]
    EmptyToken,
    #[error("the request rate must be at least 1 a second")]
    MaxRps,
}

impl SimOptions {
    /// Checks the options a command line could get wrong.
    pub fn validate(&self) -> Result<(), SimOptionsError> {
        if !(0.0..=1.0).contains(&self.fail_rate) {
            return Err(SimOptionsError::FailRate(self.fail_rate));
        }
        if self.token.as_deref().is_some_and(str::is_empty) {
            return Err(SimOptionsError::EmptyToken);
        }
        if self.max_rps == Some(0) {
            return Err(SimOptionsError::MaxRps);
        }
        Ok(())
    }
}

/// Builds the sim's server on `listener` with the machine's worker count; await it (or
/// [`serve_sim`]) to serve until SIGINT/SIGTERM. Must be called inside a Tokio runtime.
pub fn sim_server(listener: TcpListener, options: SimOptions) -> io::Result<Server> {
    build_server(
        listener,
        web::Data::new(SimState::new(options)?),
        None,
        true,
    )
}

/// Serves the sim on `listener` until the process is told to stop: `callstats sim`.
pub async fn serve_sim(listener: TcpListener, options: SimOptions) -> io::Result<()> {
    let address = listener.local_addr()?;
    let server = sim_server(listener, options)?;
    tracing::info!(%address, "synthetic call platform listening");
    server.await
}

/// A sim running in this process, for tests and benchmarks.
pub struct RunningSim {
    address: SocketAddr,
    handle: ServerHandle,
    state: web::Data<SimState>,
}

impl fmt::Debug for RunningSim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningSim")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl RunningSim {
    #[must_use]
    pub const fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`, the base URL to give the adapter.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// How many times `/live` has been asked.
    #[must_use]
    pub fn live_requests(&self) -> u64 {
        self.state.live_requests.load(Ordering::Relaxed)
    }

    /// Stops accepting, drops open connections and waits for the workers to end.
    pub async fn stop(self) {
        self.handle.stop(false).await;
    }
}

/// Starts a sim on a free loopback port with one worker, on the current Tokio runtime.
pub fn spawn_sim(options: SimOptions) -> io::Result<RunningSim> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let state = web::Data::new(SimState::new(options)?);
    let server = build_server(listener, state.clone(), Some(1), false)?;
    let handle = server.handle();
    tokio::spawn(server);
    Ok(RunningSim {
        address,
        handle,
        state,
    })
}

fn build_server(
    listener: TcpListener,
    state: web::Data<SimState>,
    workers: Option<usize>,
    signals: bool,
) -> io::Result<Server> {
    let mut server = HttpServer::new(move || {
        let app = App::new()
            .app_data(state.clone())
            .route("/calls", web::get().to(calls));
        let app = if state.live {
            app.route("/live", web::get().to(live))
        } else {
            app
        };
        app.default_service(web::to(not_found))
    })
    .shutdown_timeout(1);
    if let Some(workers) = workers {
        server = server.workers(workers);
    }
    if !signals {
        server = server.disable_signals();
    }
    Ok(server.listen(listener)?.run())
}

struct SimState {
    /// Keeps the last days generated, so paging through a day, or polling `/live`, does not
    /// generate it again.
    generator: CachedGenerator,
    /// `Bearer <token>`, compared whole.
    expected_authorization: Option<String>,
    fail_rate: f64,
    latency: Duration,
    max_rps: Option<u32>,
    /// Requests counted in the current second since `started`: the second and the count.
    second: Mutex<(u64, u32)>,
    started: Instant,
    clock: Arc<dyn Clock>,
    live: bool,
    /// How many times `/live` was asked, for tests that count the polls.
    live_requests: AtomicU64,
}

impl SimState {
    /// The sim's state, once `options` are valid.
    fn new(options: SimOptions) -> io::Result<Self> {
        options
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(Self {
            generator: CachedGenerator::new(Generator::new(options.seed, options.calls_per_day)),
            expected_authorization: options.token.map(|t| format!("Bearer {t}")),
            fail_rate: options.fail_rate,
            latency: options.latency,
            max_rps: options.max_rps,
            second: Mutex::new((0, 0)),
            started: Instant::now(),
            clock: options.clock,
            live: options.live,
            live_requests: AtomicU64::new(0),
        })
    }

    /// The calls of one Tashkent day (by day number); `None` outside the calendar.
    fn day_calls(&self, day_number: i64) -> Option<Arc<[SyntheticCall]>> {
        Some(self.generator.calls_on(day_of(day_number)?))
    }

    /// Counts a request in its second; whether it is past `max_rps`.
    fn over_rate(&self) -> bool {
        let Some(max) = self.max_rps else {
            return false;
        };
        let now = self.started.elapsed().as_secs();
        let mut second = self.second.lock().unwrap_or_else(PoisonError::into_inner);
        if second.0 != now {
            *second = (now, 0);
        }
        second.1 = second.1.saturating_add(1);
        second.1 > max
    }

    fn authorized(&self, request: &HttpRequest) -> bool {
        let Some(expected) = &self.expected_authorization else {
            return true;
        };
        request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|sent| {
                // The scheme is case-insensitive (RFC 7235); the token is not.
                sent.len() == expected.len()
                    && sent
                        .get(..7)
                        .is_some_and(|s| s.eq_ignore_ascii_case("bearer "))
                    && sent.get(7..) == expected.get(7..)
            })
    }
}

#[derive(Debug, Deserialize)]
struct CallsQuery {
    from: Option<String>,
    to: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// Where the next page starts: the `index`-th generated call of Tashkent day `day`, in the
/// window the cursor was issued for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    from: i64,
    to: i64,
    day: i64,
    index: usize,
}

impl Cursor {
    fn encode(self) -> String {
        URL_SAFE_NO_PAD.encode(format!(
            "v1.{}.{}.{}.{}",
            self.from, self.to, self.day, self.index
        ))
    }

    fn decode(raw: &str) -> Option<Self> {
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(raw).ok()?).ok()?;
        let mut parts = text.split('.');
        if parts.next()? != "v1" {
            return None;
        }
        let cursor = Self {
            from: parts.next()?.parse().ok()?,
            to: parts.next()?.parse().ok()?,
            day: parts.next()?.parse().ok()?,
            index: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(cursor)
    }
}

/// What every path answers before its own work, in order: the latency waited out, then 429
/// past the request rate, 401 without the token, or the injected 500; `None` to go on.
async fn refusal(state: &SimState, request: &HttpRequest) -> Option<HttpResponse> {
    // Counted as it arrives, like a platform's rate limiter; answered after the latency.
    let over_rate = state.over_rate();
    if !state.latency.is_zero() {
        tokio::time::sleep(state.latency).await;
    }
    if over_rate {
        let mut response = error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate limit exceeded (--max-rps)",
        );
        response.headers_mut().insert(
            actix_web::http::header::RETRY_AFTER,
            actix_web::http::header::HeaderValue::from_static("1"),
        );
        return Some(response);
    }
    if !state.authorized(request) {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token",
        ));
    }
    if state.fail_rate > 0.0 && fastrand::f64() < state.fail_rate {
        return Some(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected failure (--fail-rate)",
        ));
    }
    None
}

fn json(answer: Result<Vec<u8>, Failure>) -> HttpResponse {
    match answer {
        Ok(body) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .body(body),
        Err(Failure { status, message }) => error(status, &message),
    }
}

async fn calls(state: web::Data<SimState>, request: HttpRequest) -> HttpResponse {
    if let Some(refused) = refusal(&state, &request).await {
        return refused;
    }
    json(page(&state, request.query_string()))
}

async fn live(state: web::Data<SimState>, request: HttpRequest) -> HttpResponse {
    state.live_requests.fetch_add(1, Ordering::Relaxed);
    if let Some(refused) = refusal(&state, &request).await {
        return refused;
    }
    json(live_body(&state, state.clock.now()))
}

/// The `/live` answer at `now`.
fn live_body(state: &SimState, now: OffsetDateTime) -> Result<Vec<u8>, Failure> {
    let internal = |message: String| Failure {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        message,
    };
    let snapshot = state
        .generator
        .live_at(now)
        .map_err(|e| internal(format!("live figures: {e}")))?;
    let answer = LiveOut::of(&snapshot).map_err(|e| internal(format!("date: {e}")))?;
    serde_json::to_vec(&answer).map_err(|e| internal(format!("encoding: {e}")))
}

/// Why a page could not be served, as the status and message to answer.
struct Failure {
    status: StatusCode,
    message: String,
}

/// The page's JSON, or why not.
fn page(state: &SimState, query: &str) -> Result<Vec<u8>, Failure> {
    let bad = |message: String| Failure {
        status: StatusCode::BAD_REQUEST,
        message,
    };
    let internal = |message: String| Failure {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        message,
    };
    let query = web::Query::<CallsQuery>::from_query(query)
        .map_err(|e| bad(format!("malformed query: {e}")))?
        .into_inner();
    let from = instant(query.from.as_deref(), "from").map_err(bad)?;
    let to = instant(query.to.as_deref(), "to").map_err(bad)?;
    if to <= from {
        return Err(bad("`to` must be later than `from`".to_owned()));
    }
    if to - from > MAX_WINDOW_DAYS * SECONDS_PER_DAY {
        return Err(bad(format!(
            "the window must be at most {MAX_WINDOW_DAYS} days"
        )));
    }
    let limit = match query.limit.as_deref() {
        None => MAX_LIMIT,
        Some(raw) => raw
            .parse::<usize>()
            .ok()
            .filter(|limit| (1..=MAX_LIMIT).contains(limit))
            .ok_or_else(|| {
                bad(format!(
                    "`limit` must be an integer from 1 to {MAX_LIMIT}, got {raw:?}"
                ))
            })?,
    };
    // Calls up to the present only: none that starts after now (whole seconds, as calls start).
    let until = to.min(state.clock.now().unix_timestamp().saturating_add(1));
    let last_day = tz::local_day_and_hour(until.saturating_sub(1)).0;
    let (mut day, mut index) = match query.cursor.as_deref() {
        None => (tz::local_day_and_hour(from).0, 0),
        Some(raw) => {
            let cursor = Cursor::decode(raw)
                .filter(|c| c.from == from && c.to == to)
                .ok_or_else(|| bad("`cursor` is not one this window was given".to_owned()))?;
            (cursor.day, cursor.index)
        }
    };

    // (day held, call index) of every call on the page, then where the next page starts.
    let mut held: Vec<Arc<[SyntheticCall]>> = Vec::new();
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(limit);
    let mut next = None;
    'days: while day <= last_day {
        let calls = state
            .day_calls(day)
            .ok_or_else(|| bad("the window is outside the calendar".to_owned()))?;
        let slot = held.len();
        held.push(Arc::clone(&calls));
        for (position, call) in calls.iter().enumerate().skip(index) {
            let started = call.started_at.unix_timestamp();
            if started < from {
                continue;
            }
            if started >= until {
                break 'days;
            }
            if picks.len() == limit {
                next = Some(Cursor {
                    from,
                    to,
                    day,
                    index: position,
                });
                break 'days;
            }
            picks.push((slot, position));
        }
        day += 1;
        index = 0;
    }

    let mut page = PageOut {
        calls: Vec::with_capacity(picks.len()),
        next_cursor: next.map(Cursor::encode),
    };
    for (slot, position) in picks {
        let Some(call) = held.get(slot).and_then(|calls| calls.get(position)) else {
            continue;
        };
        page.calls.push(CallOut {
            id: &call.id,
            direction: call.direction,
            agent_number: call.agent_number.as_ref().map(|a| a.as_str()),
            started_at: format_instant(call.started_at)
                .map_err(|e| internal(format!("date: {e}")))?,
            duration_seconds: call.duration_seconds,
            wait_seconds: call.wait_seconds,
            queue: call.queue,
        });
    }
    serde_json::to_vec(&page).map_err(|e| internal(format!("encoding: {e}")))
}

/// Reads `from` or `to`: RFC 3339 with any offset, as Unix seconds. An unencoded `+` arrives
/// as a space; it is read as the `+` it was.
fn instant(raw: Option<&str>, name: &str) -> Result<i64, String> {
    let raw = raw.ok_or_else(|| format!("`{name}` is required (RFC 3339 date-time)"))?;
    OffsetDateTime::parse(raw, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(&raw.replace(' ', "+"), &Rfc3339))
        .map(OffsetDateTime::unix_timestamp)
        .map_err(|_| format!("`{name}` must be an RFC 3339 date-time, got {raw:?}"))
}

/// The Tashkent day with this number (days since 1970-01-01).
fn day_of(day_number: i64) -> Option<Day> {
    let midnight =
        OffsetDateTime::from_unix_timestamp(day_number.checked_mul(SECONDS_PER_DAY)?).ok()?;
    Some(Day::new(midnight.date()))
}

async fn not_found(state: web::Data<SimState>) -> HttpResponse {
    let served = if state.live {
        "the sim serves GET /calls and GET /live"
    } else {
        "the sim serves GET /calls only (--no-live)"
    };
    error(StatusCode::NOT_FOUND, &format!("not found: {served}"))
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
}

fn error(status: StatusCode, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(ErrorBody { error: message })
}

#[cfg(test)]
mod tests {
    use callstats_domain::testing::TestClock;
    use time::macros::datetime;

    use super::*;

    /// The present of these tests: a Wednesday afternoon in Tashkent.
    const NOW: OffsetDateTime = datetime!(2026-11-18 14:30:00 +05:00);

    /// The start of every call on every page the sim serves for `window`, at `NOW`.
    fn starts(state: &SimState, window: &str) -> Vec<OffsetDateTime> {
        let (mut starts, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let query = match &cursor {
                Some(cursor) => format!("{window}&cursor={cursor}"),
                None => window.to_owned(),
            };
            let Ok(body) = page(state, &query) else {
                panic!("no page for {query}");
            };
            let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
            for call in page["calls"].as_array().unwrap() {
                let started = call["started_at"].as_str().unwrap();
                starts.push(OffsetDateTime::parse(started, &Rfc3339).unwrap());
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return starts,
            }
        }
    }

    #[test]
    fn no_call_after_the_clock_s_present_today_partial_and_later_days_empty() {
        let state = SimState::new(SimOptions {
            clock: TestClock::at(NOW),
            ..SimOptions::default()
        })
        .unwrap();
        let generator = Generator::default();
        let today = Day::parse("2026-11-18").unwrap();

        let served = starts(
            &state,
            "from=2026-11-18T00:00:00%2B05:00&to=2026-11-19T00:00:00%2B05:00",
        );
        let whole: Vec<OffsetDateTime> = generator
            .calls_on(today)
            .iter()
            .map(|call| call.started_at)
            .collect();
        let started: Vec<OffsetDateTime> = whole.iter().copied().filter(|at| *at <= NOW).collect();
        assert!(
            served == started,
            "{} calls served, {} started by now",
            served.len(),
            started.len()
        );
        assert!(!served.is_empty() && served.len() < whole.len());

        // A window across now ends at now; the day before is whole.
        let across = starts(
            &state,
            "from=2026-11-17T00:00:00%2B05:00&to=2026-11-21T00:00:00%2B05:00",
        );
        let yesterday = generator.calls_on(Day::parse("2026-11-17").unwrap()).len();
        assert_eq!(across.len(), yesterday + started.len());
        assert!(across.iter().all(|at| *at <= NOW));

        for later in [
            "from=2026-11-19T00:00:00%2B05:00&to=2026-11-20T00:00:00%2B05:00",
            "from=2026-11-18T14:30:01%2B05:00&to=2026-11-19T00:00:00%2B05:00",
            "from=9999-12-31T00:00:00%2B05:00&to=9999-12-31T23:59:59%2B05:00",
        ] {
            let served = starts(&state, later);
            assert!(served.is_empty(), "{later}: {} calls", served.len());
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_tampering() {
        let cursor = Cursor {
            from: 1_790_000_000,
            to: 1_790_086_400,
            day: 20_758,
            index: 999,
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        assert_eq!(Cursor::decode("not-a-cursor"), None);
        assert_eq!(Cursor::decode(&URL_SAFE_NO_PAD.encode("v1.1.2.3")), None);
        assert_eq!(
            Cursor::decode(&URL_SAFE_NO_PAD.encode("v1.1.2.3.4.5")),
            None
        );
    }

    #[test]
    fn day_numbers_map_to_calendar_days() {
        assert_eq!(day_of(0).unwrap().to_string(), "1970-01-01");
        let day = Day::parse("2026-11-01").unwrap();
        assert_eq!(day_of(day.number()), Some(day));
    }

    #[test]
    fn options_out_of_range_are_refused() {
        let bad_rate = SimOptions {
            fail_rate: 1.5,
            ..SimOptions::default()
        };
        assert_eq!(bad_rate.validate(), Err(SimOptionsError::FailRate(1.5)));
        let empty_token = SimOptions {
            token: Some(String::new()),
            ..SimOptions::default()
        };
        assert_eq!(empty_token.validate(), Err(SimOptionsError::EmptyToken));
        let no_rate = SimOptions {
            max_rps: Some(0),
            ..SimOptions::default()
        };
        assert_eq!(no_rate.validate(), Err(SimOptionsError::MaxRps));
        assert!(SimOptions::default().validate().is_ok());
    }

    #[test]
    fn options_debug_hides_the_token() {
        let options = SimOptions {
            token: Some("sim-secret".to_owned()),
            ..SimOptions::default()
        };
        assert!(!format!("{options:?}").contains("sim-secret"));
    }
}
