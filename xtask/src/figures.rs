//! docs/behaviour.md's figure tables, written from the OpenAPI document: each figure is described
//! once, in the doc comment of its field (on an answer of crates/callstats-api, or of
//! crates/callstats-domain/src/model.rs for the answers not moved there yet), which utoipa
//! copies into the document, and the page takes it from there rather than restating it.

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

/// The lines that open and close the written part of docs/behaviour.md.
pub const BEGIN: &str =
    "<!-- figures: written by `cargo xtask openapi` from the model's doc comments; edit those -->";
pub const END: &str = "<!-- figures: end -->";

/// The resources whose figures the page defines, each with what it is.
const RESOURCES: [(&str, &str); 7] = [
    ("CallSummary", "/calls/summary"),
    ("ServiceLevel", "The `service_level` of /calls/summary"),
    ("Comparison", "The `comparison` of /calls/summary"),
    ("QueueEntry", "An entry of /calls/queues"),
    ("IntervalEntry", "A row of /calls/intervals"),
    ("TrendBucket", "A bucket of /calls/trend"),
    ("AgentEntry", "An entry of /calls/agents"),
];

/// The figure tables of `document`, one per resource: every numeric field, and every field
/// that is itself one of the resources, with its description. A figure without a description
/// is an error, so that a new figure cannot go undefined.
pub fn tables(document: &Value) -> Result<String> {
    let mut out = String::new();
    for (name, what) in RESOURCES {
        let mut properties = Vec::new();
        properties_of(document, name, &mut properties)?;
        out.push_str(&format!(
            "**{what}** (`{name}`)\n\n| field | definition |\n|---|---|\n"
        ));
        for (declared_in, field, schema) in properties {
            if !is_figure(schema) {
                continue;
            }
            let Some(description) = description(schema) else {
                bail!(
                    "{declared_in}.{field} has no doc comment: describe the figure on its field \
                     (crates/callstats-api/src, or crates/callstats-domain/src/model.rs)"
                );
            };
            let cell = description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .replace('|', "\\|");
            out.push_str(&format!("| `{field}` | {cell} |\n"));
        }
        out.push('\n');
    }
    Ok(out.trim_end().to_owned())
}

/// The properties of the schema `name`, with the schema each is declared in: its own, and
/// those of the blocks it flattens (the `$ref`s of its `allOf`), in the document's order.
fn properties_of<'d>(
    document: &'d Value,
    name: &str,
    out: &mut Vec<(String, &'d str, &'d Value)>,
) -> Result<()> {
    let schema = document
        .pointer(&format!("/components/schemas/{name}"))
        .with_context(|| format!("the document has no schema {name}"))?;
    collect(document, name, schema, out)
}

fn collect<'d>(
    document: &'d Value,
    name: &str,
    schema: &'d Value,
    out: &mut Vec<(String, &'d str, &'d Value)>,
) -> Result<()> {
    if let Some(reference) = field(schema, "$ref").as_str() {
        let block = reference
            .strip_prefix("#/components/schemas/")
            .with_context(|| format!("{name} refers to {reference}, outside the document"))?;
        return properties_of(document, block, out);
    }
    for part in field(schema, "allOf").as_array().into_iter().flatten() {
        collect(document, name, part, out)?;
    }
    for (property, value) in field(schema, "properties")
        .as_object()
        .into_iter()
        .flatten()
    {
        out.push((name.to_owned(), property.as_str(), value));
    }
    Ok(())
}

/// A number, a count, or one of [`RESOURCES`] (possibly null).
fn is_figure(schema: &Value) -> bool {
    let numeric = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    let types = field(schema, "type");
    let referenced = |s: &Value| {
        field(s, "$ref").as_str().is_some_and(|r| {
            RESOURCES
                .iter()
                .any(|(name, _)| r == format!("#/components/schemas/{name}"))
        })
    };
    numeric(types)
        || types.as_array().is_some_and(|ts| ts.iter().any(numeric))
        || referenced(schema)
        || field(schema, "oneOf")
            .as_array()
            .is_some_and(|alternatives| alternatives.iter().any(referenced))
}

/// `schema`'s `key`, null when it has none.
fn field<'a>(schema: &'a Value, key: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    schema.get(key).unwrap_or(&NULL)
}

/// The field's description; a nullable reference carries it on the reference.
fn description<'a>(schema: &'a Value) -> Option<&'a str> {
    let description = |s: &'a Value| s.get("description").and_then(Value::as_str);
    description(schema).or_else(|| {
        schema
            .get("oneOf")?
            .as_array()?
            .iter()
            .find_map(description)
    })
}

/// `page` with the part between [`BEGIN`] and [`END`] replaced by `tables`.
pub fn rewrite(page: &str, tables: &str) -> Result<String> {
    let (Some(begin), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        bail!("docs/behaviour.md has no {BEGIN} … {END} part");
    };
    if end < begin {
        bail!("docs/behaviour.md closes its figure part before opening it");
    }
    Ok(format!(
        "{}{BEGIN}\n\n{tables}\n\n{}",
        &page[..begin],
        &page[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> Value {
        serde_json::from_slice(&callstats_web::openapi::document_bytes()).unwrap()
    }

    /// A figure defined in the model and again by hand on the page would drift: the page holds
    /// exactly what `cargo xtask openapi` writes from the model's doc comments.
    #[test]
    fn the_behaviour_page_defines_each_figure_as_the_model_does() {
        let path = crate::workspace().join("docs/behaviour.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let expected = rewrite(&page, &tables(&document()).unwrap()).unwrap();
        assert!(
            page == expected,
            "docs/behaviour.md's figure tables differ from the model's doc comments: run \
             `cargo xtask openapi`"
        );
    }

    #[test]
    fn every_figure_of_the_call_resources_is_described() {
        let tables = tables(&document()).unwrap();
        for figure in [
            "`abandon_rate_percent`",
            "`service_level`",
            "`percent`",
            "`service_level_percent`",
            "`checklist_percent`",
        ] {
            assert!(tables.contains(&format!("| {figure} |")), "{figure}");
        }
    }

    #[test]
    fn a_figure_without_a_description_is_refused() {
        let mut document = document();
        document["components"]["schemas"]["RowCounts"]["properties"]["answered"]
            .as_object_mut()
            .unwrap()
            .remove("description");
        let err = tables(&document).unwrap_err().to_string();
        assert!(
            err.starts_with("RowCounts.answered has no doc comment"),
            "{err}"
        );
    }
}
