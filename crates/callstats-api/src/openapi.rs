//! The OpenAPI 3.1 document, generated from the routes and the domain's types: paths come from
//! the registered handlers, schemas from the types they answer with, and one table-driven pass
//! adds what every operation shares (errors, rate-limit and cache headers, the conditional and
//! compressed answers, security, examples). Examples are produced by the domain's own
//! functions, so they show what the API really sends.
//!
//! Two passes over the schemas make them say what the serialiser writes: every field that may
//! be null is always sent, so it is `required` (utoipa leaves every `Option` out of
//! `required`), and a serde-tagged enum (a `oneOf` of `allOf`s) becomes a `oneOf` of complete
//! objects with a `discriminator`, the shape client generators read.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use actix_web::App;
use bytes::Bytes;
use callstats_domain::DomainError;
use callstats_domain::access::{QuotaBucket, QuotaStatus, QuotaSubject, Unauthorized};
use callstats_domain::calendar::{DateRange, Day, LocalDateTime, Month, Period};
use callstats_domain::call_day::CallDay;
use callstats_domain::limits::{
    DEFAULT_DAY_FETCHES_PER_MINUTE, DEFAULT_HISTORY_DAYS, DayBudgetStatus, EarliestDay, OverBudget,
};
use callstats_domain::model::{
    AgentNumber, AgentsResponse, CallRecord, CallScore, KeyInfo, KpiOperatorRow, KpiTotals,
    LocalizedText, Metric, OffDayKind, OffDayRecord, OffDaySource, Operator, Script, Sentiment,
    Sheet, SheetContent,
};
use callstats_domain::params::{Direction, ScriptsLimit, SummaryQuery};
use callstats_domain::request::Endpoint;
use callstats_domain::scope::{KpiView, Scope, ScopeSet};
use callstats_domain::stats;
use serde_json::{Value, json};
use utoipa::OpenApi as _;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{
    ArrayItems, Discriminator, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    Content, ContentBuilder, HeaderBuilder, OpenApi, Ref, RefOr, Required, Response,
    ResponseBuilder,
};
use utoipa_actix_web::AppExt as _;

use crate::PREFIX;
use crate::error::ErrorBody;
use crate::middleware::Oversize;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "callstats",
        description = include_str!("../../../docs/behaviour.md"),
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0")
    ),
    components(schemas(ErrorBody)),
    tags(
        (name = "key", description = "The calling key."),
        (name = "calls", description = "Call volumes, peaks and the agent leaderboard (scope calls)."),
        (name = "kpi", description = "Monthly KPI and payout sheets (scope kpi:aggregate; kpi:detail for names)."),
        (name = "operators", description = "Roster and off-day schedule (scope operators)."),
        (name = "scripts", description = "Script view counts (scope scripts)."),
        (name = "meta", description = "This document."),
        (name = "operations", description = "Liveness and readiness for load balancers and orchestrators: no key, no quota.")
    )
)]
struct ApiDoc;

/// The document, built from the routes.
#[must_use]
pub fn document() -> OpenApi {
    let (_, mut doc) = App::new()
        .into_utoipa_app()
        .openapi(ApiDoc::openapi())
        .configure(crate::routes::register_all)
        .split_for_parts();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    add_security_schemes(&mut doc);
    if let Some(components) = doc.components.as_mut() {
        complete_schemas(&mut components.schemas);
    }
    for (path, item) in &mut doc.paths.paths {
        let Some(operation) = item.get.as_mut() else {
            continue;
        };
        // The operations endpoints outside the prefix keep the API's rules out: as documented.
        let Some(api_path) = path.strip_prefix(PREFIX) else {
            for response in operation.responses.responses.values_mut() {
                if let RefOr::T(response) = response {
                    add_response_headers(response, &[REQUEST_ID, NOSNIFF]);
                }
            }
            continue;
        };
        let endpoint = Endpoint::ALL.into_iter().find(|e| e.path() == api_path);
        complete_operation(operation, endpoint);
    }
    doc
}

/// The document as served (and as committed in `docs/openapi.json`): pretty JSON with a final
/// newline, built once.
#[must_use]
pub fn document_bytes() -> Bytes {
    static BYTES: LazyLock<Bytes> = LazyLock::new(|| {
        let mut json = serde_json::to_vec_pretty(&document()).unwrap_or_default();
        json.push(b'\n');
        Bytes::from(json)
    });
    BYTES.clone()
}

/// Properties serde leaves out when they are `None` (`skip_serializing_if`): the only fields
/// that may be missing from a body, and never null when present.
const OMITTED_WHEN_NONE: &[(&str, &str)] = &[("ErrorBody", "required_scope"), ("Health", "reason")];

