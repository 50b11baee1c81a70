//! The routes. Each handler names its endpoint and answers through [`answer`]: the caller and
//! the raw parameters read from the request, the application layer's `Answers::serve`, and
//! the reply written with the headers every response carries. The `#[utoipa::path]` above a
//! handler is where the OpenAPI document gets the path from, so the document and the routes
//! cannot drift apart.

// utoipa's path macro qualifies the parameter types it expands.
#![allow(unused_qualifications)]

use std::panic::AssertUnwindSafe;

use actix_web::http::StatusCode;
use actix_web::http::header::{ALLOW, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, get, web};
use callstats_application::flight::panic_message;
use callstats_application::{Asked, CacheStatus, Reply};
use callstats_domain::DomainError;
use callstats_domain::model::{
    AgentsResponse, CallSummary, KeyInfo, KpiMonthResponse, OperatorsResponse, Schedule,
    ScriptsResponse, SheetsResponse,
};
use callstats_domain::params::{Direction, QueryParams};
use callstats_domain::request::Endpoint;
use futures::FutureExt as _;
use utoipa::IntoParams;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::caller::{caller, client_ip};
use crate::error::{ApiError, ErrorBody};
use crate::response::{bytes_response, json, set_headers};
use crate::{ApiState, PREFIX};

/// Every route: the API under its prefix, and the operations endpoints at the root.
pub(crate) fn register_all(cfg: &mut ServiceConfig<'_>) {
    cfg.service(utoipa_actix_web::scope(PREFIX).configure(register))
        .configure(crate::ops::register);
}

fn register(cfg: &mut ServiceConfig<'_>) {
    // Tried in this order: the one pattern with a parameter (a regex match) comes last, so no
    // other path pays for it, and after /kpi/months, which it would otherwise take.
    cfg.service(ping)
        .service(calls_summary)
        .service(calls_agents)
        .service(kpi_months)
        .service(operators)
        .service(schedule)
        .service(scripts_stats)
        .service(openapi_json)
        .service(kpi_month);
}

/// Query of the call endpoints (documentation only: the domain parses the raw query).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(
    dead_code,
    reason = "describes the query for the OpenAPI document; parsing is the domain's"
)]
struct RangeQuery {
    /// First day (Tashkent). Required. Must exist in the calendar.
    #[param(value_type = String, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-01")]
    start: String,
    /// Last day (Tashkent), defaults to `start`; not before `start`. A range longer than 31
    /// days keeps its latest 31 days.
    #[param(value_type = Option<String>, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-07")]
    end: Option<String>,
    /// Call direction, case-sensitive; default `inbound`.
    #[param(inline)]
    direction: Option<Direction>,
}

/// Query of /calls/agents (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(
    dead_code,
    reason = "describes the query for the OpenAPI document; parsing is the domain's"
)]
struct AgentsQuery {
    /// First day (Tashkent). Required. Must exist in the calendar.
    #[param(value_type = String, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-01")]
    start: String,
    /// Last day (Tashkent), defaults to `start`; not before `start`. A range longer than 31
    /// days keeps its latest 31 days.
    #[param(value_type = Option<String>, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-07")]
    end: Option<String>,
    /// Accepted and validated (a bad value is a 400) but ignored: the leaderboard counts both
    /// directions.
    #[param(inline)]
    direction: Option<Direction>,
}

/// Query of /kpi/{month} (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(
    dead_code,
    reason = "describes the query for the OpenAPI document; parsing is the domain's"
)]
struct KpiQuery {
    /// Shift label of the sheet to show (1 to 64 characters, no control characters). Without
    /// it, the lowest-sorting shift (byte-wise) is shown; a shift with no published sheet that
    /// month is a 404 listing the shifts that exist.
    // The pattern excludes exactly what `char::is_control` refuses (Unicode category Cc).
    #[param(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]+$",
        example = "day"
    )]
    shift: Option<String>,
}

/// Path of /kpi/{month} (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(
    dead_code,
    reason = "describes the path for the OpenAPI document; parsing is the domain's"
)]
struct MonthPath {
    /// The month, `YYYY-MM` with month 01 to 12 (`2026-13` is a 400).
    #[param(pattern = r"^\d{4}-(0[1-9]|1[0-2])$", example = "2026-11")]
    month: String,
}

/// Query of /schedule (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(
    dead_code,
    reason = "describes the query for the OpenAPI document; parsing is the domain's"
)]
struct ScheduleQuery {
    /// The month, `YYYY-MM` with month 01 to 12. Required.
    #[param(pattern = r"^\d{4}-(0[1-9]|1[0-2])$", example = "2026-11")]
    month: String,
}

/// Query of /scripts/stats (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(
    dead_code,
    reason = "describes the query for the OpenAPI document; parsing is the domain's"
)]
struct ScriptsQuery {
    /// How many scripts, ASCII digits only, 1 to 100.
    #[param(minimum = 1, maximum = 100, default = 20, example = 10)]
    limit: Option<u8>,
}

/// Check a key.
///
/// Reports the key's name, scopes and quota. Needs no scope; never cached (`X-Cache: MISS`).
#[utoipa::path(tag = "key", responses((status = 200, description = "The key.", body = KeyInfo)))]
#[get("/ping")]
async fn ping(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::Ping)).await
}

