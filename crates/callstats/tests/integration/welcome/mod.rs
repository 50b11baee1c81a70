//! What `callstats demo` prints works: every `curl` line it prints, sent as printed (same URL,
//! same header), answers 200 from the demo it came from; and today's figures there hold no
//! call that starts after the present (the built-in synthetic platform's rule).

use std::time::{Duration, Instant};

use callstats_callplatform::install_crypto_provider;
use callstats_domain::calendar::Day;
use callstats_domain::params::Direction;
use callstats_synthetic::Generator;
use time::OffsetDateTime;

use crate::support::demo::Demo;

/// How long the demo may take to print its lines after its key.
const PRINTED_WITHIN: Duration = Duration::from_secs(10);

/// The words of one shell line: bare words split on spaces, `'…'` kept whole without quotes.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            ' ' if !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            _ => {
                word.push(c);
                started = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in {line:?}");
    if started {
        words.push(word);
    }
    words
}

/// A printed `curl -H 'NAME: VALUE' … URL` line: its headers and its URL.
fn parse_curl(line: &str) -> (Vec<(String, String)>, String) {
    let words = shell_words(line);
    let mut words = words.iter();
    assert_eq!(words.next().map(String::as_str), Some("curl"), "{line}");
    let mut headers = Vec::new();
    let mut url = None;
    while let Some(word) = words.next() {
        match word.as_str() {
            "-H" => {
                let header = words.next().unwrap_or_else(|| panic!("-H alone: {line}"));
                let (name, value) = header
                    .split_once(':')
                    .unwrap_or_else(|| panic!("not a header: {header:?} in {line}"));
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
            other if other.starts_with('-') => panic!("unexpected curl option {other} in {line}"),
            other => {
                assert!(url.is_none(), "two URLs in {line}");
                url = Some(other.to_owned());
            }
        }
    }
    (headers, url.unwrap_or_else(|| panic!("no URL in {line}")))
}

#[test]
fn shell_words_reads_quoted_and_bare_words() {
    assert_eq!(
        shell_words("curl -H 'Authorization: Bearer k' 'http://h/a?b=c'  http://h/p"),
        [
            "curl",
            "-H",
            "Authorization: Bearer k",
            "http://h/a?b=c",
            "http://h/p"
        ]
    );
}

#[tokio::test]
async fn every_curl_line_the_demo_prints_answers_200() {
    let demo = tokio::task::spawn_blocking(|| Demo::start("welcome", |_, _| {}))
        .await
        .unwrap();
    let deadline = Instant::now() + PRINTED_WITHIN;
    let lines = loop {
        let printed = demo.printed.lock().unwrap().clone();
        if printed.len() >= 3 || Instant::now() > deadline {
            break printed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let curls: Vec<&String> = lines.iter().filter(|l| l.starts_with("curl ")).collect();
    assert_eq!(curls.len(), 3, "the demo printed {lines:#?}");

    install_crypto_provider();
    let client = reqwest::Client::new();
    for line in curls {
        let (headers, url) = parse_curl(line);
        assert!(url.starts_with(&demo.base()), "{url} is not the demo's");
        assert!(
            headers
                .iter()
                .any(|(name, value)| name == "Authorization"
                    && value == &format!("Bearer {}", demo.key)),
            "{line} does not carry the printed key"
        );
        let mut request = client.get(&url);
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let sent = OffsetDateTime::now_utc();
        let response = request
            .send()
            .await
            .unwrap_or_else(|err| panic!("{line}: {err:?}\ndemo logs:\n{}", demo.log_text()));
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert_eq!(status, 200, "{line}\nanswered {status}: {body}");
        if let Some((_, start)) = url.split_once("/calls/summary?start=") {
            assert_only_calls_started_by_the_answer(start, sent, &body);
        }
    }
}

/// Today's summary counts the built-in platform's inbound calls that had started when it was
/// asked (the demo's first request for today), none later.
fn assert_only_calls_started_by_the_answer(start: &str, sent: OffsetDateTime, body: &str) {
    let answered = OffsetDateTime::now_utc();
    let today = Day::parse(start).unwrap();
    let inbound_by = |instant: OffsetDateTime| {
        Generator::default()
            .calls_started_by(today, instant)
            .iter()
            .filter(|call| call.direction == Direction::Inbound)
            .count()
    };
    let total = serde_json::from_str::<serde_json::Value>(body).unwrap()["total_calls"]
        .as_u64()
        .unwrap();
    let (at_least, at_most) = (inbound_by(sent), inbound_by(answered));
    assert!(
        (at_least..=at_most).contains(&usize::try_from(total).unwrap()),
        "today's summary counts {total} inbound calls; {at_least} had started when it was asked, \
         {at_most} when it answered (the whole day has {})",
        inbound_by(answered + time::Duration::DAY)
    );
}