/// Makes the schemas say what the serialiser writes (see the module's documentation).
fn complete_schemas(schemas: &mut BTreeMap<String, RefOr<Schema>>) {
    discriminate_tagged_enums(schemas);
    for (name, schema) in schemas.iter_mut() {
        if let RefOr::T(schema) = schema {
            require_written(name, schema);
        }
    }
}

/// utoipa leaves a property out of `required` when serde may skip it (`skip_serializing_if`,
/// `default`) or when it is an `Option`. Every field is written unless skipped, and only
/// `Option`s are nullable, so a nullable property is always written: it becomes required. The
/// skipped `Option`s, listed in [`OMITTED_WHEN_NONE`], stay optional and lose their null.
fn require_written(name: &str, schema: &mut Schema) {
    match schema {
        Schema::Object(object) => {
            let mut required = Vec::with_capacity(object.properties.len());
            for (property, value) in &mut object.properties {
                if OMITTED_WHEN_NONE.contains(&(name, property.as_str())) {
                    drop_null(value);
                } else if object.required.contains(property) || is_nullable(value) {
                    required.push(property.clone());
                }
                if let RefOr::T(inner) = value {
                    require_written(name, inner);
                }
            }
            object.required = required;
        }
        Schema::Array(array) => {
            if let ArrayItems::RefOrSchema(items) = &mut array.items
                && let RefOr::T(items) = items.as_mut()
            {
                require_written(name, items);
            }
        }
        Schema::OneOf(one_of) => require_written_in(name, &mut one_of.items),
        Schema::AllOf(all_of) => require_written_in(name, &mut all_of.items),
        Schema::AnyOf(any_of) => require_written_in(name, &mut any_of.items),
        _ => {}
    }
}

fn require_written_in(name: &str, schemas: &mut [RefOr<Schema>]) {
    for schema in schemas {
        if let RefOr::T(schema) = schema {
            require_written(name, schema);
        }
    }
}

fn is_null_type(schema_type: &SchemaType) -> bool {
    match schema_type {
        SchemaType::Type(t) => *t == Type::Null,
        SchemaType::Array(types) => types.contains(&Type::Null),
        SchemaType::AnyValue => true,
    }
}

/// Whether null is an instance of the (inline) schema: a type list with `null`, or a `oneOf`
/// with a null branch. A `$ref` alone is never nullable here.
fn is_nullable(schema: &RefOr<Schema>) -> bool {
    match schema {
        RefOr::Ref(_) => false,
        RefOr::T(Schema::Object(object)) => is_null_type(&object.schema_type),
        RefOr::T(Schema::Array(array)) => is_null_type(&array.schema_type),
        RefOr::T(Schema::OneOf(one_of)) => one_of.items.iter().any(is_nullable),
        RefOr::T(Schema::AnyOf(any_of)) => any_of.items.iter().any(is_nullable),
        RefOr::T(_) => false,
    }
}

/// Takes null out of a nullable schema: the `null` of a type list, or the null branch of a
/// `oneOf` (which is replaced by its only other branch).
fn drop_null(schema: &mut RefOr<Schema>) {
    let non_null = |schema_type: &mut SchemaType| {
        if let SchemaType::Array(types) = schema_type {
            types.retain(|t| *t != Type::Null);
            if let [single] = types.as_slice() {
                *schema_type = SchemaType::Type(single.clone());
            }
        }
    };
    match schema {
        RefOr::T(Schema::Object(object)) => non_null(&mut object.schema_type),
        RefOr::T(Schema::Array(array)) => non_null(&mut array.schema_type),
        RefOr::T(Schema::OneOf(one_of)) => {
            one_of.items.retain(|item| !is_nullable(item));
            if one_of.items.len() == 1
                && let Some(single) = one_of.items.pop()
            {
                *schema = single;
            }
        }
        _ => {}
    }
}

