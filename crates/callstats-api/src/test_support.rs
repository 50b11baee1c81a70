//! What the answers' tests share.

use serde_json::Value;

/// The field names of the JSON object `body`, in the order it was written.
pub(crate) fn fields(body: &Value) -> Vec<&str> {
    body.as_object()
        .map(|object| object.keys().map(String::as_str).collect())
        .unwrap_or_default()
}
