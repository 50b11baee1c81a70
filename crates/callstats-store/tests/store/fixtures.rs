//! A bad fixture is rejected before anything is written, with the JSON path and the problem.

use callstats_store::fixture::{FixtureError, ValidFixture};
use serde_json::{Value, json};

use crate::support::PORTAL;

/// The portal fixture with the value at `pointer` replaced (or removed, for `None`).
fn portal_with(pointer: &str, value: Option<Value>) -> String {
    let mut doc: Value = serde_json::from_str(PORTAL).unwrap();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = doc.pointer_mut(parent).unwrap();
    match (parent, value) {
        (Value::Object(map), Some(value)) => {
            map.insert(key.to_owned(), value);
        }
        (Value::Object(map), None) => {
            map.remove(key).unwrap();
        }
        (Value::Array(items), Some(value)) => items[key.parse::<usize>().unwrap()] = value,
        _ => panic!("unsupported edit at {pointer}"),
    }
    doc.to_string()
}

fn rejection(json: &str) -> FixtureError {
    ValidFixture::from_json(json).expect_err("the fixture should be rejected")
}

#[track_caller]
fn assert_rejected(json: &str, path: &str, problem: &str) {
    let error = rejection(json);
    assert_eq!(error.path, path, "{error}");
    assert!(error.problem.contains(problem), "{error}");
    assert!(
        error.to_string().starts_with(&format!("{path}: ")),
        "{error}"
    );
}

#[test]
fn the_portal_fixture_is_valid() {
    let counts = ValidFixture::from_json(PORTAL).unwrap().counts();
    assert_eq!(
        (
            counts.operators,
            counts.off_days,
            counts.kpi_sheets,
            counts.kpi_rows
        ),
        (4, 7, 4, 6)
    );
    assert_eq!(
        (counts.kpi_metrics, counts.scripts, counts.call_scores),
        (9, 3, 5)
    );
}

#[test]
fn wrong_types_are_reported_at_their_path() {
    assert_rejected(
        &portal_with("/scripts/2/views", Some(json!("many"))),
        "scripts[2].views",
        "invalid type: string \"many\", expected u64",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/published", Some(json!("yes"))),
        "kpi_sheets[0].published",
        "invalid type",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/operators/1/kpi_percent", Some(json!(null))),
        "kpi_sheets[0].operators[1].kpi_percent",
        "invalid type: null, expected f64",
    );
    assert_rejected(
        &portal_with("/operators", Some(json!({"agent_number": "101"}))),
        "operators",
        "invalid type: map, expected a sequence",
    );
    assert_rejected(
        &portal_with("/scripts/0/views", Some(json!(-1))),
        "scripts[0].views",
        "invalid value",
    );
}

#[test]
fn objects_given_as_arrays_are_rejected() {
    assert_rejected(
        &portal_with(
            "/kpi_sheets/1/sheet_totals",
            Some(json!([1, null, 0, 0, 1])),
        ),
        "kpi_sheets[1].sheet_totals",
        "invalid type: sequence, expected an object",
    );
    assert_rejected(
        &portal_with("/scripts/1/title", Some(json!(["Salom", "Привет"]))),
        "scripts[1].title",
        "expected an object",
    );
    assert_rejected(
        &portal_with(
            "/kpi_sheets/0/operators/1/metrics/0",
            Some(json!(["AHT", 1.0, null, 2.0])),
        ),
        "kpi_sheets[0].operators[1].metrics[0]",
        "expected an object",
    );
    assert_rejected(
        &portal_with(
            "/off_days/0",
            Some(json!(["101", "2026-11-03", "dam", "auto"])),
        ),
        "off_days[0]",
        "expected an object",
    );
}

#[test]
fn unknown_kinds_sources_and_sentiments_name_the_allowed_words() {
    assert_rejected(
        &portal_with("/off_days/1/kind", Some(json!("sick"))),
        "off_days[1].kind",
        "unknown variant `sick`, expected `dam` or `unpaid`",
    );
    assert_rejected(
        &portal_with("/off_days/0/source", Some(json!("manual"))),
        "off_days[0].source",
        "unknown variant `manual`, expected one of `admin`, `auto`, `swap`",
    );
    assert_rejected(
        &portal_with("/call_scores/0/sentiment", Some(json!("happy"))),
        "call_scores[0].sentiment",
        "unknown variant `happy`",
    );
}

#[test]
fn unknown_fields_are_rejected_at_every_level() {
    assert_rejected(
        &portal_with("/operators/0/email", Some(json!("x@example.uz"))),
        "operators[0].email",
        "unknown field `email`",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/operators/0/metrics/0/weight", Some(json!(1))),
        "kpi_sheets[0].operators[0].metrics[0].weight",
        "unknown field `weight`",
    );
    assert_rejected(
        &portal_with("/operator", Some(json!([]))),
        "operator",
        "unknown field `operator`",
    );
}

#[test]
fn a_metric_without_a_name_is_rejected() {
    assert_rejected(
        &portal_with("/kpi_sheets/0/operators/1/metrics/0/name", None),
        "kpi_sheets[0].operators[1].metrics[0]",
        "missing field `name`",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/operators/1/metrics/2/name", Some(json!(" "))),
        "kpi_sheets[0].operators[1].metrics[2].name",
        "expected a non-empty string",
    );
}