/// A serde internally tagged enum of newtype variants (`#[serde(tag = "…")]`) comes out of
/// utoipa as a `oneOf` of `allOf [$ref Variant, {tag: one-value enum}]`, which several client
/// generators cannot read. Each variant schema gets the tag as its first, required property
/// (a variant type is the body of its variant only: it appears nowhere else in the document),
/// and the enum becomes a `oneOf` of those complete objects with a `discriminator` on the tag.
fn discriminate_tagged_enums(schemas: &mut BTreeMap<String, RefOr<Schema>>) {
    let tagged: Vec<(String, TaggedEnum)> = schemas
        .iter()
        .filter_map(|(name, schema)| Some((name.clone(), tagged_enum(schema)?)))
        .collect();
    for (name, TaggedEnum { tag, variants }) in tagged {
        let mut mapping = BTreeMap::new();
        let mut branches = Vec::new();
        for variant in variants {
            let Some(RefOr::T(Schema::Object(object))) = schemas.get_mut(&variant.schema) else {
                continue;
            };
            let mut properties = std::mem::take(&mut object.properties);
            object.properties.insert(tag.clone(), variant.tag_schema);
            object.properties.append(&mut properties);
            object.required.insert(0, tag.clone());
            let location = format!("#/components/schemas/{}", variant.schema);
            mapping.insert(variant.value, location.clone());
            branches.push(Ref::new(location));
        }
        let description = match schemas.get(&name) {
            Some(RefOr::T(Schema::OneOf(one_of))) => one_of.description.clone(),
            _ => None,
        };
        let mut discriminator = Discriminator::new(tag);
        discriminator.mapping = mapping;
        let one_of = branches
            .into_iter()
            .fold(OneOfBuilder::new(), OneOfBuilder::item)
            .description(description)
            .discriminator(Some(discriminator))
            .build();
        schemas.insert(name, RefOr::T(Schema::OneOf(one_of)));
    }
}

/// A serde internally tagged enum as utoipa writes it.
struct TaggedEnum {
    /// The tag property's name.
    tag: String,
    variants: Vec<Variant>,
}

struct Variant {
    /// The tag's value for this variant.
    value: String,
    /// The name of the variant's component schema.
    schema: String,
    /// The tag property's schema: a string enum of the one value.
    tag_schema: RefOr<Schema>,
}

/// The tagged enum a schema is, if it is one.
fn tagged_enum(schema: &RefOr<Schema>) -> Option<TaggedEnum> {
    let RefOr::T(Schema::OneOf(one_of)) = schema else {
        return None;
    };
    let mut tag_name: Option<String> = None;
    let mut variants = Vec::new();
    for item in &one_of.items {
        let RefOr::T(Schema::AllOf(all_of)) = item else {
            return None;
        };
        let [RefOr::Ref(variant), RefOr::T(Schema::Object(tag))] = all_of.items.as_slice() else {
            return None;
        };
        let [(property, tag_schema)] = tag.properties.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let RefOr::T(Schema::Object(tag_object)) = tag_schema else {
            return None;
        };
        let [Value::String(value)] = tag_object.enum_values.as_deref()? else {
            return None;
        };
        if tag_name.get_or_insert_with(|| property.clone()) != property {
            return None;
        }
        variants.push(Variant {
            value: value.clone(),
            schema: variant
                .ref_location
                .strip_prefix("#/components/schemas/")?
                .to_owned(),
            tag_schema: tag_schema.clone(),
        });
    }
    Some(TaggedEnum {
        tag: tag_name?,
        variants,
    })
}

fn add_security_schemes(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        "bearer".into(),
        RefOr::T(SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some("`Authorization: Bearer cs_…` with the API key."))
                .build(),
        )),
    );
    components.security_schemes.insert(
        "api_key".into(),
        RefOr::T(SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "X-API-Key",
            "The API key in `X-API-Key`; an `Authorization: Bearer` sent too must carry the same key, and an `Authorization` of another scheme (such as a gateway's `Basic`) is ignored.",
        )))),
    );
}

fn complete_operation(operation: &mut Operation, endpoint: Option<Endpoint>) {
    let statuses: &[u16] = match endpoint {
        None => &[400, 413, 414, 429, 431, 500, 503],
        Some(Endpoint::KpiMonth) => &[400, 401, 403, 404, 413, 414, 429, 431, 500, 503],
        Some(_) => &[400, 401, 403, 413, 414, 429, 431, 500, 503],
    };
    if let Some(endpoint) = endpoint {
        operation.security = Some(vec![
            SecurityRequirement::new::<_, _, &str>("bearer", []),
            SecurityRequirement::new::<_, _, &str>("api_key", []),
        ]);
        if let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200")
            && let Some(RefOr::T(content)) = ok.content.get_mut("application/json")
        {
            set_examples(content, success_examples(endpoint));
        }
    } else if let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") {
        // The document itself: an object whose content is this document.
        ok.content.insert(
            "application/json".into(),
            RefOr::T(
                ContentBuilder::new()
                    .schema(Some(ObjectBuilder::new().schema_type(Type::Object)))
                    .build(),
            ),
        );
    }
    for status in statuses {
        operation.responses.responses.insert(
            status.to_string(),
            RefOr::T(error_response(*status, endpoint)),
        );
    }
    add_conventions(operation, endpoint);
}

