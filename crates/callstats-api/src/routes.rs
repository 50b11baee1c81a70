//! The routes. Each handler takes its endpoint's typed query (and path) as extractors and
//! answers through [`answer`]: the caller read from the request, the application layer's
//! `Answers::serve` (which validates the parameters once the caller is admitted), and the reply
//! written with the headers every response carries. The `#[utoipa::path]` above a
//! handler is where the OpenAPI document gets the path from, so the document and the routes
//! cannot drift apart.

// utoipa's path macro qualifies the parameter types it expands.
#![allow(unused_qualifications)]

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;

use actix_web::dev::{AppService, HttpServiceFactory};
use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::http::header::{ACCESS_CONTROL_REQUEST_METHOD, ALLOW, HeaderValue};
use actix_web::{FromRequest, Handler, HttpRequest, HttpResponse, Resource, Responder, guard, web};
use bytes::Bytes;
use callstats_application::flight::panic_message;
use callstats_application::{Answer, Body, ETag, Outcome};
use callstats_domain::DomainError;
use callstats_domain::model::{
    AgentsResponse, CallSummary, IntervalsResponse, KeyInfo, KpiMonthResponse, OperatorsResponse,
    QueuesResponse, Schedule, ScriptsResponse, SheetsResponse,
};
use callstats_domain::params::{
    AgentsQuery, IntervalsQuery, KpiQuery, MonthPath, QueuesQuery, ScheduleQuery, ScriptsQuery,
    SummaryQuery,
};
use callstats_domain::request::UnvalidatedRequest;
use futures::FutureExt as _;
use utoipa::openapi::path::Paths;
use utoipa::openapi::{RefOr, Schema};
use utoipa_actix_web::OpenApiFactory;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::caller::caller_in;
use crate::document::count_document_request;
use crate::error::{ApiError, ErrorBody};
use crate::heads::Heads;
use crate::negotiation::acceptable;
use crate::problem::{Problem, ProblemType, error_json};
use crate::query::Query;
use crate::response::{
    Source, Validator, Vary, csv_download, json, private_max_age, representation, set_headers,
};
use crate::{ApiState, PREFIX};

/// Every route: the API under its prefix, and the operations endpoints at the root.
pub(crate) fn register_all(cfg: &mut ServiceConfig<'_>) {
    register(cfg);
    crate::ops::register(cfg);
}

fn register(cfg: &mut ServiceConfig<'_>) {
    // Tried in this order, each route tried costing the paths after it about 180 instructions
    // (callgrind, /ping before /operators): the data routes a dashboard polls first, then /ping
    // (asked when a partner sets up, not on every poll); the one pattern with a parameter (a
    // regex match) last, so no other path pays for it, and after /kpi/months, which it would
    // otherwise take. Each under the prefix itself, not in a scope: a scope routes a request
    // twice (its prefix, then its routes) and boxes the call once more (callgrind, cached
    // `/operators`: 50,797 instructions a request in a scope, 50,174 without).
    cfg.service(Get::api(__path_calls_summary, calls_summary))
        .service(Get::api(__path_calls_agents, calls_agents))
        .service(Get::api(__path_calls_queues, calls_queues))
        .service(Get::api(__path_calls_intervals, calls_intervals))
        .service(Get::api(__path_kpi_months, kpi_months))
        .service(Get::api(__path_operators, operators))
        .service(Get::api(__path_schedule, schedule))
        .service(Get::api(__path_scripts_stats, scripts_stats))
        .service(Get::api(__path_ping, ping))
        .service(Get::api(__path_openapi_json, openapi_json))
        .service(Get::api(__path_kpi_month, kpi_month))
        .service(Get::api(__path_problem_type, problem_type));
}

