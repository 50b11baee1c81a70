//! OpenAPI schemas of the types that serialise as strings or string lists (feature `openapi`).

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::calendar::{Day, LocalDateTime, Month};
use crate::identifiers::AgentNumber;
use crate::scope::{Scope, ScopeSet};

fn string(description: &str, pattern: &str, example: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .pattern(Some(pattern))
        .examples([example])
}

impl PartialSchema for Day {
    fn schema() -> RefOr<Schema> {
        string(
            "A calendar date, Tashkent time.",
            r"^\d{4}-\d{2}-\d{2}$",
            "2026-11-01",
        )
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
        .into()
    }
}

impl ToSchema for Day {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Date")
    }
}

impl PartialSchema for Month {
    fn schema() -> RefOr<Schema> {
        string(
            "A calendar month, YYYY-MM.",
            r"^\d{4}-(0[1-9]|1[0-2])$",
            "2026-11",
        )
        .into()
    }
}

impl ToSchema for Month {}

impl PartialSchema for LocalDateTime {
    fn schema() -> RefOr<Schema> {
        string(
            "Date and time, Tashkent time, YYYY-MM-DD HH:MM:SS.",
            r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$",
            "2026-11-20 18:00:00",
        )
        .into()
    }
}

impl ToSchema for LocalDateTime {}

impl PartialSchema for AgentNumber {
    fn schema() -> RefOr<Schema> {
        string("An agent's identifier.", r"^\S{1,32}$", "101")
            .min_length(Some(1))
            .max_length(Some(32))
            .into()
    }
}

impl ToSchema for AgentNumber {}

impl PartialSchema for Scope {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(Scope::ALL.map(Scope::as_str)))
            .description(Some("A key scope; kpi:detail implies kpi:aggregate."))
            .into()
    }
}

impl ToSchema for Scope {}

impl PartialSchema for ScopeSet {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Scope::schema())
            .unique_items(true)
            .description(Some(
                "Scopes in the order calls, kpi:aggregate, kpi:detail, operators, scripts.",
            ))
            .into()
    }
}

impl ToSchema for ScopeSet {}
