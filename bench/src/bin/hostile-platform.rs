//! A hostile call platform for the `hostile` benchmark: the upstream contract
//! (docs/call-platform.md) with answers no real platform should send.
//!
//! `hostile-platform ADDR LATENCY_MS NORMAL_FROM` serves `GET /{mode}/calls?from=…&to=…[&cursor=…]` on ADDR
//! until SIGINT/SIGTERM, each answer after LATENCY_MS. Windows from NORMAL_FROM (`YYYY-MM-DD`,
//! Tashkent) on get ten ordinary calls whatever the mode, so a service can hold a few days
//! while the others misbehave. The modes:
//!
//! - `agents`: 100 pages of 1,000 calls, every call with an agent of its own (100,000 a day);
//! - `endless`: pages of 1,000 new calls, each with a next cursor, for ever;
//! - `endless-40`: the same with ids of 40 bytes and one agent: valid calls, so a fetch goes on
//!   until the calls bound (`CALLSTATS_CALL_DAY_MAX_CALLS`);
//! - `long-ids`: the same with ids of 4 KB;
//! - `huge-duration`: one call lasting 1e308 seconds;
//! - `leap-second`: ten calls, one of them at 23:59:60;
//! - anything else: ten ordinary calls.

use std::time::Duration;

use actix_web::http::header::ContentType;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::{Value, json};

const PAGE: usize = 1_000;
const AGENT_PAGES: usize = 100;

struct Settings {
    latency: Duration,
    normal_from: String,
}

/// `name=value` of the query string, percent-decoding `%2B` (the only escape the contract's
/// values use, besides what cursors of ours never hold).
fn param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| value.replace("%2B", "+").replace("%3A", ":"))
    })
}

/// A call of the window starting on `date`, at second `second` of the day.
fn call(id: &str, date: &str, second: usize, agent: Option<&str>, duration: f64) -> Value {
    let second = second % 86_400;
    json!({
        "id": id,
        "direction": "inbound",
        "agent_number": agent,
        "started_at": format!("{date}T{:02}:{:02}:{:02}+05:00", second / 3600, second / 60 % 60, second % 60),
        "duration_seconds": duration,
    })
}

fn ordinary(date: &str) -> Value {
    let calls: Vec<Value> = (0..10)
        .map(|n| {
            call(
                &format!("{date}-{n}"),
                date,
                9 * 3600 + n * 60,
                Some(&format!("{}", 101 + n)),
                60.0,
            )
        })
        .collect();
    json!({"calls": calls, "next_cursor": null})
}

/// The page `page` of `mode` for the window starting on `date`.
fn page(mode: &str, date: &str, page: usize) -> Value {
    let numbered = |make: &dyn Fn(usize) -> Value| -> Vec<Value> {
        (page * PAGE..(page + 1) * PAGE).map(make).collect()
    };
    match mode {
        "agents" => json!({
            "calls": numbered(&|n| call(&format!("{date}-{n}"), date, n, Some(&format!("a{n}")), 60.0)),
            "next_cursor": (page + 1 < AGENT_PAGES).then(|| (page + 1).to_string()),
        }),
        "endless" => json!({
            "calls": numbered(&|n| call(&format!("{date}-{n}"), date, n, Some("101"), 60.0)),
            "next_cursor": (page + 1).to_string(),
        }),
        "endless-40" => json!({
            // `2026-07-29-` and 29 digits: 40 bytes.
            "calls": numbered(&|n| call(&format!("{date}-{n:029}"), date, n, Some("101"), 60.0)),
            "next_cursor": (page + 1).to_string(),
        }),
        "long-ids" => json!({
            "calls": numbered(&|n| call(&format!("{}-{n}", "x".repeat(4096)), date, n, Some("101"), 60.0)),
            "next_cursor": (page + 1).to_string(),
        }),
        "huge-duration" => json!({
            "calls": [call(&format!("{date}-huge"), date, 3600, Some("101"), 1e308)],
            "next_cursor": null,
        }),
        "leap-second" => {
            let mut calls: Vec<Value> = (0..9)
                .map(|n| {
                    call(
                        &format!("{date}-{n}"),
                        date,
                        9 * 3600 + n * 60,
                        Some("101"),
                        60.0,
                    )
                })
                .collect();
            calls.push(json!({
                "id": format!("{date}-leap"), "direction": "inbound", "agent_number": "102",
                "started_at": format!("{date}T23:59:60+05:00"), "duration_seconds": 30.0,
            }));
            json!({"calls": calls, "next_cursor": null})
        }
        _ => ordinary(date),
    }
}

async fn calls(req: HttpRequest, settings: web::Data<Settings>) -> HttpResponse {
    tokio_sleep(settings.latency).await;
    let query = req.query_string();
    let mode = req
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let date: String = param(query, "from")
        .unwrap_or_default()
        .chars()
        .take(10)
        .collect();
    let number = param(query, "cursor")
        .and_then(|cursor| cursor.parse().ok())
        .unwrap_or(0);
    let body = if date >= settings.normal_from {
        ordinary(&date)
    } else {
        page(mode, &date, number)
    };
    HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(body.to_string())
}

async fn tokio_sleep(duration: Duration) {
    if !duration.is_zero() {
        actix_web::rt::time::sleep(duration).await;
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:9099".to_owned());
    let latency = Duration::from_millis(args.next().and_then(|ms| ms.parse().ok()).unwrap_or(0));
    let normal_from = args.next().unwrap_or_else(|| "9999-12-31".to_owned());
    let settings = web::Data::new(Settings {
        latency,
        normal_from,
    });
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(move || {
            App::new()
                .app_data(settings.clone())
                .default_service(web::get().to(calls))
        })
        .bind(&address)?
        .run()
        .await
    })
}
