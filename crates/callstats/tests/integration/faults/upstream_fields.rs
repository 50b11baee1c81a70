//! The upstream record's optional `wait_seconds` and `queue` (docs/call-platform.md, "The upstream
//! contract"), end to end: an upstream (wiremock) that sends them, one that sends neither, and
//! records that break them, through the service assembled as `serve` assembles it.

use callstats::app::Upstream;
use callstats_store::config::Access;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::faults::harness::{Running, client, see, seeded_sqlite, short_upstream, start};

const DAY: &str = "2026-11-02";

/// An upstream answering every window with one page of these calls.
async fn upstream(calls: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"calls": calls, "next_cursor": null})),
        )
        .mount(&server)
        .await;
    server
}

/// A call of [`DAY`] at `time`, with `extra` fields merged in.
fn call(
    id: &str,
    direction: &str,
    agent: Option<&str>,
    time: &str,
    duration: f64,
    extra: Value,
) -> Value {
    let mut call = json!({
        "id": id, "direction": direction, "agent_number": agent,
        "started_at": format!("{DAY}T{time}+05:00"), "duration_seconds": duration,
    });
    if let (Some(call), Value::Object(extra)) = (call.as_object_mut(), extra) {
        call.extend(extra);
    }
    call
}

/// An inbound call of [`DAY`] that waited `wait` seconds in `queue`.
fn queued(
    id: &str,
    agent: Option<&str>,
    time: &str,
    duration: f64,
    wait: &Value,
    queue: &str,
) -> Value {
    call(
        id,
        "inbound",
        agent,
        time,
        duration,
        json!({"wait_seconds": wait, "queue": queue}),
    )
}

/// The service on a read-only store of the seeded database, fetching from `upstream`, asked
/// with the seeded key.
struct Service {
    running: Running,
    client: reqwest::Client,
    key: String,
}

impl Service {
    fn start(db: &callstats_store::testing::TestDatabase, key: &str, upstream: &str) -> Self {
        Self {
            running: start(
                db.store(Access::ReadOnly),
                Upstream::Http(short_upstream(upstream.to_owned())),
            ),
            client: client(),
            key: key.to_owned(),
        }
    }

