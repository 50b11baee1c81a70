//! The routes. Each handler takes its endpoint's typed query (and path) as extractors and
//! answers through [`answer`]: the caller read from the request, the application layer's
//! `Answers::serve` (which validates the parameters once the caller is admitted), and the reply
//! written with the headers every response carries. Each handler's actix `#[get]` gives both
//! its route and the OpenAPI document's path (through `#[utoipa::path]`), so the document and
//! the routes cannot drift apart.

// utoipa's path macro qualifies the parameter types it expands.
#![allow(unused_qualifications)]

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::http::header::{ACCESS_CONTROL_REQUEST_METHOD, ALLOW, CACHE_CONTROL, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, Responder as _, get, web};
use actix_web_lab::sse;
use bytes::Bytes;
use callstats_api::agents::{AgentsQuery, AgentsResponse};
use callstats_api::intervals::{IntervalsQuery, IntervalsResponse};
use callstats_api::kpi::{KpiMonthResponse, KpiQuery, MonthPath};
use callstats_api::live::LiveResponse;
use callstats_api::portal::{
    KeyInfo, OperatorsResponse, Schedule, ScheduleQuery, ScriptsQuery, ScriptsResponse,
    SheetsResponse,
};
use callstats_api::query::{PeriodQuery, QueueQuery, ServiceQuery};
use callstats_api::queues::{QueuesQuery, QueuesResponse};
use callstats_api::request::UnvalidatedRequest;
use callstats_api::summary::{CallSummary, SummaryQuery};
use callstats_api::trend::{TrendQuery, TrendResponse};
use callstats_application::live::LiveEvent;
use callstats_application::single_flight::panic_message;
use callstats_application::{Answer, Body, ETag, Outcome};
use callstats_domain::DomainError;
use futures::{FutureExt as _, StreamExt as _};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::ApiState;
use crate::caller::caller;
use crate::document::count_document_request;
use crate::error::ApiError;
use crate::negotiation::{acceptable, event_stream_preferred};
use crate::problem::{ErrorBody, Problem, ProblemType, error_json};
use crate::query::Query;
use crate::response::{
    Source, Validator, Vary, csv_download, json, private_max_age, representation, set_headers,
};

/// The API's routes, registered under [`PREFIX`](crate::PREFIX) by the caller. `/kpi/{month}`
/// comes after `/kpi/months`, which it would otherwise take; the order is also the document's.
pub(crate) fn register(cfg: &mut ServiceConfig<'_>) {
    cfg.service(calls_summary)
        .service(calls_agents)
        .service(calls_queues)
        .service(calls_intervals)
        .service(calls_trend)
        .service(calls_live)
        .service(kpi_months)
        .service(operators)
        .service(schedule)
        .service(scripts_stats)
        .service(ping)
        .service(openapi_json)
        .service(kpi_month)
        .service(problem_type);
}

/// Check a key.
///
/// Reports the key's name, scopes and quota. Needs no scope; never cached (`X-Cache: MISS`).
#[utoipa::path(tag = "key", responses((status = 200, description = "The key.", body = KeyInfo)))]
#[get("/ping")]
async fn ping(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::Ping)).await
}

/// Call volumes, peaks and service figures.
///
/// Calls of one direction per Tashkent day (every day, zero-filled), with the busiest day
/// (earliest on a tie). For a single day also 24 hourly buckets and the busiest hour; for
/// several days `hourly` and `peak_hour` are null and `peak_hour_count` is 0. Cached 10 minutes.
///
/// Service figures over the same calls, each as its field of `CallSummary` defines it. With
/// `queue`, only the calls that queue offered (exact, case-sensitive; an unknown queue gives
/// zeros).
///
/// Days after today have no calls (count 0). Today's calls are those of at most a minute before
/// the answer was computed (`as_of` says when), and the answer is then cached 10 minutes. When
/// any day of the period cannot be fetched from the call platform within the fetch deadline
/// (15 s for the whole request), the answer is 503, never partial figures.
#[utoipa::path(tag = "calls", params(PeriodQuery, ServiceQuery, QueueQuery, SummaryQuery), responses((status = 200, description = "The summary.", body = CallSummary)))]
#[get("/calls/summary")]
async fn calls_summary(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<SummaryQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::CallsSummary(query))).await
}

