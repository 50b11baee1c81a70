//! Domain errors as HTTP answers: one status per variant and a JSON body that tells the partner
//! what to fix. Internal causes never reach the body.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use callstats_domain::DomainError;
use callstats_domain::scope::Scope;
use serde::Serialize;

use crate::pipeline::json;

/// Every error body: `{"error": "..."}`, plus `required_scope` on a 403 for a missing scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong and, where it applies, what to send instead.
    pub error: String,
    /// The scope the endpoint needs; only on a 403 for a missing scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub required_scope: Option<Scope>,
}

impl ErrorBody {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            error: message.into(),
            required_scope: None,
        }
    }
}

/// The status a domain error answers with.
pub(crate) fn status_of(err: &DomainError) -> StatusCode {
    match err {
        DomainError::BadRequest(_) => StatusCode::BAD_REQUEST,
        DomainError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        DomainError::OriginNotAllowed | DomainError::MissingScope(_) => StatusCode::FORBIDDEN,
        DomainError::NotFound(_) => StatusCode::NOT_FOUND,
        DomainError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
        DomainError::UpstreamUnavailable(_) | DomainError::StoreUnavailable(_) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        DomainError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The response for a domain error; a 429 also says when to retry.
pub(crate) fn error_response(err: &DomainError) -> HttpResponse {
    let body = ErrorBody {
        error: err.to_string(),
        required_scope: match err {
            DomainError::MissingScope(scope) => Some(*scope),
            _ => None,
        },
    };
    let mut response = json(status_of(err), &body);
    if matches!(err, DomainError::RateLimited(_)) {
        response.headers_mut().insert(
            actix_web::http::header::RETRY_AFTER,
            actix_web::http::header::HeaderValue::from_static("60"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use callstats_domain::access::Unauthorized;

    use super::*;

    #[test]
    fn scope_403_names_the_required_scope_and_others_do_not() {
        let body = |err: DomainError| {
            serde_json::to_value(ErrorBody {
                error: err.to_string(),
                required_scope: if let DomainError::MissingScope(s) = err {
                    Some(s)
                } else {
                    None
                },
            })
            .unwrap()
        };
        assert_eq!(
            body(DomainError::MissingScope(Scope::KpiAggregate)),
            serde_json::json!({
                "error": "this endpoint needs the 'kpi:aggregate' scope, which the API key does not hold",
                "required_scope": "kpi:aggregate"
            })
        );
        assert_eq!(
            body(DomainError::OriginNotAllowed),
            serde_json::json!({"error": "origin not allowed"})
        );
    }

    #[test]
    fn each_domain_error_has_its_status() {
        assert_eq!(
            status_of(&DomainError::Unauthorized(Unauthorized::Missing)),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status_of(&DomainError::NotFound("x".into())),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status_of(&DomainError::StoreUnavailable(
                callstats_domain::ports::StoreError::new("down")
            )),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            status_of(&DomainError::UpstreamUnavailable(
                callstats_domain::ports::UpstreamError::new("down")
            )),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
