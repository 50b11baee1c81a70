//! Problem details (RFC 9457) on request: every error answer is made as `{"error": …}` and
//! carries its [`Problem`]; a request whose `Accept` prefers `application/problem+json` gets it
//! rewritten as problem details (docs/behaviour.md, "Errors"). Each problem type is described
//! at `GET /api/v1/problems/{name}`.

use actix_web::HttpResponse;
use actix_web::body::{BoxBody, EitherBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderValue, VARY};
use bytes::Bytes;
use callstats_domain::DomainError;
use callstats_domain::scope::Scope;
use serde::Serialize;

use crate::PREFIX;
use crate::response::{FailureCause, INTERNAL_ERROR_BODY, bytes_response, json};

/// Every error body: `{"error": "..."}`, plus `required_scope` on a 403 for a missing scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong and, where it applies, what to send instead.
    pub error: String,
    /// The scope the endpoint needs; only on a 403 for a missing scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<callstats_api::schemas::Scope>, required = false)]
    pub required_scope: Option<Scope>,
}

impl ErrorBody {
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            error: message.into(),
            required_scope: None,
        }
    }
}

impl From<&DomainError> for ErrorBody {
    fn from(err: &DomainError) -> Self {
        Self {
            error: err.to_string(),
            required_scope: if let DomainError::MissingScope(scope) = err {
                Some(*scope)
            } else {
                None
            },
        }
    }
}

/// The media type of problem details.
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";
/// Where the problem types are described, under [`PREFIX`].
pub(crate) const PROBLEMS: &str = "/problems";

/// What kind of error an answer is: its problem type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Problem {
    BadRequest,
    /// Answered by the reverse proxy: a request head it cannot read.
    MalformedRequest,
    Unauthorized,
    OriginNotAllowed,
    MissingScope,
    NotFound,
    MethodNotAllowed,
    NotAcceptable,
    ContentTooLarge,
    UriTooLong,
    HeadersTooLarge,
    RateLimited,
    DayBudgetExceeded,
    TooManyStreams,
    /// Answered by the reverse proxy: too many requests in flight from one address.
    TooManyConnections,
    UpstreamBusy,
    UpstreamUnavailable,
    AnswerTooLarge,
    StoreUnavailable,
    /// Answered by the reverse proxy: no replica could be reached.
    Unavailable,
    Internal,
}

impl Problem {
    /// Every problem type, in the order the document lists them.
    pub const ALL: [Self; 21] = [
        Self::BadRequest,
        Self::MalformedRequest,
        Self::Unauthorized,
        Self::OriginNotAllowed,
        Self::MissingScope,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::NotAcceptable,
        Self::ContentTooLarge,
        Self::UriTooLong,
        Self::HeadersTooLarge,
        Self::RateLimited,
        Self::DayBudgetExceeded,
        Self::TooManyStreams,
        Self::TooManyConnections,
        Self::UpstreamBusy,
        Self::UpstreamUnavailable,
        Self::AnswerTooLarge,
        Self::StoreUnavailable,
        Self::Unavailable,
        Self::Internal,
    ];

