//! The CSV form of an answer (RFC 4180), for spreadsheets and workforce-management tools: the
//! rows of the answer's JSON array, made from the same values the JSON is made from, so the
//! columns cannot drift from the JSON's fields (docs/behaviour.md, "CSV").
//!
//! - UTF-8, a header row of the JSON field names, CRLF line ends, fields quoted only where
//!   needed (a comma, a quote, a line end), by the `csv` crate's writer.
//! - Numbers exactly as the JSON writes them, `null` as an empty field, `true`/`false`, nested
//!   objects flattened with a dot (`title.uz`).
//! - The formula guard (OWASP "CSV injection"): a text field that begins with a tab or a
//!   carriage return, or whose first character after leading white space and control
//!   characters is `=`, `+`, `-` or `@`, is written with a leading `'`; numbers never are.

use std::borrow::Cow;

use crate::representation::CsvRow;
use bytes::Bytes;
use callstats_api::Wire;
use callstats_domain::DomainError;
use serde::Serialize;
use serde_json::Value;

use crate::bounded::Bounded;

/// The rows of `answer` (as the wire carries it, the JSON's very values) as CSV, refused past
/// `limit` bytes; an internal error for an answer without CSV (the request was never given the
/// CSV representation).
pub(crate) fn csv_within(answer: &Wire<'_>, limit: usize) -> Result<Bytes, DomainError> {
    match answer {
        Wire::Agents(body) => table(&body.agents, limit),
        Wire::Queues(body) => table(&body.queues, limit),
        Wire::Intervals(body) => table(&body.intervals, limit),
        Wire::Trend(body) => table(&body.buckets, limit),
        Wire::Operators(body) => table(&body.operators, limit),
        Wire::Schedule(body) => table(&body.off_days, limit),
        Wire::Scripts(body) => table(&body.scripts, limit),
        Wire::CallSummary(_) | Wire::Live(_) | Wire::Sheets(_) | Wire::Kpi(_) => Err(
            DomainError::Internal("a CSV asked of an answer without rows".to_owned()),
        ),
    }
}

/// The header row and one record per row.
pub(crate) fn table<R: CsvRow>(rows: &[R], limit: usize) -> Result<Bytes, DomainError> {
    csv_table(&R::columns(), rows, limit)
}

/// The header row `columns` and one record per row, each row serialised as JSON is and
/// flattened; its fields must be `columns`, in order. Public for the OpenAPI document's
/// examples, which are made from the JSON examples' rows.
pub fn csv_table<R: Serialize>(
    columns: &[String],
    rows: &[R],
    limit: usize,
) -> Result<Bytes, DomainError> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Bounded::new(limit));
    writer
        .write_record(columns)
        .map_err(|err| written(&err, limit))?;
    for row in rows {
        let value = serde_json::to_value(row)
            .map_err(|err| DomainError::Internal(format!("a CSV row: {err}")))?;
        let mut cells = Vec::with_capacity(columns.len());
        let mut path = String::new();
        flatten(&value, &mut path, &mut cells);
        let cells = spread_nulls(cells, columns);
        let names_match = cells.len() == columns.len()
            && cells
                .iter()
                .zip(columns)
                .all(|((name, _), column)| name == column);
        if !names_match {
            return Err(DomainError::Internal(
                "a CSV row's fields are not its columns".to_owned(),
            ));
        }
        writer
            .write_record(cells.iter().map(|(_, cell)| cell.as_bytes()))
            .map_err(|err| written(&err, limit))?;
    }
    let out = writer
        .into_inner()
        .map_err(|err| written(&csv::Error::from(err.into_error()), limit))?;
    Ok(out.into_bytes())
}

/// A writer's error: the bound reached (the only way the buffer refuses), else a bug.
fn written(err: &csv::Error, limit: usize) -> DomainError {
    match err.kind() {
        csv::ErrorKind::Io(_) => DomainError::BodyTooLarge { limit_bytes: limit },
        _ => DomainError::Internal(format!("writing a CSV: {err}")),
    }
}

/// The dotted names of `value`'s leaves, in the JSON's field order: the columns of a row.
pub(crate) fn field_names(value: &Value) -> Vec<String> {
    let mut cells = Vec::new();
    flatten(value, &mut String::new(), &mut cells);
    cells.into_iter().map(|(name, _)| name).collect()
}

/// Pushes `value`'s leaves with their dotted names, in the JSON's field order.
fn flatten<'v>(value: &'v Value, path: &mut String, cells: &mut Vec<(String, Cow<'v, str>)>) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                let before = path.len();
                if before > 0 {
                    path.push('.');
                }
                path.push_str(name);
                flatten(field, path, cells);
                path.truncate(before);
            }
        }
        leaf => cells.push((path.clone(), cell(leaf))),
    }
}

/// `cells` with each null that stands where the columns hold an object's fields (`name.…`)
/// written as one empty field for each of them: a null object has the columns of its fields.
fn spread_nulls<'v>(
    cells: Vec<(String, Cow<'v, str>)>,
    columns: &[String],
) -> Vec<(String, Cow<'v, str>)> {
    let mut spread = Vec::with_capacity(columns.len());
    for (name, cell) in cells {
        let prefix = format!("{name}.");
        let fields: Vec<&str> = columns
            .iter()
            .skip(spread.len())
            .take_while(|column| column.starts_with(&prefix))
            .map(String::as_str)
            .collect();
        if cell.is_empty() && !fields.is_empty() {
            spread.extend(
                fields
                    .into_iter()
                    .map(|field| (field.to_owned(), Cow::Borrowed(""))),
            );
        } else {
            spread.push((name, cell));
        }
    }
    spread
}

/// One field: text with the formula guard, numbers as the JSON writes them, null empty.
fn cell(value: &Value) -> Cow<'_, str> {
    match value {
        Value::Null => Cow::Borrowed(""),
        Value::String(text) => guarded(text),
        Value::Bool(true) => Cow::Borrowed("true"),
        Value::Bool(false) => Cow::Borrowed("false"),
        Value::Number(number) => Cow::Owned(number.to_string()),
        // No row has an array; one would be written as its JSON text.
        Value::Array(_) | Value::Object(_) => Cow::Owned(value.to_string()),
    }
}

/// `text`, with a leading `'` when a spreadsheet would take it for a formula. OWASP's list of
/// first characters, also looked for past leading white space and control characters, which
/// some spreadsheets skip before reading a formula (`" =1+1"`, `"\n=1"`).
fn guarded(text: &str) -> Cow<'_, str> {
    let formula_after_blanks = text
        .trim_start_matches(|c: char| c.is_whitespace() || c.is_control())
        .starts_with(['=', '+', '-', '@']);
    if formula_after_blanks || text.starts_with(['\t', '\r']) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests;