/// The HTTP conventions (docs/behaviour.md): conditional requests and compression on the data
/// endpoints, validators and `Cache-Control` on what may be kept, and the headers every
/// counted answer carries.
fn add_conventions(operation: &mut Operation, endpoint: Option<Endpoint>) {
    // (request headers, headers of the 200 and the 304, headers of the 200 only)
    let (requests, validated, ok_only): (&[_], &[_], &[_]) = match endpoint {
        None => (
            &[IF_NONE_MATCH, ACCEPT_ENCODING][..],
            &[ETAG, NO_CACHE, VARY][..],
            &[CONTENT_ENCODING][..],
        ),
        Some(Endpoint::Ping) => (&[], &[], &[NO_STORE]),
        Some(_) => (
            &[IF_NONE_MATCH, ACCEPT_ENCODING],
            &[ETAG, PRIVATE, VARY],
            &[CONTENT_ENCODING],
        ),
    };
    for (name, description, schema) in requests {
        let parameter = ParameterBuilder::new()
            .name(*name)
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(*description))
            .schema(Some(schema()))
            .build();
        operation
            .parameters
            .get_or_insert_with(Vec::new)
            .push(RefOr::T(parameter));
    }
    let responses = &mut operation.responses.responses;
    if !validated.is_empty() {
        responses.insert(
            "304".into(),
            RefOr::T(
                ResponseBuilder::new()
                    .description(
                        "Not Modified: `If-None-Match` matches the current `ETag` (weak \
                         comparison, or `*`); no body. Counted against the quota like any request.",
                    )
                    .build(),
            ),
        );
    }
    for (status, response) in responses.iter_mut() {
        let RefOr::T(response) = response else {
            continue;
        };
        add_response_headers(response, COUNTED);
        match status.as_str() {
            "200" => {
                add_response_headers(response, validated);
                add_response_headers(response, ok_only);
            }
            "304" => add_response_headers(response, validated),
            _ => add_response_headers(response, &[NO_STORE]),
        }
    }
}

/// A header's name, description and schema.
type HeaderSpec = (&'static str, &'static str, fn() -> Schema);

fn add_response_headers(response: &mut Response, specs: &[HeaderSpec]) {
    for (name, description, schema) in specs {
        response.headers.insert(
            (*name).into(),
            RefOr::T(
                HeaderBuilder::new()
                    .schema(Some(schema()))
                    .description(Some(*description))
                    .build(),
            ),
        );
    }
}

fn string() -> Schema {
    ObjectBuilder::new().schema_type(Type::String).into()
}

fn count() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(0))
        .into()
}

fn pattern(regex: &str) -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(regex))
        .into()
}

fn one_of(values: &[&str]) -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .into()
}