/// Agent leaderboard.
///
/// Agents with at least one call in the period, both directions, by calls descending then
/// agent number. With `queue`, the agents who answered calls of that queue, counting only
/// those calls. Each figure as its field of `AgentEntry` defines it. Cached 10 minutes.
///
/// Days after today have no calls. Today's calls are those of at most a minute before the answer
/// was computed (`as_of` says when), and the answer is then cached 10 minutes. When any day of
/// the period cannot be fetched from the call platform within the fetch deadline (15 s for the
/// whole request), the answer is 503, never partial figures.
#[utoipa::path(tag = "calls", params(PeriodQuery, AgentsQuery), responses((status = 200, description = "The leaderboard.", body = AgentsResponse)))]
#[get("/calls/agents")]
async fn calls_agents(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<AgentsQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::CallsAgents(query))).await
}

/// Service figures per queue.
///
/// One entry per queue that offered a call of the direction in the period: offered,
/// answered, unanswered and the service figures of /calls/summary over that queue's calls
/// (the same definitions and null rules; an entry equals /calls/summary with that `queue`).
/// By offered descending, then queue name (byte-wise); the calls without a queue form one
/// entry with `queue: null`, listed last. A range longer than 31 days keeps its latest 31
/// days (`clamped: true`). Cached 10 minutes.
///
/// Days after today have no calls. When any day of the period cannot be fetched from the call
/// platform within the fetch deadline (15 s for the whole request), the answer is 503, never
/// partial figures.
#[utoipa::path(tag = "calls", params(PeriodQuery, ServiceQuery), responses((status = 200, description = "The queues.", body = QueuesResponse)))]
#[get("/calls/queues")]
async fn calls_queues(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<QueuesQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::CallsQueues(query))).await
}

/// Service figures per 15-, 30- or 60-minute interval, for workforce management.
///
/// Every interval of the period (Tashkent time), zero-filled, in time order; a call belongs to
/// the interval holding its `started_at` in Tashkent time, whatever offset the platform gave.
/// Each row has the calls of the direction (and `queue`) offered in it and the service figures
/// of /calls/summary over them (the same definitions and null rules). The `offered` of a day's
/// intervals add up to that day's `daily` count of /calls/summary. A range longer than 7 days
/// keeps its latest 7 days (`clamped: true`). Cached 10 minutes.
///
/// Days after today have no calls. When any day of the period cannot be fetched from the call
/// platform within the fetch deadline (15 s for the whole request), the answer is 503, never
/// partial figures.
#[utoipa::path(tag = "calls", params(PeriodQuery, IntervalsQuery, ServiceQuery, QueueQuery), responses((status = 200, description = "The intervals.", body = IntervalsResponse)))]
#[get("/calls/intervals")]
async fn calls_intervals(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<IntervalsQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(
        &state,
        &req,
        Some(&UnvalidatedRequest::CallsIntervals(query)),
    )
    .await
}

/// Service figures per day, ISO week or month, over up to a year.
///
/// Every bucket (`granularity`: Tashkent days, ISO weeks Monday to Sunday, or calendar months)
/// that overlaps the period, in time order, each cut to the period: `start` and `end` are its
/// first and last dates inside it and `days` their count. Each row has the calls of the
/// direction (and `queue`) of its days and the service figures of /calls/summary over them
/// (the same definitions and null rules); the `offered` of the buckets add up to the period's
/// calls. A range longer than 366 days keeps its latest 366 days (`clamped: true`). Cached 10
/// minutes.
///
/// The history horizon and the day budget apply as on every /calls endpoint: a day not held
/// yet costs a day of the budget, and the days to fetch are checked against it together (a
/// 429 before any fetch). Once the service holds the horizon in its database (a background
/// task fills it, about 40 minutes after a first start), a trend over it costs none. Days
/// after today have no calls. When any
/// day of the period cannot be fetched from the call platform within the fetch deadline, the
/// answer is 503, never partial figures.
#[utoipa::path(tag = "calls", params(PeriodQuery, TrendQuery, ServiceQuery, QueueQuery), responses((status = 200, description = "The trend.", body = TrendResponse)))]
#[get("/calls/trend")]
async fn calls_trend(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<TrendQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::CallsTrend(query))).await
}

