//! HTTP edges over real sockets against a spawned `callstats demo`: methods other than GET,
//! over-long request lines and headers, slow clients, percent-encoded and non-ASCII parameter
//! values. Raw TCP on purpose: an HTTP client library would refuse to send most of these.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::demo;

use demo::Demo;

fn demo(name: &str) -> Demo {
    Demo::start(name, |_, _| {})
}

/// One parsed answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    /// Asserts the answer is the service's own JSON error, with the headers every answer
    /// carries, and gives its message.
    fn service_error(&self) -> String {
        assert_eq!(
            self.header("content-type").as_deref(),
            Some("application/json; charset=utf-8"),
            "{self:?}"
        );
        assert_eq!(
            self.header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{self:?}"
        );
        assert_eq!(
            self.header("cache-control").as_deref(),
            Some("no-store"),
            "{self:?}"
        );
        assert!(
            self.header("x-request-id").is_some_and(|id| !id.is_empty()),
            "{self:?}"
        );
        self.error_message()
    }

    fn error_message(&self) -> String {
        let body: serde_json::Value = serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {:?}", self.body));
        body["error"].as_str().unwrap().to_owned()
    }
}

impl Demo {
    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        // A bound on every read: a hang fails the test instead of stalling the suite.
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
    }

    /// Sends raw bytes and reads until the server closes the connection.
    fn raw(&self, request: &[u8]) -> Answer {
        let mut stream = self.connect();
        // The server may answer and close before it has read everything; that is fine.
        let _ = stream.write_all(request);
        read_answer(&mut stream)
    }

    /// A request with the demo key and `Connection: close`.
    fn request(&self, method: &str, target: &[u8]) -> Answer {
        let mut request = format!("{method} ").into_bytes();
        request.extend_from_slice(target);
        request.extend_from_slice(
            format!(
                " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.key
            )
            .as_bytes(),
        );
        self.raw(&request)
    }
}

fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut bytes = Vec::new();
    match stream.read_to_end(&mut bytes) {
        Ok(_) => {}
        // A reset after the answer was written still leaves the answer in `bytes`.
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(err) => panic!("no answer: {err} (after {} bytes)", bytes.len()),
    }
    parse_answer(&String::from_utf8_lossy(&bytes))
}

fn parse_answer(text: &str) -> Answer {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head:?}"));
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

#[test]
fn methods_other_than_get_get_405_with_allow_get() {
    let demo = demo("methods");
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        for path in [
            "/api/v1/ping",
            "/api/v1/calls/summary?start=2026-11-01",
            "/api/v1/kpi/2026-11",
            "/api/v1/openapi.json",
        ] {
            let answer = demo.request(method, path.as_bytes());
            assert_eq!(answer.status, 405, "{method} {path}: {answer:?}");
            assert_eq!(
                answer.header("allow").as_deref(),
                Some("GET"),
                "{method} {path}"
            );
            assert!(!answer.error_message().is_empty());
        }
    }
}

