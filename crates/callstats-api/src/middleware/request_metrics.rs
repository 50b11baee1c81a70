//! The request counter and duration histogram, their handles resolved once per route and
//! status on each worker thread. Resolving them costs the route's pattern (a `String` that
//! actix builds from its resource map), two label sets built, hashed and looked up in the
//! recorder's registry; a kept handle is found by the route's name, which actix hands out
//! without building anything. Measured with `cargo xtask instructions` (cached `/operators`,
//! release demo, callgrind): the request metrics cost 2,828 instructions a request resolved per
//! request (65,251 with a metrics listener against 62,423 without), 1,116 kept (58,941 against
//! 57,825), most of which were the cache lookup counters, then still resolved per request; with
//! those kept too, the difference is within the 1 % a demo varies (54,041 against 54,449).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix_web::HttpRequest;
use actix_web::http::StatusCode;
use metrics::{Counter, Histogram, SharedString};

/// Set once the process-wide recorder is installed ([`crate::ops::install_metrics`], the only
/// place that installs one): a handle resolved before that would be a no-op for ever, so until
/// then nothing is resolved or kept.
static RECORDER_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Marks the recorder installed: from now on handles are kept.
pub(crate) fn recorder_installed() {
    RECORDER_INSTALLED.store(true, Ordering::Release);
}

/// The most handles a thread keeps: the app's routes times the statuses they answer with
/// stay far below it; past it, handles are resolved per request as before.
const MOST_KEPT: usize = 128;

/// The handles of one route and status.
struct Kept {
    /// Where the route's name lives in this thread's resource map (its address, so that two
    /// scopes' resources of one name stay apart), and the name, so that a map built anew in
    /// the same memory is not taken for the old one.
    name_at: usize,
    name: String,
    status: StatusCode,
    requests: Counter,
    duration: Histogram,
}

thread_local! {
    /// Per worker thread, each with its own resource map: no lock is taken.
    static KEPT: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// Counts `request`, answered with `status` after `elapsed`, under its route's pattern.
pub(super) fn record(request: &HttpRequest, status: StatusCode, elapsed: Duration) {
    // Without the recorder (`callstats demo`, tests that read no metrics) every handle is a
    // no-op: building the labels would be work for nothing, about 1,500 instructions a
    // request (callgrind, cached /operators of the release demo).
    if !RECORDER_INSTALLED.load(Ordering::Acquire) {
        return;
    }
    let seconds = elapsed.as_secs_f64();
    let Some(name) = request.match_name() else {
        let (requests, duration) = resolve(request, status);
        requests.increment(1);
        duration.record(seconds);
        return;
    };
    let name_at = name.as_ptr().addr();
    KEPT.with_borrow_mut(|kept| {
        let found = kept
            .iter()
            .find(|k| k.name_at == name_at && k.status == status && k.name == name);
        if let Some(handles) = found {
            handles.requests.increment(1);
            handles.duration.record(seconds);
            return;
        }
        let (requests, duration) = resolve(request, status);
        requests.increment(1);
        duration.record(seconds);
        if kept.len() < MOST_KEPT {
            kept.push(Kept {
                name_at,
                name: name.to_owned(),
                status,
                requests,
                duration,
            });
        }
    });
}

/// The counter and histogram of `request`'s route (its pattern, whatever the method, from
/// actix's own resource map; `unmatched` when no route matched) and `status`, from the recorder.
fn resolve(request: &HttpRequest, status: StatusCode) -> (Counter, Histogram) {
    let route = request
        .match_pattern()
        .map_or(SharedString::const_str("unmatched"), Into::into);
    (
        metrics::counter!("callstats_http_requests_total", "route" => route.clone(), "status" => status.as_str().to_owned()),
        metrics::histogram!("callstats_http_request_duration_seconds", "route" => route),
    )
}
