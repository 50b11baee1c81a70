//! The shipped Prometheus rules (deploy/prometheus) read metrics the service writes: a metric
//! renamed in the code, or misspelt in a rule, fails here. (`promtool check rules` and
//! `promtool test rules` in CI check the rules themselves.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every metric name `callstats_…` in `text`; the rules' own recorded series
/// (`level:metric:operation`, a colon either side) aside.
fn names(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("callstats_") {
        let tail = &text[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let recorded = text[..at].ends_with(':') || tail[end..].starts_with(':');
        let inside_a_name = text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !recorded && !inside_a_name {
            found.insert(tail[..end].to_owned());
        }
    }
    found
}

/// The metric names the code writes: string literals of `metrics::counter!`, `gauge!` and
/// `histogram!` under crates/*/src.
fn written() -> BTreeSet<String> {
    let mut written = BTreeSet::new();
    let mut dirs = vec![workspace().join("crates")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && path.components().any(|part| part.as_os_str() == "src")
            {
                let source = std::fs::read_to_string(&path).unwrap();
                for macro_name in ["counter!(", "gauge!(", "histogram!("] {
                    for (at, _) in source.match_indices(macro_name) {
                        let call = &source[at + macro_name.len()..];
                        let call = call.trim_start().strip_prefix('"').unwrap_or_default();
                        if let Some(end) = call.find('"') {
                            written.insert(call[..end].to_owned());
                        }
                    }
                }
            }
        }
    }
    written
}

#[test]
fn every_metric_the_rules_read_is_one_the_service_writes() {
    let written = written();
    assert!(
        written.contains("callstats_http_requests_total"),
        "{written:?}"
    );
    let dir = workspace().join("deploy/prometheus");
    let mut read = BTreeSet::new();
    for file in ["recording.yml", "alerts.yml"] {
        read.extend(names(&std::fs::read_to_string(dir.join(file)).unwrap()));
    }
    let unknown: Vec<&String> = read
        .iter()
        .filter(|name| {
            // Recorded series (`callstats:…`) are the rules' own; histograms are written as
            // their `_bucket`, `_count` and `_sum` series.
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name);
            !written.contains(base) && !written.contains(name.as_str())
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "read by the rules, written by nobody: {unknown:?}"
    );
    assert!(read.len() >= 10, "{read:?}");
}
