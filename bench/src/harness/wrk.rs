//! wrk, run on a URL with its settings and headers, and its report read.

use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, Result, bail};

/// What one wrk run reported.
#[derive(Debug, Clone, Copy, Default)]
pub struct Report {
    pub requests: u64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub non_2xx: u64,
}

/// Starts wrk with `settings` (threads, connections, duration, `--latency`...) and each of
/// `headers` (`Name: value`) on `url`; [`finish`] reads its report.
pub fn start(settings: &[&str], headers: &[&str], url: &str) -> Result<Child> {
    Command::new("wrk")
        .args(settings)
        .args(headers.iter().flat_map(|header| ["-H", header]))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("could not run wrk")
}

/// Waits for a wrk [`start`]ed: its report.
pub fn finish(wrk: Child) -> Result<Report> {
    let output = wrk.wait_with_output().context("wrk did not finish")?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "wrk failed with {}: {text}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    parse(&text).with_context(|| format!("unexpected wrk output:\n{text}"))
}

/// [`start`], then [`finish`].
pub fn run(settings: &[&str], headers: &[&str], url: &str) -> Result<Report> {
    finish(start(settings, headers, url)?)
}

/// Reads a report (latencies need `--latency`); `None` if it has no request count.
pub fn parse(text: &str) -> Option<Report> {
    let mut report = Report::default();
    for line in text.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("50%"), Some(latency), _) => report.p50_ms = milliseconds(latency)?,
            (Some("99%"), Some(latency), _) => report.p99_ms = milliseconds(latency)?,
            (Some("Requests/sec:"), Some(rate), _) => report.per_second = rate.parse().ok()?,
            (Some(count), Some("requests"), Some("in")) => {
                report.requests = count.parse().ok()?;
            }
            (Some("Non-2xx"), _, _) => {
                report.non_2xx = line.rsplit(' ').next()?.parse().ok()?;
            }
            _ => {}
        }
    }
    (report.requests > 0).then_some(report)
}

/// A latency for a report: microseconds below a millisecond, else milliseconds.
pub fn latency(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0}µs", ms * 1000.0)
    } else {
        format!("{ms:.2}ms")
    }
}

/// wrk's `1.23ms`, `850.00us` or `1.02s` in milliseconds.
fn milliseconds(text: &str) -> Option<f64> {
    let (number, factor) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return None;
    };
    number.parse::<f64>().ok().map(|n| n * factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_gives_requests_rate_latencies_and_failures() {
        let text = "Running 10s test @ http://127.0.0.1:1/x
  1 threads and 16 connections
  Latency Distribution
     50%  400.00us
     75%  800.00us
     99%    2.50ms
  81234 requests in 10.00s, 40.00MB read
  Non-2xx or 3xx responses: 3
Requests/sec:   8123.40
Transfer/sec:      4.00MB
";
        let report = parse(text).unwrap();
        assert_eq!(report.requests, 81234);
        assert!((report.per_second - 8123.4).abs() < 1e-9);
        assert!((report.p50_ms - 0.4).abs() < 1e-9);
        assert!((report.p99_ms - 2.5).abs() < 1e-9);
        assert_eq!(report.non_2xx, 3);
        assert!(parse("Requests/sec: 1.0").is_none());
    }

    #[test]
    fn latencies_read_in_every_unit_and_print_in_the_nearest() {
        assert!((milliseconds("850.00us").unwrap() - 0.85).abs() < 1e-9);
        assert!((milliseconds("1.50s").unwrap() - 1500.0).abs() < 1e-9);
        assert_eq!(milliseconds("fast"), None);
        assert_eq!(latency(0.271), "271µs");
        assert_eq!(latency(2.771), "2.77ms");
    }
}
