//! The error answers of each operation: their descriptions and examples, the service's own
//! messages (made by the domain's errors) and those the reverse proxy answers itself.

use callstats_api::query::PeriodQuery;
use callstats_api::summary::SummaryQuery;
use callstats_application::representation::{self, LIVE_REPRESENTATIONS};
use callstats_domain::DomainError;
use callstats_domain::access::{QuotaBucket, QuotaStatus, QuotaSubject, Unauthorized};
use callstats_domain::calendar::{DATE_FORM, Day};
use callstats_domain::error::{
    BODY_TOO_LARGE_RETRY_AFTER_SECS, RATE_LIMITED_RETRY_AFTER_SECS, STORE_RETRY_AFTER_SECS,
    STREAMS_RETRY_AFTER_SECS, UPSTREAM_RETRY_AFTER_SECS,
};
use callstats_domain::limits::{
    DEFAULT_DAY_FETCHES_PER_MINUTE, DEFAULT_HISTORY_DAYS, DayBudgetStatus, EarliestDay,
    HistoryFill, OverBudget,
};
use callstats_domain::live::LiveError;
use callstats_domain::params::{Param, ParamError};
use callstats_domain::request::Endpoint;
use callstats_domain::scope::Scope;
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, RefOr, Response, ResponseBuilder};

use super::examples::set_examples;
use crate::middleware::Oversize;
use crate::problem::{ErrorBody, PROBLEM_JSON, Problem, ProblemDetails};

