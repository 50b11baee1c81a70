//! The OpenAPI document against what the serialiser really writes: every response body of
//! every documented operation (the document's own examples, and real answers of the app over a
//! small portal with nulls and non-nulls in every nullable field) is walked along its response
//! schema. A property present in every body that reaches an object schema must be `required`
//! there, a `required` property must be in every such body, and a null must land on a nullable
//! schema (docs/behaviour.md: fields that may be null are still always sent).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use actix_web::test::TestRequest;
use async_trait::async_trait;
use callstats_domain::calendar::{LocalDateTime, Month};
use callstats_domain::model::{
    AgentNumber, CallRecord, KpiOperatorRow, KpiTotals, Metric, Sheet, SheetContent,
};
use callstats_domain::params::Direction;
use callstats_web::ops::Probe;
use serde_json::Value;
use time::macros::datetime;

use crate::helpers::*;

/// Per object schema (by its location in the document): how many bodies reached it, and how
/// many of them held each property it declares.
#[derive(Default)]
struct Seen {
    instances: usize,
    present: BTreeMap<String, usize>,
    required: BTreeSet<String>,
}

struct Walk<'d> {
    doc: &'d Value,
    seen: BTreeMap<String, Seen>,
    errors: Vec<String>,
}

impl<'d> Walk<'d> {
    fn new(doc: &'d Value) -> Self {
        Self {
            doc,
            seen: BTreeMap::new(),
            errors: Vec::new(),
        }
    }

    /// `#/components/schemas/X` to its location and schema.
    fn resolve(&self, reference: &str) -> (String, &'d Value) {
        let pointer = reference.trim_start_matches('#');
        let schema = self
            .doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("dangling reference {reference}"));
        (reference.to_owned(), schema)
    }

    fn nullable(&self, schema: &Value) -> bool {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            return self.nullable(self.resolve(reference).1);
        }
        let by_type = match schema.get("type") {
            Some(Value::String(t)) => t == "null",
            Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
            _ => false,
        };
        let by_enum = schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.contains(&Value::Null));
        let by_branch = ["oneOf", "anyOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.iter().any(|b| self.nullable(b)))
        });
        by_type || by_enum || by_branch
    }

    /// Whether `value` fits the single-value enums (tags) a branch declares, through `$ref`s
    /// and `allOf`s: how an untagged `oneOf` is told apart.
    fn fits_tags(&self, schema: &Value, value: &Value) -> bool {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            return self.fits_tags(self.resolve(reference).1, value);
        }
        let parts_fit = schema
            .get("allOf")
            .and_then(Value::as_array)
            .is_none_or(|parts| parts.iter().all(|p| self.fits_tags(p, value)));
        let tags_fit = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|properties| {
                properties.iter().all(|(name, property)| {
                    match property.get("enum").and_then(Value::as_array) {
                        Some(values) if values.len() == 1 => value.get(name) == values.first(),
                        _ => true,
                    }
                })
            });
        value.is_object() && parts_fit && tags_fit
    }

    fn walk(&mut self, location: &str, schema: &'d Value, value: &Value, path: &str) {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let (location, target) = self.resolve(reference);
            return self.walk(&location, target, value, path);
        }
        if value.is_null() {
            if !self.nullable(schema) {
                self.errors
                    .push(format!("{path} is null but {location} is not nullable"));
            }
            return;
        }
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
            let chosen = self.choose(schema, branches, value, path);
            if let Some((index, branch)) = chosen {
                self.walk(&format!("{location}/oneOf/{index}"), branch, value, path);
            }
        }
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            for (index, part) in parts.iter().enumerate() {
                self.walk(&format!("{location}/allOf/{index}"), part, value, path);
            }
        }
        if let (Some(properties), Some(object)) = (
            schema.get("properties").and_then(Value::as_object),
            value.as_object(),
        ) {
            let required: BTreeSet<String> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let seen = self.seen.entry(location.to_owned()).or_default();
            seen.instances += 1;
            seen.required = required;
            for name in properties.keys() {
                let count = seen.present.entry(name.clone()).or_default();
                if object.contains_key(name) {
                    *count += 1;
                }
            }
            for (name, property) in properties {
                if let Some(field) = object.get(name) {
                    self.walk(
                        &format!("{location}/properties/{name}"),
                        property,
                        field,
                        &format!("{path}.{name}"),
                    );
                }
            }
        }
        if let (Some(items), Some(elements)) = (schema.get("items"), value.as_array()) {
            for (index, element) in elements.iter().enumerate() {
                self.walk(
                    &format!("{location}/items"),
                    items,
                    element,
                    &format!("{path}[{index}]"),
                );
            }
        }
    }

    /// The branch of a `oneOf` a (non-null) value is an instance of: by the discriminator when
    /// there is one, else the only non-null branch, else the first whose tags it fits.
    fn choose(
        &mut self,
        schema: &'d Value,
        branches: &'d [Value],
        value: &Value,
        path: &str,
    ) -> Option<(usize, &'d Value)> {
        if let Some(discriminator) = schema.get("discriminator") {
            let property = discriminator["propertyName"].as_str().unwrap_or_default();
            let tag = value
                .get(property)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let target = discriminator["mapping"][tag].as_str().unwrap_or_default();
            let found = branches
                .iter()
                .enumerate()
                .find(|(_, b)| b.get("$ref").and_then(Value::as_str) == Some(target));
            if found.is_none() {
                self.errors
                    .push(format!("{path}: no branch for {property} = {tag:?}"));
            }
            return found;
        }
        let candidates: Vec<(usize, &Value)> = branches
            .iter()
            .enumerate()
            .filter(|(_, b)| b.get("type") != Some(&Value::from("null")))
            .collect();
        if let [single] = candidates.as_slice() {
            return Some(*single);
        }
        let found = candidates
            .into_iter()
            .find(|(_, b)| self.fits_tags(b, value));
        if found.is_none() {
            self.errors.push(format!("{path}: fits no branch"));
        }
        found
    }

    fn finish(mut self) -> Vec<String> {
        for (location, seen) in &self.seen {
            for (name, &count) in &seen.present {
                let required = seen.required.contains(name);
                if count == seen.instances && !required {
                    self.errors.push(format!(
                        "{location}: `{name}` is in all {count} instances but not required"
                    ));
                }
                if count < seen.instances && required {
                    self.errors.push(format!(
                        "{location}: `{name}` is required but absent from {} of {} instances",
                        seen.instances - count,
                        seen.instances
                    ));
                }
            }
        }
        self.errors
    }
}

