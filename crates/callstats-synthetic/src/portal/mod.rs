//! The synthetic portal data (`callstats seed --demo`, `callstats demo`): a Tashkent call
//! centre of about 80 operators, built as a [`Fixture`] so it goes through exactly the checks
//! a fixture file does.
//!
//! **Deterministic for (seed, anchor).** The content is a pure function of the seed, the anchor
//! day, the agent numbers and the calls handed in; it draws from the crate's own generator
//! (`rng.rs`), so no library upgrade changes it. The anchor places the data in time:
//! `callstats` passes today's date in Tashkent, so a demo always shows current months, and
//! tests pass a fixed day.
//! Relative to the anchor's month M:
//!
//! - KPI sheets for M−3 (one sheet for all shifts, whose stated totals disagree with its rows),
//!   M−2 (one sheet without a `fiksa` column: null throughout), M−1 (two shifts, `kunduzgi` and
//!   `tungi`, with a contract worker's row that has no agent number) and a draft for M;
//! - off-days of every kind and source from M−3 to M+1;
//! - about 40 scripts with Uzbek and Russian titles;
//! - checklist scores for about 5 % of the answered calls of the 30 days ending on the anchor,
//!   taken from the calls handed in (the synthetic platform's, so scores and calls agree).
//!
//! The roster uses the agent numbers handed in (the synthetic platform's `101`–`180`), in
//! eight teams of two shifts; team leads, a supervisor and a quality analyst carry a
//! `staff_role`. Names use both apostrophe forms (`O'tkir`, `Oʻtkir`).

mod words;

use callstats_domain::calendar::{Day, LocalDateTime, Month};
use callstats_domain::model::{AgentNumber, OffDayKind, OffDaySource, Sentiment};
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime, Time};

use callstats_store::fixture::{
    Fixture, FixtureCallScore, FixtureKpiRow, FixtureMetric, FixtureOffDay, FixtureOperator,
    FixtureScript, FixtureSheet, FixtureText, FixtureTotals,
};

use crate::rng::Rng;
use words::{CATEGORIES, FIRST_NAMES, METRICS, MONTHS_UZ, SCRIPTS, SURNAMES};

/// A call the demo may score: an answered call of the call platform.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorableCall {
    pub id: String,
    pub agent_number: AgentNumber,
    pub started_at: OffsetDateTime,
}

/// Days of scored calls, ending on the anchor.
pub const SCORED_DAYS: i64 = 30;
/// Share of answered calls that get a checklist score, in per mille.
const SCORED_PER_MILLE: u64 = 50;
/// Teams of the demo roster and the shift each works.
const TEAMS: [(&str, &str); 8] = [
    ("A", "kunduzgi"),
    ("B", "kunduzgi"),
    ("C", "kunduzgi"),
    ("D", "kunduzgi"),
    ("E", "kunduzgi"),
    ("F", "kunduzgi"),
    ("G", "tungi"),
    ("H", "tungi"),
];
const DAY_SHIFT: &str = "kunduzgi";
const NIGHT_SHIFT: &str = "tungi";
const ALL_SHIFTS: &str = "umumiy";

fn round_to(value: f64, step: f64) -> f64 {
    (value / step).round() * step
}

fn local(date: Date, hour: u8, minute: u8) -> LocalDateTime {
    LocalDateTime::new(PrimitiveDateTime::new(
        date,
        Time::from_hms(hour, minute, 0).unwrap_or(Time::MIDNIGHT),
    ))
}

/// The month `offset` months after `month` (before, when negative).
fn add_months(month: Month, offset: i32) -> Month {
    let index = month.year() * 12 + i32::from(u8::from(month.month())) - 1 + offset;
    let number = u8::try_from(index.rem_euclid(12) + 1).unwrap_or(1);
    Month::new(
        index.div_euclid(12),
        time::Month::try_from(number).unwrap_or(time::Month::January),
    )
}

fn first_day(month: Month) -> Date {
    Date::from_calendar_date(month.year(), month.month(), 1).unwrap_or(Date::MIN)
}

fn days_in(month: Month) -> u8 {
    month.month().length(month.year())
}

/// The demo data set for `seed`, placed in time by `anchor`, for the roster `agents` and the
/// call platform's answered calls of each day.
pub fn data_set(
    seed: u64,
    anchor: Day,
    agents: &[AgentNumber],
    calls_on: impl Fn(Day) -> Vec<ScorableCall>,
) -> Fixture {
    let operators = roster(seed, anchor, agents);
    let this_month = anchor.month();
    Fixture {
        off_days: off_days(seed, this_month, &operators),
        kpi_sheets: kpi_sheets(seed, anchor, &operators),
        scripts: scripts(seed),
        call_scores: call_scores(seed, anchor, agents, calls_on),
        operators,
    }
}