const IF_NONE_MATCH: HeaderSpec = (
    "If-None-Match",
    "An `ETag` received earlier (or `*`): when it still matches, the answer is 304 without a body.",
    string,
);
const ACCEPT_ENCODING: HeaderSpec = (
    "Accept-Encoding",
    "`gzip`, `br` or `identity`: with gzip or br the body is compressed and says so in `Content-Encoding`.",
    string,
);
const ETAG: HeaderSpec = (
    "ETag",
    "Weak validator `W/\"<16 lower-case hex>\"` derived from the uncompressed body: the same for every encoding of it.",
    || pattern(r#"^W/"[0-9a-f]{16}"$"#),
);
const PRIVATE: HeaderSpec = (
    "Cache-Control",
    "`private, max-age=N`, N the whole seconds left in the response cache entry's lifetime.",
    || pattern("^private, max-age=[0-9]+$"),
);
const NO_CACHE: HeaderSpec = (
    "Cache-Control",
    "`no-cache`: keep it, but revalidate with `If-None-Match` before each use.",
    || one_of(&["no-cache"]),
);
const NO_STORE: HeaderSpec = (
    "Cache-Control",
    "`no-store`: /ping and every error.",
    || one_of(&["no-store"]),
);
const VARY: HeaderSpec = (
    "Vary",
    "`Accept-Encoding` (sent in lower case): the body's encoding follows that request header.",
    || pattern("^[Aa]ccept-[Ee]ncoding$"),
);
const CONTENT_ENCODING: HeaderSpec = (
    "Content-Encoding",
    "`gzip` or `br` when the body is compressed (as `Accept-Encoding` allowed); absent otherwise.",
    || one_of(&["gzip", "br"]),
);
const REQUEST_ID: HeaderSpec = (
    "X-Request-Id",
    "Identifies the request in the service's logs.",
    string,
);
const NOSNIFF: HeaderSpec = ("X-Content-Type-Options", "Always `nosniff`.", || {
    one_of(&["nosniff"])
});

/// What every answer of the API's paths carries: each of them passed the key check or was
/// counted against a quota.
const COUNTED: &[HeaderSpec] = &[
    (
        "X-RateLimit-Limit",
        "Requests allowed per UTC clock minute: the key's quota, or the per-IP quota of requests without a valid key.",
        count,
    ),
    (
        "X-RateLimit-Remaining",
        "Requests left in this minute after this one; never negative.",
        count,
    ),
    (
        "X-RateLimit-Reset",
        "Seconds until the next minute's window (1 to 60).",
        count,
    ),
    (
        "RateLimit-Policy",
        "The quotas as draft-ietf-httpapi-ratelimit-headers says them: `\"minute\";q=LIMIT;w=60` for requests and, for a valid key, `, \"days\";q=DAYS;w=60` for its day budget (the call days not held that its requests may make the service fetch per UTC clock minute).",
        || pattern(r#"^"minute";q=[0-9]+;w=60(, "days";q=[0-9]+;w=60)?$"#),
    ),
    (
        "RateLimit",
        "The windows as draft-ietf-httpapi-ratelimit-headers says them: `\"minute\";r=REMAINING;t=RESET` and, for a valid key, `, \"days\";r=DAYS_LEFT;t=RESET` (after the days this request made the service fetch).",
        || pattern(r#"^"minute";r=[0-9]+;t=[0-9]+(, "days";r=[0-9]+;t=[0-9]+)?$"#),
    ),
    (
        "X-Cache",
        "HIT when the body came from the response cache (10 minutes for call statistics, 1 minute for portal data); MISS otherwise, always for /ping and errors.",
        || one_of(&["HIT", "MISS"]),
    ),
    (
        "Cache-Status",
        "The same as RFC 9211 says it: `callstats; hit; ttl=N` (N seconds left) or `callstats; fwd=miss`.",
        || pattern("^callstats; (hit; ttl=[0-9]+|fwd=miss)$"),
    ),
    REQUEST_ID,
    NOSNIFF,
];

/// One example goes in `example`; several are named in `examples`.
fn set_examples(content: &mut Content, examples: Vec<(&str, Value)>) {
    if let [(_, single)] = examples.as_slice() {
        content.example = Some(single.clone());
        return;
    }
    for (name, value) in examples {
        let example = ExampleBuilder::new()
            .summary(name)
            .value(Some(value))
            .build();
        content.examples.insert(name.to_owned(), RefOr::T(example));
    }
}

fn error_response(status: u16, endpoint: Option<Endpoint>) -> Response {
    let quota = QuotaStatus::after(
        120,
        121,
        &QuotaBucket::new(&QuotaSubject::Key(1), time::OffsetDateTime::UNIX_EPOCH),
    );
    let message = |err: DomainError| json!({ "error": err.to_string() });
    let takes_parameters = !matches!(
        endpoint,
        None | Some(Endpoint::Ping | Endpoint::KpiMonths | Endpoint::Operators)
    );
    let calls = matches!(
        endpoint,
        Some(Endpoint::CallsSummary | Endpoint::CallsAgents)
    );
    let (description, examples): (&str, Vec<(&str, Value)>) = match status {
        400 if calls => (
            "A parameter is missing or malformed (the message names it, the expected form and the value received), or the period (after the 31-day clamp) starts before the history horizon (the message names the earliest start allowed); or, from the reverse proxy before a request exists, a malformed request head (without the rate-limit and cache headers; the connection is closed).",
            vec![
                (
                    "bad parameter",
                    json!({ "error": "invalid query parameter 'start' \"2026-02-30\": expected a calendar date YYYY-MM-DD" }),
                ),
                ("before the horizon", message(before_horizon())),
                ("malformed head", json!({ "error": PROXY_MALFORMED })),
            ],
        ),
        400 if takes_parameters => (
            "A parameter is missing or malformed (the message names it, the expected form and the value received); or, from the reverse proxy before a request exists, a malformed request head (without the rate-limit and cache headers; the connection is closed).",
            vec![
                (
                    "bad parameter",
                    json!({ "error": "invalid query parameter 'start' \"2026-02-30\": expected a calendar date YYYY-MM-DD" }),
                ),
                ("malformed head", json!({ "error": PROXY_MALFORMED })),
            ],
        ),
        400 => (
            "A malformed request head, answered by the reverse proxy before a request exists: without the rate-limit and cache headers; the connection is closed.",
            vec![("malformed head", json!({ "error": PROXY_MALFORMED }))],
        ),
        401 => (
            "The key is missing, malformed, unknown, revoked or expired, or the two key headers disagree.",
            vec![
                ("missing key", message(Unauthorized::Missing.into())),
                ("expired key", message(Unauthorized::Expired.into())),
            ],
        ),
        403 => (
            "The key is pinned to another domain than the request's Origin, or lacks the endpoint's scope (then `required_scope` names it).",
            vec![
                ("origin", message(DomainError::OriginNotAllowed)),
                (
                    "scope",
                    json!({
                        "error": DomainError::MissingScope(endpoint.and_then(Endpoint::required_scope).unwrap_or(Scope::Calls)).to_string(),
                        "required_scope": endpoint.and_then(Endpoint::required_scope).unwrap_or(Scope::Calls),
                    }),
                ),
            ],
        ),
        404 => (
            "No published KPI sheet for the month, or none of the requested shift (the message lists the shifts that exist).",
            vec![(
                "no sheet",
                message(DomainError::NotFound(
                    "no published KPI sheet for 2026-08".into(),
                )),
            )],
        ),
        413 => (
            "A declared request body over 64 KiB; a GET needs none. Answered by the reverse proxy (without the rate-limit and cache headers), or by the service after admission.",
            vec![
                ("body", json!({ "error": Oversize::Body.message() })),
                ("from the proxy", json!({ "error": PROXY_BODY })),
            ],
        ),
        414 => (
            "A request target (path and query) over 8 KiB. Answered by the reverse proxy (without the rate-limit and cache headers), or by the service after admission.",
            vec![
                ("target", json!({ "error": Oversize::Target.message() })),
                ("from the proxy", json!({ "error": PROXY_TARGET })),
            ],
        ),
        431 => (
            "Request headers over 16 KiB in all (names and values), answered after admission; or a header field over 8 KiB, answered by the reverse proxy before a request exists (without the rate-limit and cache headers; the connection is closed).",
            vec![
                ("headers", json!({ "error": Oversize::Headers.message() })),
                ("from the proxy", json!({ "error": PROXY_HEAD })),
            ],
        ),
        429 if calls => (
            "Over the per-minute quota; or the call days not held that the request would make the service fetch exceed the key's day budget (nothing was fetched). Retry after the window resets. Or, from the reverse proxy, over 256 open connections from the client's address (without the rate-limit, cache and `Retry-After` headers).",
            vec![
                ("over quota", message(DomainError::RateLimited(quota))),
                ("over the day budget", message(over_budget())),
                ("from the proxy", json!({ "error": PROXY_CONNECTIONS })),
            ],
        ),
        429 => (
            "Over the per-minute quota; retry after the window resets. Or, from the reverse proxy, over 256 open connections from the client's address (without the rate-limit, cache and `Retry-After` headers).",
            vec![
                ("over quota", message(DomainError::RateLimited(quota))),
                ("from the proxy", json!({ "error": PROXY_CONNECTIONS })),
            ],
        ),
        503 if calls => (
            "The upstream call platform or the portal database is unavailable; or the call platform is busy: the request's days cannot arrive before the fetch deadline, so it is answered at once with `Retry-After` (they stay queued, and asking again then finds them held); or the answer would be larger than the body bound (16 MiB by default); or, from the reverse proxy, no replica could be reached (without the rate-limit and cache headers).",
            vec![
                ("upstream", message(upstream_unavailable())),
                (
                    "busy",
                    message(DomainError::UpstreamBusy {
                        retry_after_secs: 7,
                    }),
                ),
                ("database", message(store_unavailable())),
                (
                    "too large",
                    message(DomainError::BodyTooLarge {
                        limit_bytes: 16 << 20,
                    }),
                ),
                ("from the proxy", json!({ "error": PROXY_NO_REPLICA })),
            ],
        ),
        503 if endpoint.is_some() => (
            "The portal database is unavailable; or, from the reverse proxy, no replica could be reached (without the rate-limit and cache headers).",
            vec![
                ("database", message(store_unavailable())),
                ("from the proxy", json!({ "error": PROXY_NO_REPLICA })),
            ],
        ),
        503 => (
            "From the reverse proxy: no replica could be reached (without the rate-limit and cache headers).",
            vec![("from the proxy", json!({ "error": PROXY_NO_REPLICA }))],
        ),
        _ => (
            "An unexpected failure; the cause is logged with the request id.",
            vec![("internal", json!({ "error": "internal server error" }))],
        ),
    };
    let mut content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ErrorBody")))
        .build();
    set_examples(&mut content, examples);
    let mut response = ResponseBuilder::new()
        .description(description)
        .content("application/json", content)
        .build();
    let retry_after = match status {
        429 if calls => Some((
            "60 when over the request quota; over the day budget, the seconds to the next window (1 to 60).",
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(60)),
        )),
        429 => Some((
            "Always 60.",
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .enum_values(Some([60])),
        )),
        503 if calls => Some((
            "When the call platform is busy (only then): the estimated seconds until the request's days are held.",
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1)),
        )),
        _ => None,
    };
    if let Some((description, schema)) = retry_after {
        response.headers.insert(
            "Retry-After".into(),
            RefOr::T(
                HeaderBuilder::new()
                    .schema(Some(schema))
                    .description(Some(description))
                    .build(),
            ),
        );
    }
    response
}

