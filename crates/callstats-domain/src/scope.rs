//! Scopes a key can hold, what each endpoint needs, and which KPI view a key gets.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// One permission of an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Calls,
    KpiAggregate,
    KpiDetail,
    Operators,
    Scripts,
}

impl Scope {
    /// Every scope, in the order the API reports them.
    pub const ALL: [Self; 5] = [
        Self::Calls,
        Self::KpiAggregate,
        Self::KpiDetail,
        Self::Operators,
        Self::Scripts,
    ];

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::KpiAggregate => "kpi:aggregate",
            Self::KpiDetail => "kpi:detail",
            Self::Operators => "operators",
            Self::Scripts => "scripts",
        }
    }

    const fn bit(self) -> u8 {
        match self {
            Self::Calls => 1,
            Self::KpiAggregate => 2,
            Self::KpiDetail => 4,
            Self::Operators => 8,
            Self::Scripts => 16,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A scope name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown scope {0:?}: expected one of calls, kpi:aggregate, kpi:detail, operators, scripts"
)]
pub struct UnknownScope(pub String);

impl FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| UnknownScope(s.to_owned()))
    }
}

/// The scopes of one key. `kpi:detail` implies `kpi:aggregate`, so a set holding detail always
/// holds aggregate too: what a key reports is what it can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ScopeSet(u8);

impl ScopeSet {
    #[must_use]
    pub fn all() -> Self {
        Scope::ALL.into_iter().collect()
    }

    #[must_use]
    pub const fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    #[must_use]
    pub fn with(self, scope: Scope) -> Self {
        let implied = if scope == Scope::KpiDetail {
            Scope::KpiAggregate.bit()
        } else {
            0
        };
        Self(self.0 | scope.bit() | implied)
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL
            .into_iter()
            .filter(move |scope| self.contains(*scope))
    }

    /// Parses a comma-separated list such as `calls,kpi:detail` (spaces around names allowed).
    pub fn parse_list(list: &str) -> Result<Self, UnknownScope> {
        list.split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::parse)
            .collect()
    }

    /// The canonical comma-separated form, in the API's order.
    #[must_use]
    pub fn to_list(self) -> String {
        self.iter().map(Scope::as_str).collect::<Vec<_>>().join(",")
    }
}

impl FromIterator<Scope> for ScopeSet {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        iter.into_iter().fold(Self::default(), Self::with)
    }
}

impl Serialize for ScopeSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Which KPI body a key gets for /kpi/{month}.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KpiView {
    /// Named per-operator rows with payouts (`kpi:detail`).
    Detail,
    /// Totals, distribution and anonymous ranks (`kpi:aggregate` only).
    Aggregate,
}

impl KpiView {
    /// The richest view the scopes allow, or `None` without any KPI scope.
    #[must_use]
    pub fn for_scopes(scopes: ScopeSet) -> Option<Self> {
        if scopes.contains(Scope::KpiDetail) {
            Some(Self::Detail)
        } else if scopes.contains(Scope::KpiAggregate) {
            Some(Self::Aggregate)
        } else {
            None
        }
    }

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Detail => "detail",
            Self::Aggregate => "aggregate",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kpi_detail_implies_kpi_aggregate() {
        let set: ScopeSet = [Scope::KpiDetail].into_iter().collect();
        assert!(set.contains(Scope::KpiAggregate));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Scope::KpiAggregate, Scope::KpiDetail]
        );
    }

    #[test]
    fn scopes_are_reported_in_the_api_order() {
        let set = ScopeSet::parse_list("scripts, calls,operators").unwrap();
        assert_eq!(
            serde_json::to_string(&set).unwrap(),
            r#"["calls","operators","scripts"]"#
        );
        assert_eq!(
            serde_json::to_string(&ScopeSet::all()).unwrap(),
            r#"["calls","kpi:aggregate","kpi:detail","operators","scripts"]"#
        );
    }

    #[test]
    fn unknown_scope_names_are_errors() {
        let err = ScopeSet::parse_list("calls,kpi").unwrap_err();
        assert_eq!(err, UnknownScope("kpi".to_owned()));
        assert!("Calls".parse::<Scope>().is_err());
    }

    #[test]
    fn scope_list_round_trips() {
        let set = ScopeSet::parse_list("kpi:detail,calls").unwrap();
        assert_eq!(set.to_list(), "calls,kpi:aggregate,kpi:detail");
        assert_eq!(ScopeSet::parse_list(&set.to_list()).unwrap(), set);
        assert_eq!(ScopeSet::parse_list("").unwrap(), ScopeSet::default());
    }

    #[test]
    fn kpi_view_is_chosen_from_the_scopes() {
        let of = |list| KpiView::for_scopes(ScopeSet::parse_list(list).unwrap());
        assert_eq!(of("kpi:detail"), Some(KpiView::Detail));
        assert_eq!(of("kpi:aggregate,calls"), Some(KpiView::Aggregate));
        assert_eq!(of("calls,operators,scripts"), None);
    }
}