#[test]
fn invalid_months_dates_and_times_are_rejected() {
    assert_rejected(
        &portal_with("/kpi_sheets/1/month", Some(json!("2026-13"))),
        "kpi_sheets[1].month",
        "expected a month YYYY-MM with month 01 to 12",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/1/month", Some(json!("2026-00"))),
        "kpi_sheets[1].month",
        "invalid value: string \"2026-00\"",
    );
    assert_rejected(
        &portal_with("/off_days/0/date", Some(json!("2026-02-30"))),
        "off_days[0].date",
        "expected a calendar date YYYY-MM-DD",
    );
    assert_rejected(
        &portal_with("/operators/0/joined_at", Some(json!("2025-03-01T09:00:00"))),
        "operators[0].joined_at",
        "expected a date and time YYYY-MM-DD HH:MM:SS",
    );
    assert_rejected(
        &portal_with(
            "/kpi_sheets/0/updated_at",
            Some(json!("2026-11-02 25:00:00")),
        ),
        "kpi_sheets[0].updated_at",
        "YYYY-MM-DD HH:MM:SS",
    );
    assert_rejected(
        &portal_with(
            "/call_scores/0/started_at",
            Some(json!("2026-11-01 09:15:22")),
        ),
        "call_scores[0].started_at",
        "",
    );
}

#[test]
fn out_of_range_values_are_rejected() {
    assert_rejected(
        &portal_with("/call_scores/1/checklist_percent", Some(json!(100.5))),
        "call_scores[1].checklist_percent",
        "expected a percentage from 0 to 100",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/operators/0/row", Some(json!(0))),
        "kpi_sheets[0].operators[0].row",
        "expected a spreadsheet row number from 1",
    );
    assert_rejected(
        &portal_with("/operators/1/agent_number", Some(json!("10 2"))),
        "operators[1].agent_number",
        "expected an agent number of 1 to 32 characters (at most 64 bytes) without spaces",
    );
    assert_rejected(
        &portal_with("/operators/1/name", Some(json!(""))),
        "operators[1].name",
        "expected a non-empty string",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/shift", Some(json!("day\nnight"))),
        "kpi_sheets[0].shift",
        "expected a shift label of 1 to 64 printable characters",
    );
}

#[test]
fn duplicates_are_rejected_naming_both_places() {
    assert_rejected(
        &portal_with("/operators/2/agent_number", Some(json!("101"))),
        "operators[2].agent_number",
        "duplicate agent number \"101\" (first at operators[0].agent_number)",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/1/id", Some(json!(7))),
        "kpi_sheets[1].id",
        "duplicate sheet id 7 (first at kpi_sheets[0].id)",
    );
    assert_rejected(
        &portal_with("/scripts/1/id", Some(json!(1))),
        "scripts[1].id",
        "duplicate script id 1",
    );
    assert_rejected(
        &portal_with("/call_scores/1/call_id", Some(json!("c-1"))),
        "call_scores[1].call_id",
        "duplicate call id \"c-1\"",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/0/operators/1/row", Some(json!(9))),
        "kpi_sheets[0].operators[1].row",
        "duplicate row 9 in this sheet",
    );
    assert_rejected(
        &portal_with(
            "/kpi_sheets/0/operators/0/metrics/1/name",
            Some(json!("AHT")),
        ),
        "kpi_sheets[0].operators[0].metrics[1].name",
        "duplicate metric name \"AHT\" in this row",
    );
    assert_rejected(
        &portal_with("/off_days/1/agent_number", Some(json!("101"))),
        "off_days[1]",
        "duplicate off-day of agent 101 on 2026-11-03",
    );
    assert_rejected(
        &portal_with("/kpi_sheets/1/shift", Some(json!("kunduzgi"))),
        "kpi_sheets[1]",
        "duplicate published sheet for month 2026-10 and shift \"kunduzgi\"",
    );
}

#[test]
fn a_draft_may_share_month_and_shift_with_a_published_sheet() {
    let json = portal_with("/kpi_sheets/2/month", Some(json!("2026-10")));
    assert!(ValidFixture::from_json(&json).is_ok());
}

#[test]
fn malformed_json_says_where_it_broke() {
    let error = rejection(&PORTAL[..PORTAL.len() / 2]);
    assert!(error.problem.contains("EOF while parsing"), "{error}");
    assert!(error.problem.contains("line"), "{error}");
    let error = rejection("[]");
    assert_eq!(error.path, "");
    assert!(error.problem.contains("must be one JSON object"), "{error}");
    let error = rejection("{} {}");
    assert!(error.problem.contains("trailing characters"), "{error}");
}

#[test]
fn an_empty_object_is_a_valid_empty_portal() {
    assert_eq!(
        ValidFixture::from_json("{}").unwrap().counts(),
        Default::default()
    );
}

/// Every leaf of a JSON document, as a JSON pointer.
fn leaves(value: &Value, pointer: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| leaves(v, format!("{pointer}/{k}"), out)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| leaves(v, format!("{pointer}/{i}"), out)),
        _ => out.push(pointer),
    }
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,20}".prop_map(Value::String),
            Just(json!([])),
            Just(json!({})),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn any_text_is_parsed_or_rejected_with_a_message_never_a_panic(text in ".{0,200}") {
            if let Err(error) = ValidFixture::from_json(&text) {
                prop_assert!(!error.problem.is_empty());
            }
        }

        #[test]
        fn a_fixture_with_one_value_changed_is_accepted_or_rejected_in_that_section(
            which in any::<prop::sample::Index>(), value in any_value(),
        ) {
            let doc: Value = serde_json::from_str(PORTAL).unwrap();
            let mut all = Vec::new();
            leaves(&doc, String::new(), &mut all);
            let pointer = which.get(&all).clone();
            let section = pointer.split('/').nth(1).unwrap().to_owned();
            if let Err(error) = ValidFixture::from_json(&portal_with(&pointer, Some(value))) {
                prop_assert!(error.path.starts_with(&section), "{pointer} changed, but {error}");
                let prefix = format!("{}: ", error.path);
                prop_assert!(error.to_string().starts_with(&prefix), "{}", error);
            }
        }
    }
}