/// The errors the shipped reverse proxy (deploy/nginx/nginx.conf) answers itself, before a
/// request reaches a replica; a test holds each to that file.
pub const PROXY_ERRORS: [&str; 6] = [
    PROXY_MALFORMED,
    PROXY_HEAD,
    PROXY_TARGET,
    PROXY_BODY,
    PROXY_CONNECTIONS,
    PROXY_NO_REPLICA,
];
const PROXY_MALFORMED: &str = "malformed request head";
const PROXY_HEAD: &str = "request head too large: at most 8 KiB a header field";
const PROXY_TARGET: &str = "request target longer than 8 KiB";
const PROXY_BODY: &str = "request body longer than 64 KiB";
const PROXY_CONNECTIONS: &str = "too many connections from this address";
const PROXY_NO_REPLICA: &str = "the service is unavailable";

fn before_horizon() -> DomainError {
    let earliest = Day::parse("2025-10-22").ok().map(|day| EarliestDay {
        day,
        horizon_days: DEFAULT_HISTORY_DAYS,
    });
    let example = SummaryQuery {
        start: ["2024-01-01"].into_iter().collect(),
        ..SummaryQuery::default()
    };
    match example.parse(earliest) {
        Err(err) => DomainError::BadRequest(err),
        Ok(_) => DomainError::Internal("the example is within the horizon".into()),
    }
}