    /// GET `/api/v1/calls/{query}`: the status and the JSON body (`null` when it is none).
    async fn calls(&self, query: &str) -> (u16, Value) {
        let path = format!("/api/v1/calls/{query}");
        let seen = see(&self.client, &self.running.base, &path, &self.key).await;
        (
            seen.status,
            serde_json::from_str(&seen.body).unwrap_or(Value::Null),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_and_queues_from_the_upstream_give_the_service_figures_and_the_queues() {
    let (db, key) = seeded_sqlite().await;
    let platform = upstream(json!([
        queued("c-1", Some("101"), "09:00:00", 120.0, &json!(4.5), "sales"),
        queued("c-2", Some("102"), "09:10:00", 60.0, &json!(20), "sales"),
        queued("c-3", None, "09:20:00", 0.0, &json!(95.25), "support"),
        queued(
            "c-4",
            Some("101"),
            "10:00:00",
            30.0,
            &json!(41.0),
            "support"
        ),
        // A platform may know neither for some calls: absent and null read alike.
        call("c-5", "inbound", Some("102"), "11:00:00", 90.0, json!({})),
        call(
            "c-6",
            "outbound",
            Some("101"),
            "12:00:00",
            45.0,
            json!({"wait_seconds": null, "queue": null})
        ),
    ]))
    .await;
    let service = Service::start(&db, &key, &platform.uri());

    let (status, summary) = service.calls(&format!("summary?start={DAY}")).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(
        (&summary["total_calls"], &summary["unanswered_calls"]),
        (&json!(5), &json!(1))
    );
    assert_eq!(summary["abandon_rate_percent"], 20.0);
    // Waits 4.5 and 20 answered within 20 s; 41 answered late; 95.25 abandoned; c-5 has none.
    assert_eq!(
        summary["service_level"],
        json!({"threshold_seconds": 20, "answered_within_threshold": 2, "calls_with_wait": 4, "percent": 50.0})
    );
    assert_eq!(summary["average_speed_of_answer_seconds"], 21.83);
    assert_eq!(summary["longest_wait_seconds"], 95.25);
    assert_eq!(summary["average_handle_time_seconds"], 75.0);

    let (_, tighter) = service
        .calls(&format!("summary?start={DAY}&sl_threshold=5"))
        .await;
    assert_eq!(tighter["service_level"]["percent"], 25.0);

    let (status, queues) = service.calls(&format!("queues?start={DAY}")).await;
    assert_eq!(status, 200, "{queues}");
    let rows: Vec<(Value, u64)> = queues["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["queue"].clone(), row["offered"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [(json!("sales"), 2), (json!("support"), 2), (Value::Null, 1)]
    );
    // A queue's row is /calls/summary with that queue.
    for (index, name) in ["sales", "support"].iter().enumerate() {
        let (_, alone) = service
            .calls(&format!("summary?start={DAY}&queue={name}"))
            .await;
        let row = &queues["queues"][index];
        assert_eq!(row["offered"], alone["total_calls"]);
        assert_eq!(row["abandon_rate_percent"], alone["abandon_rate_percent"]);
        assert_eq!(
            row["service_level_percent"],
            alone["service_level"]["percent"]
        );
        assert_eq!(
            row["average_speed_of_answer_seconds"],
            alone["average_speed_of_answer_seconds"]
        );
        assert_eq!(
            row["average_handle_time_seconds"],
            alone["average_handle_time_seconds"]
        );
        assert_eq!(row["longest_wait_seconds"], alone["longest_wait_seconds"]);
    }

    let (_, agents) = service
        .calls(&format!("agents?start={DAY}&queue=support"))
        .await;
    let listed: Vec<(&str, u64)> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent_number"].as_str().unwrap(),
                a["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [("101", 1)],
        "only the agent who answered a support call, and only it"
    );

    let (status, unknown) = service
        .calls(&format!("summary?start={DAY}&queue=SALES"))
        .await;
    assert_eq!((status, &unknown["total_calls"]), (200, &json!(0)));
    let (status, _) = service.calls(&format!("summary?start={DAY}&queue=")).await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_without_waits_or_queues_keeps_every_figure_and_gives_null_service_figures() {
    let (db, key) = seeded_sqlite().await;
    let platform = upstream(json!([
        call("c-1", "inbound", Some("101"), "09:00:00", 120.0, json!({})),
        call("c-2", "inbound", None, "09:30:00", 8.0, json!({})),
        call("c-3", "outbound", Some("102"), "14:00:00", 60.0, json!({})),
    ]))
    .await;
    let service = Service::start(&db, &key, &platform.uri());
    let (status, summary) = service.calls(&format!("summary?start={DAY}")).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(
        (
            &summary["total_calls"],
            &summary["answered_calls"],
            &summary["peak_hour"]
        ),
        (&json!(2), &json!(1), &json!({"hour": 9, "count": 2}))
    );
    assert_eq!(summary["abandon_rate_percent"], 50.0);
    assert_eq!(summary["average_handle_time_seconds"], 120.0);
    for field in [
        "service_level",
        "average_speed_of_answer_seconds",
        "speed_of_answer_percentiles",
        "longest_wait_seconds",
        "average_abandon_time_seconds",
    ] {
        assert_eq!(
            summary[field],
            Value::Null,
            "{field}: not tracked is null, never 0"
        );
    }
    let (_, queues) = service.calls(&format!("queues?start={DAY}")).await;
    let rows = queues["queues"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "the calls without a queue, alone");
    let expected = json!({"queue": null, "offered": 2, "answered": 1, "unanswered": 1,
            "short_abandoned_calls": 0,
            "abandon_rate_percent": 50.0, "service_level_percent": null,
            "answered_within_threshold": 0, "calls_with_wait": 0,
            "average_speed_of_answer_seconds": null, "speed_of_answer_percentiles": null,
            "average_handle_time_seconds": 120.0,
            "longest_wait_seconds": null, "average_abandon_time_seconds": null});
    for (field, value) in expected.as_object().unwrap() {
        assert_eq!(&rows[0][field], value, "{field}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_or_non_finite_wait_or_a_65_byte_queue_fails_the_day() {
    let (db, key) = seeded_sqlite().await;
    let long = "q".repeat(65);
    for (case, extra) in [
        ("a negative wait", json!({"wait_seconds": -1.0})),
        ("a wait past a day", json!({"wait_seconds": 86_400.5})),
        (
            "a wait that is not a number",
            json!({"wait_seconds": "NaN"}),
        ),
        ("a 65-byte queue", json!({"queue": long})),
        ("an empty queue", json!({"queue": ""})),
    ] {
        let platform = upstream(json!([
            call(
                "c-1",
                "inbound",
                Some("101"),
                "09:00:00",
                60.0,
                json!({"wait_seconds": 3.0, "queue": "sales"})
            ),
            call("c-2", "inbound", Some("101"), "09:05:00", 60.0, extra),
        ]))
        .await;
        let service = Service::start(&db, &key, &platform.uri());
        for path in ["summary", "queues", "agents"] {
            let (status, body) = service.calls(&format!("{path}?start={DAY}")).await;
            assert_eq!(status, 503, "{case} on /calls/{path}: {body}");
        }
    }
    // A non-finite number cannot be written in JSON; one too large for a float fails the page.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string(format!(
            r#"{{"calls": [{{"id": "c-1", "direction": "inbound", "agent_number": null,
                "started_at": "{DAY}T09:00:00+05:00", "duration_seconds": 1, "wait_seconds": 1e400}}],
                "next_cursor": null}}"#
        )))
        .mount(&server)
        .await;
    let service = Service::start(&db, &key, &server.uri());
    let (status, _) = service.calls(&format!("summary?start={DAY}")).await;
    assert_eq!(status, 503, "an overflowing wait");
}
