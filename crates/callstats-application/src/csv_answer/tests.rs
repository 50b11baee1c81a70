use callstats_api::Wire;
use callstats_api::agents::AgentEntry;
use callstats_api::portal::{LocalizedText, Operator, OperatorsResponse, Script, ScriptsResponse};
use callstats_api::queues::QueuesResponse;
use callstats_domain::calendar::LocalDateTime;
use callstats_domain::model::AgentNumber;

use callstats_domain::params::{Direction, SlThreshold};
use callstats_domain::stats;
use callstats_domain::testing::{days_of, range, worked_example};

use super::*;

const NO_LIMIT: usize = usize::MAX;

fn agent(number: &str, name: &str, calls: u64, share: f64) -> AgentEntry {
    AgentEntry {
        agent_number: AgentNumber::new(number).unwrap(),
        name: name.to_owned(),
        calls,
        inbound_calls: 1,
        outbound_calls: calls.saturating_sub(1),
        share_percent: share,
        total_duration_seconds: 125.5,
        inbound_duration_seconds: 100.25,
        outbound_duration_seconds: 25.25,
        average_duration_seconds: 62.75,
        average_speed_of_answer_seconds: None,
        average_handle_time_seconds: Some(100.25),
        checklist_percent: None,
        positive_sentiment_percent: Some(-0.5),
    }
}

fn text(body: &Bytes) -> &str {
    std::str::from_utf8(body).unwrap()
}

