//! What every operation shares: the security schemes, the error statuses each operation
//! answers, and the HTTP conventions' headers (docs/behaviour.md).

use callstats_application::csv_answer::csv_table;
use callstats_application::representation::{self, CSV_MEDIA_TYPE, EVENT_STREAM_MEDIA_TYPE};
use callstats_domain::request::Endpoint;
use serde_json::Value;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    Content, ContentBuilder, HeaderBuilder, OpenApi, RefOr, Required, Response, ResponseBuilder,
};

use super::errors::error_response;
use super::examples::{set_examples, success_examples};

pub(super) fn add_security_schemes(doc: &mut OpenApi) {
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

pub(super) fn complete_operation(operation: &mut Operation, endpoint: Option<Endpoint>) {
    let statuses: &[u16] = match endpoint {
        None => &[400, 413, 414, 429, 431, 500, 503],
        Some(Endpoint::KpiMonth | Endpoint::CallsLive) => {
            &[400, 401, 403, 404, 406, 413, 414, 429, 431, 500, 503]
        }
        Some(_) => &[400, 401, 403, 406, 413, 414, 429, 431, 500, 503],
    };
    if let Some(endpoint) = endpoint {
        operation.security = Some(vec![
            SecurityRequirement::new::<_, _, &str>("bearer", []),
            SecurityRequirement::new::<_, _, &str>("api_key", []),
        ]);
        if let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") {
            let examples = success_examples(endpoint);
            if let Some(csv) = csv_content(endpoint, &examples) {
                ok.description.push_str(CSV_DESCRIPTION);
                ok.content.insert(CSV_MEDIA_TYPE.into(), RefOr::T(csv));
                add_response_headers(ok, &[CONTENT_DISPOSITION]);
            }
            if let Some(RefOr::T(content)) = ok.content.get_mut("application/json") {
                set_examples(content, examples);
            }
            if let Some(RefOr::T(content)) = ok.content.get_mut(EVENT_STREAM_MEDIA_TYPE) {
                content.schema = Some(RefOr::T(event_stream_schema()));
            }
        }
    } else if operation.operation_id.as_deref() == Some("openapi_json")
        && let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200")
    {
        // The document itself: an object whose content is this document.
        ok.content.insert(
            "application/json".into(),
            RefOr::T(
                ContentBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::Object)
                            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(
                                true,
                            ))),
                    ))
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

/// The stream of /calls/live: its events and what their `data` holds.
fn event_stream_schema() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(
            "Server-Sent Events (text/event-stream, UTF-8): `retry: 5000` first; then events, \
             each an `id:` line (the poll's instant in milliseconds, growing), an `event:` line \
             and one `data:` line, ended by a blank line; and a comment `: keep-alive` every 10 \
             s. Event `live`: `data` is one `LiveResponse` (#/components/schemas/LiveResponse) as \
             JSON, sent at once and whenever the figures change. Event `unavailable`: `data` is \
             an `ErrorBody` (#/components/schemas/ErrorBody), sent once when the figures can no \
             longer be had; a `live` event follows when they can.",
        ))
        .examples([Value::from(
            "retry: 5000\n\nid: 1795241700000\nevent: live\ndata: {\"as_of\":\"2026-11-21T06:15:00.000Z\",\"timezone\":\"+05:00\",…}\n\n: keep-alive\n\n",
        )])
        .into()
}

const CSV_DESCRIPTION: &str = " With `Accept` preferring `text/csv` (a quality above that of `application/json` and at least that of `*/*`, as in `text/csv` or `text/csv, */*;q=0.1`): the same rows as CSV (RFC 4180, UTF-8, CRLF, a header row of the JSON field names, nested objects flattened with a dot, null as an empty field, text written with a leading `'` when it begins with a tab or a carriage return or when its first character after leading white space and control characters is `=`, `+`, `-` or `@`, as OWASP's CSV injection guidance says), with its own `ETag`, written with the JSON by one computation so that the two agree while cached; the fields around the array are not in it (docs/behaviour.md, \"CSV\").";

/// The `text/csv` content of a CSV endpoint's 200: its columns, and an example made from the
/// JSON example's first rows by the service's own CSV writer.
fn csv_content(endpoint: Endpoint, examples: &[(&str, Value)]) -> Option<Content> {
    let representation::CsvTable {
        rows_field: field,
        columns,
    } = representation::csv_table(endpoint)?;
    let columns = columns();
    let rows: Vec<Value> = examples
        .first()
        .and_then(|(_, example)| example.get(field)?.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .take(4)
        .collect();
    let example = csv_table(&columns, &rows, usize::MAX)
        .ok()
        .and_then(|body| String::from_utf8(body.to_vec()).ok());
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!(
            "RFC 4180 CSV: the header row `{}`, then one record per entry of `{field}`, in its order.",
            columns.join(",")
        )));
    let mut content = ContentBuilder::new().schema(Some(schema)).build();
    content.example = example.map(Value::String);
    Some(content)
}

