//! The request counter and duration histogram, their handles resolved once per route and
//! status: building and hashing the labels for the recorder on every request cost about 2,000
//! instructions of a cached answer (`cargo xtask instructions`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix_web::http::StatusCode;
use metrics::{Counter, Histogram, SharedString};

/// Set once the process-wide recorder is installed ([`crate::ops::install_metrics`]): a handle
/// resolved before that would be a no-op for ever, so until then nothing is kept.
static RECORDER_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Marks the recorder installed: from now on handles are kept.
pub(crate) fn recorder_installed() {
    RECORDER_INSTALLED.store(true, Ordering::Release);
}

/// The handles of one route: its duration histogram and a counter per status seen.
struct RouteHandles {
    duration: Histogram,
    by_status: Vec<(StatusCode, Counter)>,
}

thread_local! {
    /// Per worker thread, so that no lock is taken: as many entries as routes (the app's
    /// patterns and `unmatched`), each with as many counters as statuses seen.
    static HANDLES: RefCell<HashMap<String, RouteHandles>> = RefCell::new(HashMap::new());
}

/// Counts a request of `route` (its pattern, `None` when no route matched) answered with
/// `status` after `elapsed`.
pub(super) fn record(route: Option<&str>, status: StatusCode, elapsed: Duration) {
    let seconds = elapsed.as_secs_f64();
    if !RECORDER_INSTALLED.load(Ordering::Acquire) {
        let (counter, histogram) = resolve(route, status);
        counter.increment(1);
        histogram.record(seconds);
        return;
    }
    HANDLES.with_borrow_mut(|handles| {
        let name = route.unwrap_or(UNMATCHED);
        let entry = match handles.get_mut(name) {
            Some(entry) => entry,
            None => handles
                .entry(name.to_owned())
                .or_insert_with(|| RouteHandles {
                    duration: resolve(route, status).1,
                    by_status: Vec::new(),
                }),
        };
        entry.duration.record(seconds);
        if let Some((_, counter)) = entry.by_status.iter().find(|(seen, _)| *seen == status) {
            counter.increment(1);
        } else {
            let counter = resolve(route, status).0;
            counter.increment(1);
            entry.by_status.push((status, counter));
        }
    });
}

/// The label of requests no route matched.
const UNMATCHED: &str = "unmatched";

/// The counter and histogram of `route` and `status`, from the recorder.
fn resolve(route: Option<&str>, status: StatusCode) -> (Counter, Histogram) {
    let route = route.map_or(SharedString::const_str(UNMATCHED), |route| {
        SharedString::from(route.to_owned())
    });
    (
        metrics::counter!("callstats_http_requests_total", "route" => route.clone(), "status" => status.as_str().to_owned()),
        metrics::histogram!("callstats_http_request_duration_seconds", "route" => route),
    )
}