/// A GET route: `doc`, the route's OpenAPI path (the `__path_<handler>` that `#[utoipa::path]`
/// writes), gives its pattern (after `prefix`) and its name (the operation id: the handler's
/// name, as actix's `#[get]` names it), and `handler` answers it.
///
/// Registered as `#[get]` registers a route, but for the method check: actix's `guard::Get()`
/// also records every method tried in the request's extensions, for the `Allow` header of
/// actix's own 405; a vector and a map entry allocated on every request, for an answer this app
/// writes itself (`not_routed`, as the default service). The method is compared alone here:
/// about 1,000 instructions a request fewer (callgrind, cached `/operators`;
/// docs/architecture.md, "Tooling").
pub(crate) struct Get<D, H, Args> {
    prefix: &'static str,
    doc: D,
    handler: H,
    args: PhantomData<fn() -> Args>,
}

impl<D, H, Args> Get<D, H, Args> {
    /// A route of the API, under [`PREFIX`].
    pub(crate) const fn api(doc: D, handler: H) -> Self {
        Self {
            prefix: PREFIX,
            doc,
            handler,
            args: PhantomData,
        }
    }

    /// A route at the root (the operations endpoints).
    pub(crate) const fn root(doc: D, handler: H) -> Self {
        Self {
            prefix: "",
            doc,
            handler,
            args: PhantomData,
        }
    }
}

impl<D, H, Args> HttpServiceFactory for Get<D, H, Args>
where
    D: utoipa::Path,
    H: Handler<Args>,
    Args: FromRequest + 'static,
    H::Output: Responder + 'static,
{
    fn register(self, config: &mut AppService) {
        let name = D::operation().operation_id.unwrap_or_default();
        Resource::new(format!("{}{}", self.prefix, D::path()))
            .name(&name)
            .guard(guard::fn_guard(|ctx| ctx.head().method == Method::GET))
            .to(self.handler)
            .register(config);
    }
}

impl<D: OpenApiFactory, H, Args> OpenApiFactory for Get<D, H, Args> {
    fn paths(&self) -> Paths {
        let mut paths = self.doc.paths();
        paths.paths = std::mem::take(&mut paths.paths)
            .into_iter()
            .map(|(path, item)| (format!("{}{path}", self.prefix), item))
            .collect();
        paths
    }

    fn schemas(&self, schemas: &mut Vec<(String, RefOr<Schema>)>) {
        self.doc.schemas(schemas);
    }
}

/// Check a key.
///
/// Reports the key's name, scopes and quota. Needs no scope; never cached (`X-Cache: MISS`).
#[utoipa::path(get, path = "/ping", tag = "key", responses((status = 200, description = "The key.", body = KeyInfo)))]
async fn ping(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::Ping)).await
}

/// Call volumes, peaks and service figures.
///
/// Calls of one direction per Tashkent day (every day, zero-filled), with the busiest day
/// (earliest on a tie). For a single day also 24 hourly buckets and the busiest hour; for
/// several days `hourly` and `peak_hour` are null and `peak_hour_count` is 0. Cached 10 minutes.
///
/// Service figures over the same calls: `abandon_rate_percent` = 100 × unanswered / total
/// (null without calls); `service_level` = answered within `sl_threshold` seconds (default 20)
/// over the calls with a wait time, answered or not (null when no call has a wait time: the
/// platform sends none, or outbound calls); `average_speed_of_answer_seconds` (mean wait of the
/// answered calls with one), `longest_wait_seconds` (any call with one) and
/// `average_handle_time_seconds` (mean duration of the answered calls: talk time, the records
/// hold no after-call work), null when there is nothing to average. With `queue`, only the
/// calls that queue offered (exact, case-sensitive; an unknown queue gives zeros).
///
/// Days after today have no calls (count 0). Today's calls are at most a minute older than the
/// answer. When any day of the period cannot be fetched from the call platform within the fetch
/// deadline (15 s for the whole request), the answer is 503, never partial figures.
#[utoipa::path(get, path = "/calls/summary", tag = "calls", params(SummaryQuery), responses((status = 200, description = "The summary.", body = CallSummary)))]
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
/// those calls. `checklist_percent` = (C·m + Σs) / (C + n), Bayesian-smoothed toward the mean
/// m of every scored call in the period; null when no call in the period was scored.
/// `positive_sentiment_percent` is null for an agent without scored calls. Cached 10 minutes.
///
/// Days after today have no calls. Today's calls are at most a minute older than the answer. When
/// any day of the period cannot be fetched from the call platform within the fetch deadline
/// (15 s for the whole request), the answer is 503, never partial figures.
#[utoipa::path(get, path = "/calls/agents", tag = "calls", params(AgentsQuery), responses((status = 200, description = "The leaderboard.", body = AgentsResponse)))]
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
#[utoipa::path(get, path = "/calls/queues", tag = "calls", params(QueuesQuery), responses((status = 200, description = "The queues.", body = QueuesResponse)))]
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
#[utoipa::path(get, path = "/calls/intervals", tag = "calls", params(IntervalsQuery), responses((status = 200, description = "The intervals.", body = IntervalsResponse)))]
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