/// What is happening now: callers waiting, the oldest wait, agents free and on calls.
///
/// The call platform's live figures: totals, every queue (by `waiting` descending, then name)
/// and every agent (by agent number, named from the roster). Cached 5 seconds; the platform is
/// asked at most once per poll interval (`CALLSTATS_LIVE_POLL_MS`, 2 s by default) for the whole
/// deployment. 404 when the platform reports no live figures; 503 when it cannot be asked (live
/// figures are never served stale). No CSV.
///
/// With `Accept: text/event-stream` the answer is a Server-Sent Events stream: an event `live`
/// with this JSON as its `data` at once, then one whenever the figures change (at most once a
/// poll), each with an `id:`; a comment (`: keep-alive`) every 10 s; `retry: 5000` first. An
/// event `unavailable` (`data` an error body) says the figures can no longer be had; the next
/// `live` event follows once they can. The stream counts as one request when it opens; a key
/// holds at most `CALLSTATS_LIVE_STREAMS_PER_KEY` (4) open streams across the deployment (429
/// `too-many-streams` past it). It ends within 10 s of its key being revoked or expiring, when
/// its client stops reading, and at shutdown; reconnect (with `Last-Event-ID` or without) to
/// any replica for the current figures at once.
#[utoipa::path(
    tag = "calls",
    responses((status = 200, description = "The live figures, or with `Accept: text/event-stream` a stream of them.", content(
        (LiveResponse = "application/json"),
        (String = "text/event-stream", example = json!("retry: 5000\n\nid: 1795241700000\nevent: live\ndata: {\"as_of\":\"2026-11-21T04:15:22.000Z\",…}\n\n: keep-alive\n\n"))
    )))
)]
#[get("/calls/live")]
async fn calls_live(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if event_stream_preferred(req.headers()) {
        // Caught as `answer` catches a handler's panic: a 500, not a dropped connection.
        return AssertUnwindSafe(live_stream(&state, &req))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Err(ApiError::internal(panic_message(panic.as_ref()))));
    }
    answer(&state, &req, Some(&UnvalidatedRequest::CallsLive)).await
}

/// How long a client waits before it reconnects to a stream that ended (`retry:`).
const RECONNECT_AFTER: Duration = Duration::from_secs(5);

/// /calls/live as Server-Sent Events.
async fn live_stream(state: &ApiState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let caller = caller(req, state.trust_proxy);
    let (quota, days, opened) = state.use_cases.open_live(&caller).await;
    let stream = match opened {
        Ok(stream) => stream,
        Err(err) => return Err(ApiError::counted(err, quota).with_days(days)),
    };
    let events = stream.events().map(|event| match event {
        LiveEvent::Live { id, body } => sse::Event::Data(
            sse::Data::new(body.as_str().to_owned())
                .event("live")
                .id(id.to_string()),
        ),
        LiveEvent::Unavailable { id, error } => sse::Event::Data(
            sse::Data::new(error)
                .event("unavailable")
                .id(id.to_string()),
        ),
        LiveEvent::Heartbeat => sse::Event::Comment("keep-alive".into()),
    });
    let mut response = sse::Sse::from_infallible_stream(events)
        .with_retry_duration(RECONNECT_AFTER)
        .respond_to(req)
        .map_into_boxed_body();
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    set_headers(response.headers_mut(), &quota, days.as_ref(), Source::Miss);
    Ok(response)
}

/// Published KPI sheets.
///
/// By month descending, then shift ascending (byte-wise). Drafts are never listed; `shift` is
/// ignored. Cached 1 minute.
#[utoipa::path(tag = "kpi", responses((status = 200, description = "The sheets.", body = SheetsResponse)))]
#[get("/kpi/months")]
async fn kpi_months(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::KpiMonths)).await
}

