//! A server's figures as it counts them itself (its Prometheus metrics): the upstream requests a
//! step caused, the warmer's warm-up, and what one GET, or many at once, cost.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use ureq::http::HeaderMap;
use xtask::process::{agent, get, get_with};
use xtask::serve::Server;

/// The counter the call platform client increments for every page it asks for.
pub const UPSTREAM_COUNTER: &str = "callstats_upstream_requests_total";
/// The counter of the days fetched from the platform, by outcome.
pub const DAYS_FETCHED_COUNTER: &str = "callstats_call_days_fetched_total";
/// The gauge the warmer sets once its first complete pass is over.
const WARM_UP_GAUGE: &str = "callstats_call_day_warmup_seconds";

/// What one measured step cost: its wall time and the upstream requests it caused, and how it
/// was answered (200, or the first other status of its requests).
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    pub time: Duration,
    pub upstream: u64,
    pub status: u16,
}

/// What a benchmark measures on a running `callstats serve`.
pub trait Measure {
    /// The serve process's upstream requests so far, every outcome counted.
    fn upstream_requests(&self) -> Result<u64>;

    /// The days it fetched from the platform so far.
    fn days_fetched(&self) -> Result<u64>;

    /// Waits until the warmer has held its days once (its `callstats_call_day_warmup_seconds`
    /// gauge is set): how long it took, as the server measured it, and the upstream requests
    /// it made.
    fn wait_for_warm_up(&self, limit: Duration) -> Result<Cost>;

    /// One GET, timed, the upstream requests it caused and its status.
    fn measure(&self, path: &str, key: &str) -> Result<Cost> {
        self.measure_as(path, key, None).map(|(cost, _)| cost)
    }

    /// [`Measure::measure`] with `accept` as the request's `Accept` (none when `None`), and the
    /// body's bytes.
    fn measure_as(&self, path: &str, key: &str, accept: Option<&str>) -> Result<(Cost, usize)> {
        let headers: &[(&str, &str)] = match accept {
            Some(accept) => &[("Accept", accept)],
            None => &[],
        };
        let (cost, _, body) = self.measure_answer(path, key, headers)?;
        Ok((cost, body.len()))
    }

    /// [`Measure::measure`] with more request `headers` (name, value): the answer's headers and
    /// body too.
    fn measure_answer(
        &self,
        path: &str,
        key: &str,
        headers: &[(&str, &str)],
    ) -> Result<(Cost, HeaderMap, Vec<u8>)>;

    /// One GET per path, each from its own thread, all at once: the time until every one
    /// answered and the upstream requests of all of them, then the slowest single request.
    fn measure_together(&self, paths: &[String], key: &str) -> Result<(Cost, Duration)>;
}

impl Measure for Server {
    fn upstream_requests(&self) -> Result<u64> {
        counter(&self.metrics()?, UPSTREAM_COUNTER, "")
    }

    fn days_fetched(&self) -> Result<u64> {
        counter(&self.metrics()?, DAYS_FETCHED_COUNTER, "outcome=\"ok\"")
    }