    /// The last segment of its `type` URI.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::BadRequest => "bad-request",
            Self::MalformedRequest => "malformed-request",
            Self::Unauthorized => "unauthorized",
            Self::OriginNotAllowed => "origin-not-allowed",
            Self::MissingScope => "missing-scope",
            Self::NotFound => "not-found",
            Self::MethodNotAllowed => "method-not-allowed",
            Self::NotAcceptable => "not-acceptable",
            Self::ContentTooLarge => "content-too-large",
            Self::UriTooLong => "uri-too-long",
            Self::HeadersTooLarge => "headers-too-large",
            Self::RateLimited => "rate-limited",
            Self::DayBudgetExceeded => "day-budget-exceeded",
            Self::TooManyStreams => "too-many-streams",
            Self::TooManyConnections => "too-many-connections",
            Self::UpstreamBusy => "upstream-busy",
            Self::UpstreamUnavailable => "upstream-unavailable",
            Self::AnswerTooLarge => "answer-too-large",
            Self::StoreUnavailable => "store-unavailable",
            Self::Unavailable => "unavailable",
            Self::Internal => "internal",
        }
    }

    /// A short summary of the problem type, the same for every occurrence.
    #[must_use]
    pub const fn title(self) -> &'static str {
        match self {
            Self::BadRequest => "A parameter is missing or malformed",
            Self::MalformedRequest => "The request head is malformed",
            Self::Unauthorized => "No usable API key",
            Self::OriginNotAllowed => "The key is pinned to another origin",
            Self::MissingScope => "The key lacks the endpoint's scope",
            Self::NotFound => "Nothing to show for the path",
            Self::MethodNotAllowed => "Only GET is served",
            Self::NotAcceptable => "No representation the request accepts",
            Self::ContentTooLarge => "The declared request body is too large",
            Self::UriTooLong => "The request target is too long",
            Self::HeadersTooLarge => "The request headers are too large",
            Self::RateLimited => "Over the per-minute request quota",
            Self::DayBudgetExceeded => "Over the key's day budget",
            Self::TooManyStreams => "Too many live streams for the key",
            Self::TooManyConnections => "Too many requests in flight from one address",
            Self::UpstreamBusy => "The call platform is busy",
            Self::UpstreamUnavailable => "The call platform is unavailable",
            Self::AnswerTooLarge => "The answer would be too large",
            Self::StoreUnavailable => "The portal database is unavailable",
            Self::Unavailable => "The service is unavailable",
            Self::Internal => "Internal server error",
        }
    }

    /// The status every answer of this type has.
    #[must_use]
    pub const fn status(self) -> StatusCode {
        match self {
            Self::BadRequest | Self::MalformedRequest => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::OriginNotAllowed | Self::MissingScope => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Self::ContentTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::RateLimited
            | Self::DayBudgetExceeded
            | Self::TooManyStreams
            | Self::TooManyConnections => StatusCode::TOO_MANY_REQUESTS,
            Self::UpstreamBusy
            | Self::UpstreamUnavailable
            | Self::AnswerTooLarge
            | Self::StoreUnavailable
            | Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What it means and what to do about it: the type's documentation.
    #[must_use]
    pub const fn description(self) -> &'static str {
        match self {
            Self::BadRequest => {
                "A query or path parameter is missing or malformed, or the period starts before the history horizon. `detail` names the parameter, the form expected and the value received (or the earliest start allowed). Fix the request; retrying it unchanged gives the same answer."
            }
            Self::MalformedRequest => {
                "The reverse proxy could not read the request head (a request line or a header that is not HTTP/1.1), so no replica saw it; the connection is closed. Its headers could not be read either: this answer is problem details only when the proxy could read an `Accept` asking for them."
            }
            Self::Unauthorized => {
                "No API key was sent (`Authorization: Bearer …` or `X-API-Key`), the two headers carry different keys, one of them was sent more than once, or the key is unknown, revoked or expired. `detail` says which."
            }
            Self::OriginNotAllowed => {
                "The key is pinned to a domain and the request's `Origin` is another one."
            }
            Self::MissingScope => {
                "The key does not hold the scope the endpoint needs; `required_scope` names it."
            }
            Self::NotFound => {
                "The path is not an endpoint, or what it names does not exist (a KPI month without a published sheet, an unknown problem type)."
            }
            Self::MethodNotAllowed => {
                "The path exists but is only served with GET (`Allow: GET`). A CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) gets it on any path, without a key: CORS is not offered, as API keys are kept server-side; call the API from your backend."
            }
            Self::NotAcceptable => {
                "The request's `Accept` excludes every representation the endpoint has: JSON (`application/json`) everywhere, CSV (`text/csv`) on /calls/agents, /calls/intervals, /calls/queues, /calls/trend, /operators, /schedule and /scripts/stats, and a stream (`text/event-stream`) on /calls/live. `error` names the endpoint's representations. Accept one of them (`*/*;q=0.1` keeps JSON acceptable)."
            }
            Self::ContentTooLarge => {
                "The request declares a body over 64 KiB. A GET needs none and none is ever read."
            }
            Self::UriTooLong => "The request target (path and query) is longer than 8 KiB.",
            Self::HeadersTooLarge => {
                "The request headers are longer than 16 KiB in all, or (answered by the reverse proxy) one header field is longer than 8 KiB."
            }
            Self::RateLimited => {
                "The key (or, without a key, the client address) made more requests this minute than its quota allows. Retry after `Retry-After` seconds; `RateLimit` shows the window."
            }
            Self::DayBudgetExceeded => {
                "The request would make the service fetch more call days it does not hold yet than the key's day budget allows this minute. Retry after `Retry-After` seconds, or ask for days already held."
            }
            Self::TooManyStreams => {
                "The key holds as many open live streams (/calls/live with `Accept: text/event-stream`) as it may, across every replica (`CALLSTATS_LIVE_STREAMS_PER_KEY`, 4 by default). Close one, or read /calls/live as JSON; a stream whose client went away stops counting within 30 seconds. `Retry-After` is 5."
            }
            Self::TooManyConnections => {
                "The reverse proxy holds at most 256 requests in flight from one client address; this one was over it. Wait for answers before sending more."
            }
            Self::UpstreamBusy => {
                "The call platform is busy: the request's days cannot arrive before the fetch deadline. They stay queued; retry after `Retry-After` seconds."
            }
            Self::UpstreamUnavailable => {
                "The call platform could not be reached or answered badly. No partial figures are ever given; retry after `Retry-After` seconds (while the circuit breaker is open, the seconds until it tries the platform again)."
            }
            Self::AnswerTooLarge => {
                "The answer would be larger than 16 MiB (an agent leaderboard of tens of thousands of agents): ask for a shorter period. Asking again unchanged gives the same answer; `Retry-After` is 60."
            }
            Self::StoreUnavailable => {
                "The portal database could not be reached; retry after `Retry-After` seconds. Keys used in the last 10 minutes keep working meanwhile, with their cached answers."
            }
            Self::Unavailable => {
                "The reverse proxy could reach no replica of the service; retry later."
            }
            Self::Internal => {
                "An unexpected failure; its cause is logged with the request id (`X-Request-Id`)."
            }
        }
    }

    /// The problem type of a domain error.
    #[must_use]
    pub const fn of(err: &DomainError) -> Self {
        match err {
            DomainError::BadRequest(_) => Self::BadRequest,
            DomainError::Unauthorized(_) => Self::Unauthorized,
            DomainError::OriginNotAllowed => Self::OriginNotAllowed,
            DomainError::MissingScope(_) => Self::MissingScope,
            DomainError::NotFound(_) => Self::NotFound,
            DomainError::NotAcceptable { .. } => Self::NotAcceptable,
            DomainError::RateLimited(_) => Self::RateLimited,
            DomainError::DayBudgetExceeded(_) => Self::DayBudgetExceeded,
            DomainError::TooManyStreams { .. } => Self::TooManyStreams,
            DomainError::UpstreamBusy { .. } => Self::UpstreamBusy,
            DomainError::UpstreamUnavailable(_) => Self::UpstreamUnavailable,
            DomainError::BodyTooLarge { .. } => Self::AnswerTooLarge,
            DomainError::StoreUnavailable(_) => Self::StoreUnavailable,
            DomainError::Internal(_) => Self::Internal,
        }
    }

    /// The problem type of an answer the framework made with `status`: the first of the
    /// status's types the service answers itself (403 origin-not-allowed and 503
    /// upstream-busy aside, which it never makes).
    #[must_use]
    pub fn of_status(status: StatusCode) -> Self {
        Self::ALL
            .into_iter()
            .filter(|problem| problem.of_a_bare_status())
            .find(|problem| problem.status() == status)
            .unwrap_or(if status.is_server_error() {
                Self::Internal
            } else {
                Self::BadRequest
            })
    }

    /// Whether only the reverse proxy answers it (the service never does).
    #[must_use]
    pub const fn from_the_proxy(self) -> bool {
        match self {
            Self::MalformedRequest | Self::TooManyConnections | Self::Unavailable => true,
            Self::BadRequest
            | Self::Unauthorized
            | Self::OriginNotAllowed
            | Self::MissingScope
            | Self::NotFound
            | Self::MethodNotAllowed
            | Self::NotAcceptable
            | Self::ContentTooLarge
            | Self::UriTooLong
            | Self::HeadersTooLarge
            | Self::RateLimited
            | Self::DayBudgetExceeded
            | Self::TooManyStreams
            | Self::UpstreamBusy
            | Self::UpstreamUnavailable
            | Self::AnswerTooLarge
            | Self::StoreUnavailable
            | Self::Internal => false,
        }
    }

    /// Whether an answer the framework made with its status may be of this type: one the
    /// service answers itself, but for the two it only ever answers knowing the cause (an
    /// Origin refused, a platform busy).
    const fn of_a_bare_status(self) -> bool {
        match self {
            Self::UpstreamBusy | Self::OriginNotAllowed => false,
            other => !other.from_the_proxy(),
        }
    }

    /// Its `type` URI, relative to the service's address.
    #[must_use]
    pub fn uri(self) -> String {
        format!("{PREFIX}{PROBLEMS}/{}", self.name())
    }

    /// The problem type named `name`.
    #[must_use]
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|problem| problem.name() == name)
    }
}

