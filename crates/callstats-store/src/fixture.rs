//! The portal data fixture of `callstats seed --file` (docs/portal-schema.md): its format,
//! strict parsing, and the checks that make a [`ValidFixture`] safe to seed.
//!
//! Every error names the JSON path of the offending value in the form `scripts[3].views` and
//! says what is wrong. Unknown fields are errors at every level, so a misspelt field is caught
//! rather than read as missing. Fields that may be null may also be left out; top-level arrays
//! may be left out too (empty).
//!
//! References to agents that are not in `operators` are accepted in `off_days`,
//! `kpi_sheets[].operators` and `call_scores`: the API defines what it shows for them (the agent
//! number stands in for the name), because a real portal keeps the history of people who left.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::Hash;

use callstats_domain::calendar::{
    DATE_FORM, DATE_TIME_FORM, Day, LocalDateTime, MONTH_FORM, Month,
};
use callstats_domain::model::{AgentNumber, OffDayKind, OffDaySource, Sentiment};
use callstats_domain::params::Shift;
use serde::de::{self, Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::rows::{
    CallScoreRow, KpiRowRow, MetricRow, NewOperator, NewSheet, OffDayRow, ScriptRow, TextCode,
};

/// A fixture that cannot be seeded: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct FixtureError {
    /// JSON path such as `kpi_sheets[0].operators[2].metrics[1].name`; empty for the whole
    /// document (a syntax error before any value).
    pub path: String,
    pub problem: String,
}

impl FixtureError {
    fn at(path: impl fmt::Display, problem: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            problem: problem.into(),
        }
    }
}

/// The whole fixture: one JSON object of five arrays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    #[serde(default)]
    pub operators: Vec<FixtureOperator>,
    #[serde(default)]
    pub off_days: Vec<FixtureOffDay>,
    #[serde(default)]
    pub kpi_sheets: Vec<FixtureSheet>,
    #[serde(default)]
    pub scripts: Vec<FixtureScript>,
    #[serde(default)]
    pub call_scores: Vec<FixtureCallScore>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureOperator {
    #[serde(deserialize_with = "agent_number")]
    pub agent_number: AgentNumber,
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    #[serde(deserialize_with = "non_empty")]
    pub team: String,
    #[serde(deserialize_with = "non_empty")]
    pub shift: String,
    #[serde(default, deserialize_with = "optional_non_empty")]
    pub staff_role: Option<String>,
    #[serde(deserialize_with = "local_date_time")]
    pub joined_at: LocalDateTime,
    /// Stored, never returned by the API.
    #[serde(default)]
    pub username: Option<String>,
    /// Stored, never returned by the API.
    #[serde(default)]
    pub phone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureOffDay {
    #[serde(deserialize_with = "agent_number")]
    pub agent_number: AgentNumber,
    #[serde(deserialize_with = "day")]
    pub date: Day,
    #[serde(deserialize_with = "text_code")]
    pub kind: OffDayKind,
    #[serde(deserialize_with = "text_code")]
    pub source: OffDaySource,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSheet {
    pub id: i64,
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    #[serde(deserialize_with = "month")]
    pub month: Month,
    #[serde(deserialize_with = "shift")]
    pub shift: String,
    pub published: bool,
    #[serde(deserialize_with = "local_date_time")]
    pub updated_at: LocalDateTime,
    pub sheet_totals: FixtureTotals,
    #[serde(default)]
    pub operators: Vec<FixtureKpiRow>,
}

/// Money totals; a null (or absent) field is a column the sheet does not track.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureTotals {
    #[serde(default)]
    pub kpi_sum: Option<f64>,
    #[serde(default)]
    pub fiksa: Option<f64>,
    #[serde(default)]
    pub bonus: Option<f64>,
    #[serde(default)]
    pub fine: Option<f64>,
    #[serde(default)]
    pub payout: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureKpiRow {
    #[serde(default, deserialize_with = "optional_agent_number")]
    pub agent_number: Option<AgentNumber>,
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    #[serde(deserialize_with = "sheet_row")]
    pub row: u32,
    pub kpi_percent: f64,
    pub kpi_sum: f64,
    #[serde(default)]
    pub fiksa: Option<f64>,
    #[serde(default)]
    pub bonus: Option<f64>,
    #[serde(default)]
    pub fine: Option<f64>,
    #[serde(default)]
    pub payout: Option<f64>,
    #[serde(default)]
    pub metrics: Vec<FixtureMetric>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureMetric {
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    pub value: f64,
    #[serde(default)]
    pub ratio: Option<f64>,
    pub kpi: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureScript {
    pub id: i64,
    pub title: FixtureText,
    pub category: FixtureText,
    #[serde(deserialize_with = "views")]
    pub views: u64,
}

/// Uzbek and Russian text, both required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureText {
    #[serde(deserialize_with = "non_empty")]
    pub uz: String,
    #[serde(deserialize_with = "non_empty")]
    pub ru: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureCallScore {
    #[serde(deserialize_with = "non_empty")]
    pub call_id: String,
    #[serde(deserialize_with = "agent_number")]
    pub agent_number: AgentNumber,
    /// RFC 3339 with any offset, e.g. `2026-11-01T09:15:22+05:00`.
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(deserialize_with = "percent")]
    pub checklist_percent: f64,
    #[serde(deserialize_with = "text_code")]
    pub sentiment: Sentiment,
}

// Field parsers: each reads the JSON value and either returns the domain value or an error
// that says what was expected; serde_path_to_error puts the path in front.

fn parsed<'de, D, T>(
    deserializer: D,
    expected: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let raw = String::deserialize(deserializer)?;
    parse(&raw).ok_or_else(|| D::Error::invalid_value(de::Unexpected::Str(&raw), &expected))
}

fn non_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    parsed(deserializer, "a non-empty string", |raw| {
        (!raw.trim().is_empty()).then(|| raw.to_owned())
    })
}

fn optional_non_empty<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|raw| {
            if raw.trim().is_empty() {
                Err(D::Error::invalid_value(
                    de::Unexpected::Str(&raw),
                    &"null or a non-empty string",
                ))
            } else {
                Ok(raw)
            }
        })
        .transpose()
}

