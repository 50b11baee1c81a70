//! The API's error answer: a domain error with the quota the rate-limit headers report, as one
//! [`ResponseError`], so handlers return `Result` and use `?`. One status per domain error and
//! a JSON body that tells the partner what to fix; internal causes never reach the body, they
//! travel to the request log with the response.

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderValue, RETRY_AFTER};
use actix_web::{HttpResponse, ResponseError};
use callstats_domain::DomainError;
use callstats_domain::access::QuotaStatus;
use callstats_domain::limits::DayBudgetStatus;

use crate::problem::{ErrorBody, Problem, error_json, internal_error};
use crate::response::{FailureCause, Source, set_headers};

/// A request that ends in an error: what went wrong and, once the request was counted, the
/// quota (and the key's day budget) its rate-limit headers show.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub(crate) struct ApiError {
    #[source]
    error: DomainError,
    quota: Option<QuotaStatus>,
    days: Option<DayBudgetStatus>,
}

impl ApiError {
    /// `error`, answered with the rate-limit headers of `quota`.
    pub(crate) const fn counted(error: DomainError, quota: QuotaStatus) -> Self {
        Self {
            error,
            quota: Some(quota),
            days: None,
        }
    }

    /// The same, with the key's day budget in `RateLimit` too.
    pub(crate) const fn with_days(mut self, days: Option<DayBudgetStatus>) -> Self {
        self.days = days;
        self
    }

    /// `error`, before any quota was known: without rate-limit headers.
    pub(crate) const fn new(error: DomainError) -> Self {
        Self {
            error,
            quota: None,
            days: None,
        }
    }

    /// A handler that failed before any quota was known (a panic): a 500 whose cause is logged.
    pub(crate) const fn internal(cause: String) -> Self {
        Self::new(DomainError::Internal(cause))
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        Problem::of(&self.error).status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = match &self.error {
            DomainError::Internal(cause) => internal_error(cause.clone()),
            err => {
                let mut response = error_json(Problem::of(err), ErrorBody::from(err));
                if let Some(seconds) = err.retry_after_secs() {
                    response
                        .headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from(seconds));
                }
                if logs_its_cause(err) {
                    response
                        .extensions_mut()
                        .insert(FailureCause(err.cause_chain()));
                }
                response
            }
        };
        if let Some(quota) = &self.quota {
            set_headers(
                response.headers_mut(),
                quota,
                self.days.as_ref(),
                Source::Miss,
            );
        }
        response
    }
}