fn roster(seed: u64, anchor: Day, agents: &[AgentNumber]) -> Vec<FixtureOperator> {
    let mut rng = Rng::new(seed, "roster");
    let team_size = agents.len().div_ceil(TEAMS.len()).max(1);
    agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let (first, female) = match i {
                // Both apostrophe forms of the same name, always present.
                0 => ("O'tkir", false),
                1 => ("Oʻtkir", false),
                _ => rng.pick(FIRST_NAMES).copied().unwrap_or(("Aziz", false)),
            };
            let (surname, declines) = rng.pick(SURNAMES).copied().unwrap_or(("Karimov", true));
            let name = if female && declines {
                format!("{first} {surname}a")
            } else {
                format!("{first} {surname}")
            };
            let (team, shift) = TEAMS.get(i / team_size).copied().unwrap_or(TEAMS[0]);
            let staff_role = if i % team_size == 0 {
                Some("team lead")
            } else if i + 1 == agents.len() {
                Some("supervisor")
            } else if i + 2 == agents.len() {
                Some("quality analyst")
            } else {
                None
            };
            let joined = anchor.date()
                - Duration::days(i64::try_from(30 + rng.below(1500_u64)).unwrap_or(30));
            let login: String = format!("{first}.{surname}")
                .to_lowercase()
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect();
            FixtureOperator {
                agent_number: agent.clone(),
                name,
                team: team.to_owned(),
                shift: shift.to_owned(),
                staff_role: staff_role.map(str::to_owned),
                joined_at: local(joined, 9, 0),
                username: Some(format!("{login}{agent}")),
                phone: Some(format!("+99890{:07}", rng.below(10_000_000_u64))),
            }
        })
        .collect()
}

/// Four rota days off a month for everyone, some moved by hand or swapped, and unpaid leave for
/// a few; every kind and source occurs.
fn off_days(seed: u64, this_month: Month, operators: &[FixtureOperator]) -> Vec<FixtureOffDay> {
    let mut rng = Rng::new(seed, "off-days");
    let mut days = Vec::new();
    for offset in -3..=1 {
        let month = add_months(this_month, offset);
        let length = u64::from(days_in(month));
        for (i, operator) in operators.iter().enumerate() {
            let mut taken: Vec<u64> = Vec::new();
            let mut take = |rng: &mut Rng, kind: OffDayKind, source: OffDaySource| {
                let mut day = rng.below(length);
                while taken.contains(&day) {
                    day = (day + 1) % length;
                }
                taken.push(day);
                let date = first_day(month) + Duration::days(i64::try_from(day).unwrap_or(0));
                days.push(FixtureOffDay {
                    agent_number: operator.agent_number.clone(),
                    date: Day::new(date),
                    kind,
                    source,
                });
            };
            for n in 0..4 {
                let source = match (i, n) {
                    (0, 0) => OffDaySource::Admin,
                    (0, 1) => OffDaySource::Swap,
                    _ if rng.chance(80) => OffDaySource::Admin,
                    _ if rng.chance(60) => OffDaySource::Swap,
                    _ => OffDaySource::Auto,
                };
                take(&mut rng, OffDayKind::Dam, source);
            }
            if i == 1 || rng.chance(60) {
                take(&mut rng, OffDayKind::Unpaid, OffDaySource::Admin);
            }
        }
    }
    days.sort_by(|a, b| (a.date, &a.agent_number).cmp(&(b.date, &b.agent_number)));
    days
}

/// How one sheet differs from a plain one.
#[derive(Clone, Copy, Default)]
struct SheetQuirks {
    /// The stated totals leave out the last rows (a stale formula range).
    stale_totals: bool,
    /// The sheet has no `fiksa` column.
    no_fiksa: bool,
    /// A contract worker without a portal account is paid on this sheet.
    contract_row: bool,
    /// The `Xatolar` metric has no ratio column.
    no_error_ratio: bool,
}

