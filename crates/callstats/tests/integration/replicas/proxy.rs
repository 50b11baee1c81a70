//! The shipped reverse proxy: the real deploy/nginx/nginx.conf, run by Debian's nginx in front
//! of two replicas on loopback (its `replicas.conf` and `listen.conf` written for them). What
//! happens before a request exists is nginx's to answer (docs/operations.md, "The reverse
//! proxy"): JSON for malformed and oversized heads and bodies, for requests in flight over the
//! per-client bound and for replicas it cannot reach (with `Retry-After`); a trickled head cut,
//! `/metrics` and `/readyz` not offered, no retry of a replica's 503, nginx's own status and
//! health on a listener of its own, and the client's address in `X-Forwarded-For`: the peer's,
//! or the one the trusted front proxy wrote (real-ip.conf), never one a client wrote. A live
//! stream (`/calls/live` as Server-Sent Events) passes as the replica writes it, never buffered.
//!
//! Needs `nginx` (`apt-get install nginx`); skips without it unless
//! `CALLSTATS_TEST_REQUIRE_SERVICES=1`.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use callstats_redis::testing::{services_required, shared_redis_url};
use callstats_store::testing::{Backend, TestDatabase};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::replicas::{Replica, admin, key, redis_settings};

/// The front proxy's address in the tests' real-ip.conf: a client connecting from it may name
/// the client in `X-Forwarded-For` (Linux routes all of 127.0.0.0/8 to loopback).
const FRONT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);

/// nginx running the shipped configuration in a directory of its own; stopped when dropped.
struct Nginx {
    child: Child,
    dir: PathBuf,
    port: u16,
    status_port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn nginx_program() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

impl Nginx {
    /// nginx in front of `replicas` (`http://127.0.0.1:PORT`), or `None` (skip) without it.
    fn start(name: &str, replicas: &[&str]) -> Option<Self> {
        Self::start_with(name, replicas, str::to_owned)
    }

