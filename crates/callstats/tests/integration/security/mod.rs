//! Nothing secret leaks: a scripted session over every endpoint against a spawned
//! `callstats demo` (JSON logs at debug level, upstream behind a bearer token), with every
//! response body, header and log line kept and scanned for key plaintext, the upstream token,
//! usernames and phones. The aggregate KPI view, asked every way, carries no name and no agent
//! number, even right after the detail view of the same sheet was cached.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use callstats_domain::calendar::Day;
use callstats_sim::{RunningSim, SimOptions, spawn_sim};
use serde_json::Value;

const ANCHOR: &str = "2026-11-21";
const UPSTREAM_TOKEN: &str = "upstream-token-7f3a9c1e5b2d4f6a8c0e";
/// Shaped like a key, never issued: a guess must not be echoed anywhere either.
const GUESSED_KEY: &str = "cs_AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjjjKKK";

use crate::support::demo;

use demo::Demo;

fn callstats(dir: &Path, args: &[&str]) -> String {
    crate::support::callstats_stdout(args, |command| {
        command
            .args(["--database-url", "sqlite://callstats-demo.db"])
            .current_dir(dir);
    })
    .trim()
    .to_owned()
}

/// Issues a key named `name` with `scopes` (and `extra` options) through the binary: its secret.
fn create_key(dir: &Path, name: &str, scopes: &str, extra: &[&str]) -> String {
    let args = [
        &["keys", "create", "--name", name, "--scopes", scopes],
        extra,
    ]
    .concat();
    callstats(dir, &args)
}

/// The sim, asking for [`UPSTREAM_TOKEN`].
fn sim_behind_token() -> RunningSim {
    spawn_sim(SimOptions {
        token: Some(UPSTREAM_TOKEN.to_owned()),
        ..SimOptions::default()
    })
    .unwrap()
}

/// The demo, over a database seeded at a fixed anchor so the test knows its people, with JSON
/// logs at debug level and the upstream behind a token.
fn demo(name: &str, upstream: &str) -> Demo {
    demo_with(name, upstream, &[])
}

fn demo_with(name: &str, upstream: &str, env: &[(&str, &str)]) -> Demo {
    Demo::start(name, |dir, command| {
        callstats(dir, &["seed", "--demo", "--anchor", ANCHOR]);
        command
            .env("CALLSTATS_CALL_PLATFORM_URL", upstream)
            .env("CALLSTATS_CALL_PLATFORM_TOKEN", UPSTREAM_TOKEN)
            .env("CALLSTATS_LOG_FORMAT", "json")
            .env("RUST_LOG", "debug")
            .envs(env.iter().copied());
    })
}

/// What must never be seen: keys, the upstream token, usernames and phones of the data set.
fn secrets(keys: &[&str]) -> Vec<String> {
    let anchor = Day::parse(ANCHOR).unwrap();
    let fixture = callstats_synthetic::portal_fixture(callstats_synthetic::DEFAULT_SEED, anchor);
    let mut secrets: Vec<String> = keys.iter().map(|&key| key.to_owned()).collect();
    secrets.push(UPSTREAM_TOKEN.to_owned());
    for operator in &fixture.operators {
        secrets.extend(operator.username.clone());
        if let Some(phone) = &operator.phone {
            secrets.push(phone.clone());
            let digits: String = phone.chars().filter(char::is_ascii_digit).collect();
            if digits.len() >= 9 {
                secrets.push(digits);
            }
        }
    }
    let people = fixture
        .operators
        .iter()
        .filter(|o| o.username.is_some())
        .count();
    assert!(people > 0, "the demo data set has no usernames to look for");
    secrets
}

/// Everything the client saw of one exchange.
struct Seen {
    what: String,
    status: u16,
    text: String,
}

struct Session {
    client: reqwest::Client,
    base: String,
    seen: Vec<Seen>,
}

impl Session {
    /// A session against `base`, having seen nothing yet.
    fn new(base: String) -> Self {
        callstats_callplatform::install_crypto_provider();
        Self {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base,
            seen: Vec::new(),
        }
    }

    async fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let mut request = self.client.get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let mut text = String::new();
        for (name, value) in response.headers() {
            text.push_str(&format!(
                "{name}: {}\n",
                String::from_utf8_lossy(value.as_bytes())
            ));
        }
        let body = response.text().await.unwrap();
        text.push_str(&body);
        let names: Vec<&str> = headers.iter().map(|(name, _)| *name).collect();
        self.seen.push(Seen {
            what: format!("GET {path} with {names:?}"),
            status,
            text,
        });
        (status, body)
    }
}