    fn wait_for_warm_up(&self, limit: Duration) -> Result<Cost> {
        let deadline = Instant::now() + limit;
        loop {
            let metrics = self.metrics()?;
            if let Some(took) = gauge(&metrics, WARM_UP_GAUGE) {
                return Ok(Cost {
                    time: Duration::try_from_secs_f64(took).unwrap_or_default(),
                    upstream: counter(&metrics, UPSTREAM_COUNTER, "")?,
                    status: 200,
                });
            }
            if Instant::now() > deadline {
                bail!("the warm-up did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn measure_answer(
        &self,
        path: &str,
        key: &str,
        headers: &[(&str, &str)],
    ) -> Result<(Cost, HeaderMap, Vec<u8>)> {
        static AGENT: LazyLock<ureq::Agent> = LazyLock::new(agent);
        let authority = format!("127.0.0.1:{}", self.port);
        let (cost, (answer_headers, body)) = costed(self, || {
            let (status, answer_headers, body) = get_with(&AGENT, &authority, path, key, headers)?;
            Ok((status, (answer_headers, body)))
        })?;
        Ok((cost, answer_headers, body))
    }

    fn measure_together(&self, paths: &[String], key: &str) -> Result<(Cost, Duration)> {
        let port = self.port;
        costed(self, || {
            std::thread::scope(|scope| {
                let requests: Vec<_> = paths
                    .iter()
                    .map(|path| {
                        scope.spawn(move || -> Result<(Duration, u16)> {
                            let started = Instant::now();
                            let (status, _) = get(port, path, key)?;
                            Ok((started.elapsed(), status))
                        })
                    })
                    .collect();
                let (mut slowest, mut first_failure) = (Duration::ZERO, None);
                for request in requests {
                    let (time, status) = request
                        .join()
                        .map_err(|_| anyhow!("a request thread panicked"))??;
                    slowest = slowest.max(time);
                    if status != 200 {
                        first_failure.get_or_insert(status);
                    }
                }
                Ok((first_failure.unwrap_or(200), slowest))
            })
        })
    }
}

/// What `work` (its requests' status, and what else it gives) cost on `server`: its wall time
/// and the upstream requests the server made meanwhile.
fn costed<T>(server: &Server, work: impl FnOnce() -> Result<(u16, T)>) -> Result<(Cost, T)> {
    let before = server.upstream_requests()?;
    let started = Instant::now();
    let (status, given) = work()?;
    let time = started.elapsed();
    let upstream = server.upstream_requests()?.saturating_sub(before);
    Ok((
        Cost {
            time,
            upstream,
            status,
        },
        given,
    ))
}

/// The value of the gauge `name` (without labels), if it is set.
pub fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// The sum of every sample of the counter `name` in a Prometheus text exposition whose labels
/// contain `label` (`outcome="throttled"`; empty: every label set); 0 before the counter is
/// first rendered.
pub fn counter(metrics: &str, name: &str, label: &str) -> Result<u64> {
    let mut total = 0_u64;
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        // The labels end at the last brace (a label value may hold spaces); a longer name
        // that merely starts with the counter's is another metric.
        let (labels, value) = if rest.starts_with('{') {
            match rest.rsplit_once('}') {
                Some((labels, value)) => (labels, value),
                None => continue,
            }
        } else if rest.starts_with(' ') {
            ("", rest)
        } else {
            continue;
        };
        if !labels.contains(label) {
            continue;
        }
        let Some(value) = value.split_whitespace().next() else {
            continue;
        };
        let count: u64 = value
            .parse()
            .with_context(|| format!("unexpected metrics line {line:?}"))?;
        total = total.saturating_add(count);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_is_summed_over_the_label_sets_asked_for_and_nothing_else() {
        let text = "# HELP callstats_upstream_requests_total pages asked for
# TYPE callstats_upstream_requests_total counter
callstats_upstream_requests_total{outcome=\"ok\"} 131
callstats_upstream_requests_total{outcome=\"transient_error\"} 2
callstats_upstream_requests_total{outcome=\"odd } label\"} 1
callstats_upstream_requests_totally 1000
callstats_http_requests_total{route=\"/api/v1/calls/summary\"} 7
callstats_upstream_requests_total 10
";
        assert_eq!(counter(text, UPSTREAM_COUNTER, "").unwrap(), 144);
        assert_eq!(
            counter(text, UPSTREAM_COUNTER, "outcome=\"ok\"").unwrap(),
            131
        );
        assert_eq!(counter(text, UPSTREAM_COUNTER, "nothing").unwrap(), 0);
        assert_eq!(counter("", UPSTREAM_COUNTER, "").unwrap(), 0);
        assert!(
            counter(
                "callstats_upstream_requests_total{a=\"b\"} x",
                UPSTREAM_COUNTER,
                ""
            )
            .is_err()
        );
    }

    #[test]
    fn a_gauge_is_read_only_when_set_and_without_labels() {
        let text =
            "callstats_call_day_warmup_seconds_count 3\ncallstats_call_day_warmup_seconds 2.5\n";
        assert_eq!(gauge(text, WARM_UP_GAUGE), Some(2.5));
        assert_eq!(gauge("", WARM_UP_GAUGE), None);
    }
}
