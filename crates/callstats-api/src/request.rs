//! A request as the web layer reads it: each endpoint's query (and path), not validated yet.

use callstats_domain::limits::EarliestDay;
use callstats_domain::params::ParamError;
use callstats_domain::request::{ApiRequest, Endpoint};
use callstats_domain::scope::KpiView;

use crate::agents::AgentsQuery;
use crate::intervals::IntervalsQuery;
use crate::kpi::{KpiQuery, MonthPath};
use crate::portal::{ScheduleQuery, ScriptsQuery};
use crate::queues::QueuesQuery;
use crate::summary::SummaryQuery;
use crate::trend::TrendQuery;

/// A request to one of the endpoints, with its parameters as the request gave them. They are
/// validated only once the caller is admitted: a bad parameter is a 400 only for a caller
/// allowed to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnvalidatedRequest {
    Ping,
    CallsSummary(SummaryQuery),
    CallsAgents(AgentsQuery),
    CallsQueues(QueuesQuery),
    CallsIntervals(IntervalsQuery),
    CallsTrend(TrendQuery),
    CallsLive,
    KpiMonths,
    KpiMonth(MonthPath, KpiQuery),
    Operators,
    Schedule(ScheduleQuery),
    ScriptsStats(ScriptsQuery),
}

impl UnvalidatedRequest {
    #[must_use]
    pub const fn endpoint(&self) -> Endpoint {
        match self {
            Self::Ping => Endpoint::Ping,
            Self::CallsSummary(_) => Endpoint::CallsSummary,
            Self::CallsAgents(_) => Endpoint::CallsAgents,
            Self::CallsQueues(_) => Endpoint::CallsQueues,
            Self::CallsIntervals(_) => Endpoint::CallsIntervals,
            Self::CallsTrend(_) => Endpoint::CallsTrend,
            Self::CallsLive => Endpoint::CallsLive,
            Self::KpiMonths => Endpoint::KpiMonths,
            Self::KpiMonth(..) => Endpoint::KpiMonth,
            Self::Operators => Endpoint::Operators,
            Self::Schedule(_) => Endpoint::Schedule,
            Self::ScriptsStats(_) => Endpoint::ScriptsStats,
        }
    }

    /// The request these parameters make: validated, defaulted and clamped, the path before
    /// the query. `kpi_view` is the view the key's scopes allow on /kpi/{month}; a call period
    /// may not start before `earliest` (the history horizon, `None` without one). `None` for
    /// /ping, which takes no parameters and is never cached.
    pub fn validate(
        &self,
        kpi_view: KpiView,
        earliest: Option<EarliestDay>,
    ) -> Result<Option<ApiRequest>, ParamError> {
        self.validate_with(kpi_view, || earliest)
    }

    /// [`UnvalidatedRequest::validate`], with the earliest day worked out only for a request
    /// with a call period: the other endpoints have no use for that calendar conversion, so
    /// they do not pay for it.
    pub fn validate_with(
        &self,
        kpi_view: KpiView,
        earliest: impl FnOnce() -> Option<EarliestDay>,
    ) -> Result<Option<ApiRequest>, ParamError> {
        let request = match self {
            Self::Ping => return Ok(None),
            Self::CallsSummary(query) => query.parse(earliest())?,
            Self::CallsAgents(query) => query.parse(earliest())?,
            Self::CallsQueues(query) => query.parse(earliest())?,
            Self::CallsIntervals(query) => query.parse(earliest())?,
            Self::CallsTrend(query) => query.parse(earliest())?,
            Self::KpiMonths => ApiRequest::KpiMonths,
            Self::KpiMonth(path, query) => ApiRequest::KpiMonth {
                month: path.parse()?,
                shift: query.parse()?,
                view: kpi_view,
            },
            Self::CallsLive => ApiRequest::CallsLive,
            Self::Operators => ApiRequest::Operators,
            Self::Schedule(query) => ApiRequest::Schedule {
                month: query.parse()?,
            },
            Self::ScriptsStats(query) => ApiRequest::ScriptsStats {
                limit: query.parse()?,
            },
        };
        Ok(Some(request))
    }

