//! The endpoints, what each needs, and a request of valid values with its cache policy.

use std::borrow::Cow;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::calendar::{DateRange, Month};
use crate::model::QueueName;
use crate::params::{
    Compare, Direction, Granularity, IntervalMinutes, RosterFilter, ScriptsLimit, ServiceRules,
    Shift, Team,
};
use crate::scope::{KpiView, Scope};

/// Lifetime of cached call statistics.
pub const CALLS_TTL: Duration = Duration::from_secs(600);
/// Lifetime of the cached live figures (docs/behaviour.md, "Live").
pub const LIVE_TTL: Duration = Duration::from_secs(5);
/// Lifetime of cached portal data.
pub const PORTAL_TTL: Duration = Duration::from_secs(60);

/// The endpoints under `/api/v1`, each once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Ping,
    CallsSummary,
    CallsAgents,
    CallsQueues,
    CallsIntervals,
    CallsTrend,
    CallsLive,
    KpiMonths,
    KpiMonth,
    Operators,
    Schedule,
    ScriptsStats,
}

impl Endpoint {
    pub const ALL: [Self; 12] = [
        Self::Ping,
        Self::CallsSummary,
        Self::CallsAgents,
        Self::CallsQueues,
        Self::CallsIntervals,
        Self::CallsTrend,
        Self::CallsLive,
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
            Self::CallsSummary
            | Self::CallsAgents
            | Self::CallsQueues
            | Self::CallsIntervals
            | Self::CallsTrend
            | Self::CallsLive => Some(Scope::Calls),
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
            Self::CallsQueues => "/calls/queues",
            Self::CallsIntervals => "/calls/intervals",
            Self::CallsTrend => "/calls/trend",
            Self::CallsLive => "/calls/live",
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
        rules: ServiceRules,
        queue: Option<QueueName>,
        /// The earlier period to set beside it, if any.
        compare: Option<Compare>,
    },
    CallsAgents {
        range: DateRange,
        queue: Option<QueueName>,
        roster: RosterFilter,
    },
    CallsQueues {
        range: DateRange,
        direction: Direction,
        rules: ServiceRules,
    },
    CallsIntervals {
        /// At most 7 days.
        range: DateRange,
        direction: Direction,
        interval: IntervalMinutes,
        rules: ServiceRules,
        queue: Option<QueueName>,
    },
    CallsTrend {
        /// At most 366 days.
        range: DateRange,
        direction: Direction,
        granularity: Granularity,
        rules: ServiceRules,
        queue: Option<QueueName>,
    },
    /// What is happening now (docs/behaviour.md, "Live"); no parameters.
    CallsLive,
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
    #[must_use]
    pub const fn endpoint(&self) -> Endpoint {
        match self {
            Self::CallsSummary { .. } => Endpoint::CallsSummary,
            Self::CallsAgents { .. } => Endpoint::CallsAgents,
            Self::CallsQueues { .. } => Endpoint::CallsQueues,
            Self::CallsIntervals { .. } => Endpoint::CallsIntervals,
            Self::CallsTrend { .. } => Endpoint::CallsTrend,
            Self::CallsLive => Endpoint::CallsLive,
            Self::KpiMonths => Endpoint::KpiMonths,
            Self::KpiMonth { .. } => Endpoint::KpiMonth,
            Self::Operators => Endpoint::Operators,
            Self::Schedule { .. } => Endpoint::Schedule,
            Self::ScriptsStats { .. } => Endpoint::ScriptsStats,
        }
    }