pub(super) fn error_response(status: u16, endpoint: Option<Endpoint>) -> Response {
    let quota = QuotaStatus::after(
        120,
        121,
        &QuotaBucket::new(&QuotaSubject::Key(1), time::OffsetDateTime::UNIX_EPOCH),
    );
    let scope = endpoint
        .and_then(Endpoint::required_scope)
        .unwrap_or(Scope::Calls);
    let live = endpoint == Some(Endpoint::CallsLive);
    let (takes_parameters, calls) = endpoint.map_or((false, false), its_inputs);
    let (description, examples): (&str, Vec<(&str, Example)>) = match status {
        400 if calls => (
            "A parameter is missing or malformed (the message names it, the expected form and the value received), or the period (after the 31-day clamp, 7 days on /calls/intervals, 366 on /calls/trend) starts before the history horizon (the message names the earliest start allowed), or so does the earlier period of `compare`; or, from the reverse proxy before a request exists, a malformed request head (without the rate-limit and cache headers; the connection is closed).",
            vec![
                ("bad parameter", Example::Service(bad_start())),
                ("before the horizon", Example::Service(before_horizon())),
                ("malformed head", Example::Proxy(PROXY_MALFORMED)),
            ],
        ),
        400 if takes_parameters => (
            "A parameter is missing or malformed (the message names it, the expected form and the value received); or, from the reverse proxy before a request exists, a malformed request head (without the rate-limit and cache headers; the connection is closed).",
            vec![
                ("bad parameter", Example::Service(bad_start())),
                ("malformed head", Example::Proxy(PROXY_MALFORMED)),
            ],
        ),
        400 => (
            "A malformed request head, answered by the reverse proxy before a request exists: without the rate-limit and cache headers; the connection is closed.",
            vec![("malformed head", Example::Proxy(PROXY_MALFORMED))],
        ),
        401 => (
            "The key is missing, malformed, unknown, revoked or expired, or the two key headers disagree.",
            vec![
                (
                    "missing key",
                    Example::Service(Unauthorized::NotPresented(crate::caller::MISSING_KEY).into()),
                ),
                (
                    "expired key",
                    Example::Service(Unauthorized::Expired.into()),
                ),
            ],
        ),
        403 => (
            "The key is pinned to another domain than the request's Origin, or lacks the endpoint's scope (then `required_scope` names it).",
            vec![
                ("origin", Example::Service(DomainError::OriginNotAllowed)),
                ("scope", Example::Service(DomainError::MissingScope(scope))),
            ],
        ),
        404 if endpoint.is_none() => (
            "No such problem type.",
            vec![(
                "unknown",
                Example::Service(DomainError::NotFound("no such problem type: nope".into())),
            )],
        ),
        404 if live => (
            "The call platform reports no live figures (its `/live` answers 404).",
            vec![(
                "not reported",
                Example::Service(DomainError::NotFound(LiveError::NotReported.to_string())),
            )],
        ),
        404 => (
            "No published KPI sheet for the month, or none of the requested shift (the message lists the shifts that exist).",
            vec![(
                "no sheet",
                Example::Service(DomainError::NotFound(
                    "no published KPI sheet for 2026-08".into(),
                )),
            )],
        ),
        406 => (
            "The request's `Accept` excludes every representation the endpoint has (JSON, and CSV on the endpoints with CSV), checked after the parameters; `error` names them. Never problem details: an `Accept` that names `application/problem+json` accepts JSON.",
            vec![(
                "not acceptable",
                Example::Service(DomainError::NotAcceptable {
                    representations: if endpoint.is_some_and(representation::has_csv) {
                        "application/json, text/csv"
                    } else if live {
                        LIVE_REPRESENTATIONS
                    } else {
                        "application/json"
                    },
                }),
            )],
        ),
        413 => (
            "A declared request body over 64 KiB; a GET needs none. Answered by the reverse proxy (without the rate-limit and cache headers), or by the service after admission.",
            vec![
                ("body", Example::Oversize(Oversize::Body)),
                ("from the proxy", Example::Proxy(PROXY_BODY)),
            ],
        ),
        414 => (
            "A request target (path and query) over 8 KiB. Answered by the reverse proxy (without the rate-limit and cache headers), or by the service after admission.",
            vec![
                ("target", Example::Oversize(Oversize::Target)),
                ("from the proxy", Example::Proxy(PROXY_TARGET)),
            ],
        ),
        431 => (
            "Request headers over 16 KiB in all (names and values), answered after admission; or a header field over 8 KiB, answered by the reverse proxy before a request exists (without the rate-limit and cache headers; the connection is closed).",
            vec![
                ("headers", Example::Oversize(Oversize::Headers)),
                ("from the proxy", Example::Proxy(PROXY_HEAD)),
            ],
        ),
        429 if calls => (
            "Over the per-minute quota; or the call days not held that the request would make the service fetch exceed the key's day budget (nothing was fetched); while the backfill is still filling the history horizon, the message says how far it is and how long the rest takes. Retry after the window resets. Or, from the reverse proxy, over 256 open connections from the client's address (without the rate-limit, cache and `Retry-After` headers).",
            vec![
                (
                    "over quota",
                    Example::Service(DomainError::RateLimited(quota)),
                ),
                ("over the day budget", Example::Service(over_budget())),
                (
                    "over the day budget while the history fills",
                    Example::Service(over_budget_while_filling()),
                ),
                ("from the proxy", Example::Proxy(PROXY_CONNECTIONS)),
            ],
        ),
        429 if live => (
            "Over the per-minute quota (retry after the window resets); or, asking for the stream, the key holds as many open streams as it may across the deployment (`CALLSTATS_LIVE_STREAMS_PER_KEY`). Or, from the reverse proxy, over 256 open connections from the client's address (without the rate-limit, cache and `Retry-After` headers).",
            vec![
                (
                    "over quota",
                    Example::Service(DomainError::RateLimited(quota)),
                ),
                (
                    "too many streams",
                    Example::Service(DomainError::TooManyStreams { limit: 4 }),
                ),
                ("from the proxy", Example::Proxy(PROXY_CONNECTIONS)),
            ],
        ),
        429 => (
            "Over the per-minute quota; retry after the window resets. Or, from the reverse proxy, over 256 open connections from the client's address (without the rate-limit, cache and `Retry-After` headers).",
            vec![
                (
                    "over quota",
                    Example::Service(DomainError::RateLimited(quota)),
                ),
                ("from the proxy", Example::Proxy(PROXY_CONNECTIONS)),
            ],
        ),
        503 if calls => (
            "The upstream call platform or the portal database is unavailable; or the call platform is busy: the request's days cannot arrive before the fetch deadline, so it is answered at once with `Retry-After` (they stay queued, and asking again then finds them held); or the answer would be larger than the body bound (16 MiB by default); or, from the reverse proxy, no replica could be reached (with `Retry-After: 5`, without the rate-limit and cache headers).",
            vec![
                ("upstream", Example::Service(upstream_unavailable())),
                (
                    "busy",
                    Example::Service(DomainError::UpstreamBusy {
                        retry_after_secs: 7,
                    }),
                ),
                ("database", Example::Service(store_unavailable())),
                (
                    "too large",
                    Example::Service(DomainError::BodyTooLarge {
                        limit_bytes: 16 << 20,
                    }),
                ),
                ("from the proxy", Example::Proxy(PROXY_NO_REPLICA)),
            ],
        ),
        503 if live => (
            "The call platform cannot be asked for its live figures (down, failing, too slow, or an answer that breaks the contract): live figures are never served stale; or the portal database is unavailable and no roster was read before; or, from the reverse proxy, no replica could be reached (with `Retry-After: 5`, without the rate-limit and cache headers).",
            vec![
                ("upstream", Example::Service(upstream_unavailable())),
                ("database", Example::Service(store_unavailable())),
                ("from the proxy", Example::Proxy(PROXY_NO_REPLICA)),
            ],
        ),
        503 if endpoint.is_some() => (
            "The portal database is unavailable; or, from the reverse proxy, no replica could be reached (with `Retry-After: 5`, without the rate-limit and cache headers).",
            vec![
                ("database", Example::Service(store_unavailable())),
                ("from the proxy", Example::Proxy(PROXY_NO_REPLICA)),
            ],
        ),
        503 => (
            "From the reverse proxy: no replica could be reached (with `Retry-After: 5`, without the rate-limit and cache headers).",
            vec![("from the proxy", Example::Proxy(PROXY_NO_REPLICA))],
        ),
        _ => (
            "An unexpected failure; the cause is logged with the request id.",
            vec![(
                "internal",
                Example::Service(DomainError::Internal("a bug".into())),
            )],
        ),
    };
    // Each example as `{error}` and as problem details, its problem type as the service gives it.
    let (bodies, problems): (Vec<Named<'_>>, Vec<Named<'_>>) = examples
        .into_iter()
        .filter_map(|(name, example)| {
            let (problem, body) = example.answer()?;
            let plain = serde_json::to_value(&body).ok()?;
            let details = serde_json::to_value(ProblemDetails::new(problem, body)).ok()?;
            Some(((name, plain), (name, details)))
        })
        .unzip();
    let mut content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ErrorBody")))
        .build();
    set_examples(&mut content, bodies);
    let mut problem_content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ProblemDetails")))
        .build();
    set_examples(&mut problem_content, problems);
    let mut response = if status == 406 {
        // An `Accept` naming problem details accepts JSON: a 406 is never problem details.
        ResponseBuilder::new()
            .description(description)
            .content("application/json", content)
            .build()
    } else {
        ResponseBuilder::new()
            .description(format!(
                "{description} As problem details (`application/problem+json`) when the request's `Accept` prefers them (the reverse proxy: when it names them)."
            ))
            .content("application/json", content)
            .content(PROBLEM_JSON, problem_content)
            .build()
    };
    let seconds = || {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
    };
    let from_the_proxy = "The reverse proxy's own 503 (no replica reachable) carries one too: 5.";
    let retry_after = match status {
        429 if calls => Some((
            "60 when over the request quota; over the day budget, the seconds to the next window (1 to 60).".to_owned(),
            seconds().maximum(Some(60)),
        )),
        429 if live => Some((
            format!("{RATE_LIMITED_RETRY_AFTER_SECS} when over the request quota; {STREAMS_RETRY_AFTER_SECS} when the key holds all its streams."),
            seconds().maximum(Some(60)),
        )),
        429 => Some((
            "Always 60.".to_owned(),
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .enum_values(Some([60])),
        )),
        503 if calls => Some((
            format!(
                "Seconds before asking again: when the call platform is busy, the estimated seconds until the request's days are held; while its circuit breaker is open, the seconds until it tries the platform again; {UPSTREAM_RETRY_AFTER_SECS} for another failure of the call platform; {STORE_RETRY_AFTER_SECS} for the portal database; {BODY_TOO_LARGE_RETRY_AFTER_SECS} for an answer past the body bound (asking again does not make it smaller). {from_the_proxy}"
            ),
            seconds(),
        )),
        503 if live => Some((
            format!(
                "While the call platform's circuit breaker is open, the seconds until it tries the platform again; {UPSTREAM_RETRY_AFTER_SECS} for another failure of the call platform; {STORE_RETRY_AFTER_SECS} for the portal database. {from_the_proxy}"
            ),
            seconds(),
        )),
        503 if endpoint.is_some() => Some((
            format!("{STORE_RETRY_AFTER_SECS} for the portal database. {from_the_proxy}"),
            seconds(),
        )),
        503 => Some((from_the_proxy.to_owned(), seconds())),
        _ => None,
    };
    if let Some((description, schema)) = retry_after {
        response.headers.insert(
            "Retry-After".into(),
            RefOr::T(
                HeaderBuilder::new()
                    .schema(Some(schema))
                    .description(Some(description))
                    .build(),
            ),
        );
    }
    response
}

