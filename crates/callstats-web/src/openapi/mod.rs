//! The OpenAPI 3.1 document, generated from the routes and the answers' types: paths come from
//! the registered handlers, schemas from the types they answer with, and one table-driven pass
//! adds what every operation shares (errors, rate-limit and cache headers, the conditional and
//! compressed answers, security, examples). Examples are produced by the domain's own
//! functions, so they show what the API really sends.

mod conventions;
mod errors;
mod examples;
mod schemas;

use std::sync::LazyLock;

use actix_web::App;
use bytes::Bytes;
use callstats_domain::request::Endpoint;
use utoipa::OpenApi as _;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{OpenApi, RefOr};
use utoipa_actix_web::AppExt as _;

use crate::PREFIX;
use crate::problem::{ErrorBody, PROBLEMS, Problem, ProblemDetails, ProblemType};
use conventions::{
    NOSNIFF, REQUEST_ID, add_response_headers, add_security_schemes, complete_operation,
};
pub use errors::PROXY_ERRORS;
use schemas::complete_schemas;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "callstats",
        description = include_str!("summary.md"),
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0")
    ),
    // The document names the root of whatever address it was fetched from, as OpenAPI's
    // default does, so that it holds for every deployment and its paths stay absolute.
    servers((url = "/", description = "The deployment that served this document: every path is absolute from its root.")),
    components(schemas(ErrorBody, ProblemDetails)),
    tags(
        (name = "key", description = "The calling key."),
        (name = "calls", description = "Call volumes, peaks and the agent leaderboard (scope calls)."),
        (name = "kpi", description = "Monthly KPI and payout sheets (scope kpi:aggregate; kpi:detail for names)."),
        (name = "operators", description = "Roster and off-day schedule (scope operators)."),
        (name = "scripts", description = "Script view counts (scope scripts)."),
        (name = "meta", description = "This document and the problem types of its errors."),
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
        .configure(crate::register)
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
        if api_path.starts_with(PROBLEMS) {
            describe_problem_types(operation);
        }
        complete_operation(operation, endpoint);
    }
    doc
}

/// The problem types' operation: an example of its 200, and its 404 (before the conventions
/// add the headers every answer carries).
fn describe_problem_types(operation: &mut Operation) {
    let responses = &mut operation.responses.responses;
    if let Some(RefOr::T(ok)) = responses.get_mut("200")
        && let Some(RefOr::T(content)) = ok.content.get_mut("application/json")
    {
        content.example = serde_json::to_value(ProblemType::from(Problem::MissingScope)).ok();
    }
    responses.insert("404".into(), RefOr::T(errors::error_response(404, None)));
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