/// Call volumes and peaks.
///
/// Calls of one direction per Tashkent day (every day, zero-filled), with the busiest day
/// (earliest on a tie). For a single day also 24 hourly buckets and the busiest hour; for
/// several days `hourly` and `peak_hour` are null and `peak_hour_count` is 0. Cached 10 minutes.
///
/// Days after today have no calls (count 0). Today's calls are at most a minute older than the
/// answer. When any day of the period cannot be fetched from the call platform within the fetch
/// deadline (15 s for the whole request), the answer is 503, never partial figures.
#[utoipa::path(tag = "calls", params(RangeQuery), responses((status = 200, description = "The summary.", body = CallSummary)))]
#[get("/calls/summary")]
async fn calls_summary(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::CallsSummary)).await
}

/// Agent leaderboard.
///
/// Agents with at least one call in the period, both directions, by calls descending then
/// agent number. `checklist_percent` = (C·m + Σs) / (C + n), Bayesian-smoothed toward the mean
/// m of every scored call in the period; null when no call in the period was scored.
/// `positive_sentiment_percent` is null for an agent without scored calls. Cached 10 minutes.
///
/// Days after today have no calls. Today's calls are at most a minute older than the answer. When
/// any day of the period cannot be fetched from the call platform within the fetch deadline
/// (15 s for the whole request), the answer is 503, never partial figures.
#[utoipa::path(tag = "calls", params(AgentsQuery), responses((status = 200, description = "The leaderboard.", body = AgentsResponse)))]
#[get("/calls/agents")]
async fn calls_agents(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::CallsAgents)).await
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
    answer(&state, &req, Some(Endpoint::KpiMonths)).await
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
async fn kpi_month(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::KpiMonth)).await
}

/// Operator roster.
///
/// By agent number, staff included (`staff_role` not null: leave them out of performance
/// views). Usernames, phones and credentials are never returned. Cached 1 minute.
#[utoipa::path(tag = "operators", responses((status = 200, description = "The roster.", body = OperatorsResponse)))]
#[get("/operators")]
async fn operators(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::Operators)).await
}

/// Off-day schedule of a month.
///
/// By date, then agent number. A month without off-days gives an empty list. Cached 1 minute.
#[utoipa::path(tag = "operators", params(ScheduleQuery), responses((status = 200, description = "The schedule.", body = Schedule)))]
#[get("/schedule")]
async fn schedule(state: web::Data<ApiState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::Schedule)).await
}

/// Script view counts.
///
/// The most viewed scripts, by views descending then id. Cached 1 minute.
#[utoipa::path(tag = "scripts", params(ScriptsQuery), responses((status = 200, description = "The scripts.", body = ScriptsResponse)))]
#[get("/scripts/stats")]
async fn scripts_stats(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, Some(Endpoint::ScriptsStats)).await
}

/// This OpenAPI document.
///
/// Needs no key; counts against the per-client-IP quota.
#[utoipa::path(tag = "meta", security(()), responses((status = 200, description = "The OpenAPI 3.1 document.", content_type = "application/json")))]
#[get("/openapi.json")]
async fn openapi_json(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let quota = state
        .answers
        .count_anonymous(client_ip(&req, state.trust_proxy))
        .await;
    if quota.exceeded {
        return Err(ApiError::counted(DomainError::RateLimited(quota), quota));
    }
    let mut response = bytes_response(StatusCode::OK, state.document.clone());
    set_headers(response.headers_mut(), &quota, CacheStatus::Miss);
    Ok(response)
}

/// Answers a path or method the API does not have: the key is still checked and counted (so
/// the response carries the quota headers), then 405 for a known path, else 404.
pub(crate) async fn unrouted(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    answer(&state, &req, None).await
}

/// Admits the request and answers it. A handler that panics answers a 500 whose cause the
/// request observer logs.
async fn answer(
    state: &ApiState,
    req: &HttpRequest,
    endpoint: Option<Endpoint>,
) -> Result<HttpResponse, ApiError> {
    AssertUnwindSafe(admit_and_answer(state, req, endpoint))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(ApiError::internal(panic_message(panic.as_ref()))))
}

async fn admit_and_answer(
    state: &ApiState,
    req: &HttpRequest,
    endpoint: Option<Endpoint>,
) -> Result<HttpResponse, ApiError> {
    let query = QueryParams::new(form_urlencoded::parse(req.query_string().as_bytes()));
    let asked = Asked {
        endpoint,
        query: &query,
        path_month: req.match_info().get("month"),
    };
    let served = state
        .answers
        .serve(&caller(req, state.trust_proxy), asked)
        .await;
    let quota = served.quota;
    let (mut response, cache) = match served.reply {
        Ok(Reply::Key(info)) => (json(StatusCode::OK, &info), CacheStatus::Miss),
        Ok(Reply::Body(bytes, cache)) => (bytes_response(StatusCode::OK, bytes), cache),
        Ok(Reply::Unrouted) => (not_routed(req), CacheStatus::Miss),
        Err(err) => return Err(ApiError::counted(err, quota)),
    };
    set_headers(response.headers_mut(), &quota, cache);
    Ok(response)
}

/// 405 with `Allow: GET` for a path the app has (asked with another method), 404 otherwise.
/// actix's resource map knows every registered pattern, the probes at the root included.
fn not_routed(req: &HttpRequest) -> HttpResponse {
    let path = req.path();
    if req.resource_map().has_resource(path) {
        let mut response = json(
            StatusCode::METHOD_NOT_ALLOWED,
            &ErrorBody::new(format!("method {} not allowed: use GET", req.method())),
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET"));
        response
    } else {
        json(
            StatusCode::NOT_FOUND,
            &ErrorBody::new(format!("no such endpoint: {path}")),
        )
    }
}
