//! The markdown table most benchmarks print their figures in (a row's time, the upstream
//! requests it caused, its target), and how a figure is written.

use std::time::Duration;

pub use xtask::serve::seconds;

use super::metrics::Cost;

/// One line of the table.
pub struct Row {
    pub name: String,
    pub time: Duration,
    /// How it was answered: 200, or the first other status.
    pub status: u16,
    /// `None` where the requests are counted on another row.
    pub upstream: Option<u64>,
    pub target: &'static str,
}

impl Row {
    pub fn new(name: impl Into<String>, cost: Cost, target: &'static str) -> Self {
        Self {
            name: name.into(),
            time: cost.time,
            status: cost.status,
            upstream: Some(cost.upstream),
            target,
        }
    }
}

pub fn table(rows: &[Row]) -> String {
    let mut table = "| row | time | upstream requests | target |\n|---|---:|---:|---|\n".to_owned();
    for row in rows {
        let upstream = row
            .upstream
            .map_or_else(|| "-".to_owned(), |count| count.to_string());
        let answered = match row.status {
            200 => String::new(),
            status => format!(", answered {status}"),
        };
        table += &format!(
            "| {} | {}{answered} | {upstream} | {} |\n",
            row.name,
            seconds(row.time),
            row.target
        );
    }
    table
}

pub fn mebibytes(kib: u64) -> String {
    u32::try_from(kib).map_or_else(
        |_| format!("{kib} KiB"),
        |kib| format!("{:.1} MiB", f64::from(kib) / 1024.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_says_its_status_only_when_it_is_not_200() {
        let cost = |status| Cost {
            time: Duration::from_millis(1_500),
            upstream: 3,
            status,
        };
        let mut counted_elsewhere = Row::new("b", cost(503), "-");
        counted_elsewhere.upstream = None;
        assert_eq!(
            table(&[Row::new("a", cost(200), "≤ 3.0 s"), counted_elsewhere]),
            "| row | time | upstream requests | target |\n|---|---:|---:|---|\n\
             | a | 1.50 s | 3 | ≤ 3.0 s |\n| b | 1.50 s, answered 503 | - | - |\n"
        );
        assert_eq!(mebibytes(48128), "47.0 MiB");
    }
}