fn kpi_sheets(seed: u64, anchor: Day, operators: &[FixtureOperator]) -> Vec<FixtureSheet> {
    let this_month = anchor.month();
    let everyone: Vec<&FixtureOperator> = operators
        .iter()
        .filter(|o| o.staff_role.is_none())
        .collect();
    let on_shift = |shift: &str| -> Vec<&FixtureOperator> {
        everyone
            .iter()
            .copied()
            .filter(|o| o.shift == shift)
            .collect()
    };
    let plans = [
        (
            -3,
            ALL_SHIFTS,
            everyone.clone(),
            true,
            SheetQuirks {
                stale_totals: true,
                no_error_ratio: true,
                ..SheetQuirks::default()
            },
        ),
        (
            -2,
            ALL_SHIFTS,
            everyone.clone(),
            true,
            SheetQuirks {
                no_fiksa: true,
                ..SheetQuirks::default()
            },
        ),
        (
            -1,
            DAY_SHIFT,
            on_shift(DAY_SHIFT),
            true,
            SheetQuirks {
                contract_row: true,
                ..SheetQuirks::default()
            },
        ),
        (
            -1,
            NIGHT_SHIFT,
            on_shift(NIGHT_SHIFT),
            true,
            SheetQuirks::default(),
        ),
        (
            0,
            DAY_SHIFT,
            on_shift(DAY_SHIFT),
            false,
            SheetQuirks::default(),
        ),
    ];
    plans
        .into_iter()
        .zip(1_i64..)
        .map(|((offset, shift, members, published, quirks), id)| {
            let month = add_months(this_month, offset);
            let mut rng = Rng::new(seed, &format!("kpi-{month}-{shift}"));
            let month_name = MONTHS_UZ
                .get(usize::from(u8::from(month.month())) - 1)
                .copied()
                .unwrap_or("Oy");
            let name = match (shift, published) {
                (ALL_SHIFTS, _) => format!("{month_name} {} KPI", month.year()),
                (_, true) => format!("{month_name} {} KPI — {shift} smena", month.year()),
                (_, false) => format!(
                    "{month_name} {} KPI — {shift} smena (qoralama)",
                    month.year()
                ),
            };
            let updated_at = if published {
                local(first_day(add_months(month, 1)) + Duration::days(2), 18, 0)
            } else {
                local(anchor.date(), 10, 30)
            };
            let mut rows: Vec<FixtureKpiRow> = members
                .iter()
                .map(|operator| kpi_row(&mut rng, Some(operator), quirks))
                .collect();
            if quirks.contract_row {
                rows.push(kpi_row(&mut rng, None, quirks));
            }
            for (row, number) in rows.iter_mut().zip(5_u32..) {
                row.row = number;
            }
            let sheet_totals = stated_totals(&rows, quirks);
            FixtureSheet {
                id,
                name,
                month,
                shift: shift.to_owned(),
                published,
                updated_at,
                sheet_totals,
                operators: rows,
            }
        })
        .collect()
}

fn kpi_row(
    rng: &mut Rng,
    operator: Option<&FixtureOperator>,
    quirks: SheetQuirks,
) -> FixtureKpiRow {
    let skill = rng.between(-0.15, 0.2);
    let metrics: Vec<FixtureMetric> = METRICS
        .iter()
        .map(|spec| {
            let spread = spec.high - spec.low;
            let value = (spec.low + spread * (0.5 + skill + rng.between(-0.3, 0.3)))
                .clamp(spec.low, spec.high);
            let value = if spread >= 100.0 {
                value.round()
            } else {
                round_to(value, 0.01)
            };
            let ratio = if spec.lower_is_better {
                spec.target / value.max(spec.target / 1.5)
            } else {
                value / spec.target
            };
            let ratio = round_to(ratio.min(1.5), 0.0001);
            let kpi = round_to(spec.pay * ratio.min(1.2), 1000.0);
            let no_ratio = quirks.no_error_ratio && spec.name == "Xatolar";
            FixtureMetric {
                name: spec.name.to_owned(),
                value,
                ratio: (!no_ratio).then_some(ratio),
                kpi,
            }
        })
        .collect();
    let ratios: Vec<f64> = metrics.iter().filter_map(|m| m.ratio).collect();
    let kpi_percent = if ratios.is_empty() {
        0.0
    } else {
        round_to(
            ratios.iter().sum::<f64>() / f64::from(u32::try_from(ratios.len()).unwrap_or(1)),
            0.0001,
        )
    };
    let kpi_sum: f64 = metrics.iter().map(|m| m.kpi).sum();
    let fiksa =
        (!quirks.no_fiksa).then(|| round_to(rng.between(2_500_000.0, 4_000_000.0), 10_000.0));
    let bonus = rng
        .chance(300)
        .then(|| round_to(rng.between(100_000.0, 600_000.0), 10_000.0));
    let fine = if rng.chance(150) {
        Some(round_to(rng.between(20_000.0, 200_000.0), 10_000.0))
    } else {
        Some(0.0)
    };
    let payout = kpi_sum + fiksa.unwrap_or(0.0) + bonus.unwrap_or(0.0) - fine.unwrap_or(0.0);
    let (agent_number, name) = match operator {
        Some(operator) => (Some(operator.agent_number.clone()), operator.name.clone()),
        None => (None, "Shahzoda Mirzayeva (shartnoma)".to_owned()),
    };
    FixtureKpiRow {
        agent_number,
        name,
        row: 0,
        kpi_percent,
        kpi_sum,
        fiksa,
        bonus,
        fine,
        payout: Some(payout),
        metrics,
    }
}