fn names_and_agent_numbers() -> (BTreeSet<String>, BTreeSet<String>) {
    let anchor = Day::parse(ANCHOR).unwrap();
    let fixture = callstats_synthetic::portal_fixture(callstats_synthetic::DEFAULT_SEED, anchor);
    let mut names = BTreeSet::new();
    let mut numbers = BTreeSet::new();
    for operator in &fixture.operators {
        names.insert(operator.name.clone());
        numbers.insert(operator.agent_number.to_string());
    }
    for sheet in &fixture.kpi_sheets {
        for row in &sheet.operators {
            names.insert(row.name.clone());
            numbers.extend(row.agent_number.as_ref().map(ToString::to_string));
        }
    }
    (names, numbers)
}

/// Every object key and every string value in a JSON document.
fn walk(value: &Value, keys: &mut Vec<String>, strings: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                keys.push(key.clone());
                walk(value, keys, strings);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| walk(item, keys, strings)),
        Value::String(text) => strings.push(text.clone()),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_token_username_or_phone_appears_in_any_response_header_body_or_log_line() {
    let sim = sim_behind_token();
    let demo = demo("scan", &sim.base_url());
    let aggregate = create_key(&demo.dir, "aggregate", "kpi:aggregate", &[]);
    let nothing = create_key(&demo.dir, "nothing", "", &[]);
    let mut session = Session::new(demo.base());

    let bearer = |key: &str| format!("Bearer {key}");
    let (every, every_bearer) = (demo.key.clone(), bearer(&demo.key));
    let (aggregate_bearer, nothing_bearer, guessed_bearer) =
        (bearer(&aggregate), bearer(&nothing), bearer(GUESSED_KEY));
    let paths = [
        "/api/v1/ping",
        "/api/v1/calls/summary?start=2026-11-20",
        "/api/v1/calls/summary?start=2026-11-01&end=2026-11-20&direction=outbound",
        "/api/v1/calls/agents?start=2026-11-01&end=2026-11-20",
        "/api/v1/kpi/months",
        "/api/v1/kpi/2026-11",
        "/api/v1/kpi/2026-10?shift=night",
        "/api/v1/operators",
        "/api/v1/schedule?month=2026-11",
        "/api/v1/scripts/stats?limit=100",
        "/api/v1/openapi.json",
        "/api/v1/calls/summary?start=2026-13-01",
        "/api/v1/kpi/1999-01",
        "/api/v1/unknown",
        "/healthz",
        "/readyz",
    ];
    let credentials: [&[(&str, &str)]; 7] = [
        &[("authorization", &every_bearer)],
        &[("x-api-key", &every)],
        &[("authorization", &aggregate_bearer)],
        &[("authorization", &nothing_bearer)],
        &[("authorization", &guessed_bearer)],
        &[("x-api-key", GUESSED_KEY)],
        &[],
    ];
    for headers in credentials {
        for path in paths {
            session.get(path, headers).await;
        }
    }
    // A key that does not match between the two headers, and an origin the key is not for.
    session
        .get(
            "/api/v1/ping",
            &[("authorization", &every_bearer), ("x-api-key", &aggregate)],
        )
        .await;
    let every_ok = session
        .seen
        .iter()
        .filter(|seen| seen.what.contains("authorization") && seen.status == 200)
        .count();
    assert!(
        every_ok >= 10,
        "the session hardly reached the data ({every_ok} answers 200)"
    );
    // Let the last log lines reach the pipe.
    tokio::time::sleep(Duration::from_millis(300)).await;

    for seen in &session.seen {
        let head = seen.text.to_ascii_lowercase();
        assert!(
            head.contains("x-content-type-options: nosniff\n"),
            "{}: {}",
            seen.what,
            seen.text
        );
        // Only a data answer may be kept, and then by the partner's own client alone; the
        // document is revalidated each time.
        assert!(
            head.contains("cache-control: no-store\n")
                || (seen.status == 200
                    && (head.contains("cache-control: private, max-age=")
                        || head.contains("cache-control: no-cache\n"))),
            "{}: {}",
            seen.what,
            seen.text
        );
        assert!(
            !head.starts_with("server:") && !head.contains("\nserver:"),
            "{}: {}",
            seen.what,
            seen.text
        );
    }

    let secrets = secrets(&[&every, &aggregate, &nothing, GUESSED_KEY]);
    let logs = demo.logs.lock().unwrap().clone();
    assert!(
        logs.iter()
            .any(|line| line.contains("\"request\"") || line.contains("request")),
        "no request was logged: {logs:?}"
    );
    for secret in &secrets {
        for seen in &session.seen {
            assert!(
                !seen.text.contains(secret.as_str()),
                "{}: the answer carries a secret ({} chars): {}",
                seen.what,
                secret.len(),
                seen.text
            );
        }
        for line in &logs {
            assert!(
                !line.contains(secret.as_str()),
                "a log line carries a secret ({} chars): {line}",
                secret.len()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aggregate_kpi_view_never_carries_a_name_or_agent_number_for_any_month_or_shift() {
    let sim = sim_behind_token();
    let demo = demo("aggregate", &sim.base_url());
    let aggregate = create_key(
        &demo.dir,
        "aggregate",
        "kpi:aggregate",
        &["--rate-limit", "100000"],
    );
    let detail = create_key(
        &demo.dir,
        "detail",
        "kpi:detail",
        &["--rate-limit", "100000"],
    );
    let mut session = Session::new(demo.base());
    let (aggregate_bearer, detail_bearer) =
        (format!("Bearer {aggregate}"), format!("Bearer {detail}"));
    let (status, body) = session
        .get(
            "/api/v1/kpi/months",
            &[("authorization", &aggregate_bearer)],
        )
        .await;
    assert_eq!(status, 200);
    let months: Value = serde_json::from_str(&body).unwrap();
    let mut asked: Vec<String> = Vec::new();
    let mut months_seen = BTreeSet::new();
    for sheet in months["sheets"].as_array().unwrap() {
        let (month, shift) = (
            sheet["month"].as_str().unwrap(),
            sheet["shift"].as_str().unwrap(),
        );
        months_seen.insert(month.to_owned());
        let encoded: String = form_encode(shift);
        asked.push(format!("/api/v1/kpi/{month}?shift={encoded}"));
    }
    // Without a shift (the default one), and a shift that does not exist (a 404 that lists
    // the shifts: it must not list people either).
    for month in &months_seen {
        asked.push(format!("/api/v1/kpi/{month}"));
        asked.push(format!("/api/v1/kpi/{month}?shift=nobody"));
    }
    assert!(
        asked.len() > 3,
        "the demo data set has hardly any sheets: {asked:?}"
    );

    let (names, numbers) = names_and_agent_numbers();
    for path in &asked {
        // The detail view first, so a cache keyed carelessly would hand it to the next caller.
        let (status, _) = session
            .get(path, &[("authorization", &detail_bearer)])
            .await;
        assert!(
            [200, 404].contains(&status),
            "{path} with kpi:detail: {status}"
        );
        let (status, body) = session
            .get(path, &[("authorization", &aggregate_bearer)])
            .await;
        assert!([200, 404].contains(&status), "{path}: {status}");
        let document: Value = serde_json::from_str(&body).unwrap();
        if status == 200 {
            assert_eq!(document["granularity"], "aggregate", "{path}: {body}");
        }
        let (mut keys, mut strings) = (Vec::new(), Vec::new());
        walk(&document, &mut keys, &mut strings);
        for key in &keys {
            assert!(
                ![
                    "operators",
                    "agent_number",
                    "sheet_totals",
                    "username",
                    "phone"
                ]
                .contains(&key.as_str()),
                "{path}: the aggregate view has `{key}`: {body}"
            );
        }
        for text in &strings {
            assert!(
                !names.contains(text),
                "{path}: the aggregate view names {text:?}"
            );
            assert!(
                !numbers.contains(text),
                "{path}: the aggregate view has agent {text:?}"
            );
            for name in &names {
                assert!(
                    !text.contains(name.as_str()),
                    "{path}: {text:?} names {name:?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_keys_over_http_is_slowed_to_429_by_the_per_ip_quota() {
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let demo = demo_with(
        "guessing",
        &sim.base_url(),
        &[("CALLSTATS_ANON_RATE_LIMIT", "5")],
    );
    callstats_callplatform::install_crypto_provider();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    // The window is the clock minute: start well inside one, so all guesses share it.
    let into_minute = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 60;
    if into_minute > 50 {
        tokio::time::sleep(Duration::from_secs(61 - into_minute)).await;
    }
    let mut statuses = Vec::new();
    for i in 0..8 {
        let guess = format!("cs_{i:0>43}");
        let answer = client
            .get(format!("{}/api/v1/ping", demo.base()))
            .bearer_auth(&guess)
            .send()
            .await
            .unwrap();
        if answer.status() == 429 {
            assert_eq!(answer.headers()["retry-after"], "60");
        }
        statuses.push(answer.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
    // The real key is never held back by the anonymous quota.
    let real = client
        .get(format!("{}/api/v1/ping", demo.base()))
        .bearer_auth(&demo.key)
        .send()
        .await
        .unwrap();
    assert_eq!(real.status(), 200);
}

fn form_encode(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