/// The HTTP conventions (docs/behaviour.md): conditional requests and compression on the data
/// endpoints, validators and `Cache-Control` on what may be kept, and the headers every
/// counted answer carries.
fn add_conventions(operation: &mut Operation, endpoint: Option<Endpoint>) {
    // (request headers, headers of the 200 and the 304, headers of the 200 only)
    let (requests, validated, ok_only): (&[_], &[_], &[_]) = match endpoint {
        None => (
            &[IF_NONE_MATCH, ACCEPT_ENCODING][..],
            &[ETAG, NO_CACHE, VARY_ENCODING][..],
            &[CONTENT_ENCODING][..],
        ),
        // `Accept` is no parameter (OpenAPI ignores one): the 200's CSV content and the 406
        // say what it does.
        Some(Endpoint::Ping) => (&[], &[], &[NO_STORE]),
        // The stream's 200 is `no-store`, the JSON's as every data answer's.
        Some(Endpoint::CallsLive) => (
            &[IF_NONE_MATCH, ACCEPT_ENCODING],
            &[ETAG, PRIVATE, VARY_DATA],
            &[CONTENT_ENCODING, LIVE_CACHE],
        ),
        Some(_) => (
            &[IF_NONE_MATCH, ACCEPT_ENCODING],
            &[ETAG, PRIVATE, VARY_DATA],
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
pub(super) type HeaderSpec = (&'static str, &'static str, fn() -> Schema);

pub(super) fn add_response_headers(response: &mut Response, specs: &[HeaderSpec]) {
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
const LIVE_CACHE: HeaderSpec = (
    "Cache-Control",
    "`private, max-age=N` on the JSON answer (N the whole seconds left of its 5-second lifetime); `no-store` on the stream.",
    || pattern("^(private, max-age=[0-9]+|no-store)$"),
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
const VARY_ENCODING: HeaderSpec = (
    "Vary",
    "`Accept-Encoding` (sent in lower case): the body's encoding follows that request header.",
    || pattern("^[Aa]ccept-[Ee]ncoding$"),
);
const VARY_DATA: HeaderSpec = (
    "Vary",
    "`Accept, Accept-Encoding, Authorization, X-API-Key, Origin` (sent in lower case), on the 200 and the 304 alike: the representation (JSON, CSV, or a 406) follows `Accept`, the body's encoding `Accept-Encoding`, and what the body holds the key (its scopes choose the KPI view, and whether the answer is a 200 at all; a pinned key refuses another `Origin`). A client-side cache shared by several keys or sites keeps one answer per key and `Origin`, so it never gives one key's answer to another.",
    || {
        pattern(
            "^[Aa]ccept, [Aa]ccept-[Ee]ncoding, [Aa]uthorization, [Xx]-[Aa][Pp][Ii]-[Kk]ey, [Oo]rigin$",
        )
    },
);
const CONTENT_DISPOSITION: HeaderSpec = (
    "Content-Disposition",
    "On a CSV answer only: `attachment; filename=\"<endpoint>-<start>_<end>.csv\"` (the days used, after clamping), `schedule-<month>.csv`, `operators.csv` or `scripts-stats.csv`.",
    || pattern(r#"^attachment; filename="[a-z0-9_-]+(-[0-9_-]+)?\.csv"$"#),
);
const CONTENT_ENCODING: HeaderSpec = (
    "Content-Encoding",
    "`gzip` or `br` when the body is compressed (as `Accept-Encoding` allowed); absent otherwise.",
    || one_of(&["gzip", "br"]),
);
pub(super) const REQUEST_ID: HeaderSpec = (
    "X-Request-Id",
    "Identifies the request in the service's logs: 32 hex digits, 128 random bits, so it tells nothing of the service's traffic or start time.",
    || pattern("^[0-9a-f]{32}$"),
);
pub(super) const NOSNIFF: HeaderSpec = ("X-Content-Type-Options", "Always `nosniff`.", || {
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
        "The same as RFC 9211 says it: `callstats; hit; ttl=N` (N seconds left) or `callstats; fwd=miss`; `callstats; fwd=miss; detail=stale` when call days past their lifetime answered because the call platform failed (never cached).",
        || pattern("^callstats; (hit; ttl=[0-9]+|fwd=miss(; detail=stale)?)$"),
    ),
    REQUEST_ID,
    NOSNIFF,
];