/// An error answer's body as problem details, the `{error}` members kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProblemDetails {
    /// The problem type: a URI reference under `/api/v1/problems/`, which describes it.
    #[serde(rename = "type")]
    #[schema(example = "/api/v1/problems/missing-scope")]
    pub kind: String,
    /// A short summary of the problem type, the same for every occurrence.
    pub title: String,
    /// The HTTP status of the answer.
    #[schema(minimum = 400, maximum = 599)]
    pub status: u16,
    /// This occurrence, in words: the same text as `error`.
    pub detail: String,
    /// The `{error}` form's message, kept for clients that read it.
    pub error: String,
    /// The scope the endpoint needs; only on a `missing-scope` problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<callstats_api::schemas::Scope>, required = false)]
    pub required_scope: Option<Scope>,
}

impl ProblemDetails {
    #[must_use]
    pub fn new(problem: Problem, body: ErrorBody) -> Self {
        Self {
            kind: problem.uri(),
            title: problem.title().to_owned(),
            status: problem.status().as_u16(),
            detail: body.error.clone(),
            error: body.error,
            required_scope: body.required_scope,
        }
    }
}

/// The description of one problem type, at its `type` URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProblemType {
    /// Its own URI, the `type` of its problems.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    /// The status of its answers.
    pub status: u16,
    /// What it means and what to do about it.
    pub description: String,
}

