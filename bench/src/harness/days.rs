//! The days a benchmark asks, dated with the domain's calendar (`Day::of`: today in Tashkent) as
//! the service dates them, and the paths that ask them.

use callstats_domain::calendar::Day;

/// Today in Tashkent.
pub fn today() -> Day {
    Day::of(time::OffsetDateTime::now_utc())
}

/// The day `days` after `day` (before it when negative); `day` itself past the calendar's ends,
/// which the measured days, near today, never reach.
pub fn plus(day: Day, days: i64) -> Day {
    day.plus_days(days).unwrap_or(day)
}

pub fn summary_path((start, end): (Day, Day), more: &str) -> String {
    format!("/api/v1/calls/summary?start={start}&end={end}{more}")
}

pub fn agents_path((start, end): (Day, Day)) -> String {
    format!("/api/v1/calls/agents?start={start}&end={end}")
}

pub fn intervals_path((start, end): (Day, Day), minutes: u8) -> String {
    format!("/api/v1/calls/intervals?start={start}&end={end}&interval={minutes}")
}

/// `start..end`, as a row names its days.
pub fn span((start, end): (Day, Day)) -> String {
    format!("{start}..{end}")
}

/// Every sub-range of the days from `first` to `last`, shortest first: each one a computed
/// answer, never one read from the response cache.
pub fn sub_ranges(first: Day, last: Day) -> Vec<(Day, Day)> {
    let days: Vec<Day> = (0..=last.number() - first.number())
        .filter_map(|offset| first.plus_days(offset))
        .collect();
    let mut ranges = Vec::new();
    for length in 1..=days.len() {
        for window in days.windows(length) {
            if let (Some(start), Some(end)) = (window.first(), window.last()) {
                ranges.push((*start, *end));
            }
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sub_range_is_listed_once_shortest_first() {
        let day = |raw: &str| Day::parse(raw).unwrap();
        let ranges: Vec<String> = sub_ranges(day("2026-11-01"), day("2026-11-03"))
            .into_iter()
            .map(span)
            .collect();
        assert_eq!(
            ranges,
            [
                "2026-11-01..2026-11-01",
                "2026-11-02..2026-11-02",
                "2026-11-03..2026-11-03",
                "2026-11-01..2026-11-02",
                "2026-11-02..2026-11-03",
                "2026-11-01..2026-11-03",
            ]
        );
        assert_eq!(
            sub_ranges(day("2026-11-01"), day("2026-11-14")).len(),
            14 * 15 / 2
        );
    }
}