/// The source spreadsheet's totals row: the sum of the rows, or of all but the last three
/// when its formula range went stale.
fn stated_totals(rows: &[FixtureKpiRow], quirks: SheetQuirks) -> FixtureTotals {
    let counted = if quirks.stale_totals {
        rows.get(..rows.len().saturating_sub(3)).unwrap_or(rows)
    } else {
        rows
    };
    let mut totals = FixtureTotals::default();
    for row in counted {
        for (total, value) in [
            (&mut totals.kpi_sum, Some(row.kpi_sum)),
            (&mut totals.fiksa, row.fiksa),
            (&mut totals.bonus, row.bonus),
            (&mut totals.fine, row.fine),
            (&mut totals.payout, row.payout),
        ] {
            if let Some(value) = value {
                *total = Some(total.unwrap_or(0.0) + value);
            }
        }
    }
    totals
}

fn scripts(seed: u64) -> Vec<FixtureScript> {
    let mut rng = Rng::new(seed, "scripts");
    SCRIPTS
        .iter()
        .zip(1_i64..)
        .map(|(&(uz, ru, category), id)| {
            let (category_uz, category_ru) = CATEGORIES.get(category).copied().unwrap_or(("", ""));
            // A few scripts are read all day, most rarely.
            let popularity = rng.below(1000) + 1;
            FixtureScript {
                id,
                title: FixtureText {
                    uz: uz.to_owned(),
                    ru: ru.to_owned(),
                },
                category: FixtureText {
                    uz: category_uz.to_owned(),
                    ru: category_ru.to_owned(),
                },
                views: 60_000 / popularity + rng.below(50),
            }
        })
        .collect()
}

/// Scores a sample of the answered calls of the [`SCORED_DAYS`] days ending on the anchor. Each
/// agent has a typical quality; sentiment leans with the score.
fn call_scores(
    seed: u64,
    anchor: Day,
    agents: &[AgentNumber],
    calls_on: impl Fn(Day) -> Vec<ScorableCall>,
) -> Vec<FixtureCallScore> {
    let mut quality = Rng::new(seed, "agent-quality");
    let typical: Vec<(AgentNumber, f64)> = agents
        .iter()
        .map(|agent| (agent.clone(), quality.between(62.0, 94.0)))
        .collect();
    let mut scores = Vec::new();
    for back in (0..SCORED_DAYS).rev() {
        let Some(day) = anchor.plus_days(-back) else {
            continue;
        };
        let mut rng = Rng::new(seed, &format!("scores-{day}"));
        for call in calls_on(day) {
            if !rng.chance(SCORED_PER_MILLE) {
                continue;
            }
            let mean = typical
                .iter()
                .find(|(agent, _)| *agent == call.agent_number)
                .map_or(80.0, |(_, mean)| *mean);
            // Checklists have 40 items: scores move in steps of 2.5.
            let checklist_percent =
                round_to((mean + rng.between(-25.0, 20.0)).clamp(0.0, 100.0), 2.5);
            let roll = rng.between(0.0, 100.0);
            let sentiment = if roll < checklist_percent * 0.75 {
                Sentiment::Positive
            } else if roll < checklist_percent * 0.75 + 25.0 {
                Sentiment::Neutral
            } else {
                Sentiment::Negative
            };
            scores.push(FixtureCallScore {
                call_id: call.id,
                agent_number: call.agent_number,
                started_at: call.started_at,
                checklist_percent,
                sentiment,
            });
        }
    }
    scores
}

#[cfg(test)]
mod tests;