fn over_budget() -> DomainError {
    DomainError::DayBudgetExceeded(OverBudget {
        key: 1,
        needed: 31,
        status: DayBudgetStatus {
            limit: DEFAULT_DAY_FETCHES_PER_MINUTE,
            remaining: 12,
            reset_seconds: 42,
        },
    })
}

fn upstream_unavailable() -> DomainError {
    DomainError::UpstreamUnavailable(callstats_domain::ports::UpstreamError::new("example"))
}

fn store_unavailable() -> DomainError {
    DomainError::StoreUnavailable(callstats_domain::ports::StoreError::new("example"))
}

/// Bodies of the 200 answers, computed by the domain from a small fixed data set.
fn success_examples(endpoint: Endpoint) -> Vec<(&'static str, Value)> {
    let Some(sample) = Sample::new() else {
        return Vec::new();
    };
    let value = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    match endpoint {
        Endpoint::Ping => vec![("key", value(serde_json::to_value(&sample.key_info)))],
        Endpoint::CallsSummary => {
            vec![(
                "summary",
                value(serde_json::to_value(stats::call_summary(
                    &sample.range,
                    Direction::Inbound,
                    &sample.calls,
                ))),
            )]
        }
        Endpoint::CallsAgents => {
            let agents = stats::agent_leaderboard(
                &sample.range,
                &sample.calls,
                &sample.scores,
                &sample.roster,
                stats::PriorWeight::DEFAULT,
            );
            vec![(
                "leaderboard",
                value(serde_json::to_value(AgentsResponse {
                    period: Period::from(&sample.range),
                    agents,
                })),
            )]
        }
        Endpoint::KpiMonths => vec![(
            "sheets",
            value(serde_json::to_value(stats::sheet_listing(vec![
                sample.sheet,
            ]))),
        )],
        Endpoint::KpiMonth => [
            ("detail", KpiView::Detail),
            ("aggregate", KpiView::Aggregate),
        ]
        .into_iter()
        .map(|(name, view)| {
            (
                name,
                value(serde_json::to_value(stats::kpi_month(
                    sample.sheet.clone(),
                    sample.content.clone(),
                    view,
                ))),
            )
        })
        .collect(),
        Endpoint::Operators => vec![(
            "roster",
            value(serde_json::to_value(stats::roster(sample.roster))),
        )],
        Endpoint::Schedule => {
            vec![(
                "schedule",
                value(serde_json::to_value(stats::schedule(
                    sample.month,
                    sample.off_days,
                    &sample.roster,
                ))),
            )]
        }
        Endpoint::ScriptsStats => {
            vec![(
                "scripts",
                value(serde_json::to_value(stats::top_scripts(
                    sample.scripts,
                    ScriptsLimit::default(),
                ))),
            )]
        }
    }
}

/// A tiny, fixed portal and call log.
struct Sample {
    key_info: KeyInfo,
    range: DateRange,
    month: Month,
    calls: Vec<CallDay>,
    scores: Vec<CallScore>,
    roster: Vec<Operator>,
    off_days: Vec<OffDayRecord>,
    sheet: Sheet,
    content: SheetContent,
    scripts: Vec<Script>,
}