    /// The request to `endpoint` with the query string `query` and, for /kpi/{month}, the
    /// path segment `path_month`, deserialised as the web layer's extractors do.
    pub fn from_query(
        endpoint: Endpoint,
        query: &str,
        path_month: &str,
    ) -> Result<Self, serde_html_form::de::Error> {
        Ok(match endpoint {
            Endpoint::Ping => Self::Ping,
            Endpoint::CallsSummary => Self::CallsSummary(serde_html_form::from_str(query)?),
            Endpoint::CallsAgents => Self::CallsAgents(serde_html_form::from_str(query)?),
            Endpoint::CallsQueues => Self::CallsQueues(serde_html_form::from_str(query)?),
            Endpoint::CallsIntervals => Self::CallsIntervals(serde_html_form::from_str(query)?),
            Endpoint::CallsTrend => Self::CallsTrend(serde_html_form::from_str(query)?),
            Endpoint::CallsLive => Self::CallsLive,
            Endpoint::KpiMonths => Self::KpiMonths,
            Endpoint::KpiMonth => Self::KpiMonth(
                MonthPath {
                    month: path_month.to_owned(),
                },
                serde_html_form::from_str(query)?,
            ),
            Endpoint::Operators => Self::Operators,
            Endpoint::Schedule => Self::Schedule(serde_html_form::from_str(query)?),
            Endpoint::ScriptsStats => Self::ScriptsStats(serde_html_form::from_str(query)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use callstats_domain::calendar::{DateRange, Day};
    use callstats_domain::params::Compare;
    use callstats_domain::request::{CALLS_TTL, PORTAL_TTL};
    use callstats_domain::scope::Scope;
    use proptest::prelude::*;

    use super::*;

    fn parse(endpoint: Endpoint, query: &str, month: &str) -> Result<Option<ApiRequest>, String> {
        UnvalidatedRequest::from_query(endpoint, query, month)
            .unwrap()
            .validate(KpiView::Aggregate, None)
            .map_err(|e| e.to_string())
    }

    fn key(endpoint: Endpoint, query: &str) -> String {
        parse(endpoint, query, "")
            .unwrap()
            .unwrap()
            .cache_key()
            .into_owned()
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
                Some("calls"),
                Some("calls"),
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
            "start=2026-11-01&end=2026-11-01&direction=inbound",
        );
        let defaulted = key(Endpoint::CallsSummary, "utm=x&start=2026-11-01");
        assert_eq!(explicit, defaulted);
        assert_eq!(
            explicit,
            "v1/calls/summary?start=2026-11-01&end=2026-11-01&direction=inbound&sl_threshold=20&clamped=false"
        );
        assert_eq!(
            explicit,
            key(Endpoint::CallsSummary, "start=2026-11-01&sl_threshold=20")
        );
        assert_eq!(
            key(Endpoint::ScriptsStats, ""),
            key(Endpoint::ScriptsStats, "limit=20")
        );
    }

    #[test]
    fn short_abandon_is_whole_seconds_from_0_to_600_and_in_the_key_only_when_above_0() {
        for endpoint in [
            Endpoint::CallsSummary,
            Endpoint::CallsQueues,
            Endpoint::CallsIntervals,
        ] {
            for bad in ["601", "-1", "+5", "2.5", "5s", " 5", "", "99999999999"] {
                let error = parse(
                    endpoint,
                    &format!("start=2026-11-01&short_abandon={bad}"),
                    "",
                )
                .unwrap_err();
                assert!(error.contains("'short_abandon'"), "{bad}: {error}");
            }
            assert_eq!(
                key(endpoint, "start=2026-11-01&short_abandon=0"),
                key(endpoint, "start=2026-11-01")
            );
            assert!(
                key(endpoint, "start=2026-11-01&short_abandon=600")
                    .contains("&sl_threshold=20&short_abandon=600&")
            );
        }
        // Unknown to /calls/agents: ignored, as every unknown parameter.
        assert_eq!(
            key(Endpoint::CallsAgents, "start=2026-11-01&short_abandon=x"),
            key(Endpoint::CallsAgents, "start=2026-11-01")
        );
    }

    #[test]
    fn team_and_shift_are_part_of_the_agents_cache_key_encoded_and_never_empty() {
        assert_eq!(
            key(
                Endpoint::CallsAgents,
                "shift=night&start=2026-11-01&team=A%26clamped%3Dtrue"
            ),
            "v1/calls/agents?start=2026-11-01&end=2026-11-01&team=A%26clamped%3Dtrue&shift=night&clamped=false"
        );
        for (query, name) in [("team=", "team"), ("shift=", "shift")] {
            let error = parse(
                Endpoint::CallsAgents,
                &format!("start=2026-11-01&{query}"),
                "",
            )
            .unwrap_err();
            assert!(error.contains(&format!("'{name}' is empty")), "{error}");
        }
        let error = parse(Endpoint::CallsAgents, "start=2026-11-01&team=A&team=B", "").unwrap_err();
        assert!(error.contains("'team' is given more than once"), "{error}");
    }

    #[test]
    fn sl_threshold_and_queue_are_part_of_the_cache_key_and_a_queue_is_encoded() {
        assert_eq!(
            key(
                Endpoint::CallsSummary,
                "start=2026-11-01&sl_threshold=30&queue=a%26clamped%3Dtrue"
            ),
            "v1/calls/summary?start=2026-11-01&end=2026-11-01&direction=inbound&sl_threshold=30&queue=a%26clamped%3Dtrue&clamped=false"
        );
        assert_eq!(
            key(Endpoint::CallsAgents, "start=2026-11-01&queue=Sales"),
            "v1/calls/agents?start=2026-11-01&end=2026-11-01&queue=Sales&clamped=false"
        );
        assert_ne!(
            key(Endpoint::CallsAgents, "start=2026-11-01&queue=Sales"),
            key(Endpoint::CallsAgents, "start=2026-11-01&queue=sales")
        );
        assert_eq!(
            key(
                Endpoint::CallsQueues,
                "start=2026-01-01&end=2026-11-20&sl_threshold=3600"
            ),
            "v1/calls/queues?start=2026-10-21&end=2026-11-20&direction=inbound&sl_threshold=3600&clamped=true"
        );
    }

    #[test]
    fn trend_key_holds_the_granularity_and_a_period_over_366_days_keeps_its_latest_366() {
        assert_eq!(
            key(Endpoint::CallsTrend, "start=2026-11-01"),
            "v1/calls/trend?start=2026-11-01&end=2026-11-01&granularity=week&direction=inbound&sl_threshold=20&clamped=false"
        );
        assert_eq!(
            key(
                Endpoint::CallsTrend,
                "start=2024-01-01&end=2026-11-20&granularity=month&short_abandon=5&queue=a%26b"
            ),
            "v1/calls/trend?start=2025-11-20&end=2026-11-20&granularity=month&direction=inbound&sl_threshold=20&short_abandon=5&queue=a%26b&clamped=true"
        );
        // 366 days exactly: not clamped.
        assert!(
            key(Endpoint::CallsTrend, "start=2025-11-20&end=2026-11-20")
                .ends_with("&clamped=false")
        );
        for bad in [
            "granularity=Week",
            "granularity=year",
            "granularity=",
            "granularity=day&granularity=day",
        ] {
            let error =
                parse(Endpoint::CallsTrend, &format!("start=2026-11-01&{bad}"), "").unwrap_err();
            assert!(error.contains("'granularity'"), "{bad}: {error}");
        }
    }

    #[test]
    fn summary_key_holds_compare_only_when_asked_and_a_bad_compare_is_refused() {
        assert!(!key(Endpoint::CallsSummary, "start=2026-11-01").contains("compare"));
        assert_eq!(
            key(
                Endpoint::CallsSummary,
                "start=2026-11-01&compare=previous_year"
            ),
            "v1/calls/summary?start=2026-11-01&end=2026-11-01&direction=inbound&sl_threshold=20&compare=previous_year&clamped=false"
        );
        let error = parse(
            Endpoint::CallsSummary,
            "start=2026-11-01&compare=last_year",
            "",
        )
        .unwrap_err();
        assert_eq!(
            error,
            "invalid query parameter 'compare' \"last_year\": expected 'previous_period', 'previous_week' or 'previous_year'"
        );
    }

    #[test]
    fn each_compare_names_its_earlier_period_and_one_before_the_horizon_is_refused() {
        let summary = |query: &str, earliest: &str| {
            UnvalidatedRequest::from_query(Endpoint::CallsSummary, query, "")
                .unwrap()
                .validate(
                    KpiView::Aggregate,
                    Some(EarliestDay {
                        day: Day::parse(earliest).unwrap(),
                        horizon_days: 400,
                    }),
                )
                .map_err(|e| e.to_string())
        };
        let period = DateRange::up_to_31_days(
            Day::parse("2026-11-09").unwrap(),
            Day::parse("2026-11-15").unwrap(),
        )
        .unwrap();
        for (compare, start, end) in [
            (Compare::PreviousPeriod, "2026-11-02", "2026-11-08"),
            (Compare::PreviousWeek, "2026-11-02", "2026-11-08"),
            (Compare::PreviousYear, "2025-11-10", "2025-11-16"),
        ] {
            let earlier = compare.earlier(&period);
            assert_eq!(
                (earlier.start().to_string(), earlier.end().to_string()),
                (start.to_owned(), end.to_owned()),
                "{compare:?}"
            );
            // The weekday lines up a year back too.
            assert_eq!(
                earlier.start().date().weekday(),
                period.start().date().weekday()
            );
        }
        let three = DateRange::up_to_31_days(
            Day::parse("2026-03-01").unwrap(),
            Day::parse("2026-03-03").unwrap(),
        )
        .unwrap();
        let before = Compare::PreviousPeriod.earlier(&three);
        assert_eq!(
            (before.start().to_string(), before.end().to_string()),
            ("2026-02-26".to_owned(), "2026-02-28".to_owned())
        );
        let query = "start=2026-11-09&end=2026-11-15&compare=previous_year";
        assert!(summary(query, "2025-11-10").is_ok());
        assert_eq!(
            summary(query, "2025-11-11").unwrap_err(),
            "invalid query parameter 'compare' \"previous_year\": the earlier period would start on \
             2025-11-10, but call records are kept for 400 days, so the earliest date allowed is \
             2025-11-11"
        );
        // The clamp comes first: a 40-day period compares its latest 31 days.
        let clamped = summary(
            "start=2026-10-06&end=2026-11-14&compare=previous_period",
            "2026-09-14",
        );
        assert!(clamped.is_ok(), "{clamped:?}");
    }

    #[test]
    fn intervals_key_holds_the_interval_and_a_period_over_7_days_keeps_its_latest_7() {
        assert_eq!(
            key(Endpoint::CallsIntervals, "start=2026-11-01"),
            "v1/calls/intervals?start=2026-11-01&end=2026-11-01&interval=30&direction=inbound&sl_threshold=20&clamped=false"
        );
        assert_eq!(
            key(Endpoint::CallsIntervals, "start=2026-11-01&interval=30"),
            key(Endpoint::CallsIntervals, "start=2026-11-01")
        );
        assert_eq!(
            key(
                Endpoint::CallsIntervals,
                "start=2026-11-01&end=2026-11-20&interval=15&queue=a%26b"
            ),
            "v1/calls/intervals?start=2026-11-14&end=2026-11-20&interval=15&direction=inbound&sl_threshold=20&queue=a%26b&clamped=true"
        );
        // Exactly 7 days is not clamped; a year is clamped to the latest 7.
        assert_eq!(
            key(
                Endpoint::CallsIntervals,
                "start=2026-11-14&end=2026-11-20&interval=60"
            ),
            "v1/calls/intervals?start=2026-11-14&end=2026-11-20&interval=60&direction=inbound&sl_threshold=20&clamped=false"
        );
        assert!(
            key(Endpoint::CallsIntervals, "start=2025-01-01&end=2026-11-20")
                .starts_with("v1/calls/intervals?start=2026-11-14&end=2026-11-20")
        );
    }

    #[test]
    fn interval_is_15_30_or_60_and_nothing_else() {
        for good in ["15", "30", "60"] {
            assert!(
                parse(
                    Endpoint::CallsIntervals,
                    &format!("start=2026-11-01&interval={good}"),
                    ""
                )
                .is_ok(),
                "{good}"
            );
        }
        for bad in [
            "0", "5", "45", "90", "015", "+15", "15.0", "15m", "PT30M", " 30", "x",
        ] {
            let error = parse(
                Endpoint::CallsIntervals,
                &format!("start=2026-11-01&interval={bad}"),
                "",
            )
            .unwrap_err();
            assert!(error.contains("'interval'"), "{bad}: {error}");
        }
        let error = parse(Endpoint::CallsIntervals, "start=2026-11-01&interval=", "").unwrap_err();
        assert!(error.contains("'interval' is empty"), "{error}");
        for bad in [
            "",
            "start=2026-02-30",
            "start=2026-11-02&end=2026-11-01",
            "start=2026-11-01&direction=Inbound",
            "start=2026-11-01&sl_threshold=0",
            "start=2026-11-01&queue=",
        ] {
            assert!(parse(Endpoint::CallsIntervals, bad, "").is_err(), "{bad}");
        }
    }

    #[test]
    fn sl_threshold_is_whole_seconds_from_1_to_3600_and_queue_is_never_empty() {
        for bad in ["0", "3601", "20.0", "-5", "+5", " 5", "x", "99999999999"] {
            let error = parse(
                Endpoint::CallsSummary,
                &format!("start=2026-11-01&sl_threshold={bad}"),
                "",
            )
            .unwrap_err();
            assert!(error.contains("'sl_threshold'"), "{bad}: {error}");
        }
        let error = parse(Endpoint::CallsQueues, "start=2026-11-01&sl_threshold=", "").unwrap_err();
        assert!(error.contains("'sl_threshold' is empty"), "{error}");
        for (endpoint, name) in [
            (Endpoint::CallsSummary, "queue="),
            (Endpoint::CallsAgents, "queue="),
        ] {
            let error = parse(endpoint, &format!("start=2026-11-01&{name}"), "").unwrap_err();
            assert!(error.contains("'queue' is empty"), "{error}");
        }
        let long = "q".repeat(65);
        let error = parse(
            Endpoint::CallsSummary,
            &format!("start=2026-11-01&queue={long}"),
            "",
        )
        .unwrap_err();
        assert!(error.contains("'queue'"), "{error}");
        let error = parse(Endpoint::CallsAgents, "start=2026-11-01&queue=a%0Ab", "").unwrap_err();
        assert!(error.contains("'queue'"), "{error}");
        assert!(
            parse(
                Endpoint::CallsSummary,
                "start=2026-11-01&sl_threshold=1&queue=a b",
                ""
            )
            .is_ok()
        );
        assert!(
            parse(
                Endpoint::CallsQueues,
                "start=2026-11-01&sl_threshold=3600",
                ""
            )
            .is_ok()
        );
    }

    #[test]
    fn cache_key_of_a_clamped_range_is_that_of_the_range_used_plus_the_flag() {
        let clamped = key(Endpoint::CallsAgents, "start=2026-01-01&end=2026-11-20");
        assert_eq!(
            clamped,
            "v1/calls/agents?start=2026-10-21&end=2026-11-20&clamped=true"
        );
        let exact = key(Endpoint::CallsAgents, "start=2026-10-21&end=2026-11-20");
        assert_ne!(clamped, exact);
    }

    #[test]
    fn cache_key_separates_kpi_granularities_and_encodes_shifts() {
        let asked = UnvalidatedRequest::from_query(
            Endpoint::KpiMonth,
            "shift=tun%26granularity%3Ddetail",
            "2026-11",
        )
        .unwrap();
        let view = |view| asked.validate(view, None).unwrap().expect("a data request");
        let (aggregate, detail) = (view(KpiView::Aggregate), view(KpiView::Detail));
        assert_eq!(
            aggregate.cache_key(),
            "v1/kpi/2026-11?granularity=aggregate&shift=tun%26granularity%3Ddetail"
        );
        assert_ne!(aggregate.cache_key(), detail.cache_key());
    }

    #[test]
    fn calls_are_cached_ten_minutes_and_portal_data_one() {
        assert_eq!(
            parse(Endpoint::CallsAgents, "start=2026-11-01", "")
                .unwrap()
                .unwrap()
                .cache_ttl(),
            CALLS_TTL
        );
        assert_eq!(
            parse(Endpoint::Operators, "", "")
                .unwrap()
                .unwrap()
                .cache_ttl(),
            PORTAL_TTL
        );
        assert_eq!(parse(Endpoint::Ping, "", "").unwrap(), None);
    }

    #[test]
    fn agents_validates_direction_but_ignores_it() {
        assert!(
            parse(
                Endpoint::CallsAgents,
                "start=2026-11-01&direction=sideways",
                ""
            )
            .is_err()
        );
        assert_eq!(
            key(Endpoint::CallsAgents, "start=2026-11-01&direction=outbound"),
            key(Endpoint::CallsAgents, "start=2026-11-01")
        );
    }

    #[test]
    fn kpi_month_path_is_validated() {
        assert_eq!(
            parse(Endpoint::KpiMonth, "", "2026-13").unwrap_err(),
            r#"invalid path segment 'month' "2026-13": expected a month YYYY-MM with month 01 to 12"#
        );
    }

    #[test]
    fn a_query_string_gives_every_value_of_a_known_name_and_drops_unknown_names() {
        let asked = UnvalidatedRequest::from_query(
            Endpoint::CallsSummary,
            "direction=out%62ound&x=1&x=2&start=2026-11-01&start=2026-11-02&end",
            "",
        )
        .unwrap();
        let UnvalidatedRequest::CallsSummary(query) = &asked else {
            panic!("{asked:?}")
        };
        assert_eq!(
            query.period.start,
            ["2026-11-01", "2026-11-02"].into_iter().collect()
        );
        assert_eq!(query.period.end, [""].into_iter().collect());
        assert_eq!(
            query.options.service.direction,
            ["outbound"].into_iter().collect()
        );
        assert_eq!(
            asked
                .validate(KpiView::Aggregate, None)
                .unwrap_err()
                .to_string(),
            "query parameter 'start' is given more than once"
        );
    }

    #[test]
    fn the_first_error_follows_the_endpoint_s_order_not_the_query_string_s() {
        for query in [
            "direction=up&end=2026-13-01&start=nope",
            "start=nope&end=2026-13-01&direction=up",
        ] {
            assert_eq!(
                parse(Endpoint::CallsSummary, query, "").unwrap_err(),
                r#"invalid query parameter 'start' "nope": expected a calendar date YYYY-MM-DD"#
            );
        }
        assert!(
            parse(Endpoint::KpiMonth, "shift=", "2026-13")
                .unwrap_err()
                .starts_with("invalid path segment 'month'")
        );
    }

    proptest! {
    #[test]
    fn request_parsing_never_panics_and_rejections_name_a_parameter(
        pairs in prop::collection::vec((prop::sample::select(vec!["start", "end", "direction", "month", "limit", "shift", "interval", "queue", "x"]), ".{0,12}"), 0..5),
        month in ".{0,10}",
    ) {
        let query = serde_html_form::to_string(&pairs).unwrap();
        for endpoint in Endpoint::ALL {
            let asked = UnvalidatedRequest::from_query(endpoint, &query, &month).unwrap();
            if let Err(err) = asked.validate(KpiView::Aggregate, None) {
                let message = err.to_string();
                prop_assert!(message.contains("parameter '") || message.contains("segment 'month'"), "{message}");
            }
        }
    }
    }
}
