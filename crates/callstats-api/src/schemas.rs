//! The OpenAPI schemas of the domain's values that the wire writes as strings: a type of its
//! own here for each, named by the fields that carry one (`#[schema(value_type = …)]`), since
//! the domain derives no schema.

use std::borrow::Cow;

use callstats_domain::live::AgentState as State;
use callstats_domain::model::{OffDayKind as Kind, OffDaySource as Source};
use callstats_domain::params;
use callstats_domain::scope::Scope as DomainScope;
use serde::Serialize;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr};
use utoipa::{PartialSchema, ToSchema};

fn string(description: &str, pattern: &str, example: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .pattern(Some(pattern))
        .examples([example])
}

/// A string schema of the words `all` serialise to, so that it names exactly what is written.
fn words<T: Serialize>(description: &str, all: &[T]) -> ObjectBuilder {
    let words: Vec<String> = all
        .iter()
        .filter_map(|value| match serde_json::to_value(value) {
            Ok(serde_json::Value::String(word)) => Some(word),
            _ => None,
        })
        .collect();
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(words))
        .description(Some(description))
}

/// Declares a schema type named `$name` in the document, built by `$schema`.
macro_rules! schema {
    ($(#[$doc:meta])* $type:ident as $name:literal => $schema:expr) => {
        $(#[$doc])*
        pub struct $type;

        impl PartialSchema for $type {
            fn schema() -> RefOr<Schema> {
                $schema.into()
            }
        }

        impl ToSchema for $type {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    };
}

schema! {
    /// `calendar::Day`.
    Date as "Date" => string("A calendar date, Tashkent time.", r"^\d{4}-\d{2}-\d{2}$", "2026-11-01")
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
}

schema! {
    /// `calendar::Month`.
    Month as "Month" => string("A calendar month, YYYY-MM.", r"^\d{4}-(0[1-9]|1[0-2])$", "2026-11")
}

schema! {
    /// `calendar::LocalDateTime`.
    LocalDateTime as "LocalDateTime" => string(
        "Date and time, Tashkent time, YYYY-MM-DD HH:MM:SS.",
        r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$",
        "2026-11-20 18:00:00",
    )
}

schema! {
    /// `model::AgentNumber`.
    AgentNumber as "AgentNumber" => string("An agent's identifier.", r"^\S{1,32}$", "101")
        .min_length(Some(1))
        .max_length(Some(32))
}

schema! {
    /// `scope::Scope`.
    Scope as "Scope" => words("A key scope; kpi:detail implies kpi:aggregate.", &DomainScope::ALL)
}

schema! {
    /// `scope::ScopeSet`.
    ScopeSet as "ScopeSet" => ArrayBuilder::new()
        .items(Scope::schema())
        .unique_items(true)
        .description(Some(
            "Scopes in the order calls, kpi:aggregate, kpi:detail, operators, scripts.",
        ))
}

schema! {
    /// `live::AgentState`.
    AgentState as "AgentState" => words("What an agent is doing.", &State::ALL)
}

schema! {
    /// `model::OffDayKind`.
    OffDayKind as "OffDayKind" => words("Kind of an off-day.", &Kind::ALL)
}

schema! {
    /// `model::OffDaySource`.
    OffDaySource as "OffDaySource" => words("Who set an off-day.", &Source::ALL)
}

schema! {
    /// `params::Direction`.
    Direction as "Direction" => words(
        "Call direction; `inbound` is the default of /calls/summary.",
        &params::Direction::ALL,
    )
}

schema! {
    /// `params::Compare`.
    Compare as "Compare" => words(
        "`compare` of /calls/summary: which earlier period the figures are set beside.",
        &params::Compare::ALL,
    )
}

schema! {
    /// `params::Granularity`.
    Granularity as "Granularity" => words(
        "`granularity` of /calls/trend: how its buckets cut the calendar.",
        &params::Granularity::ALL,
    )
}
