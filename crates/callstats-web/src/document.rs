//! Where the OpenAPI document is served and how a request for it (or for a problem type it
//! names) is admitted: with no key, against the client's per-IP quota. Its route answers it;
//! the request observer counts an oversized request for it the same way.

use actix_web::HttpRequest;
use callstats_domain::DomainError;
use callstats_domain::access::QuotaStatus;

use crate::ApiState;
use crate::caller::client_ip;
use crate::error::ApiError;
use crate::problem::PROBLEMS;

/// Where the document is served, under [`PREFIX`](crate::PREFIX).
pub(crate) const DOCUMENT: &str = "/openapi.json";

/// Whether `api_path` (under the prefix) is served without a key: the document and the
/// problem types its errors name.
pub(crate) fn keyless(api_path: &str) -> bool {
    api_path == DOCUMENT
        || api_path
            .strip_prefix(PROBLEMS)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Counts a request for the document, which needs no key, against the client's per-IP quota;
/// over it, 429.
pub(crate) async fn count_document_request(
    state: &ApiState,
    req: &HttpRequest,
) -> Result<QuotaStatus, ApiError> {
    let quota = state
        .use_cases
        .count_anonymous(client_ip(req, state.trust_proxy))
        .await;
    if quota.exceeded {
        return Err(ApiError::counted(DomainError::RateLimited(quota), quota));
    }
    Ok(quota)
}