/// One month's KPI sheet.
///
/// With `kpi:detail`: named operator rows (`granularity: detail`). With only `kpi:aggregate`:
/// totals, distribution and anonymous competition ranks, no names and no agent numbers
/// (`granularity: aggregate`). `totals` sums the rows (null where no row tracks a column);
/// `sheet_totals` is what the spreadsheet states. Money and percentages are rounded to 2
/// decimals, kpi_percent and ratios to 4. 404 when the month has no published sheet. Cached
/// 1 minute.
#[utoipa::path(tag = "kpi", params(MonthPath, KpiQuery), responses((status = 200, description = "The sheet.", body = KpiMonthResponse)))]
#[get("/kpi/{month}")]
async fn kpi_month(
    state: web::Data<ApiState>,
    req: HttpRequest,
    path: web::Path<MonthPath>,
    Query(query): Query<KpiQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(
        &state,
        &req,
        Some(&UnvalidatedRequest::KpiMonth(path.into_inner(), query)),
    )
    .await
}

/// Operator roster.
///
/// By agent number, staff included (`staff_role` not null: leave them out of performance
/// views). Usernames, phones and credentials are never returned. Cached 1 minute.
#[utoipa::path(tag = "operators", responses((status = 200, description = "The roster.", body = OperatorsResponse)))]
#[get("/operators")]
async fn operators(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::Operators)).await
}

/// Off-day schedule of a month.
///
/// By date, then agent number. A month without off-days gives an empty list. Cached 1 minute.
#[utoipa::path(tag = "operators", params(ScheduleQuery), responses((status = 200, description = "The schedule.", body = Schedule)))]
#[get("/schedule")]
async fn schedule(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<ScheduleQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::Schedule(query))).await
}

/// Script view counts.
///
/// The most viewed scripts, by views descending then id. Cached 1 minute.
#[utoipa::path(tag = "scripts", params(ScriptsQuery), responses((status = 200, description = "The scripts.", body = ScriptsResponse)))]
#[get("/scripts/stats")]
async fn scripts_stats(
    state: web::Data<ApiState>,
    req: HttpRequest,
    Query(query): Query<ScriptsQuery>,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::ScriptsStats(query))).await
}

/// This OpenAPI document.
///
/// Needs no key; counts against the per-client-IP quota.
// `document::DOCUMENT`, written out: the macro takes a literal.
#[utoipa::path(tag = "meta", security(()), responses((status = 200, description = "The OpenAPI 3.1 document.", content_type = "application/json")))]
#[get("/openapi.json")]
async fn openapi_json(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let quota = count_document_request(&state, &req).await?;
    // The document changes only with a new release: clients revalidate it, cheaply.
    let mut response = representation(
        &req,
        &state.compressed,
        &state.document,
        Validator::of(state.document_etag),
        HeaderValue::from_static("no-cache"),
        Vary::ENCODING,
    )
    .await;
    set_headers(response.headers_mut(), &quota, None, Source::Miss);
    Ok(response)
}

/// Describe a problem type.
///
/// The `type` of a problem-details error answer (sent on `Accept: application/problem+json`)
/// resolves here: its title, status and what it means. Needs no key: counted against the
/// client address's quota, like the document.
#[utoipa::path(
    tag = "meta",
    security(()),
    params(("name" = String, Path, description = "The problem type's name, the last segment of its `type`.", example = "missing-scope")),
    responses((status = 200, description = "The problem type.", body = ProblemType))
)]
#[get("/problems/{name}")]
async fn problem_type(
    state: web::Data<ApiState>,
    req: HttpRequest,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let quota = count_document_request(&state, &req).await?;
    let Some(problem) = Problem::named(&name) else {
        let unknown = DomainError::NotFound(format!("no such problem type: {name}"));
        return Err(ApiError::counted(unknown, quota));
    };
    let body = serde_json::to_vec(&ProblemType::from(problem))
        .map(Bytes::from)
        .map_err(|err| ApiError::internal(err.to_string()))?;
    // Problem types change only with a new release, as the document does.
    let mut response = representation(
        &req,
        &state.compressed,
        &body,
        Validator::of(ETag::of(&body)),
        HeaderValue::from_static("no-cache"),
        Vary::ENCODING,
    )
    .await;
    set_headers(response.headers_mut(), &quota, None, Source::Miss);
    Ok(response)
}