/// The records of `body` as a CSV reader reads them (quotes undone).
fn read(body: &Bytes) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(&body[..])
        .records()
        .map(|record| record.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_header_row_is_the_json_field_names_and_lines_end_in_crlf() {
    let body = table(&[agent("101", "Ann", 3, 60.0)], NO_LIMIT).unwrap();
    assert_eq!(
        text(&body),
        "agent_number,name,calls,inbound_calls,outbound_calls,share_percent,\
         total_duration_seconds,inbound_duration_seconds,outbound_duration_seconds,\
         average_duration_seconds,average_speed_of_answer_seconds,average_handle_time_seconds,\
         checklist_percent,positive_sentiment_percent\r\n\
         101,Ann,3,1,2,60.0,125.5,100.25,25.25,62.75,,100.25,,-0.5\r\n"
    );
}

#[test]
fn a_null_object_has_an_empty_field_for_each_of_its_columns() {
    // The two queues of docs/behaviour.md's worked example: one whose answered calls have
    // waits (its percentiles an object), the calls without a queue, which have none (null).
    let r = range("2026-11-02", "2026-11-02");
    let measured = stats::queues_response(
        &r,
        Direction::Inbound,
        SlThreshold::DEFAULT,
        &days_of(r, &worked_example()),
    );
    let rows = QueuesResponse::from(&measured).queues;
    let (with, without) = (rows.first().unwrap(), rows.last().unwrap());
    assert!(with.speed_of_answer_percentiles.is_some());
    assert!(without.speed_of_answer_percentiles.is_none());
    let body = table(&[with.clone(), without.clone()], NO_LIMIT).unwrap();
    let records = read(&body);
    let header = &records[0];
    let percentile_columns: Vec<usize> = (0..header.len())
        .filter(|&i| header[i].starts_with("speed_of_answer_percentiles."))
        .collect();
    assert_eq!(percentile_columns.len(), 4);
    for record in &records[1..] {
        assert_eq!(record.len(), header.len());
    }
    let cells = |record: &[String]| -> Vec<String> {
        percentile_columns
            .iter()
            .map(|&i| record[i].clone())
            .collect()
    };
    assert_eq!(cells(&records[1]), ["4.5", "20.0", "20.0", "20.0"]);
    assert_eq!(cells(&records[2]), ["", "", "", ""]);
}

#[test]
fn an_empty_list_is_the_header_row_alone() {
    let body = table::<Script>(&[], NO_LIMIT).unwrap();
    assert_eq!(
        text(&body),
        "id,title.uz,title.ru,category.uz,category.ru,views\r\n"
    );
}

#[test]
fn numbers_are_written_exactly_as_the_json_writes_them_and_null_is_empty() {
    let row = agent("7", "B", 12_345_678_901, 33.33);
    let body = table(std::slice::from_ref(&row), NO_LIMIT).unwrap();
    let json = serde_json::to_value(&row).unwrap();
    let records = read(&body);
    let (header, cells) = (records.first().unwrap(), records.get(1).unwrap());
    for (name, cell) in header.iter().zip(cells) {
        let field = json.get(name).unwrap();
        let expected = match field {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => serde_json::to_string(other).unwrap(),
        };
        assert_eq!(cell, &expected, "{name}");
    }
    // A negative number is a number: never guarded.
    assert_eq!(cells.last().map(String::as_str), Some("-0.5"));
}

#[test]
fn commas_quotes_and_line_ends_are_quoted_and_utf8_names_with_apostrophes_kept() {
    let rows = [
        agent("1", "Karimov, Oʻtkir", 1, 1.0),
        agent("2", "Say \"hi\"", 1, 1.0),
        agent("3", "two\nlines", 1, 1.0),
        agent("4", "O'Brien", 1, 1.0),
        agent("5", "Oʻzbek Gʻulom", 1, 1.0),
    ];
    let body = table(&rows, NO_LIMIT).unwrap();
    let lines = text(&body);
    assert!(lines.contains("\r\n1,\"Karimov, Oʻtkir\",1,"), "{lines}");
    assert!(lines.contains("\r\n2,\"Say \"\"hi\"\"\",1,"), "{lines}");
    assert!(lines.contains("\r\n3,\"two\nlines\",1,"), "{lines}");
    // An apostrophe inside a field needs no quoting, and UTF-8 is written as it is.
    assert!(lines.contains("\r\n4,O'Brien,1,"), "{lines}");
    assert!(lines.contains("\r\n5,Oʻzbek Gʻulom,1,"), "{lines}");
    let names: Vec<_> = read(&body)
        .into_iter()
        .skip(1)
        .map(|record| record.get(1).unwrap().clone())
        .collect();
    let given: Vec<_> = rows.iter().map(|row| row.name.clone()).collect();
    assert_eq!(names, given);
}

#[test]
fn text_that_a_spreadsheet_would_take_for_a_formula_gets_a_leading_apostrophe() {
    for (name, written) in [
        ("=1+2", "'=1+2"),
        ("+998 90", "'+998 90"),
        ("-5", "'-5"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tTab", "'\tTab"),
        ("\rCR", "'\rCR"),
        // Past leading white space and control characters, which some spreadsheets skip.
        (" =1+1", "' =1+1"),
        ("\n=1", "'\n=1"),
        ("\u{0}=1", "'\u{0}=1"),
        ("\u{a0}\u{3000}+1", "'\u{a0}\u{3000}+1"),
        (" \u{1b}@cmd", "' \u{1b}@cmd"),
        ("\t ", "'\t "),
        ("a=b", "a=b"),
        (" a=b", " a=b"),
        ("\nline", "\nline"),
        ("   ", "   "),
        ("'quoted", "'quoted"),
        ("", ""),
    ] {
        let body = table(&[agent("9", name, 1, 1.0)], NO_LIMIT).unwrap();
        let records = read(&body);
        assert_eq!(
            records.get(1).and_then(|r| r.get(1)).map(String::as_str),
            Some(written),
            "{name:?}"
        );
    }
}

proptest::proptest! {
    /// Whatever white space and control characters come first, a text whose first other
    /// character starts a formula is guarded, and the guard is the one `'` put before it.
    #[test]
    fn a_formula_after_any_leading_blanks_is_guarded(
        blanks in proptest::collection::vec(
            proptest::char::ranges(vec!['\u{0}'..='\u{20}', '\u{7f}'..='\u{a0}', '\u{2000}'..='\u{200a}', '\u{3000}'..='\u{3000}'].into()),
            0..6,
        ),
        first in proptest::sample::select(vec!['=', '+', '-', '@']),
        rest in ".{0,12}",
    ) {
        let text: String = blanks.into_iter().chain([first]).chain(rest.chars()).collect();
        proptest::prop_assert_eq!(guarded(&text), format!("'{text}"));
    }

    /// Numbers are never guarded, negative ones included.
    #[test]
    fn a_number_is_never_guarded(number in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
        let value = serde_json::json!(number);
        proptest::prop_assert_eq!(cell(&value), value.to_string());
    }
}

#[test]
fn nested_objects_are_flattened_with_a_dot() {
    let scripts = ScriptsResponse {
        scripts: vec![Script {
            id: 4,
            title: LocalizedText {
                uz: "Salom, mijoz".into(),
                ru: "Привет".into(),
            },
            category: LocalizedText {
                uz: "=Sotuv".into(),
                ru: "Продажи".into(),
            },
            views: 10,
        }],
    };
    let body = csv_within(&Wire::Scripts(scripts), NO_LIMIT).unwrap();
    assert_eq!(
        text(&body),
        "id,title.uz,title.ru,category.uz,category.ru,views\r\n\
         4,\"Salom, mijoz\",Привет,'=Sotuv,Продажи,10\r\n"
    );
}

#[test]
fn a_null_text_field_is_empty_and_rows_keep_their_order() {
    let operator = |number: &str, role: Option<&str>| Operator {
        agent_number: AgentNumber::new(number).unwrap(),
        name: format!("N{number}"),
        team: "A".into(),
        shift: "day".into(),
        staff_role: role.map(str::to_owned),
        joined_at: LocalDateTime::parse("2025-03-01 09:00:00").unwrap(),
    };
    let roster = OperatorsResponse {
        operators: vec![operator("102", None), operator("101", Some("supervisor"))],
    };
    let body = csv_within(&Wire::Operators(roster), NO_LIMIT).unwrap();
    let records = read(&body);
    assert_eq!(records.len(), 3);
    assert_eq!(
        records.get(1).unwrap()[..5],
        ["102", "N102", "A", "day", ""]
    );
    assert_eq!(
        records.get(2).unwrap()[..5],
        ["101", "N101", "A", "day", "supervisor"]
    );
}

#[test]
fn a_csv_past_the_body_bound_is_refused() {
    let rows: Vec<_> = (0..2000)
        .map(|i| agent(&i.to_string(), "Some Name", 1, 0.05))
        .collect();
    assert_eq!(
        table(&rows, 10_000),
        Err(DomainError::BodyTooLarge {
            limit_bytes: 10_000
        })
    );
    assert!(table(&rows, NO_LIMIT).unwrap().len() > 10_000);
}
