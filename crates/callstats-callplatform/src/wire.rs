//! The upstream contract on the wire (docs/call-platform.md), in one place for both sides:
//! the typed page the adapter reads and the page the sim writes; the optional `/live` in
//! [`live`].
//!
//! ```text
//! GET {base}/calls?from=2026-11-01T00:00:00%2B05:00&to=2026-11-02T00:00:00%2B05:00&limit=1000[&cursor=C]
//! 200 {"calls": [{"id", "direction", "agent_number", "started_at", "duration_seconds",
//!                  "wait_seconds", "queue"}],
//!      "next_cursor": "opaque" | null}
//! ```

pub mod live;

use std::borrow::Cow;

use callstats_domain::model::{
    AgentNumber, CallRecord, MAX_IDENTIFIER_BYTES, MAX_WAIT_SECONDS, QueueName,
};
use callstats_domain::params::Direction;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// One page as the upstream sends it. Strings borrow from the page body where they can, so a
/// page costs its bytes plus one small struct per call, never a generic JSON tree.
#[derive(Debug, Deserialize)]
pub(crate) struct PageIn<'a> {
    #[serde(borrow)]
    pub calls: Vec<CallIn<'a>>,
    /// A missing `next_cursor` reads as null: the last page.
    #[serde(default, borrow)]
    pub next_cursor: Option<Cow<'a, str>>,
}

/// One call as the upstream sends it; unknown fields are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct CallIn<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    pub direction: DirectionIn,
    /// Null (or missing) for a call no agent answered.
    #[serde(default, borrow)]
    pub agent_number: Option<Text<'a>>,
    #[serde(borrow)]
    pub started_at: Cow<'a, str>,
    pub duration_seconds: f64,
    /// Null (or missing) when the platform does not track it.
    #[serde(default)]
    pub wait_seconds: Option<f64>,
    /// Null (or missing) when no queue offered the call.
    #[serde(default, borrow)]
    pub queue: Option<Text<'a>>,
}

/// A string borrowed from the page when it holds no escapes. (Serde borrows a bare `Cow` field,
/// but would allocate for an `Option<Cow>`; the newtype keeps the borrow.)
#[derive(Debug, Deserialize)]
pub(crate) struct Text<'a>(#[serde(borrow)] pub Cow<'a, str>);

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DirectionIn {
    Inbound,
    Outbound,
}

impl From<DirectionIn> for Direction {
    fn from(direction: DirectionIn) -> Self {
        match direction {
            DirectionIn::Inbound => Self::Inbound,
            DirectionIn::Outbound => Self::Outbound,
        }
    }
}

impl CallIn<'_> {
    /// The domain record, or why this call is unusable.
    pub fn to_record(&self) -> Result<CallRecord, String> {
        if self.id.is_empty()
            || self.id.len() > MAX_IDENTIFIER_BYTES
            || self.id.chars().any(char::is_control)
        {
            return Err(format!(
                "call id {:?} is not 1 to {MAX_IDENTIFIER_BYTES} bytes of printable text",
                clip(&self.id)
            ));
        }
        let started_at = parse_instant(&self.started_at)
            .map_err(|e| {
                format!(
                    "call {:?}: started_at {:?} is not an RFC 3339 date-time ({e})",
                    clip(&self.id),
                    clip(&self.started_at)
                )
            })?
            .unix_timestamp();
        if !(0.0..=MAX_DURATION_SECONDS).contains(&self.duration_seconds) {
            return Err(format!(
                "call {:?}: duration_seconds {} is not a number of seconds from 0 to {MAX_DURATION_SECONDS}",
                clip(&self.id),
                self.duration_seconds
            ));
        }
        let agent_number = match &self.agent_number {
            None => None,
            Some(Text(raw)) => Some(AgentNumber::new(raw).map_err(|e| {
                format!(
                    "call {:?}: agent_number {:?}: {e}",
                    clip(&self.id),
                    clip(raw)
                )
            })?),
        };
        if let Some(wait) = self.wait_seconds
            && !(0.0..=MAX_WAIT_SECONDS).contains(&wait)
        {
            return Err(format!(
                "call {:?}: wait_seconds {wait} is not a number of seconds from 0 to {MAX_WAIT_SECONDS}",
                clip(&self.id)
            ));
        }
        let queue =
            match &self.queue {
                None => None,
                Some(Text(raw)) => Some(QueueName::new(raw).map_err(|e| {
                    format!("call {:?}: queue {:?}: {e}", clip(&self.id), clip(raw))
                })?),
            };
        Ok(CallRecord {
            direction: self.direction.into(),
            agent_number,
            started_at,
            duration_seconds: self.duration_seconds,
            wait_seconds: self.wait_seconds,
            queue,
        })
    }
}