/// Whether the log line of an answer with `err` shows its cause: a failure of the service's
/// own (a port that failed, an answer past the body bound), never the client's mistake.
const fn logs_its_cause(err: &DomainError) -> bool {
    match err {
        DomainError::StoreUnavailable(_)
        | DomainError::UpstreamUnavailable(_)
        | DomainError::BodyTooLarge { .. } => true,
        DomainError::BadRequest(_)
        | DomainError::Unauthorized(_)
        | DomainError::OriginNotAllowed
        | DomainError::MissingScope(_)
        | DomainError::NotFound(_)
        | DomainError::NotAcceptable { .. }
        | DomainError::RateLimited(_)
        | DomainError::TooManyStreams { .. }
        | DomainError::DayBudgetExceeded(_)
        | DomainError::UpstreamBusy { .. }
        | DomainError::Internal(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use actix_web::body::MessageBody as _;
    use callstats_domain::access::{QuotaStatus, Unauthorized};
    use callstats_domain::params::{Param, ParamError};
    use callstats_domain::ports::{StoreError, UpstreamError};
    use callstats_domain::scope::Scope;

    use super::*;

    fn quota() -> QuotaStatus {
        QuotaStatus {
            limit: 120,
            remaining: 0,
            reset_seconds: 17,
            exceeded: true,
        }
    }

    fn answer(err: DomainError) -> (StatusCode, serde_json::Value, HttpResponse) {
        let response = ApiError::counted(err, quota()).error_response();
        let status = response.status();
        let (response, body) = response.into_parts();
        let bytes = body.try_into_bytes().unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap(),
            response.map_into_boxed_body(),
        )
    }

    #[test]
    fn a_scope_403_names_the_required_scope_and_an_origin_403_does_not() {
        let (status, body, _) = answer(DomainError::MissingScope(Scope::KpiAggregate));
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(
            body,
            serde_json::json!({
                "error": "this endpoint needs the 'kpi:aggregate' scope, which the API key does not hold",
                "required_scope": "kpi:aggregate"
            })
        );
        let (status, body, _) = answer(DomainError::OriginNotAllowed);
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(body, serde_json::json!({"error": "origin not allowed"}));
    }

    #[test]
    fn each_domain_error_has_its_status_and_the_quota_headers() {
        for (err, status) in [
            (
                DomainError::Unauthorized(Unauthorized::NotPresented(crate::caller::MISSING_KEY)),
                StatusCode::UNAUTHORIZED,
            ),
            (DomainError::NotFound("x".into()), StatusCode::NOT_FOUND),
            (
                DomainError::StoreUnavailable(StoreError::new("down")),
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                DomainError::UpstreamUnavailable(UpstreamError::new("down")),
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                DomainError::RateLimited(quota()),
                StatusCode::TOO_MANY_REQUESTS,
            ),
        ] {
            let (got, _, response) = answer(err);
            assert_eq!(got, status);
            let headers = response.headers();
            assert_eq!(headers.get("x-ratelimit-limit").unwrap(), "120");
            assert_eq!(headers.get("x-ratelimit-remaining").unwrap(), "0");
            assert_eq!(headers.get("x-ratelimit-reset").unwrap(), "17");
            assert_eq!(headers.get("x-cache").unwrap(), "MISS");
        }
    }

    /// One error of every kind (the match below stops compiling when a kind is added, and
    /// its assertion fails until the kind is listed here).
    fn one_of_each() -> Vec<DomainError> {
        let all = vec![
            DomainError::BadRequest(ParamError::Repeated {
                param: Param::query("start"),
            }),
            DomainError::Unauthorized(Unauthorized::NotPresented(crate::caller::MISSING_KEY)),
            DomainError::OriginNotAllowed,
            DomainError::MissingScope(Scope::Calls),
            DomainError::NotFound("x".into()),
            DomainError::NotAcceptable {
                representations: "application/json",
            },
            DomainError::RateLimited(quota()),
            DomainError::DayBudgetExceeded(callstats_domain::limits::OverBudget {
                key: 1,
                needed: 31,
                status: DayBudgetStatus {
                    limit: 124,
                    remaining: 12,
                    reset_seconds: 42,
                },
                filling: None,
            }),
            DomainError::TooManyStreams { limit: 4 },
            DomainError::UpstreamBusy {
                retry_after_secs: 7,
            },
            DomainError::UpstreamUnavailable(UpstreamError::new("down")),
            DomainError::UpstreamUnavailable(
                UpstreamError::new("circuit open").with_retry_in(Duration::from_millis(2_100)),
            ),
            DomainError::BodyTooLarge {
                limit_bytes: 16 << 20,
            },
            DomainError::StoreUnavailable(StoreError::new("down")),
            DomainError::Internal("bug".into()),
        ];
        // Each kind's place in the list: the match stops compiling when a kind is added.
        let kind = |err: &DomainError| match err {
            DomainError::BadRequest(_) => 0,
            DomainError::Unauthorized(_) => 1,
            DomainError::OriginNotAllowed => 2,
            DomainError::MissingScope(_) => 3,
            DomainError::NotFound(_) => 4,
            DomainError::NotAcceptable { .. } => 5,
            DomainError::RateLimited(_) => 6,
            DomainError::DayBudgetExceeded(_) => 7,
            DomainError::TooManyStreams { .. } => 8,
            DomainError::UpstreamBusy { .. } => 9,
            DomainError::UpstreamUnavailable(_) => 10,
            DomainError::BodyTooLarge { .. } => 11,
            DomainError::StoreUnavailable(_) => 12,
            DomainError::Internal(_) => 13,
        };
        let mut kinds: Vec<u8> = all.iter().map(kind).collect();
        kinds.dedup();
        assert_eq!(
            kinds,
            (0..14).collect::<Vec<u8>>(),
            "one of each kind, in order"
        );
        all
    }

    #[test]
    fn every_503_and_429_says_when_to_ask_again_and_no_other_error_does() {
        let mut unavailable = Vec::new();
        for err in one_of_each() {
            let response = ApiError::counted(err.clone(), quota()).error_response();
            let status = response.status();
            let retry_after = response
                .headers()
                .get("retry-after")
                .map(|value| value.to_str().unwrap().parse::<u32>().unwrap());
            if status == StatusCode::SERVICE_UNAVAILABLE {
                unavailable.push((Problem::of(&err).name(), retry_after));
            } else if status == StatusCode::TOO_MANY_REQUESTS {
                assert!(retry_after.is_some_and(|secs| secs >= 1), "{err:?}");
            } else {
                assert_eq!(retry_after, None, "{err:?}");
            }
        }
        assert_eq!(
            unavailable,
            [
                ("upstream-busy", Some(7)),
                ("upstream-unavailable", Some(10)),
                ("upstream-unavailable", Some(3)),
                ("answer-too-large", Some(60)),
                ("store-unavailable", Some(5)),
            ]
        );
    }

    #[test]
    fn an_answer_past_the_body_bound_is_a_503_that_says_so_and_is_logged() {
        let (status, body, response) = answer(DomainError::BodyTooLarge {
            limit_bytes: 16 << 20,
        });
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            serde_json::json!({"error": "the answer would be larger than 16 MiB; ask for a shorter period"})
        );
        assert!(response.extensions().get::<FailureCause>().is_some());
    }

    #[test]
    fn a_503_keeps_its_cause_for_the_log_and_out_of_the_body() {
        let (_, body, response) = answer(DomainError::StoreUnavailable(StoreError::new(
            "pool timed out",
        )));
        assert_eq!(
            body,
            serde_json::json!({"error": "portal database unavailable"})
        );
        let cause = response
            .extensions()
            .get::<FailureCause>()
            .map(|c| c.0.clone());
        assert_eq!(
            cause.as_deref(),
            Some("portal database unavailable: portal store unavailable: pool timed out")
        );
    }

    #[test]
    fn a_panic_is_a_generic_500_with_its_cause_kept_for_the_log() {
        let response = ApiError::internal("index out of bounds".into()).error_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(response.headers().get("x-ratelimit-limit").is_none());
        let cause = response
            .extensions()
            .get::<FailureCause>()
            .map(|c| c.0.clone());
        assert_eq!(cause.as_deref(), Some("index out of bounds"));
        let bytes = response.into_body().try_into_bytes().unwrap();
        assert_eq!(&bytes[..], br#"{"error":"internal server error"}"#);
    }
}