fn document() -> Value {
    serde_json::from_slice(&callstats_web::openapi::document_bytes()).unwrap()
}

const JSON: &str = "application/json";
const PROBLEM_JSON: &str = "application/problem+json";

/// The JSON schema of `status` answers of the GET at `path`, as `media`.
fn response_schema<'d>(doc: &'d Value, path: &str, status: u16, media: &str) -> Option<&'d Value> {
    doc["paths"][path]["get"]["responses"][status.to_string()]["content"][media].get("schema")
}

/// The portal of the helpers plus a December sheet where every nullable KPI figure is null,
/// and calls on a day nobody scored.
fn app() -> TestApp {
    let mut store = portal();
    let sheet = Sheet {
        id: 40,
        name: "Dekabr".into(),
        month: Month::parse("2026-12").unwrap(),
        shift: "day".into(),
        updated_at: LocalDateTime::parse("2026-12-20 18:00:00").unwrap(),
    };
    let row = |row| KpiOperatorRow {
        agent_number: None,
        name: format!("Row {row}"),
        row,
        kpi_percent: 0.5,
        kpi_sum: 10.0,
        fiksa: None,
        bonus: None,
        fine: None,
        payout: None,
        metrics: vec![Metric {
            name: "AHT".into(),
            value: 1.0,
            ratio: None,
            kpi: 0.0,
        }],
    };
    store.sheets.push((
        sheet,
        true,
        SheetContent {
            sheet_totals: KpiTotals::default(),
            operators: vec![row(3), row(4)],
        },
    ));
    let mut calls = calls();
    calls.push(CallRecord {
        direction: Direction::Inbound,
        agent_number: Some(AgentNumber::new("102").unwrap()),
        started_at: datetime!(2026-11-04 10:00 +05:00).unix_timestamp(),
        duration_seconds: 30.0,
        wait_seconds: None,
        queue: None,
    });
    TestApp::with(
        store,
        FakePlatform {
            calls,
            live: std::sync::Mutex::new(Some(live_snapshot(2))),
            ..FakePlatform::default()
        },
        false,
    )
}