#[test]
fn an_over_long_request_line_is_refused_with_414_and_a_json_reason() {
    let demo = demo("long-url");
    let target = format!(
        "/api/v1/calls/summary?start=2026-11-01&pad={}",
        "a".repeat(16 * 1024)
    );
    let started = Instant::now();
    let answer = demo.request("GET", target.as_bytes());
    assert_eq!(answer.status, 414, "{answer:?}");
    assert!(answer.error_message().contains("longer than 8192 bytes"));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_request_line_beyond_what_the_http_parser_takes_is_refused_not_hung() {
    let demo = demo("huge-url");
    let target = format!("/api/v1/ping?pad={}", "a".repeat(200 * 1024));
    let started = Instant::now();
    let answer = demo.request("GET", target.as_bytes());
    // Over actix-http's 128 KiB buffer: refused by it before a request exists (its own bare
    // answer; behind the shipped proxy, nginx answers long before).
    assert_eq!(answer.status, 431, "{answer:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn over_long_headers_are_refused_with_431_not_a_hang() {
    let demo = demo("long-header");
    for (size, says) in [
        (32 * 1024, Some("longer than 16384 bytes")),
        // Past 128 KiB actix-http refuses the head before a request exists, bare.
        (200 * 1024, None),
    ] {
        let request = format!(
            "GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nX-Padding: {}\r\nConnection: close\r\n\r\n",
            demo.key,
            "b".repeat(size)
        );
        let started = Instant::now();
        let answer = demo.raw(request.as_bytes());
        assert_eq!(answer.status, 431, "{size} bytes: {answer:?}");
        if let Some(says) = says {
            assert!(answer.service_error().contains(says), "{answer:?}");
        }
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    // Many small headers add up the same way.
    let mut request = format!(
        "GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n",
        demo.key
    );
    for i in 0..80 {
        request.push_str(&format!("X-Pad-{i}: {}\r\n", "c".repeat(300)));
    }
    request.push_str("Connection: close\r\n\r\n");
    let answer = demo.raw(request.as_bytes());
    assert_eq!(answer.status, 431, "{answer:?}");
}

#[test]
fn ordinary_requests_stay_well_inside_the_bounds() {
    let demo = demo("inside");
    let target = format!("/api/v1/kpi/2026-11?shift={}", "d".repeat(64));
    let answer = demo.request("GET", target.as_bytes());
    assert!([200, 404].contains(&answer.status), "{answer:?}");
    let request = format!(
        "GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nUser-Agent: {}\r\nConnection: close\r\n\r\n",
        demo.key,
        "u".repeat(2048)
    );
    assert_eq!(demo.raw(request.as_bytes()).status, 200);
}

#[test]
fn a_client_that_never_finishes_its_request_head_is_cut_by_the_request_timeout() {
    let demo = demo("slow-client");
    let mut stream = demo.connect();
    stream
        .write_all(b"GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    let started = Instant::now();
    let answer = read_answer(&mut stream);
    let waited = started.elapsed();
    // The default request timeout is 5 s; the read timeout (20 s) would mean no cut at all.
    assert!(waited < Duration::from_secs(15), "cut after {waited:?}");
    assert_eq!(answer.status, 408, "{answer:?}");
}

/// Sends a byte every half second until the server ends the connection (at most 20 s); gives
/// how long that took from the first byte of `head` and what the server sent before the end.
fn trickle(stream: &mut TcpStream, head: &[u8]) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    stream.write_all(head).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut received = Vec::new();
    while started.elapsed() < Duration::from_secs(20) {
        if stream.write_all(b"z").is_err() {
            return (started.elapsed(), received);
        }
        let mut probe = [0_u8; 1024];
        match stream.read(&mut probe) {
            Ok(0) => return (started.elapsed(), received),
            Ok(n) => received.extend_from_slice(&probe[..n]),
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {
                return (started.elapsed(), received);
            }
            Err(_) => {}
        }
    }
    panic!("still connected after {:?}", started.elapsed());
}

#[test]
fn a_client_that_trickles_its_head_byte_by_byte_is_cut_as_well() {
    let demo = demo("trickle");
    let mut stream = demo.connect();
    let (waited, received) = trickle(
        &mut stream,
        b"GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nX-Slow: ",
    );
    assert!(waited < Duration::from_secs(15), "cut after {waited:?}");
    // The first head of a connection: a 408, as to a client that sends nothing more.
    let answer = parse_answer(&String::from_utf8_lossy(&received));
    assert_eq!(answer.status, 408, "{answer:?}");
}

#[test]
fn percent_encoded_parameters_are_decoded_before_they_are_checked() {
    let demo = demo("percent");
    // `%31` is `1`, `%2D` is `-`: the same day as `2026-11-01`.
    let plain = demo.request("GET", b"/api/v1/calls/summary?start=2026-11-01");
    let encoded = demo.request("GET", b"/api/v1/calls/summary?start=2026%2D11%2D0%31");
    assert_eq!(plain.status, 200, "{plain:?}");
    assert_eq!(encoded.status, 200, "{encoded:?}");
    let days = |answer: &Answer| {
        let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
        body["daily"].clone()
    };
    assert_eq!(days(&plain), days(&encoded));
}

#[test]
fn non_ascii_and_malformed_parameter_values_get_a_clear_400_never_a_500() {
    let demo = demo("non-ascii");
    let targets: [&[u8]; 10] = [
        b"/api/v1/calls/summary?start=%D0%B4%D0%B0%D1%82%D0%B0",
        b"/api/v1/calls/summary?start=2026-11-0%D9%A1",
        b"/api/v1/calls/summary?start=%FF%FE",
        b"/api/v1/calls/summary?start=%",
        b"/api/v1/calls/summary?start=2026-11-01&direction=%00",
        b"/api/v1/calls/summary?start=2026-11-01&end=2026-11-01%00",
        b"/api/v1/calls/agents?start=%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96-11-01",
        b"/api/v1/schedule?month=%E2%80%AE2026-11",
        b"/api/v1/scripts/stats?limit=%EF%BC%91",
        b"/api/v1/kpi/2026-%31%33",
    ];
    for target in targets {
        let shown = String::from_utf8_lossy(target);
        let answer = demo.request("GET", target);
        assert_eq!(answer.status, 400, "{shown}: {answer:?}");
        assert!(!answer.error_message().is_empty(), "{shown}: {answer:?}");
    }
}

#[test]
fn percent_encoded_non_ascii_shift_labels_and_paths_get_json_answers_never_a_500() {
    let demo = demo("non-ascii-ok");
    let targets: [&[u8]; 4] = [
        b"/api/v1/kpi/2026-11?shift=%D0%B4%D0%B5%D0%BD%D1%8C",
        b"/api/v1/kpi/2026-11?shift=%0A",
        b"/api/v1/%D0%BA%D0%BF%D0%B8",
        b"/api/v1/kpi/%D0%BA%D0%BF%D0%B8",
    ];
    for target in targets {
        let shown = String::from_utf8_lossy(target);
        let answer = demo.request("GET", target);
        assert!([400, 404].contains(&answer.status), "{shown}: {answer:?}");
        assert!(!answer.error_message().is_empty(), "{shown}: {answer:?}");
    }
}

#[test]
fn raw_non_ascii_bytes_in_the_request_line_are_refused_by_the_http_parser_with_400() {
    let demo = demo("raw-bytes");
    for target in [
        "/api/v1/calls/summary?start=2026-11-0\u{0661}",
        "/api/v1/kpi/2026-11?shift=\u{043d}\u{043e}\u{0447}\u{044c}",
        "/api/v1/\u{043a}\u{043f}\u{0438}/2026-11",
    ] {
        let answer = demo.request("GET", target.as_bytes());
        assert_eq!(answer.status, 400, "{target}: {answer:?}");
    }
}

#[test]
fn heads_the_http_parser_refuses_are_refused_at_once_and_closed_without_noise_in_the_log() {
    // The default log filter, as a deployment without RUST_LOG has it.
    let demo = Demo::start("parser", |_, command| {
        command.env_remove("RUST_LOG");
    });
    let mut many = String::from("GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\n");
    for i in 0..97 {
        many.push_str(&format!("X-Field-{i}: 1\r\n"));
    }
    many.push_str("\r\n");
    // Refused by actix-http before a request exists, with its own bare answer (behind the
    // shipped proxy, nginx answers these in the service's JSON first).
    for (request, status) in [
        (b"GET / HTTP/9.9\r\n\r\n".to_vec(), 400),
        (
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"GET /api/v1/ping HTTP/1.1\r\nBad Header: 1\r\n\r\n".to_vec(),
            400,
        ),
        (many.into_bytes(), 431),
    ] {
        let started = Instant::now();
        let answer = demo.raw(&request);
        assert_eq!(answer.status, status, "{answer:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "closed at once");
    }
    // actix-http's ERROR line for each client mistake is off by default.
    std::thread::sleep(Duration::from_millis(200));
    let log = demo.log_text();
    assert!(!log.contains("stream error"), "{log}");
}

#[test]
fn a_get_whose_body_never_arrives_is_answered_and_its_connection_closed() {
    let demo = demo("bodiless");
    for framing in ["Transfer-Encoding: chunked", "Content-Length: 100"] {
        let mut stream = demo.connect();
        let started = Instant::now();
        stream
            .write_all(
                format!(
                    "GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n{framing}\r\n\r\n",
                    demo.key
                )
                .as_bytes(),
            )
            .unwrap();
        // The body is never sent; the client only reads.
        let answer = read_answer(&mut stream);
        let waited = started.elapsed();
        assert_eq!(answer.status, 200, "{framing}: {answer:?}");
        assert_eq!(
            answer.header("connection").as_deref(),
            Some("close"),
            "{framing}"
        );
        assert!(
            waited < Duration::from_secs(10),
            "{framing}: the connection was held {waited:?}"
        );
    }
}

/// Reads one answer with a `Content-Length` from a kept-alive connection.
fn read_one(stream: &mut TcpStream) -> Answer {
    let mut bytes = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                return parse_answer(&text);
            }
        }
        let read = stream.read(&mut buffer).unwrap();
        assert!(read > 0, "closed before a whole answer: {text:?}");
        bytes.extend_from_slice(&buffer[..read]);
    }
}

/// Asks `path` on a kept-alive connection with the demo's key.
fn ask(demo: &Demo, stream: &mut TcpStream, path: &str) -> Answer {
    stream
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n",
                demo.key
            )
            .as_bytes(),
        )
        .unwrap();
    read_one(stream)
}