/// Published KPI sheets.
///
/// By month descending, then shift ascending (byte-wise). Drafts are never listed; `shift` is
/// ignored. Cached 1 minute.
#[utoipa::path(get, path = "/kpi/months", tag = "kpi", responses((status = 200, description = "The sheets.", body = SheetsResponse)))]
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
#[utoipa::path(get, path = "/kpi/{month}", tag = "kpi", params(MonthPath, KpiQuery), responses((status = 200, description = "The sheet.", body = KpiMonthResponse)))]
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
#[utoipa::path(get, path = "/operators", tag = "operators", responses((status = 200, description = "The roster.", body = OperatorsResponse)))]
async fn operators(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(&UnvalidatedRequest::Operators)).await
}

/// Off-day schedule of a month.
///
/// By date, then agent number. A month without off-days gives an empty list. Cached 1 minute.
#[utoipa::path(get, path = "/schedule", tag = "operators", params(ScheduleQuery), responses((status = 200, description = "The schedule.", body = Schedule)))]
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
#[utoipa::path(get, path = "/scripts/stats", tag = "scripts", params(ScriptsQuery), responses((status = 200, description = "The scripts.", body = ScriptsResponse)))]
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
#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()), responses((status = 200, description = "The OpenAPI 3.1 document.", content_type = "application/json")))]
async fn openapi_json(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let quota = count_document_request(&state, &req).await?;
    // The document changes only with a new release: clients revalidate it, cheaply.
    let mut response = representation(
        (&req, Heads::of(req.headers())),
        &state.compressed,
        &state.document,
        (
            Validator::of(state.document_etag),
            HeaderValue::from_static("no-cache"),
        ),
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
    get,
    path = "/problems/{name}",
    tag = "meta",
    security(()),
    params(("name" = String, Path, description = "The problem type's name, the last segment of its `type`.", example = "missing-scope")),
    responses((status = 200, description = "The problem type.", body = ProblemType))
)]
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
        (&req, Heads::of(req.headers())),
        &state.compressed,
        &body,
        (
            Validator::of(ETag::of(&body)),
            HeaderValue::from_static("no-cache"),
        ),
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
    let heads = Heads::of(req.headers());
    let caller = caller_in(req, heads, state.trust_proxy);
    let accept = acceptable(heads, req.headers());
    let outcome = state.answers.serve(&caller, asked, accept).await;
    respond(state, req, heads, outcome).await
}

/// The response to an admitted request's outcome.
async fn respond(
    state: &ApiState,
    req: &HttpRequest,
    heads: Heads<'_>,
    Outcome {
        quota,
        days,
        answer,
    }: Outcome,
) -> Result<HttpResponse, ApiError> {
    let (mut response, source, csv_file_name) = match answer {
        Ok(Answer::Key(info)) => (json(StatusCode::OK, &info), Source::Miss, None),
        Ok(Answer::Body(Body {
            entry,
            csv_file_name,
            cache,
            seconds_left,
        })) => (
            representation(
                (req, heads),
                &state.compressed,
                &entry.body,
                (Validator::of_entry(&entry), private_max_age(seconds_left)),
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