struct Unreachable;

#[async_trait]
impl Probe for Unreachable {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn check(&self) -> Result<(), String> {
        Err("connection refused".into())
    }
}

/// Real answers: (documented path, status, body).
async fn real_bodies() -> Vec<(String, u16, Value)> {
    let app = app();
    let every = app.key(1, "calls,kpi:detail,operators,scripts", 10_000, None);
    let aggregate = app.key(2, "kpi:aggregate", 10_000, None);
    let nothing = app.key(3, "", 10_000, None);
    let service = app.service().await;
    let asked: Vec<(&str, &str, &Key)> = vec![
        ("/api/v1/ping", "/api/v1/ping", &every),
        ("/api/v1/ping", "/api/v1/ping", &aggregate),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-11-02",
            &every,
        ),
        ("/api/v1/calls/live", "/api/v1/calls/live", &every),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-11-01&end=2026-11-05&direction=outbound",
            &every,
        ),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-11-02",
            &nothing,
        ),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-02-30",
            &every,
        ),
        (
            "/api/v1/calls/agents",
            "/api/v1/calls/agents?start=2026-11-01&end=2026-11-05",
            &every,
        ),
        (
            "/api/v1/calls/agents",
            "/api/v1/calls/agents?start=2026-11-04",
            &every,
        ),
        (
            "/api/v1/calls/agents",
            "/api/v1/calls/agents?start=2026-11-01&end=2026-11-05&queue=sales",
            &every,
        ),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-11-01&end=2026-11-05&sl_threshold=30&queue=sales",
            &every,
        ),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-11-01&queue=nobody",
            &every,
        ),
        (
            "/api/v1/calls/queues",
            "/api/v1/calls/queues?start=2026-11-01&end=2026-11-05",
            &every,
        ),
        (
            "/api/v1/calls/queues",
            "/api/v1/calls/queues?start=2026-11-01&end=2026-11-05&direction=outbound",
            &every,
        ),
        (
            "/api/v1/calls/queues",
            "/api/v1/calls/queues?start=2026-11-01&sl_threshold=0",
            &every,
        ),
        (
            "/api/v1/calls/intervals",
            "/api/v1/calls/intervals?start=2026-11-01&end=2026-11-05&interval=60",
            &every,
        ),
        (
            "/api/v1/calls/intervals",
            "/api/v1/calls/intervals?start=2026-11-04&interval=15&queue=sales",
            &every,
        ),
        (
            "/api/v1/calls/intervals",
            "/api/v1/calls/intervals?start=2026-11-01&direction=outbound",
            &every,
        ),
        (
            "/api/v1/calls/intervals",
            "/api/v1/calls/intervals?start=2026-11-01&interval=45",
            &every,
        ),
        (
            "/api/v1/calls/trend",
            "/api/v1/calls/trend?start=2026-10-20&end=2026-11-05",
            &every,
        ),
        (
            "/api/v1/calls/trend",
            "/api/v1/calls/trend?start=2026-11-01&granularity=day&queue=nobody&direction=outbound",
            &every,
        ),
        (
            "/api/v1/calls/trend",
            "/api/v1/calls/trend?start=2026-11-01&granularity=year",
            &every,
        ),
        (
            "/api/v1/calls/summary",
            "/api/v1/calls/summary?start=2026-11-02&end=2026-11-03&compare=previous_week&short_abandon=5",
            &every,
        ),
        ("/api/v1/kpi/months", "/api/v1/kpi/months", &every),
        ("/api/v1/kpi/{month}", "/api/v1/kpi/2026-11", &every),
        ("/api/v1/kpi/{month}", "/api/v1/kpi/2026-12", &every),
        ("/api/v1/kpi/{month}", "/api/v1/kpi/2026-11", &aggregate),
        ("/api/v1/kpi/{month}", "/api/v1/kpi/2026-12", &aggregate),
        ("/api/v1/kpi/{month}", "/api/v1/kpi/2026-08", &every),
        ("/api/v1/operators", "/api/v1/operators", &every),
        ("/api/v1/schedule", "/api/v1/schedule?month=2026-11", &every),
        ("/api/v1/schedule", "/api/v1/schedule?month=2026-07", &every),
        (
            "/api/v1/scripts/stats",
            "/api/v1/scripts/stats?limit=3",
            &every,
        ),
        ("/api/v1/scripts/stats", "/api/v1/scripts/stats", &aggregate),
        ("/api/v1/openapi.json", "/api/v1/openapi.json", &every),
        (
            "/api/v1/problems/{name}",
            "/api/v1/problems/missing-scope",
            &every,
        ),
        ("/api/v1/problems/{name}", "/api/v1/problems/nope", &every),
    ];
    let mut bodies = Vec::new();
    for (path, uri, key) in asked {
        let answer = ask(&service, uri, key).await;
        bodies.push((path.to_owned(), answer.status, answer.json()));
    }
    let unauthorised = send(&service, TestRequest::get().uri("/api/v1/operators")).await;
    bodies.push((
        "/api/v1/operators".to_owned(),
        unauthorised.status,
        unauthorised.json(),
    ));
    let healthz = send(&service, TestRequest::get().uri("/healthz")).await;
    bodies.push(("/healthz".to_owned(), healthz.status, healthz.json()));
    let readyz = send(&service, TestRequest::get().uri("/readyz")).await;
    bodies.push(("/readyz".to_owned(), readyz.status, readyz.json()));

    let mut unready = TestApp::new();
    unready.state = unready
        .state
        .clone()
        .with_probes(vec![Arc::new(Unreachable)]);
    let service = unready.service().await;
    let readyz = send(&service, TestRequest::get().uri("/readyz")).await;
    bodies.push(("/readyz".to_owned(), readyz.status, readyz.json()));
    bodies
}