    /// The cache key: the path and the parameters after defaults and clamping, in one canonical
    /// form, plus the clamp flag and the KPI granularity. Never the API key: two keys with the
    /// same view share entries, and a detail body is never served to an aggregate key. Borrowed
    /// when it has no parameter: a cached answer of such an endpoint allocates nothing for it.
    #[must_use]
    pub fn cache_key(&self) -> Cow<'static, str> {
        Cow::Owned(match self {
            Self::CallsSummary {
                range,
                direction,
                rules,
                queue,
                compare,
            } => format!(
                "v1/calls/summary?start={}&end={}&direction={}{}{}{}&clamped={}",
                range.start(),
                range.end(),
                direction.as_str(),
                rules_key(*rules),
                queue_key(queue.as_ref()),
                compare
                    .map(|compare| format!("&compare={}", compare.as_str()))
                    .unwrap_or_default(),
                range.clamped()
            ),
            Self::CallsAgents {
                range,
                queue,
                roster,
            } => {
                format!(
                    "v1/calls/agents?start={}&end={}{}{}{}&clamped={}",
                    range.start(),
                    range.end(),
                    queue_key(queue.as_ref()),
                    encoded("team", roster.team.as_ref().map(Team::as_str)),
                    encoded("shift", roster.shift.as_ref().map(Shift::as_str)),
                    range.clamped()
                )
            }
            Self::CallsQueues {
                range,
                direction,
                rules,
            } => format!(
                "v1/calls/queues?start={}&end={}&direction={}{}&clamped={}",
                range.start(),
                range.end(),
                direction.as_str(),
                rules_key(*rules),
                range.clamped()
            ),
            Self::CallsIntervals {
                range,
                direction,
                interval,
                rules,
                queue,
            } => format!(
                "v1/calls/intervals?start={}&end={}&interval={}&direction={}{}{}&clamped={}",
                range.start(),
                range.end(),
                interval.get(),
                direction.as_str(),
                rules_key(*rules),
                queue_key(queue.as_ref()),
                range.clamped()
            ),
            Self::CallsTrend {
                range,
                direction,
                granularity,
                rules,
                queue,
            } => format!(
                "v1/calls/trend?start={}&end={}&granularity={}&direction={}{}{}&clamped={}",
                range.start(),
                range.end(),
                granularity.as_str(),
                direction.as_str(),
                rules_key(*rules),
                queue_key(queue.as_ref()),
                range.clamped()
            ),
            Self::CallsLive => return Cow::Borrowed("v1/calls/live"),
            Self::KpiMonths => return Cow::Borrowed("v1/kpi/months"),
            Self::KpiMonth { month, shift, view } => {
                let shift = encoded("shift", shift.as_ref().map(Shift::as_str));
                format!("v1/kpi/{month}?granularity={}{shift}", view.as_str())
            }
            Self::Operators => return Cow::Borrowed("v1/operators"),
            Self::Schedule { month } => format!("v1/schedule?month={month}"),
            Self::ScriptsStats { limit } => format!("v1/scripts/stats?limit={}", limit.get()),
        })
    }

    /// How long a cached answer stays valid: 10 minutes for call statistics, 5 seconds for the
    /// live figures, 1 minute for portal data.
    #[must_use]
    pub const fn cache_ttl(&self) -> Duration {
        match self {
            Self::CallsSummary { .. }
            | Self::CallsAgents { .. }
            | Self::CallsQueues { .. }
            | Self::CallsIntervals { .. }
            | Self::CallsTrend { .. } => CALLS_TTL,
            Self::CallsLive => LIVE_TTL,
            Self::KpiMonths
            | Self::KpiMonth { .. }
            | Self::Operators
            | Self::Schedule { .. }
            | Self::ScriptsStats { .. } => PORTAL_TTL,
        }
    }
}

/// `&sl_threshold=…` in a cache key, and `&short_abandon=…` when it leaves anything out (so
/// that the keys of requests without it stay as they were).
fn rules_key(rules: ServiceRules) -> String {
    let short = match rules.short_abandon.get() {
        0 => String::new(),
        seconds => format!("&short_abandon={seconds}"),
    };
    format!("&sl_threshold={}{short}", rules.sl_threshold.get())
}

/// `&queue=…` in a cache key, percent-encoded so that no queue name can imitate another
/// entry's key; nothing without a queue.
fn queue_key(queue: Option<&QueueName>) -> String {
    encoded("queue", queue.map(QueueName::as_str))
}

/// `&name=value` in a cache key, the value percent-encoded so that it cannot imitate another
/// entry's key; nothing without a value.
fn encoded(name: &str, value: Option<&str>) -> String {
    value
        .map(|value| format!("&{name}={}", utf8_percent_encode(value, KEY_VALUE)))
        .unwrap_or_default()
}

/// Everything but RFC 3986's unreserved characters is percent-encoded in a cache key.
const KEY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
