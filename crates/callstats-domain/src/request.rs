//! The endpoints, what each needs, and a request parsed into valid values with its cache policy.

use std::fmt::Write as _;
use std::time::Duration;

use crate::params::{DateRange, Direction, Month, Param, QueryParams, ScriptsLimit, Shift};
use crate::scope::{KpiView, Scope};

/// Lifetime of cached call statistics.
pub const CALLS_TTL: Duration = Duration::from_secs(600);
/// Lifetime of cached portal data.
pub const PORTAL_TTL: Duration = Duration::from_secs(60);

/// The eight endpoints under `/api/v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Ping,
    CallsSummary,
    CallsAgents,
    KpiMonths,
    KpiMonth,
    Operators,
    Schedule,
    ScriptsStats,
}

impl Endpoint {
    pub const ALL: [Self; 8] = [
        Self::Ping,
        Self::CallsSummary,
        Self::CallsAgents,
        Self::KpiMonths,
        Self::KpiMonth,
        Self::Operators,
        Self::Schedule,
        Self::ScriptsStats,
    ];

    /// The scope a key must hold; `None` for /ping. /kpi/{month} needs `kpi:aggregate`, which
    /// `kpi:detail` implies.
    #[must_use]
    pub const fn required_scope(self) -> Option<Scope> {
        match self {
            Self::Ping => None,
            Self::CallsSummary | Self::CallsAgents => Some(Scope::Calls),
            Self::KpiMonths | Self::KpiMonth => Some(Scope::KpiAggregate),
            Self::Operators | Self::Schedule => Some(Scope::Operators),
            Self::ScriptsStats => Some(Scope::Scripts),
        }
    }

    /// The path under `/api/v1`, with `{month}` as the one path parameter.
    #[must_use]
    pub const fn path(self) -> &'static str {
        match self {
            Self::Ping => "/ping",
            Self::CallsSummary => "/calls/summary",
            Self::CallsAgents => "/calls/agents",
            Self::KpiMonths => "/kpi/months",
            Self::KpiMonth => "/kpi/{month}",
            Self::Operators => "/operators",
            Self::Schedule => "/schedule",
            Self::ScriptsStats => "/scripts/stats",
        }
    }
}

/// A request to a cacheable endpoint, with every parameter validated, defaulted and clamped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ApiRequest {
    CallsSummary {
        range: DateRange,
        direction: Direction,
    },
    CallsAgents {
        range: DateRange,
    },
    KpiMonths,
    KpiMonth {
        month: Month,
        shift: Option<Shift>,
        view: KpiView,
    },
    Operators,
    Schedule {
        month: Month,
    },
    ScriptsStats {
        limit: ScriptsLimit,
    },
}

impl ApiRequest {
    /// Parses the parameters of `endpoint`. `path_month` is the `{month}` segment of
    /// /kpi/{month}; `kpi_view` is the view the key's scopes allow there. Returns `None` for
    /// /ping, which takes no parameters and is never cached.
    pub fn parse(
        endpoint: Endpoint,
        query: &QueryParams<'_>,
        path_month: Option<&str>,
        kpi_view: KpiView,
    ) -> Result<Option<Self>, crate::params::ParamError> {
        let request = match endpoint {
            Endpoint::Ping => return Ok(None),
            Endpoint::CallsSummary => Self::CallsSummary {
                range: DateRange::from_query(query)?,
                direction: Direction::from_query(query)?,
            },
            Endpoint::CallsAgents => {
                let range = DateRange::from_query(query)?;
                // Accepted and validated so a shared query string works on both call endpoints,
                // but the leaderboard always counts both directions.
                Direction::from_query(query)?;
                Self::CallsAgents { range }
            }
            Endpoint::KpiMonths => Self::KpiMonths,
            Endpoint::KpiMonth => Self::KpiMonth {
                month: Month::parse(path_month.unwrap_or_default(), Param::path("month"))?,
                shift: Shift::from_query(query)?,
                view: kpi_view,
            },
            Endpoint::Operators => Self::Operators,
            Endpoint::Schedule => Self::Schedule {
                month: Month::from_query(query)?,
            },
            Endpoint::ScriptsStats => Self::ScriptsStats {
                limit: ScriptsLimit::from_query(query)?,
            },
        };
        Ok(Some(request))
    }

    #[must_use]
    pub const fn endpoint(&self) -> Endpoint {
        match self {
            Self::CallsSummary { .. } => Endpoint::CallsSummary,
            Self::CallsAgents { .. } => Endpoint::CallsAgents,
            Self::KpiMonths => Endpoint::KpiMonths,
            Self::KpiMonth { .. } => Endpoint::KpiMonth,
            Self::Operators => Endpoint::Operators,
            Self::Schedule { .. } => Endpoint::Schedule,
            Self::ScriptsStats { .. } => Endpoint::ScriptsStats,
        }
    }

    /// The cache key: the path and the parameters after defaults and clamping, in one canonical
    /// form, plus the clamp flag and the KPI granularity. Never the API key: two keys with the
    /// same view share entries, and a detail body is never served to an aggregate key.
    #[must_use]
    pub fn cache_key(&self) -> String {
        match self {
            Self::CallsSummary { range, direction } => format!(
                "v1/calls/summary?start={}&end={}&direction={}&clamped={}",
                range.start(),
                range.end(),
                direction.as_str(),
                range.clamped()
            ),
            Self::CallsAgents { range } => {
                format!(
                    "v1/calls/agents?start={}&end={}&clamped={}",
                    range.start(),
                    range.end(),
                    range.clamped()
                )
            }
            Self::KpiMonths => "v1/kpi/months".to_owned(),
            Self::KpiMonth { month, shift, view } => {
                // Percent-encoded so that no shift label can imitate another entry's key.
                let shift = shift
                    .as_ref()
                    .map(|s| format!("&shift={}", encode(s.as_str())))
                    .unwrap_or_default();
                format!("v1/kpi/{month}?granularity={}{shift}", view.as_str())
            }
            Self::Operators => "v1/operators".to_owned(),
            Self::Schedule { month } => format!("v1/schedule?month={month}"),
            Self::ScriptsStats { limit } => format!("v1/scripts/stats?limit={}", limit.get()),
        }
    }