/// Real error answers as problem details: (documented path, status, body).
async fn real_problem_bodies() -> Vec<(String, u16, Value)> {
    let app = app();
    let every = app.key(1, "calls,kpi:detail,operators,scripts", 10_000, None);
    let nothing = app.key(3, "", 10_000, None);
    let service = app.service().await;
    let asked: Vec<(&str, TestRequest)> = vec![
        (
            "/api/v1/calls/summary",
            get("/api/v1/calls/summary?start=2026-02-30", &every),
        ),
        (
            "/api/v1/calls/summary",
            get("/api/v1/calls/summary?start=2026-11-02", &nothing),
        ),
        (
            "/api/v1/operators",
            TestRequest::get().uri("/api/v1/operators"),
        ),
        ("/api/v1/kpi/{month}", get("/api/v1/kpi/2026-08", &every)),
        (
            "/api/v1/problems/{name}",
            get("/api/v1/problems/nope", &every),
        ),
    ];
    let mut bodies = Vec::new();
    for (path, request) in asked {
        let request = request.insert_header(("Accept", PROBLEM_JSON));
        let answer = send(&service, request).await;
        assert_eq!(answer.header("content-type"), PROBLEM_JSON, "{path}");
        bodies.push((path.to_owned(), answer.status, answer.json()));
    }
    bodies
}

/// The document's examples as `media`: (path, status, body).
fn example_bodies(doc: &Value, media: &str) -> Vec<(String, u16, Value)> {
    let mut bodies = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (status, response) in item["get"]["responses"].as_object().unwrap() {
            let Ok(status) = status.parse::<u16>() else {
                continue;
            };
            let content = &response["content"][media];
            if let Some(example) = content.get("example") {
                bodies.push((path.clone(), status, example.clone()));
            }
            for example in content
                .get("examples")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|e| e.values())
            {
                bodies.push((path.clone(), status, example["value"].clone()));
            }
        }
    }
    bodies
}