    /// [`Nginx::start`], with `adjust` changing the shipped `server` parameters first.
    fn start_with(name: &str, replicas: &[&str], adjust: impl Fn(&str) -> String) -> Option<Self> {
        let Some(program) = nginx_program() else {
            assert!(
                !services_required(),
                "nginx is not installed but the services are required"
            );
            eprintln!("skipped: install nginx to run the reverse proxy tests");
            return None;
        };
        let dir =
            std::env::temp_dir().join(format!("callstats-nginx-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nginx/nginx.conf");
        // The shipped server lines, each replica's parameters kept and its address replaced.
        let shipped = std::fs::read_to_string(deploy.with_file_name("replicas.conf")).unwrap();
        let parameters = shipped
            .lines()
            .find_map(|line| line.strip_prefix("server "))
            .and_then(|server| server.split_once(' '))
            .map(|(_, parameters)| adjust(parameters))
            .unwrap();
        let servers: String = replicas
            .iter()
            .map(|base| {
                format!(
                    "server {} {parameters}\n",
                    base.trim_start_matches("http://")
                )
            })
            .collect();
        std::fs::write(dir.join("replicas.conf"), servers).unwrap();
        // The access log into the test's directory, where the tests read it.
        let conf = std::fs::read_to_string(&deploy).unwrap().replace(
            "/var/log/nginx/access.log",
            &dir.join("access.log").display().to_string(),
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let free_port = || {
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        };
        let (port, status_port) = (free_port(), free_port());
        std::fs::write(
            dir.join("listen.conf"),
            format!("listen 127.0.0.1:{port};\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("status-listen.conf"),
            format!("listen 127.0.0.1:{status_port};\n"),
        )
        .unwrap();
        // The shipped file trusts one front address; here the tests' front stands in for it.
        let real_ip = std::fs::read_to_string(deploy.with_file_name("real-ip.conf")).unwrap();
        assert_eq!(real_ip.matches("set_real_ip_from ").count(), 1, "{real_ip}");
        std::fs::write(
            dir.join("real-ip.conf"),
            format!("set_real_ip_from {FRONT};\n"),
        )
        .unwrap();
        let child = Command::new(program)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-g")
            .arg(format!(
                "daemon off; master_process off; pid {0}/nginx.pid; error_log {0}/error.log;",
                dir.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not start: {:?}",
                std::fs::read_to_string(dir.join("error.log"))
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Self {
            child,
            dir,
            port,
            status_port,
        })
    }

    /// The lines of the access log so far, each a JSON object.
    fn access_log(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
            .collect()
    }

    /// Sends raw bytes and reads until nginx closes the connection (or 20 s pass).
    fn raw(&self, request: &[u8]) -> (Duration, String) {
        self.raw_to(
            TcpStream::connect(("127.0.0.1", self.port)).unwrap(),
            request,
        )
    }

    /// [`Nginx::raw`] from the loopback address `from`, as another client (or the front).
    /// Needs a tokio runtime's context (a `spawn_blocking` closure has one).
    fn raw_from(&self, from: Ipv4Addr, request: &[u8]) -> (Duration, String) {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((from, 0).into()).unwrap();
        let stream = tokio::runtime::Handle::current()
            .block_on(socket.connect((Ipv4Addr::LOCALHOST, self.port).into()))
            .unwrap()
            .into_std()
            .unwrap();
        stream.set_nonblocking(false).unwrap();
        self.raw_to(stream, request)
    }

    /// GET `path` from nginx's status listener.
    fn status_listener(&self, path: &str) -> String {
        let stream = TcpStream::connect(("127.0.0.1", self.status_port)).unwrap();
        self.raw_to(
            stream,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .1
    }

    fn raw_to(&self, mut stream: TcpStream, request: &[u8]) -> (Duration, String) {
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let started = Instant::now();
        let _ = stream.write_all(request);
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        (
            started.elapsed(),
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }
}

fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn status(answer: &str) -> Option<u16> {
    answer.split(' ').nth(1)?.parse().ok()
}

/// The answer's JSON `error`, after checking it is the service's form of error.
fn json_error(answer: &str) -> String {
    assert_eq!(
        header(answer, "content-type"),
        Some("application/json; charset=utf-8"),
        "{answer}"
    );
    assert_eq!(
        header(answer, "x-content-type-options"),
        Some("nosniff"),
        "{answer}"
    );
    body(answer)["error"].as_str().unwrap().to_owned()
}

/// The answer's JSON body, after checking it names its request.
fn body(answer: &str) -> serde_json::Value {
    assert!(
        header(answer, "x-request-id").is_some_and(|id| !id.is_empty()),
        "{answer}"
    );
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|err| panic!("not JSON ({err}): {answer}"))
}

/// The answer's problem details `(type, error)`, after checking it is the service's form of
/// problem details.
fn problem(answer: &str) -> (String, String) {
    assert_eq!(
        header(answer, "content-type"),
        Some("application/problem+json"),
        "{answer}"
    );
    assert_eq!(header(answer, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(answer, "vary"), Some("Accept"), "{answer}");
    let body = body(answer);
    assert_eq!(body["detail"], body["error"], "{answer}");
    assert_eq!(
        Some(body["status"].as_u64().unwrap()),
        status(answer).map(u64::from)
    );
    (
        body["type"].as_str().unwrap().to_owned(),
        body["error"].as_str().unwrap().to_owned(),
    )
}

/// Sends a head a byte at a time (after a whole request on the same connection, when `key`):
/// nginx cuts it within its head timeout and answers nothing to it.
fn trickled_head_is_cut(nginx: &Nginx, key: Option<&str>) {
    let mut stream = TcpStream::connect(("127.0.0.1", nginx.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    if let Some(key) = key {
        stream
            .write_all(
                format!(
                    "GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n"
                )
                .as_bytes(),
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let mut first = [0_u8; 4096];
        let read = stream.read(&mut first).unwrap();
        assert!(
            first[..read].starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&first[..read])
        );
    }
    let started = Instant::now();
    let mut closed = false;
    for byte in b"GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nX-Slow: abcdefghijklmnopqrstuvwxyz0123456789\r\n" {
        if stream.write_all(&[*byte]).is_err() {
            closed = true;
            break;
        }
        let mut buffer = [0_u8; 4096];
        match stream.read(&mut buffer) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(read) => panic!("answered a trickled head: {:?}", String::from_utf8_lossy(&buffer[..read])),
            Err(_) => {}
        }
    }
    let waited = started.elapsed();
    assert!(
        closed,
        "still open after {waited:?} (after a request: {})",
        key.is_some()
    );
    assert!(waited < Duration::from_secs(15), "cut after {waited:?}");
}

/// Two replicas of one SQLite database in front of the sim, and a key with scope `calls`.
struct Stand {
    _db: TestDatabase,
    key: String,
    sim: callstats_sim::RunningSim,
    replicas: [Replica; 2],
}

impl Stand {
    /// The stand, and nginx (named `name`) in front of both replicas; `None` when nginx is not
    /// installed and the services are not required.
    async fn start(name: &str) -> Option<(Self, Nginx)> {
        let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
        let (key, _) = key(&admin(&db).await, "calls", 1000).await;
        let sim = callstats_sim::spawn_sim(callstats_sim::SimOptions::default()).unwrap();
        let replicas = [
            Replica::start(&db, None, &sim.base_url()),
            Replica::start(&db, None, &sim.base_url()),
        ];
        let nginx = Nginx::start(name, &[&replicas[0].base, &replicas[1].base])?;
        let stand = Self {
            _db: db,
            key: key.expose().to_owned(),
            sim,
            replicas,
        };
        Some((stand, nginx))
    }

    async fn stop(self) {
        let [a, b] = self.replicas;
        a.stop().await;
        b.stop().await;
        self.sim.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_answers_the_edge_before_a_request_exists_and_passes_the_rest() {
    let Some((stand, nginx)) = Stand::start("edge").await else {
        return;
    };
    let key = stand.key.clone();
    let bases = [
        stand.replicas[0].base.clone(),
        stand.replicas[1].base.clone(),
    ];
    tokio::task::spawn_blocking(move || {
        let replicas = bases;
        // Heads nginx refuses, each as JSON with a request id and nosniff.
        for (head, expected, message) in [
            (b"GET /api/v1/ping HTTP/9.9\r\nHost: x\r\n\r\n".to_vec(), 400, "malformed request head"),
            (b"GET /api/v1/ping a b HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), 400, "malformed request head"),
            (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), 400, "malformed request head"),
            (
                [b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Big: ".as_slice(), &[b'a'; 20_000], b"\r\n\r\n"].concat(),
                431,
                "request head too large: at most 8 KiB a header field",
            ),
            (
                [b"GET /api/v1/ping?".as_slice(), &[b'a'; 20_000], b" HTTP/1.1\r\nHost: x\r\n\r\n"].concat(),
                414,
                "request target longer than 8 KiB",
            ),
            (
                b"POST /api/v1/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n".to_vec(),
                413,
                "request body longer than 64 KiB",
            ),
        ] {
            let (_, answer) = nginx.raw(&head);
            assert_eq!(status(&answer), Some(expected), "{answer}");
            assert_eq!(json_error(&answer), message);
        }
        // As problem details when the request names them (and nginx could read its Accept):
        // the same errors, the type of each under /api/v1/problems/.
        let too_large = |accept: &str| {
            format!("POST /api/v1/ping HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nContent-Length: 100000\r\n\r\n")
        };
        for accept in ["application/problem+json", "application/json, application/problem+json;q=0.5"] {
            let (_, answer) = nginx.raw(too_large(accept).as_bytes());
            assert_eq!(status(&answer), Some(413), "{answer}");
            assert_eq!(
                problem(&answer),
                ("/api/v1/problems/content-too-large".to_owned(), "request body longer than 64 KiB".to_owned())
            );
        }
        for accept in ["application/problem+json;q=0", "application/json", "*/*"] {
            let (_, answer) = nginx.raw(too_large(accept).as_bytes());
            assert_eq!(json_error(&answer), "request body longer than 64 KiB", "{accept}");
        }
        let big_header = [
            b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nAccept: application/problem+json\r\nX-Big: ".as_slice(),
            &[b'a'; 20_000],
            b"\r\n\r\n",
        ]
        .concat();
        let (_, answer) = nginx.raw(&big_header);
        assert_eq!(status(&answer), Some(431), "{answer}");
        assert_eq!(problem(&answer).0, "/api/v1/problems/headers-too-large");
        // A head nginx cannot read has no Accept it could honour.
        let (_, answer) = nginx.raw(b"GET /api/v1/ping HTTP/9.9\r\nHost: x\r\nAccept: application/problem+json\r\n\r\n");
        assert_eq!(json_error(&answer), "malformed request head");
        // A head trickled a byte at a time is cut by nginx's 5 s head timeout, with no answer:
        // the first head of a connection, and a later one on a kept-alive connection.
        trickled_head_is_cut(&nginx, None);
        trickled_head_is_cut(&nginx, Some(&key));
        // The replicas' /metrics and /readyz are not on the public listener; the API is.
        for path in ["/metrics", "/readyz"] {
            let (_, answer) = nginx.raw(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
            assert_eq!(status(&answer), Some(404), "{path}: {answer}");
            assert_eq!(json_error(&answer), "no such endpoint on the public listener");
            let (_, answer) = nginx.raw(
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: application/problem+json\r\nConnection: close\r\n\r\n").as_bytes(),
            );
            assert_eq!(problem(&answer).0, "/api/v1/problems/not-found", "{answer}");
        }
        // Round robin over both replicas; the access log names, for each answer, nginx's
        // request id, the replica's and the replica.
        let mut ids = Vec::new();
        for _ in 0..4 {
            let (_, answer) = nginx.raw(
                format!("GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n").as_bytes(),
            );
            assert_eq!(status(&answer), Some(200), "{answer}");
            assert!(header(&answer, "x-ratelimit-limit").is_some(), "the service's own answer: {answer}");
            ids.push(header(&answer, "x-request-id").unwrap().to_owned());
        }
        let log = nginx.access_log();
        let mut answered_by = std::collections::BTreeSet::new();
        for id in &ids {
            let line = log.iter().find(|line| line["replica_request_id"] == id.as_str()).unwrap();
            assert_eq!(line["status"], 200);
            assert_eq!(line["uri"], "/api/v1/ping");
            assert!(!line["request_id"].as_str().unwrap().is_empty());
            let replica = format!("http://{}", line["upstream_addr"].as_str().unwrap());
            assert!(replicas.contains(&replica), "{line}");
            answered_by.insert(replica);
        }
        assert_eq!(answered_by.len(), 2, "{log:?}");
        drop(nginx);
    })
    .await
    .unwrap();
    stand.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_retries_no_503_and_sets_the_client_address_the_quota_counts() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let (key, _) = key(&admin(&db).await, "calls", 1000).await;
    // An upstream that always fails: each replica answers 503 after its own attempts.
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&upstream)
        .await;
    let redis = redis_settings(&url, "proxy");
    let behind_proxy = |assembly: &mut callstats::app::Assembly| {
        assembly.trust_proxy = true;
        assembly.anon_rate_limit = 3;
    };
    let replicas = [
        Replica::start_with(&db, Some(redis.clone()), &upstream.uri(), behind_proxy),
        Replica::start_with(&db, Some(redis), &upstream.uri(), behind_proxy),
    ];
    let Some(nginx) = Nginx::start("retry", &[&replicas[0].base, &replicas[1].base]) else {
        return;
    };
    let key = key.expose().to_owned();
    let nginx = tokio::task::spawn_blocking(move || {
        let (_, answer) = nginx.raw(
            format!("GET /api/v1/calls/summary?start=2026-10-05 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(status(&answer), Some(503), "{answer}");
        assert_eq!(json_error(&answer), "the upstream call platform is unavailable");
        // Anonymous requests count against the address nginx saw (loopback), whatever
        // X-Forwarded-For the client sent: the fourth is over the quota of 3.
        let statuses: Vec<Option<u16>> = (0..4)
            .map(|n| {
                let (_, answer) = nginx.raw(
                    format!("GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.{n}\r\nConnection: close\r\n\r\n").as_bytes(),
                );
                status(&answer)
            })
            .collect();
        assert_eq!(statuses, [Some(401), Some(401), Some(401), Some(429)]);
        nginx
    })
    .await
    .unwrap();
    // One replica's attempts at the day (one and two retries), not two replicas'.
    assert_eq!(upstream.received_requests().await.unwrap().len(), 3);
    drop(nginx);
    let [a, b] = replicas;
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_bounds_requests_per_client_and_answers_when_no_replica_can_be_reached() {
    // A "replica" that accepts connections and never answers: requests stay in flight.
    let stuck = TcpListener::bind("127.0.0.1:0").unwrap();
    let stuck_base = format!("http://{}", stuck.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in stuck.incoming().flatten() {
            held.push(connection);
        }
    });
    let Some(nginx) = Nginx::start("bounds", &[&stuck_base]) else {
        return;
    };
    let request = b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n";
    let in_flight: Vec<TcpStream> = (0..256)
        .map(|_| {
            let mut stream = TcpStream::connect(("127.0.0.1", nginx.port)).unwrap();
            stream.write_all(request).unwrap();
            stream
        })
        .collect();
    // The 257th request from the same address while 256 are in flight. nginx counts a
    // request once its head is read, so the earlier ones may still be on their way: ask until
    // the bound is reached (each attempt but the refused one stays in flight, held here).
    let mut extra = Vec::new();
    let answer = loop {
        let mut stream = TcpStream::connect(("127.0.0.1", nginx.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        stream.write_all(request).unwrap();
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        if !bytes.is_empty() {
            break String::from_utf8_lossy(&bytes).into_owned();
        }
        extra.push(stream);
        assert!(extra.len() < 20, "no request refused");
    };
    assert_eq!(status(&answer), Some(429), "{answer}");
    assert_eq!(
        json_error(&answer),
        "too many connections from this address"
    );
    drop((in_flight, extra, nginx));

    // No replica listening: nginx's 502 becomes the service's 503.
    let (_closed, closed_base) = refusing();
    let Some(nginx) = Nginx::start("down", &[&closed_base]) else {
        return;
    };
    let (_, answer) =
        nginx.raw(b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status(&answer), Some(503), "{answer}");
    assert_eq!(json_error(&answer), "the service is unavailable");
    assert_eq!(header(&answer, "retry-after"), Some("5"), "{answer}");
    let (_, answer) = nginx.raw(
        b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nAccept: application/problem+json\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status(&answer), Some(503), "{answer}");
    assert_eq!(
        problem(&answer),
        (
            "/api/v1/problems/unavailable".to_owned(),
            "the service is unavailable".to_owned()
        )
    );
    assert_eq!(header(&answer, "retry-after"), Some("5"), "{answer}");
    // nginx itself is healthy meanwhile, on its status listener, which counts what it handled
    // (the two 503s, this connection).
    let health = nginx.status_listener("/healthz");
    assert_eq!(status(&health), Some(200), "{health}");
    assert!(health.ends_with("ok\n"), "{health}");
    let stub = nginx.status_listener("/stub_status");
    assert_eq!(status(&stub), Some(200), "{stub}");
    let handled: u64 = stub
        .lines()
        .skip_while(|line| !line.starts_with("server accepts handled requests"))
        .nth(1)
        .and_then(|counts| counts.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or_else(|| panic!("{stub}"));
    assert!(handled >= 3, "{stub}");
    // The status listener offers nothing else, and the public one does not offer it.
    assert_eq!(status(&nginx.status_listener("/api/v1/ping")), Some(404));
    let (_, answer) =
        nginx.raw(b"GET /stub_status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status(&answer), Some(503), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_gives_each_client_address_its_own_anonymous_quota_the_front_naming_it() {
    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let sim = callstats_sim::spawn_sim(callstats_sim::SimOptions::default()).unwrap();
    let replica = Replica::start_with(&db, None, &sim.base_url(), |assembly| {
        assembly.trust_proxy = true;
        assembly.anon_rate_limit = 3;
    });
    let Some(nginx) = Nginx::start("clients", &[&replica.base]) else {
        return;
    };
    tokio::task::spawn_blocking(move || {
        let ask = |from: Ipv4Addr, forwarded: Option<&str>| {
            let forwarded = forwarded.map_or(String::new(), |value| {
                format!("X-Forwarded-For: {value}\r\n")
            });
            let (_, answer) = nginx.raw_from(
                from,
                format!(
                    "GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n{forwarded}Connection: close\r\n\r\n"
                )
                .as_bytes(),
            );
            status(&answer)
        };
        // Four clients, asked in turn, four requests each: each meets its own quota of 3.
        // Two connect from their own addresses (one naming another client, which only the front
        // may do); two are named by the front, one of them after an address the client sent
        // itself (the front appended the client's; nginx takes the last).
        let clients: [(Ipv4Addr, Option<&str>, &str); 4] = [
            (Ipv4Addr::new(127, 0, 0, 2), None, "127.0.0.2"),
            (
                Ipv4Addr::new(127, 0, 0, 3),
                Some("198.51.100.9"),
                "127.0.0.3",
            ),
            (FRONT, Some("198.51.100.1"), "198.51.100.1"),
            (FRONT, Some("203.0.113.7, 198.51.100.2"), "198.51.100.2"),
        ];
        let mut statuses = vec![Vec::new(); clients.len()];
        for _ in 0..4 {
            for (client, (from, forwarded, _)) in clients.iter().enumerate() {
                statuses[client].push(ask(*from, *forwarded));
            }
        }
        for (client, seen) in statuses.iter().enumerate() {
            assert_eq!(
                seen,
                &[Some(401), Some(401), Some(401), Some(429)],
                "{:?}",
                clients[client]
            );
        }
        // The access log names each client by the address its quota counted.
        let log = nginx.access_log();
        for (_, _, address) in clients {
            assert_eq!(
                log.iter()
                    .filter(|line| line["remote_addr"] == address)
                    .count(),
                4,
                "{address}: {log:?}"
            );
        }
        drop(nginx);
    })
    .await
    .unwrap();
    replica.stop().await;
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_goes_on_to_the_other_replica_when_one_refuses_or_does_not_accept_in_time() {
    let db = TestDatabase::create(Backend::Sqlite).await.unwrap();
    let (key, _) = key(&admin(&db).await, "calls", 1000).await;
    let sim = callstats_sim::spawn_sim(callstats_sim::SimOptions::default()).unwrap();
    let live = Replica::start(&db, None, &sim.base_url());
    // A "replica" whose accept queue is full: further connections are never accepted, as with a
    // stopped container's address, and nginx's connect times out.
    let full = tokio::net::TcpSocket::new_v4().unwrap();
    full.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let full_address = full.local_addr().unwrap();
    let full = full.listen(0).unwrap();
    let queued: Vec<TcpStream> = (0..2)
        .filter_map(|_| TcpStream::connect_timeout(&full_address, Duration::from_millis(200)).ok())
        .collect();
    // And one refusing connections, as a replica whose container is starting.
    let (_closed, closed_base) = refusing();
    let key = key.expose().to_owned();
    for (name, down) in [
        ("timeout", format!("http://{full_address}")),
        ("refused", closed_base),
    ] {
        // The failed replica left alone for longer than the shipped second, so that a slow
        // machine's four requests all fall within it.
        let Some(nginx) = Nginx::start_with(name, &[&down, &live.base], |parameters| {
            assert!(parameters.contains("fail_timeout=1s"), "{parameters}");
            parameters.replace("fail_timeout=1s", "fail_timeout=60s")
        }) else {
            return;
        };
        let key = key.clone();
        let down = down.trim_start_matches("http://").to_owned();
        tokio::task::spawn_blocking(move || {
            for _ in 0..4 {
                let (_, answer) = nginx.raw(
                    format!("GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n").as_bytes(),
                );
                assert_eq!(status(&answer), Some(200), "{answer}");
            }
            // The first request that met the replica that is down went on to the live one; then
            // nginx left the failed one alone (max_fails=1) and asked the live one straight away.
            let log = nginx.access_log();
            let tried: Vec<&str> = log.iter().map(|line| line["upstream_addr"].as_str().unwrap()).collect();
            assert!(
                tried.iter().any(|addresses| addresses.starts_with(&down) && addresses.contains(", ")),
                "{tried:?}"
            );
            assert_eq!(tried.iter().filter(|addresses| addresses.contains(&down)).count(), 1, "{tried:?}");
        })
        .await
        .unwrap();
    }
    drop((queued, full));
    live.stop().await;
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_passes_a_live_stream_on_as_the_replica_writes_it() {
    let Some((stand, nginx)) = Stand::start("live").await else {
        return;
    };
    let client = crate::replicas::client();
    // Twice: round robin opens one stream on each replica.
    for _ in 0..2 {
        let asked = Instant::now();
        let mut response = client
            .get(format!("http://127.0.0.1:{}/api/v1/calls/live", nginx.port))
            .bearer_auth(&stand.key)
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|value| value.to_str().unwrap().to_owned())
        };
        assert_eq!(header("content-type").as_deref(), Some("text/event-stream"));
        assert_eq!(header("cache-control").as_deref(), Some("no-store"));
        assert!(
            header("x-ratelimit-limit").is_some(),
            "the service's own answer"
        );
        // The stream never ends, so only a proxy that passes each write on at once lets its first
        // blocks through: `retry:`, then the figures as an event `live` (a buffering nginx would
        // hold them until its buffer filled, many events later).
        let mut read = String::new();
        let mut blocks: Vec<String> = Vec::new();
        let is_live = |block: &String| block.lines().any(|line| line == "event: live");
        while !blocks.iter().any(is_live) {
            if let Some(end) = read.find("\n\n") {
                let block: String = read.drain(..end + 2).collect();
                blocks.push(block.trim_end_matches('\n').to_owned());
                continue;
            }
            let chunk =
                tokio::time::timeout_at((asked + Duration::from_secs(5)).into(), response.chunk())
                    .await
                    .unwrap_or_else(|_| {
                        panic!("no event `live` within 5 s through nginx: {blocks:?} {read:?}")
                    })
                    .unwrap()
                    .unwrap_or_else(|| panic!("the stream ended: {blocks:?} {read:?}"));
            read.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        assert_eq!(blocks[0], "retry: 5000", "{blocks:?}");
        let block = blocks.iter().find(|block| is_live(block)).unwrap();
        assert!(
            block.lines().any(|line| line
                .strip_prefix("id: ")
                .is_some_and(|id| id.parse::<u64>().is_ok())),
            "{block:?}"
        );
        let data = block
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("no data line: {block:?}"));
        let body: serde_json::Value =
            serde_json::from_str(data).unwrap_or_else(|err| panic!("not JSON ({err}): {data}"));
        assert!(body["totals"].is_object(), "{body}");
        drop(response);
    }
    drop(nginx);
    stand.stop().await;
}

/// An address that refuses connections while the socket lives: bound but not listening, so
/// that no other process (another test's nginx, say) can take its port meanwhile, as it could
/// once a listener was dropped.
fn refusing() -> (tokio::net::TcpSocket, String) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let base = format!("http://{}", socket.local_addr().unwrap());
    (socket, base)
}