/// Whether `endpoint` takes query parameters, and whether it reads call records over a period.
const fn its_inputs(endpoint: Endpoint) -> (bool, bool) {
    match endpoint {
        Endpoint::CallsSummary
        | Endpoint::CallsAgents
        | Endpoint::CallsQueues
        | Endpoint::CallsIntervals
        | Endpoint::CallsTrend => (true, true),
        Endpoint::KpiMonth | Endpoint::Schedule | Endpoint::ScriptsStats => (true, false),
        Endpoint::Ping | Endpoint::CallsLive | Endpoint::KpiMonths | Endpoint::Operators => {
            (false, false)
        }
    }
}

/// An example under its name.
type Named<'a> = (&'a str, Value);

/// One error example of the document.
enum Example {
    /// An error of the service: its body and problem type are what the service answers for it.
    Service(DomainError),
    /// A request over one of the bounds the middleware holds.
    Oversize(Oversize),
    /// A message the shipped reverse proxy answers itself (one of [`PROXY_ERRORS`]).
    Proxy(&'static str),
}

impl Example {
    /// The problem type and the `{error}` body of the example.
    fn answer(self) -> Option<(Problem, ErrorBody)> {
        match self {
            Self::Service(err) => Some((Problem::of(&err), ErrorBody::from(&err))),
            Self::Oversize(oversize) => {
                Some((oversize.problem(), ErrorBody::new(oversize.message())))
            }
            Self::Proxy(message) => PROXY_ERRORS
                .iter()
                .find(|(proxy, _)| *proxy == message)
                .map(|(_, problem)| (*problem, ErrorBody::new(message))),
        }
    }
}

/// The 400 of a date that is not one.
fn bad_start() -> DomainError {
    DomainError::BadRequest(ParamError::Invalid {
        param: Param::query("start"),
        value: "2026-02-30".into(),
        expected: DATE_FORM,
    })
}

/// The errors the shipped reverse proxy (deploy/nginx/nginx.conf) answers itself, before a
/// request reaches a replica, and their problem types; a test holds each, in both forms, to
/// that file.
pub const PROXY_ERRORS: [(&str, Problem); 7] = [
    (PROXY_MALFORMED, Problem::MalformedRequest),
    (PROXY_HEAD, Problem::HeadersTooLarge),
    (PROXY_TARGET, Problem::UriTooLong),
    (PROXY_BODY, Problem::ContentTooLarge),
    (PROXY_CONNECTIONS, Problem::TooManyConnections),
    (PROXY_NO_REPLICA, Problem::Unavailable),
    (PROXY_NOT_FOUND, Problem::NotFound),
];
const PROXY_MALFORMED: &str = "malformed request head";
const PROXY_HEAD: &str = "request head too large: at most 8 KiB a header field";
const PROXY_TARGET: &str = "request target longer than 8 KiB";
const PROXY_BODY: &str = "request body longer than 64 KiB";
const PROXY_CONNECTIONS: &str = "too many connections from this address";
const PROXY_NO_REPLICA: &str = "the service is unavailable";
/// `/metrics` and `/readyz`, which the public listener does not offer (outside the document's
/// paths, so in no endpoint's examples).
const PROXY_NOT_FOUND: &str = "no such endpoint on the public listener";

fn before_horizon() -> DomainError {
    let earliest = Day::parse("2025-10-22").ok().map(|day| EarliestDay {
        day,
        horizon_days: DEFAULT_HISTORY_DAYS,
    });
    let example = SummaryQuery {
        period: PeriodQuery::of("2024-01-01", None),
        ..SummaryQuery::default()
    };
    match example.parse(earliest) {
        Err(err) => DomainError::BadRequest(err),
        Ok(_) => DomainError::Internal("the example is within the horizon".into()),
    }
}

fn over_budget() -> DomainError {
    DomainError::DayBudgetExceeded(OverBudget {
        key: 1,
        needed: 31,
        status: DayBudgetStatus {
            limit: DEFAULT_DAY_FETCHES_PER_MINUTE,
            remaining: 12,
            reset_seconds: 42,
        },
        filling: None,
    })
}

/// A year's trend asked while the backfill is still filling the history horizon.
fn over_budget_while_filling() -> DomainError {
    DomainError::DayBudgetExceeded(OverBudget {
        key: 1,
        needed: 254,
        status: DayBudgetStatus {
            limit: DEFAULT_DAY_FETCHES_PER_MINUTE,
            remaining: DEFAULT_DAY_FETCHES_PER_MINUTE,
            reset_seconds: 58,
        },
        filling: Some(HistoryFill {
            held: 112,
            days: DEFAULT_HISTORY_DAYS - 4,
            per_minute: 10,
        }),
    })
}

fn upstream_unavailable() -> DomainError {
    DomainError::UpstreamUnavailable(callstats_domain::ports::UpstreamError::new("example"))
}

fn store_unavailable() -> DomainError {
    DomainError::StoreUnavailable(callstats_domain::ports::StoreError::new("example"))
}