const AGENT_NUMBER_EXPECTED: &str =
    "an agent number of 1 to 32 characters (at most 64 bytes) without spaces";

fn agent_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<AgentNumber, D::Error> {
    parsed(deserializer, AGENT_NUMBER_EXPECTED, |raw| {
        AgentNumber::new(raw).ok()
    })
}

fn optional_agent_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<AgentNumber>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|raw| {
            AgentNumber::new(&raw).map_err(|_| {
                D::Error::invalid_value(de::Unexpected::Str(&raw), &AGENT_NUMBER_EXPECTED)
            })
        })
        .transpose()
}

fn day<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Day, D::Error> {
    parsed(deserializer, DATE_FORM, |raw| Day::parse(raw).ok())
}

fn month<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Month, D::Error> {
    parsed(deserializer, MONTH_FORM, |raw| Month::parse(raw).ok())
}

fn shift<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    parsed(
        deserializer,
        "a shift label of 1 to 64 printable characters",
        |raw| {
            Shift::parse(raw)
                .ok()
                .map(|shift| shift.as_str().to_owned())
        },
    )
}

fn local_date_time<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LocalDateTime, D::Error> {
    parsed(deserializer, DATE_TIME_FORM, |raw| {
        LocalDateTime::parse(raw).ok()
    })
}

fn text_code<'de, D: Deserializer<'de>, T: TextCode>(deserializer: D) -> Result<T, D::Error> {
    let raw = String::deserialize(deserializer)?;
    T::from_code(&raw).ok_or_else(|| D::Error::unknown_variant(&raw, T::CODES))
}