impl Sample {
    fn new() -> Option<Self> {
        let day = Day::new(time::macros::date!(2026 - 11 - 02));
        let range = DateRange::new(day, day).ok()?;
        let month = day.month();
        let agent = |n: &str| AgentNumber::new(n).ok();
        let at = |hour: i64, minute: i64| range.unix_window().0 + hour * 3600 + minute * 60;
        let call =
            |agent_number: Option<&str>, direction, hour, minute, duration_seconds| CallRecord {
                direction,
                agent_number: agent_number.and_then(agent),
                started_at: at(hour, minute),
                duration_seconds,
            };
        let calls = CallDay::split(
            &range,
            0,
            &[
                call(Some("101"), Direction::Inbound, 9, 5, 125.4),
                call(Some("101"), Direction::Inbound, 10, 12, 301.0),
                call(Some("102"), Direction::Inbound, 10, 40, 88.2),
                call(None, Direction::Inbound, 10, 41, 12.0),
                call(Some("102"), Direction::Outbound, 14, 3, 64.9),
            ],
        );
        let score = |n: &str, hour, checklist_percent, sentiment| {
            agent(n).map(|agent_number| CallScore {
                agent_number,
                started_at: at(hour, 0),
                checklist_percent,
                sentiment,
            })
        };
        let scores = [
            score("101", 9, 92.5, Sentiment::Positive),
            score("102", 10, 71.0, Sentiment::Neutral),
        ]
        .into_iter()
        .flatten()
        .collect();
        let joined_at = LocalDateTime::parse("2025-03-01 09:00:00").ok();
        let operator = |n: &str, name: &str, staff_role: Option<&str>| {
            Some(Operator {
                agent_number: agent(n)?,
                name: name.into(),
                team: "A".into(),
                shift: "day".into(),
                staff_role: staff_role.map(Into::into),
                joined_at: joined_at?,
            })
        };
        let roster: Vec<Operator> = [
            operator("101", "Oʻtkir Karimov", None),
            operator("102", "Dilnoza Yusupova", None),
            operator("190", "Malika Rahimova", Some("supervisor")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let off_days = agent("102")
            .map(|agent_number| OffDayRecord {
                agent_number,
                date: day,
                kind: OffDayKind::Dam,
                source: OffDaySource::Auto,
            })
            .into_iter()
            .collect();
        let sheet = Sheet {
            id: 12,
            name: "Noyabr 2026".into(),
            month,
            shift: "day".into(),
            updated_at: LocalDateTime::parse("2026-11-20 18:00:00").ok()?,
        };
        let row = |row, agent_number: Option<&str>, name: &str, kpi_percent, kpi_sum, payout| {
            KpiOperatorRow {
                agent_number: agent_number.and_then(agent),
                name: name.into(),
                row,
                kpi_percent,
                kpi_sum,
                fiksa: Some(3_000_000.0),
                bonus: Some(250_000.0),
                fine: None,
                payout: Some(payout),
                metrics: vec![Metric {
                    name: "AHT".into(),
                    value: 182.0,
                    ratio: Some(0.95),
                    kpi: 400_000.0,
                }],
            }
        };
        let content = SheetContent {
            sheet_totals: KpiTotals {
                kpi_sum: Some(2_250_000.0),
                fiksa: None,
                bonus: Some(500_000.0),
                fine: None,
                payout: Some(9_200_000.0),
            },
            operators: vec![
                row(
                    5,
                    Some("101"),
                    "Oʻtkir Karimov",
                    0.92,
                    1_300_000.0,
                    4_550_000.0,
                ),
                row(6, None, "Sardor Aliyev", 0.7841, 950_000.0, 4_200_000.0),
            ],
        };
        let text = |uz: &str, ru: &str| LocalizedText {
            uz: uz.into(),
            ru: ru.into(),
        };
        let scripts = vec![
            Script {
                id: 1,
                title: text("Salomlashish", "Приветствие"),
                category: text("Kirish", "Вступление"),
                views: 412,
            },
            Script {
                id: 7,
                title: text("E'tirozlar bilan ishlash", "Работа с возражениями"),
                category: text("Savdo", "Продажи"),
                views: 268,
            },
        ];
        let key_info = KeyInfo {
            ok: true,
            key_name: "partner-dashboard".into(),
            scopes: ScopeSet::parse_list("calls,kpi:aggregate,operators").ok()?,
            rate_limit_per_minute: 120,
            available_scopes: ScopeSet::all(),
            server_time: "2026-11-21T06:15:30.123Z".into(),
        };
        Some(Self {
            key_info,
            range,
            month,
            calls,
            scores,
            roster,
            off_days,
            sheet,
            content,
            scripts,
        })
    }
}