#[test]
fn past_its_connection_bound_new_connections_wait_while_open_ones_are_answered() {
    // A file limit of 200 at start-up: the bound becomes 72 connections (200 less the 128 files
    // the rest of the process may need), not the 10,000 asked for.
    let demo = Demo::start_under(
        "connection-bound",
        &["prlimit", "--nofile=200:200", "--"],
        |_, _| {},
    );
    let mut kept = demo.connect();
    assert_eq!(ask(&demo, &mut kept, "/api/v1/ping").status, 200);
    // More connections than the bound, none sending a byte: the server takes in as many as the
    // bound and leaves the rest in the listen backlog.
    let mut silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(("127.0.0.1", demo.port)).unwrap())
        .collect();
    let flooded = Instant::now();
    let mut waiting = demo.connect();
    waiting
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();

    // Requests on a connection already open are answered at once meanwhile.
    for path in ["/healthz", "/api/v1/operators", "/api/v1/ping"] {
        let started = Instant::now();
        let answer = ask(&demo, &mut kept, path);
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "{path}");
    }

    // The new connection is answered once the silent ones reach their request timeout (5 s)
    // and are closed, not before: the bound holds.
    let answer = read_one(&mut waiting);
    let waited = flooded.elapsed();
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        (Duration::from_secs(3)..Duration::from_secs(15)).contains(&waited),
        "answered after {waited:?}"
    );
    let oldest = silent.first_mut().unwrap();
    oldest
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let closed = read_answer(oldest);
    assert_eq!(closed.status, 408, "{closed:?}");

    // Recovered: a new connection is answered at once.
    let started = Instant::now();
    let mut fresh = demo.connect();
    assert_eq!(ask(&demo, &mut fresh, "/api/v1/ping").status, 200);
    assert!(started.elapsed() < Duration::from_secs(2));

    let logs = demo.log_text();
    assert!(
        logs.contains("the file limit is below CALLSTATS_MAX_CONNECTIONS")
            && logs.contains("connections=72"),
        "{logs}"
    );
    assert!(!logs.contains("Too many open files"), "{logs}");
}