fn walk_all(doc: &Value, bodies: &[(String, u16, Value)], media: &str) -> Vec<String> {
    let mut walk = Walk::new(doc);
    for (path, status, body) in bodies {
        match response_schema(doc, path, *status, media) {
            Some(schema) => walk.walk(
                &format!("{path} {status}"),
                schema,
                body,
                &format!("{path} {status} body"),
            ),
            None => walk
                .errors
                .push(format!("{path} answered {status}, which is not documented")),
        }
    }
    walk.finish()
}

#[actix_web::test]
async fn every_field_the_serialiser_always_writes_is_required_and_nulls_are_nullable() {
    let doc = document();
    let real = real_bodies().await;
    // Every documented 200 got at least one real body.
    for path in doc["paths"].as_object().unwrap().keys() {
        assert!(
            real.iter()
                .any(|(p, status, _)| p == path && *status == 200),
            "no real 200 body of {path}"
        );
    }
    let bodies: Vec<_> = real.into_iter().chain(example_bodies(&doc, JSON)).collect();
    let mut errors = walk_all(&doc, &bodies, JSON);
    let problems: Vec<_> = real_problem_bodies()
        .await
        .into_iter()
        .chain(example_bodies(&doc, PROBLEM_JSON))
        .collect();
    errors.extend(walk_all(&doc, &problems, PROBLEM_JSON));
    assert!(errors.is_empty(), "{errors:#?}");
}

#[actix_web::test]
async fn the_walk_fails_on_an_optional_field_always_written_and_on_an_unexpected_null() {
    let mut doc = document();
    let real = real_bodies().await;
    // `staff_role` is always written: dropping it from `required` must be caught.
    let required = doc["components"]["schemas"]["Operator"]["required"]
        .as_array_mut()
        .unwrap();
    required.retain(|name| name != "staff_role");
    let errors = walk_all(&doc, &real, JSON);
    assert!(
        errors.iter().any(|e| e.contains("`staff_role`")),
        "{errors:#?}"
    );
    // A null where the schema does not allow one must be caught.
    doc["components"]["schemas"]["Operator"]["properties"]["staff_role"] =
        serde_json::json!({"type": "string"});
    let errors = walk_all(&doc, &real, JSON);
    assert!(
        errors.iter().any(|e| e.contains("staff_role is null")),
        "{errors:#?}"
    );
}

#[test]
fn the_kpi_body_is_a_one_of_of_complete_objects_with_a_discriminator() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let kpi = &schemas["KpiMonthResponse"];
    assert_eq!(
        kpi["oneOf"],
        serde_json::json!([
            {"$ref": "#/components/schemas/KpiDetail"},
            {"$ref": "#/components/schemas/KpiAggregate"},
        ])
    );
    assert_eq!(
        kpi["discriminator"],
        serde_json::json!({
            "propertyName": "granularity",
            "mapping": {
                "aggregate": "#/components/schemas/KpiAggregate",
                "detail": "#/components/schemas/KpiDetail",
            },
        })
    );
    for (variant, tag) in [("KpiDetail", "detail"), ("KpiAggregate", "aggregate")] {
        let schema = &schemas[variant];
        assert_eq!(schema["type"], "object", "{variant}");
        assert!(schema.get("allOf").is_none(), "{variant}");
        assert_eq!(schema["required"][0], "granularity", "{variant}");
        assert_eq!(
            schema["properties"]["granularity"],
            serde_json::json!({"type": "string", "enum": [tag]}),
            "{variant}"
        );
        // The variant schemas carry the tag, so they must be the bodies of /kpi/{month} only.
        let reference = format!("\"#/components/schemas/{variant}\"");
        assert_eq!(
            doc.to_string().matches(&reference).count(),
            2,
            "{variant} is referenced outside KpiMonthResponse"
        );
    }
}