/// The longest call there can be: a day.
const MAX_DURATION_SECONDS: f64 = 86_400.0;

/// An RFC 3339 date-time. A leap second (`23:59:60`, which RFC 3339 allows and `time` does
/// not) is read as the second before it.
fn parse_instant(raw: &str) -> Result<OffsetDateTime, time::error::Parse> {
    OffsetDateTime::parse(raw, &Rfc3339).or_else(|error| {
        // `YYYY-MM-DDTHH:MM:SS…`: the seconds are bytes 17 and 18.
        match (raw.get(..17), raw.get(17..19), raw.get(19..)) {
            (Some(before), Some("60"), Some(after)) => {
                OffsetDateTime::parse(&format!("{before}59{after}"), &Rfc3339)
            }
            _ => Err(error),
        }
    })
}

/// At most 64 characters of an upstream value, for a log line.
fn clip(value: &str) -> &str {
    value
        .char_indices()
        .nth(64)
        .and_then(|(end, _)| value.get(..end))
        .unwrap_or(value)
}

/// One page as the sim writes it.
#[derive(Debug, Serialize)]
pub struct PageOut<'a> {
    pub calls: Vec<CallOut<'a>>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CallOut<'a> {
    pub id: &'a str,
    pub direction: Direction,
    pub agent_number: Option<&'a str>,
    pub started_at: String,
    pub duration_seconds: f64,
    pub wait_seconds: Option<f64>,
    pub queue: Option<&'a str>,
}

/// `2026-11-01T00:00:00+05:00`: an instant in RFC 3339, in its own offset.
pub fn format_instant(instant: OffsetDateTime) -> Result<String, time::error::Format> {
    instant.format(&Rfc3339)
}

/// What a query value keeps as it is: RFC 3986's unreserved characters and `:`, so a window
/// reads `2026-11-01T00:00:00%2B05:00` byte for byte as in the contract (a form encoder, as
/// reqwest's query builder uses, would write `%3A` for each `:`).
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':');