/// Answers a path or method the API does not have: the key is still checked and counted (so
/// the response carries the quota headers), then 405 for a known path, else 404. A CORS
/// preflight is refused on any path, without a key (a browser sends none with it).
pub(crate) async fn unrouted(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if is_preflight(&req) {
        return refuse_preflight(&state, &req).await;
    }
    answer(&state, &req, None).await
}

/// A browser's CORS preflight: `OPTIONS` asking whether a cross-origin request may follow.
fn is_preflight(req: &HttpRequest) -> bool {
    req.method() == Method::OPTIONS && req.headers().contains_key(ACCESS_CONTROL_REQUEST_METHOD)
}

/// Keys are kept server-side (the specification), so no browser page on another site is
/// meant to call the API: a preflight gets 405 saying so, counted against the client address's
/// quota like any request without a key, and no `Access-Control-*` header.
async fn refuse_preflight(state: &ApiState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let quota = count_document_request(state, req).await?;
    let mut response = method_not_allowed(
        "CORS is not offered: API keys must be kept server-side, so call the API from your \
         backend, not from a browser page on another site; only GET is served",
    );
    set_headers(response.headers_mut(), &quota, None, Source::Miss);
    Ok(response)
}

/// Admits the request and answers it. A handler that panics answers a 500 whose cause the
/// request observer logs.
async fn answer(
    state: &ApiState,
    req: &HttpRequest,
    asked: Option<&UnvalidatedRequest>,
) -> Result<HttpResponse, ApiError> {
    // Caught here: actix does not catch a handler's panic, which would end the connection
    // without an answer.
    AssertUnwindSafe(admit_and_answer(state, req, asked))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(ApiError::internal(panic_message(panic.as_ref()))))
}

/// The caller and what it accepts read from the request, the one use case awaited, and its
/// outcome written.
async fn admit_and_answer(
    state: &ApiState,
    req: &HttpRequest,
    asked: Option<&UnvalidatedRequest>,
) -> Result<HttpResponse, ApiError> {
    let caller = caller(req, state.trust_proxy);
    let outcome = state
        .use_cases
        .serve(&caller, asked, acceptable(req.headers()))
        .await;
    respond(state, req, outcome).await
}

/// The response to an admitted request's outcome.
async fn respond(
    state: &ApiState,
    req: &HttpRequest,
    Outcome {
        quota,
        days,
        answer,
    }: Outcome,
) -> Result<HttpResponse, ApiError> {
    let (mut response, source, csv_file_name) = match answer {
        Ok(Answer::Key(info)) => (
            json(StatusCode::OK, &KeyInfo::from(&info)),
            Source::Miss,
            None,
        ),
        Ok(Answer::Body(Body {
            entry,
            csv_file_name,
            cache,
            seconds_left,
        })) => (
            representation(
                req,
                &state.compressed,
                &entry.body,
                Validator::of_entry(&entry),
                private_max_age(seconds_left),
                Vary::DATA,
            )
            .await,
            Source::of(cache, seconds_left),
            csv_file_name,
        ),
        Ok(Answer::Unrouted) => (not_routed(req), Source::Miss, None),
        Err(err) => return Err(ApiError::counted(err, quota).with_days(days)),
    };
    if let Some(file_name) = &csv_file_name {
        csv_download(&mut response, file_name);
    }
    set_headers(response.headers_mut(), &quota, days.as_ref(), source);
    Ok(response)
}

/// 405 with `Allow: GET` for a path the app has (asked with another method), 404 otherwise.
/// actix's resource map knows every registered pattern, the probes at the root included.
fn not_routed(req: &HttpRequest) -> HttpResponse {
    let path = req.path();
    if req.resource_map().has_resource(path) {
        method_not_allowed(format!("method {} not allowed: use GET", req.method()))
    } else {
        error_json(
            Problem::NotFound,
            ErrorBody::new(format!("no such endpoint: {path}")),
        )
    }
}

/// 405 with `Allow: GET` and `message`.
fn method_not_allowed(message: impl Into<String>) -> HttpResponse {
    let mut response = error_json(Problem::MethodNotAllowed, ErrorBody::new(message));
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("GET"));
    response
}
