//! What the answers' tests share.

use serde::Serialize;
use serde_json::Value;

/// The field names of the JSON object `body`, in the order it was written.
pub(crate) fn fields(body: &Value) -> Vec<&str> {
    body.as_object()
        .map(|object| object.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The field names `value` serialises with, in order: where a flattened block's fields sit.
pub(crate) fn names<T: Serialize>(value: &T) -> Vec<String> {
    let json = serde_json::to_value(value).unwrap_or_default();
    fields(&json).into_iter().map(str::to_owned).collect()
}

/// Asserts that `row` holds each field of `expected` with its value.
pub(crate) fn assert_holds(row: &Value, expected: &Value) {
    for (name, value) in expected.as_object().into_iter().flatten() {
        assert_eq!(row.get(name), Some(value), "{name} of {row}");
    }
}