impl From<Problem> for ProblemType {
    fn from(problem: Problem) -> Self {
        Self {
            kind: problem.uri(),
            title: problem.title().to_owned(),
            status: problem.status().as_u16(),
            description: problem.description().to_owned(),
        }
    }
}

/// What an error answer is, kept with it until the request observer writes it.
#[derive(Debug, Clone)]
struct Marked {
    problem: Problem,
    body: ErrorBody,
}

/// An error answer: `body` as `{"error": …}` with the status of `problem`, marked so that the
/// request observer can answer problem details instead.
pub(crate) fn error_json(problem: Problem, body: ErrorBody) -> HttpResponse {
    let mut response = json(problem.status(), &body);
    mark(&mut response, problem, body);
    response
}

/// Marks `response`, an error answer whose body is `body` as `{"error": …}`, as a `problem`.
pub(crate) fn mark(response: &mut HttpResponse, problem: Problem, body: ErrorBody) {
    response.extensions_mut().insert(Marked { problem, body });
}

/// An error answer made outside the request observer's reach (the framework's own failures):
/// `{"error": …}` with `status`, or problem details when `wanted`.
pub(crate) fn error_answer(status: StatusCode, body: ErrorBody, wanted: bool) -> HttpResponse {
    let mut response = if wanted {
        let mut details = ProblemDetails::new(Problem::of_status(status), body);
        details.status = status.as_u16();
        let mut response = json(status, &details);
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        response
    } else {
        json(status, &body)
    };
    response
        .headers_mut()
        .append(VARY, HeaderValue::from_static("accept"));
    response
}

/// The answer as problem details when `wanted` and it is an error answer; every error answer
/// says that it varies with `Accept`.
pub(crate) fn negotiate<B>(
    mut response: ServiceResponse<EitherBody<B>>,
    wanted: bool,
) -> ServiceResponse<EitherBody<B>> {
    let Some(marked) = response.response().extensions().get::<Marked>().cloned() else {
        return response;
    };
    let headers = response.headers_mut();
    headers.append(VARY, HeaderValue::from_static("accept"));
    if !wanted {
        return response;
    }
    let Ok(bytes) = serde_json::to_vec(&ProblemDetails::new(marked.problem, marked.body)) else {
        return response;
    };
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response.map_body(|_, _| EitherBody::right(BoxBody::new(Bytes::from(bytes))))
}

/// A 500 with a generic JSON body; the cause goes to the log, never to the client.
pub(crate) fn internal_error(cause: String) -> HttpResponse {
    let mut response = bytes_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        Bytes::from_static(INTERNAL_ERROR_BODY),
    );
    mark(
        &mut response,
        Problem::Internal,
        ErrorBody::new("internal server error"),
    );
    response.extensions_mut().insert(FailureCause(cause));
    response
}