/// Percent-encodes a query value (a window instant, a cursor).
pub(crate) fn encode_query_value(raw: &str) -> String {
    utf8_percent_encode(raw, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn window_instants_are_written_with_an_encoded_plus() {
        let formatted = format_instant(datetime!(2026-11-01 00:00 +5)).unwrap();
        assert_eq!(formatted, "2026-11-01T00:00:00+05:00");
        assert_eq!(
            encode_query_value(&formatted),
            "2026-11-01T00:00:00%2B05:00"
        );
    }

    #[test]
    fn cursors_are_encoded_whole() {
        assert_eq!(encode_query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }

    #[test]
    fn a_page_parses_into_records_in_unix_seconds() {
        let body = br#"{"calls": [
            {"id": "c-1", "direction": "inbound", "agent_number": "101",
             "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 125.4, "extra": 1},
            {"id": "c-\u0032", "direction": "outbound", "agent_number": null,
             "started_at": "2026-11-01T04:15:22Z", "duration_seconds": 0}],
            "next_cursor": "abc"}"#;
        let page: PageIn<'_> = serde_json::from_slice(body).unwrap();
        assert_eq!(page.next_cursor.as_deref(), Some("abc"));
        let records: Vec<CallRecord> = page.calls.iter().map(|c| c.to_record().unwrap()).collect();
        let expected = datetime!(2026-11-01 04:15:22 UTC).unix_timestamp();
        assert_eq!(records[0].started_at, expected);
        assert_eq!(records[1].started_at, expected);
        assert_eq!(records[0].agent_number.as_ref().unwrap().as_str(), "101");
        assert_eq!(records[1].direction, Direction::Outbound);
        assert_eq!(page.calls[1].id, "c-2");
    }

    #[test]
    fn escaped_strings_are_read_as_well_as_borrowed_ones() {
        let body = br#"{"calls": [{"id": "c-\"1\"", "direction": "inbound",
            "agent_number": "\u0031\u00301", "started_at": "2026-11-01T09:15:22\u002B05:00",
            "duration_seconds": 1}], "next_cursor": "n\/1"}"#;
        let page: PageIn<'_> = serde_json::from_slice(body).unwrap();
        let record = page.calls[0].to_record().unwrap();
        assert_eq!(record.agent_number.unwrap().as_str(), "101");
        assert_eq!(page.calls[0].id, "c-\"1\"");
        assert_eq!(page.next_cursor.as_deref(), Some("n/1"));
    }

    #[test]
    fn unusable_calls_say_why() {
        let parse = |call: &str| {
            let body = format!(r#"{{"calls": [{call}], "next_cursor": null}}"#);
            let page: PageIn<'_> = serde_json::from_str(&body).unwrap();
            page.calls[0].to_record().unwrap_err()
        };
        let bad_time = parse(
            r#"{"id": "c-1", "direction": "inbound", "agent_number": "101",
                "started_at": "2026-11-01 09:15", "duration_seconds": 1}"#,
        );
        assert!(bad_time.contains("started_at"), "{bad_time}");
        let bad_agent = parse(
            r#"{"id": "c-1", "direction": "inbound", "agent_number": "1 0",
                "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1}"#,
        );
        assert!(bad_agent.contains("agent_number"), "{bad_agent}");
        let bad_duration = parse(
            r#"{"id": "c-1", "direction": "inbound", "agent_number": null,
                "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": -3}"#,
        );
        assert!(bad_duration.contains("duration_seconds"), "{bad_duration}");
    }

    fn record(call: &str) -> Result<CallRecord, String> {
        let body = format!(r#"{{"calls": [{call}], "next_cursor": null}}"#);
        let page: PageIn<'_> = serde_json::from_str(&body).unwrap();
        page.calls[0].to_record()
    }

    #[test]
    fn waits_and_queues_are_read_and_absent_or_null_reads_as_none() {
        let full = record(
            r#"{"id": "c-1", "direction": "inbound", "agent_number": "101",
                "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1,
                "wait_seconds": 12.5, "queue": "sales"}"#,
        )
        .unwrap();
        assert_eq!(full.wait_seconds, Some(12.5));
        assert_eq!(full.queue.unwrap().as_str(), "sales");
        for call in [
            r#"{"id": "c-1", "direction": "outbound", "agent_number": "101",
                "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1}"#,
            r#"{"id": "c-1", "direction": "outbound", "agent_number": "101",
                "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1,
                "wait_seconds": null, "queue": null}"#,
        ] {
            let bare = record(call).unwrap();
            assert_eq!((bare.wait_seconds, bare.queue), (None, None));
        }
    }

    #[test]
    fn a_bad_wait_or_queue_makes_the_call_unusable() {
        let with = |extra: &str| {
            record(&format!(
                r#"{{"id": "c-1", "direction": "inbound", "agent_number": null,
                    "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1, {extra}}}"#
            ))
        };
        for wait in ["-0.5", "86400.01", "-1e-9"] {
            let error = with(&format!(r#""wait_seconds": {wait}"#)).unwrap_err();
            assert!(error.contains("wait_seconds"), "{wait}: {error}");
        }
        assert!(with(r#""wait_seconds": 86400"#).is_ok());
        let long = "q".repeat(65);
        for queue in [long.as_str(), "", "a\\u0007b"] {
            let error = with(&format!(r#""queue": "{queue}""#)).unwrap_err();
            assert!(error.contains("queue"), "{queue}: {error}");
        }
        assert!(with(&format!(r#""queue": "{}""#, "q".repeat(64))).is_ok());
    }

    #[test]
    fn a_leap_second_is_read_as_the_second_before_it() {
        let leap = record(
            r#"{"id": "c-1", "direction": "inbound", "agent_number": "101",
                "started_at": "2026-12-31T23:59:60+05:00", "duration_seconds": 1}"#,
        )
        .unwrap();
        assert_eq!(
            leap.started_at,
            datetime!(2026-12-31 23:59:59 +5).unix_timestamp()
        );
        let fraction = record(
            r#"{"id": "c-1", "direction": "inbound", "agent_number": "101",
                "started_at": "2016-12-31T23:59:60.5Z", "duration_seconds": 1}"#,
        )
        .unwrap();
        assert_eq!(
            fraction.started_at,
            datetime!(2016-12-31 23:59:59 UTC).unix_timestamp()
        );
        // Only the seconds field may be 60.
        for bad in [
            "2026-12-31T23:60:00+05:00",
            "2026-12-31T23:59:61+05:00",
            "2026-12-31T23:59:6",
        ] {
            let call = format!(
                r#"{{"id": "c-1", "direction": "inbound", "agent_number": null, "started_at": "{bad}", "duration_seconds": 1}}"#
            );
            assert!(record(&call).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_are_finite_seconds_from_zero_to_a_day() {
        let with = |duration: &str| {
            record(&format!(
                r#"{{"id": "c-1", "direction": "inbound", "agent_number": null,
                    "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": {duration}}}"#
            ))
        };
        assert_eq!(with("0").unwrap().duration_seconds, 0.0);
        assert_eq!(with("86400").unwrap().duration_seconds, 86_400.0);
        for bad in ["1e308", "86400.001", "-0.5"] {
            let error = with(bad).unwrap_err();
            assert!(error.contains("from 0 to 86400"), "{bad}: {error}");
        }
    }

    #[test]
    fn ids_and_agent_numbers_are_at_most_64_bytes_of_printable_text() {
        let with = |id: &str, agent: &str| {
            record(&format!(
                r#"{{"id": {id}, "direction": "inbound", "agent_number": {agent},
                    "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1}}"#
            ))
        };
        let long = serde_json::to_string(&"x".repeat(64)).unwrap();
        assert!(with(&long, "\"101\"").is_ok());
        let too_long = serde_json::to_string(&"x".repeat(65)).unwrap();
        assert!(with(&too_long, "\"101\"").unwrap_err().contains("64 bytes"));
        assert!(
            with("\"c-\\u0007\"", "\"101\"").is_err(),
            "a control character"
        );
        assert!(
            with("\"c 1 ü\"", "\"101\"").is_ok(),
            "spaces and letters are printable"
        );
        let long_agent = serde_json::to_string(&"😀".repeat(17)).unwrap();
        assert!(
            with("\"c-1\"", &long_agent)
                .unwrap_err()
                .contains("agent_number")
        );
    }

    #[test]
    fn reasons_quote_at_most_64_characters_of_a_value() {
        let long = "x".repeat(10_000);
        assert_eq!(clip(&long).len(), 64);
        assert_eq!(clip("c-1"), "c-1");
        assert_eq!(clip(&"é".repeat(100)).chars().count(), 64);
    }

    #[test]
    fn an_unknown_direction_or_missing_field_fails_the_page() {
        let unknown = br#"{"calls": [{"id": "c-1", "direction": "sideways", "agent_number": null,
            "started_at": "2026-11-01T09:15:22+05:00", "duration_seconds": 1}], "next_cursor": null}"#;
        assert!(serde_json::from_slice::<PageIn<'_>>(unknown).is_err());
        let missing = br#"{"calls": [{"id": "c-1", "direction": "inbound",
            "started_at": "2026-11-01T09:15:22+05:00"}], "next_cursor": null}"#;
        assert!(serde_json::from_slice::<PageIn<'_>>(missing).is_err());
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// A JSON value of any type, for the fields of an otherwise well-formed call.
        fn any_json() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("null".to_owned()),
                any::<bool>().prop_map(|b| b.to_string()),
                any::<i64>().prop_map(|n| n.to_string()),
                any::<f64>().prop_map(|f| if f.is_finite() {
                    f.to_string()
                } else {
                    "1e999".to_owned()
                }),
                ".{0,30}".prop_map(|s| serde_json::to_string(&s).unwrap()),
                Just("[]".to_owned()),
                Just("{}".to_owned()),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2048))]

            #[test]
            fn arbitrary_bytes_never_panic_the_page_parser(body in proptest::collection::vec(any::<u8>(), 0..400)) {
                if let Ok(page) = serde_json::from_slice::<PageIn<'_>>(&body) {
                    for call in &page.calls {
                        let _ = call.to_record();
                    }
                }
            }

            #[test]
            fn a_call_with_any_field_values_parses_or_is_rejected_never_panics(
                id in any_json(), direction in any_json(), agent in any_json(), started in any_json(), duration in any_json(),
            ) {
                let body = format!(
                    r#"{{"calls": [{{"id": {id}, "direction": {direction}, "agent_number": {agent}, "started_at": {started}, "duration_seconds": {duration}}}], "next_cursor": null}}"#
                );
                if let Ok(page) = serde_json::from_slice::<PageIn<'_>>(body.as_bytes()) {
                    for call in &page.calls {
                        if let Ok(record) = call.to_record() {
                            prop_assert!(record.duration_seconds.is_finite() && record.duration_seconds >= 0.0);
                        }
                    }
                }
            }

            #[test]
            fn any_offset_of_a_valid_instant_converts_to_the_same_unix_second(
                unix in 1_600_000_000_i64..1_900_000_000, offset_minutes in -720_i32..=840,
            ) {
                let offset = time::UtcOffset::from_whole_seconds(offset_minutes * 60).unwrap();
                let instant = OffsetDateTime::from_unix_timestamp(unix).unwrap().to_offset(offset);
                let body = format!(
                    r#"{{"calls": [{{"id": "c", "direction": "inbound", "agent_number": "101", "started_at": "{}", "duration_seconds": 1.5}}]}}"#,
                    instant.format(&Rfc3339).unwrap()
                );
                let page: PageIn<'_> = serde_json::from_slice(body.as_bytes()).unwrap();
                prop_assert_eq!(page.calls[0].to_record().unwrap().started_at, unix);
            }
        }
    }
}
