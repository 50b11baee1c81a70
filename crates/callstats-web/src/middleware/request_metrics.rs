//! The request counter and duration histogram, labelled with the route's pattern (actix's own
//! resource map: `unmatched` when no route took the request) and the status.

use std::time::Duration;

use actix_web::HttpRequest;
use actix_web::http::StatusCode;
use metrics::SharedString;

/// Counts `request`, answered with `status` after `elapsed`, under its route's pattern.
pub(super) fn record(request: &HttpRequest, status: StatusCode, elapsed: Duration) {
    // Without a recorder (`callstats demo`, tests that read no metrics) nothing is counted, so
    // the labels are not built.
    if !crate::ops::recorder_installed() {
        return;
    }
    let route = request
        .match_pattern()
        .map_or(SharedString::const_str("unmatched"), Into::into);
    metrics::counter!("callstats_http_requests_total", "route" => route.clone(), "status" => status.as_str().to_owned())
        .increment(1);
    metrics::histogram!("callstats_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
}