    /// How long a cached answer stays valid: 10 minutes for call statistics, 1 minute for
    /// portal data.
    #[must_use]
    pub const fn cache_ttl(&self) -> Duration {
        match self {
            Self::CallsSummary { .. } | Self::CallsAgents { .. } => CALLS_TTL,
            _ => PORTAL_TTL,
        }
    }
}

/// Percent-encodes everything but unreserved ASCII.
fn encode(raw: &str) -> String {
    raw.bytes()
        .fold(String::with_capacity(raw.len()), |mut out, b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                let _ = write!(out, "%{b:02X}");
            }
            out
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(
        endpoint: Endpoint,
        pairs: &[(&str, &str)],
        month: Option<&str>,
    ) -> Result<Option<ApiRequest>, String> {
        let query = QueryParams::new(pairs.iter().copied());
        ApiRequest::parse(endpoint, &query, month, KpiView::Aggregate).map_err(|e| e.to_string())
    }

    fn key(endpoint: Endpoint, pairs: &[(&str, &str)], month: Option<&str>) -> String {
        parse(endpoint, pairs, month).unwrap().unwrap().cache_key()
    }

    #[test]
    fn every_endpoint_but_ping_requires_its_scope() {
        let scopes: Vec<_> = Endpoint::ALL
            .iter()
            .map(|e| e.required_scope().map(Scope::as_str))
            .collect();
        assert_eq!(
            scopes,
            [
                None,
                Some("calls"),
                Some("calls"),
                Some("kpi:aggregate"),
                Some("kpi:aggregate"),
                Some("operators"),
                Some("operators"),
                Some("scripts")
            ]
        );
    }

    #[test]
    fn cache_key_uses_parameters_after_defaults_and_ignores_unknown_ones() {
        let explicit = key(
            Endpoint::CallsSummary,
            &[
                ("start", "2026-11-01"),
                ("end", "2026-11-01"),
                ("direction", "inbound"),
            ],
            None,
        );
        let defaulted = key(
            Endpoint::CallsSummary,
            &[("utm", "x"), ("start", "2026-11-01")],
            None,
        );
        assert_eq!(explicit, defaulted);
        assert_eq!(
            explicit,
            "v1/calls/summary?start=2026-11-01&end=2026-11-01&direction=inbound&clamped=false"
        );
        assert_eq!(
            key(Endpoint::ScriptsStats, &[], None),
            key(Endpoint::ScriptsStats, &[("limit", "20")], None)
        );
    }

    #[test]
    fn cache_key_of_a_clamped_range_is_that_of_the_range_used_plus_the_flag() {
        let clamped = key(
            Endpoint::CallsAgents,
            &[("start", "2026-01-01"), ("end", "2026-11-20")],
            None,
        );
        assert_eq!(
            clamped,
            "v1/calls/agents?start=2026-10-21&end=2026-11-20&clamped=true"
        );
        let exact = key(
            Endpoint::CallsAgents,
            &[("start", "2026-10-21"), ("end", "2026-11-20")],
            None,
        );
        assert_ne!(clamped, exact);
    }

    #[test]
    fn cache_key_separates_kpi_granularities_and_encodes_shifts() {
        let query = QueryParams::new([("shift", "tun&granularity=detail")]);
        let aggregate = ApiRequest::parse(
            Endpoint::KpiMonth,
            &query,
            Some("2026-11"),
            KpiView::Aggregate,
        )
        .unwrap()
        .unwrap();
        let detail =
            ApiRequest::parse(Endpoint::KpiMonth, &query, Some("2026-11"), KpiView::Detail)
                .unwrap()
                .unwrap();
        assert_eq!(
            aggregate.cache_key(),
            "v1/kpi/2026-11?granularity=aggregate&shift=tun%26granularity%3Ddetail"
        );
        assert_ne!(aggregate.cache_key(), detail.cache_key());
    }

    #[test]
    fn calls_are_cached_ten_minutes_and_portal_data_one() {
        assert_eq!(
            parse(Endpoint::CallsAgents, &[("start", "2026-11-01")], None)
                .unwrap()
                .unwrap()
                .cache_ttl(),
            CALLS_TTL
        );
        assert_eq!(
            parse(Endpoint::Operators, &[], None)
                .unwrap()
                .unwrap()
                .cache_ttl(),
            PORTAL_TTL
        );
        assert_eq!(parse(Endpoint::Ping, &[], None).unwrap(), None);
    }

    #[test]
    fn agents_validates_direction_but_ignores_it() {
        assert!(
            parse(
                Endpoint::CallsAgents,
                &[("start", "2026-11-01"), ("direction", "sideways")],
                None
            )
            .is_err()
        );
        assert_eq!(
            key(
                Endpoint::CallsAgents,
                &[("start", "2026-11-01"), ("direction", "outbound")],
                None
            ),
            key(Endpoint::CallsAgents, &[("start", "2026-11-01")], None)
        );
    }

    #[test]
    fn kpi_month_path_is_validated() {
        assert_eq!(
            parse(Endpoint::KpiMonth, &[], Some("2026-13")).unwrap_err(),
            r#"invalid path segment 'month' "2026-13": expected a month YYYY-MM with month 01 to 12"#
        );
    }
}
