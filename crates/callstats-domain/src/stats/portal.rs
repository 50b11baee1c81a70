//! Portal views: roster, schedule, sheet listing and script top-N, in their documented order.

use std::collections::HashMap;

use crate::calendar::Month;
use crate::model::{OffDay, OffDayRecord, Operator, Schedule, Script, Sheet};
use crate::params::ScriptsLimit;

/// The roster ordered by agent number. Staff stay in: `staff_role` lets partners filter.
#[must_use]
pub fn roster(mut operators: Vec<Operator>) -> Vec<Operator> {
    operators.sort_by(|a, b| a.agent_number.cmp(&b.agent_number));
    operators
}

/// The off-days of `month`, joined with the roster's names (the agent number stands in for an
/// operator missing from the roster), ordered by date then agent number.
#[must_use]
pub fn schedule(month: Month, off_days: Vec<OffDayRecord>, roster: &[Operator]) -> Schedule {
    let names: HashMap<&str, &str> = roster
        .iter()
        .map(|o| (o.agent_number.as_str(), o.name.as_str()))
        .collect();
    let mut off_days: Vec<OffDay> = off_days
        .into_iter()
        .filter(|d| month.contains(d.date))
        .map(|d| OffDay {
            name: names
                .get(d.agent_number.as_str())
                .map_or_else(|| d.agent_number.to_string(), |n| (*n).to_owned()),
            agent_number: d.agent_number,
            date: d.date,
            kind: d.kind,
            source: d.source,
        })
        .collect();
    off_days.sort_by(|a, b| {
        a.date
            .cmp(&b.date)
            .then_with(|| a.agent_number.cmp(&b.agent_number))
    });
    Schedule { month, off_days }
}

/// Published sheets by month descending, then shift ascending (byte-wise), then id.
#[must_use]
pub fn sheet_listing(mut sheets: Vec<Sheet>) -> Vec<Sheet> {
    sheets.sort_by(|a, b| {
        b.month
            .cmp(&a.month)
            .then_with(|| a.shift.as_bytes().cmp(b.shift.as_bytes()))
            .then(a.id.cmp(&b.id))
    });
    sheets
}

/// The `limit` most viewed scripts, by views descending then id.
#[must_use]
pub fn top_scripts(mut scripts: Vec<Script>, limit: ScriptsLimit) -> Vec<Script> {
    scripts.sort_by(|a, b| b.views.cmp(&a.views).then(a.id.cmp(&b.id)));
    scripts.truncate(limit.get());
    scripts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calendar::Day;
    use crate::model::{AgentNumber, LocalizedText, OffDayKind, OffDaySource};
    use crate::testing::{operator, sheet};

    fn off(agent: &str, date: &str) -> OffDayRecord {
        OffDayRecord {
            agent_number: AgentNumber::new(agent).unwrap(),
            date: Day::parse(date).unwrap(),
            kind: OffDayKind::Dam,
            source: OffDaySource::Auto,
        }
    }

    fn script(id: i64, views: u64) -> Script {
        let text = |s: &str| LocalizedText {
            uz: s.into(),
            ru: s.into(),
        };
        Script {
            id,
            title: text("Salomlashish"),
            category: text("Kirish"),
            views,
        }
    }

    #[test]
    fn roster_is_ordered_by_agent_number_and_keeps_staff() {
        let r = roster(vec![
            operator("120", "B", None),
            operator("101", "A", Some("supervisor")),
        ]);
        let got: Vec<(&str, Option<&str>)> = r
            .iter()
            .map(|o| (o.agent_number.as_str(), o.staff_role.as_deref()))
            .collect();
        assert_eq!(got, [("101", Some("supervisor")), ("120", None)]);
    }

    #[test]
    fn schedule_joins_names_and_orders_by_date_then_agent_number() {
        let month = Month::parse("2026-11").unwrap();
        let records = vec![
            off("102", "2026-11-05"),
            off("999", "2026-11-03"),
            off("101", "2026-11-05"),
            off("101", "2026-12-01"),
        ];
        let roster = [
            operator("101", "O'tkir", None),
            operator("102", "Oʻtkir", None),
        ];
        let s = schedule(month, records, &roster);
        let got: Vec<(String, &str, &str)> = s
            .off_days
            .iter()
            .map(|d| (d.date.to_string(), d.agent_number.as_str(), d.name.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("2026-11-03".into(), "999", "999"),
                ("2026-11-05".into(), "101", "O'tkir"),
                ("2026-11-05".into(), "102", "Oʻtkir")
            ]
        );
        assert_eq!(s.month, month);
    }

    #[test]
    fn schedule_of_a_month_without_off_days_is_empty() {
        let month = Month::parse("2027-01").unwrap();
        assert!(schedule(month, vec![], &[]).off_days.is_empty());
    }

    #[test]
    fn sheets_are_listed_by_month_descending_then_shift() {
        let listed = sheet_listing(vec![
            sheet(1, "2026-09", "day"),
            sheet(2, "2026-11", "night"),
            sheet(3, "2026-11", "day"),
        ]);
        assert_eq!(listed.iter().map(|s| s.id).collect::<Vec<_>>(), [3, 2, 1]);
    }

    #[test]
    fn scripts_top_n_by_views_then_id() {
        let top = top_scripts(
            vec![script(3, 5), script(1, 9), script(2, 9), script(4, 1)],
            ScriptsLimit::parse("3").unwrap(),
        );
        assert_eq!(top.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2, 3]);
    }
}