fn sheet_row<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let row = u64::deserialize(deserializer)?;
    u32::try_from(row)
        .ok()
        .filter(|row| (1..=i32::MAX.unsigned_abs()).contains(row))
        .ok_or_else(|| {
            D::Error::invalid_value(
                de::Unexpected::Unsigned(row),
                &"a spreadsheet row number from 1 to 2147483647",
            )
        })
}

fn views<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let views = u64::deserialize(deserializer)?;
    if i64::try_from(views).is_err() {
        return Err(D::Error::invalid_value(
            de::Unexpected::Unsigned(views),
            &"a view count below 2^63",
        ));
    }
    Ok(views)
}

fn percent<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if !(0.0..=100.0).contains(&value) {
        return Err(D::Error::invalid_value(
            de::Unexpected::Float(value),
            &"a percentage from 0 to 100",
        ));
    }
    Ok(value)
}

/// Where the format has objects, so an array there can be refused (serde alone would read it
/// as the object's fields in order).
enum Shape {
    Object(&'static [(&'static str, Shape)]),
    ArrayOf(&'static Shape),
}

const RECORD: Shape = Shape::Object(&[]);
const KPI_ROW: Shape = Shape::Object(&[("metrics", Shape::ArrayOf(&RECORD))]);
const SHEET: Shape = Shape::Object(&[
    ("sheet_totals", RECORD),
    ("operators", Shape::ArrayOf(&KPI_ROW)),
]);
const SCRIPT: Shape = Shape::Object(&[("title", RECORD), ("category", RECORD)]);
const FIXTURE_SHAPE: Shape = Shape::Object(&[
    ("operators", Shape::ArrayOf(&RECORD)),
    ("off_days", Shape::ArrayOf(&RECORD)),
    ("kpi_sheets", Shape::ArrayOf(&SHEET)),
    ("scripts", Shape::ArrayOf(&SCRIPT)),
    ("call_scores", Shape::ArrayOf(&RECORD)),
]);

fn check_objects(
    value: &serde_json::Value,
    shape: &Shape,
    path: &mut String,
) -> Result<(), FixtureError> {
    use serde_json::Value;
    match (shape, value) {
        (Shape::Object(_), Value::Array(_)) => Err(FixtureError::at(
            path.as_str(),
            "invalid type: sequence, expected an object",
        )),
        (Shape::Object(fields), Value::Object(map)) => {
            for (name, field_shape) in *fields {
                if let Some(field) = map.get(*name) {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                    check_objects(field, field_shape, path)?;
                    path.truncate(len);
                }
            }
            Ok(())
        }
        (Shape::ArrayOf(item), Value::Array(items)) => {
            for (i, element) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                check_objects(element, item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A fixture that passed every check, converted to the rows seeding writes.
#[derive(Debug, Clone, Default)]
pub struct ValidFixture {
    pub(crate) operators: Vec<NewOperator>,
    pub(crate) off_days: Vec<OffDayRow>,
    pub(crate) sheets: Vec<NewSheet>,
    pub(crate) kpi_rows: Vec<KpiRowRow>,
    pub(crate) metrics: Vec<MetricRow>,
    pub(crate) scripts: Vec<ScriptRow>,
    pub(crate) call_scores: Vec<CallScoreRow>,
}

/// How many records of each kind a fixture holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixtureCounts {
    pub operators: usize,
    pub off_days: usize,
    pub kpi_sheets: usize,
    pub kpi_rows: usize,
    pub kpi_metrics: usize,
    pub scripts: usize,
    pub call_scores: usize,
}

impl fmt::Display for FixtureCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} operators, {} off-days, {} KPI sheets ({} rows, {} metrics), {} scripts, {} call scores",
            self.operators,
            self.off_days,
            self.kpi_sheets,
            self.kpi_rows,
            self.kpi_metrics,
            self.scripts,
            self.call_scores
        )
    }
}

impl ValidFixture {
    /// Parses and checks a fixture file's text.
    pub fn from_json(json: &str) -> Result<Self, FixtureError> {
        Fixture::from_json(json)?.validate()
    }

    #[must_use]
    pub fn counts(&self) -> FixtureCounts {
        FixtureCounts {
            operators: self.operators.len(),
            off_days: self.off_days.len(),
            kpi_sheets: self.sheets.len(),
            kpi_rows: self.kpi_rows.len(),
            kpi_metrics: self.metrics.len(),
            scripts: self.scripts.len(),
            call_scores: self.call_scores.len(),
        }
    }
}

/// Remembers where each key was first seen, to report duplicates with both places.
struct FirstSeen<K>(HashMap<K, String>);

impl<K: Hash + Eq> FirstSeen<K> {
    fn new() -> Self {
        Self(HashMap::new())
    }

    fn check(
        &mut self,
        key: K,
        path: String,
        what: impl FnOnce() -> String,
    ) -> Result<(), FixtureError> {
        match self.0.entry(key) {
            Entry::Occupied(first) => Err(FixtureError::at(
                &path,
                format!("duplicate {} (first at {})", what(), first.get()),
            )),
            Entry::Vacant(slot) => {
                slot.insert(path);
                Ok(())
            }
        }
    }
}

fn position(index: usize) -> Result<i32, FixtureError> {
    i32::try_from(index).map_err(|_| FixtureError::at("", "too many metrics in one row"))
}

impl Fixture {
    /// Parses the JSON text; the error names the path of the first value that does not fit.
    pub fn from_json(json: &str) -> Result<Self, FixtureError> {
        // serde would also read a struct from a positional array; the format is an object.
        let first = json.trim_start().chars().next();
        if first.is_some_and(|c| c != '{') {
            return Err(FixtureError::at(
                "",
                "invalid type: the fixture must be one JSON object, starting with '{'",
            ));
        }
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let fixture: Self =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                let path = error.path().to_string();
                FixtureError::at(
                    if path == "." { String::new() } else { path },
                    error.inner().to_string(),
                )
            })?;
        deserializer
            .end()
            .map_err(|error| FixtureError::at("", error.to_string()))?;
        // serde reads a struct from a positional array too; the format wants objects.
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|error| FixtureError::at("", error.to_string()))?;
        check_objects(&value, &FIXTURE_SHAPE, &mut String::new())?;
        Ok(fixture)
    }

    /// Checks what the format alone cannot (uniqueness within the fixture) and converts to rows.
    pub fn validate(&self) -> Result<ValidFixture, FixtureError> {
        let mut valid = ValidFixture::default();

        let mut agents = FirstSeen::new();
        for (i, operator) in self.operators.iter().enumerate() {
            let path = format!("operators[{i}].agent_number");
            agents.check(&operator.agent_number, path, || {
                format!("agent number {:?}", operator.agent_number.as_str())
            })?;
            valid.operators.push(NewOperator {
                agent_number: operator.agent_number.to_string(),
                name: operator.name.clone(),
                team: operator.team.clone(),
                shift: operator.shift.clone(),
                staff_role: operator.staff_role.clone(),
                joined_at: operator.joined_at.value(),
                username: operator.username.clone(),
                phone: operator.phone.clone(),
            });
        }

        let mut days = FirstSeen::new();
        for (i, off_day) in self.off_days.iter().enumerate() {
            days.check(
                (&off_day.agent_number, off_day.date),
                format!("off_days[{i}]"),
                || {
                    format!(
                        "off-day of agent {} on {}",
                        off_day.agent_number, off_day.date
                    )
                },
            )?;
            valid.off_days.push(OffDayRow {
                agent_number: off_day.agent_number.to_string(),
                day: off_day.date.date(),
                kind: off_day.kind.code().to_owned(),
                source: off_day.source.code().to_owned(),
            });
        }

        let mut sheet_ids = FirstSeen::new();
        let mut published = FirstSeen::new();
        for (i, sheet) in self.kpi_sheets.iter().enumerate() {
            self.validate_sheet(i, sheet, &mut sheet_ids, &mut published, &mut valid)?;
        }

        let mut script_ids = FirstSeen::new();
        for (i, script) in self.scripts.iter().enumerate() {
            script_ids.check(script.id, format!("scripts[{i}].id"), || {
                format!("script id {}", script.id)
            })?;
            valid.scripts.push(ScriptRow {
                id: script.id,
                title_uz: script.title.uz.clone(),
                title_ru: script.title.ru.clone(),
                category_uz: script.category.uz.clone(),
                category_ru: script.category.ru.clone(),
                views: i64::try_from(script.views).map_err(|_| {
                    FixtureError::at(format!("scripts[{i}].views"), "view count too large")
                })?,
            });
        }

        let mut call_ids = FirstSeen::new();
        for (i, score) in self.call_scores.iter().enumerate() {
            call_ids.check(&score.call_id, format!("call_scores[{i}].call_id"), || {
                format!("call id {:?}", score.call_id)
            })?;
            valid.call_scores.push(CallScoreRow {
                call_id: score.call_id.clone(),
                agent_number: score.agent_number.to_string(),
                started_at_unix: score.started_at.unix_timestamp(),
                checklist_percent: score.checklist_percent,
                sentiment: score.sentiment.code().to_owned(),
            });
        }
        Ok(valid)
    }

    fn validate_sheet<'a>(
        &'a self,
        i: usize,
        sheet: &'a FixtureSheet,
        ids: &mut FirstSeen<i64>,
        published: &mut FirstSeen<(Month, &'a str)>,
        valid: &mut ValidFixture,
    ) -> Result<(), FixtureError> {
        let at = format!("kpi_sheets[{i}]");
        ids.check(sheet.id, format!("{at}.id"), || {
            format!("sheet id {}", sheet.id)
        })?;
        if sheet.published {
            published.check((sheet.month, sheet.shift.as_str()), at.clone(), || {
                format!(
                    "published sheet for month {} and shift {:?}",
                    sheet.month, sheet.shift
                )
            })?;
        }
        valid.sheets.push(NewSheet {
            id: sheet.id,
            name: sheet.name.clone(),
            month: sheet.month.to_string(),
            shift: sheet.shift.clone(),
            published: sheet.published,
            updated_at: sheet.updated_at.value(),
            stated_kpi_sum: sheet.sheet_totals.kpi_sum,
            stated_fiksa: sheet.sheet_totals.fiksa,
            stated_bonus: sheet.sheet_totals.bonus,
            stated_fine: sheet.sheet_totals.fine,
            stated_payout: sheet.sheet_totals.payout,
        });
        let mut rows = FirstSeen::new();
        for (j, row) in sheet.operators.iter().enumerate() {
            let row_at = format!("{at}.operators[{j}]");
            rows.check(row.row, format!("{row_at}.row"), || {
                format!("row {} in this sheet", row.row)
            })?;
            let sheet_row = i32::try_from(row.row)
                .map_err(|_| FixtureError::at(format!("{row_at}.row"), "row number too large"))?;
            valid.kpi_rows.push(KpiRowRow {
                sheet_id: sheet.id,
                sheet_row,
                agent_number: row.agent_number.as_ref().map(ToString::to_string),
                name: row.name.clone(),
                kpi_percent: row.kpi_percent,
                kpi_sum: row.kpi_sum,
                fiksa: row.fiksa,
                bonus: row.bonus,
                fine: row.fine,
                payout: row.payout,
            });
            let mut names = FirstSeen::new();
            for (k, metric) in row.metrics.iter().enumerate() {
                names.check(&metric.name, format!("{row_at}.metrics[{k}].name"), || {
                    format!("metric name {:?} in this row", metric.name)
                })?;
                valid.metrics.push(MetricRow {
                    sheet_id: sheet.id,
                    sheet_row,
                    ordinal: position(k)?,
                    name: metric.name.clone(),
                    value: metric.value,
                    ratio: metric.ratio,
                    kpi: metric.kpi,
                });
            }
        }
        Ok(())
    }
}
