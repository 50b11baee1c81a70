//! `Accept`, read by actix's parser for both negotiations it drives: problem details for errors
//! ([`crate::problem`]) and the representation of a data answer (JSON, or CSV on the endpoints
//! that have it), which compare the same qualities.

use actix_web::http::header::{ACCEPT, HeaderMap, Quality, QualityItem, from_comma_delimited};
use actix_web::mime::{Mime, STAR};
use callstats_application::representation::{Acceptable, EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE};

use crate::problem::PROBLEM_JSON;

/// The media ranges of a request's `Accept`; `None` without one, when it is `*/*` alone (what
/// most clients send), or when it does not parse or names nothing: each of these prefers
/// nothing, and the answer is what it is without `Accept`.
fn ranges(headers: &HeaderMap) -> Option<Vec<QualityItem<Mime>>> {
    let mut values = headers.get_all(ACCEPT);
    match (values.next(), values.next()) {
        (None, _) => return None,
        (Some(only), None) if only == "*/*" => return None,
        _ => {}
    }
    from_comma_delimited::<_, QualityItem<Mime>>(headers.get_all(ACCEPT))
        .ok()
        .filter(|ranges| !ranges.is_empty())
}

/// The highest quality `ranges` give a media range that `matches`.
fn quality(ranges: &[QualityItem<Mime>], matches: impl Fn(&Mime) -> bool) -> Option<Quality> {
    ranges
        .iter()
        .filter(|range| matches(&range.item))
        .map(|range| range.quality)
        .max()
}

/// `application/json` by name.
fn json_named(mime: &Mime) -> bool {
    mime.essence_str() == JSON_MEDIA_TYPE
}

/// `application/*` or `*/*`.
fn json_wildcard(mime: &Mime) -> bool {
    mime.subtype() == STAR && (mime.type_() == STAR || mime.type_() == "application")
}

/// Whether the request's `Accept` prefers problem details: it names
/// `application/problem+json` with a quality above 0 and at least that of `application/json`
/// (named, or through `application/*` or `*/*`). An unreadable `Accept` prefers nothing.
pub(crate) fn problem_preferred(headers: &HeaderMap) -> bool {
    let Some(ranges) = ranges(headers) else {
        return false;
    };
    let problem = quality(&ranges, |mime| mime.essence_str() == PROBLEM_JSON);
    let json = quality(&ranges, |mime| json_named(mime) || json_wildcard(mime));
    problem
        .is_some_and(|problem| problem > Quality::ZERO && json.is_none_or(|json| problem >= json))
}

/// Whether the request's `Accept` asks for an event stream: it names `text/event-stream` with a
/// quality above 0 and at least that of `application/json` (named). `EventSource` sends
/// `Accept: text/event-stream`.
pub(crate) fn event_stream_preferred(headers: &HeaderMap) -> bool {
    let Some(ranges) = ranges(headers) else {
        return false;
    };
    let stream = quality(&ranges, |mime| {
        mime.essence_str() == EVENT_STREAM_MEDIA_TYPE
    });
    let json = quality(&ranges, json_named);
    stream.is_some_and(|stream| stream > Quality::ZERO && json.is_none_or(|json| stream >= json))
}

/// What the request's `Accept` allows of a data answer:
/// - JSON is acceptable when `Accept` is absent, unreadable or empty, or gives a quality above
///   0 to `application/json`, `application/problem+json`, `application/*` or `*/*`;
/// - CSV is preferred when `text/csv` (or `text/*`) has a quality above 0, above that of
///   `application/json` by name, and at least that of `application/*` and `*/*`: so
///   `text/csv`, `text/csv, */*;q=0.1` and `text/csv, */*` prefer it, while `*/*` alone,
///   `application/json, text/csv` and `text/csv;q=0.5, application/json` do not.
pub(crate) fn acceptable(headers: &HeaderMap) -> Acceptable {
    let Some(ranges) = ranges(headers) else {
        return Acceptable::JSON;
    };
    let named = quality(&ranges, json_named);
    let wildcard = quality(&ranges, json_wildcard);
    let problem = quality(&ranges, |mime| mime.essence_str() == PROBLEM_JSON);
    let json = [named, wildcard, problem]
        .into_iter()
        .flatten()
        .any(|q| q > Quality::ZERO);
    let csv = quality(&ranges, |mime| {
        mime.type_() == "text" && (mime.subtype() == "csv" || mime.subtype() == STAR)
    });
    let csv_preferred = csv.is_some_and(|csv| {
        csv > Quality::ZERO
            && named.is_none_or(|named| csv > named)
            && wildcard.is_none_or(|wildcard| csv >= wildcard)
    });
    Acceptable {
        json,
        csv_preferred,
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    /// The headers of a request with one `Accept` header for each of `accept`.
    fn accepting(accept: &[&str]) -> HeaderMap {
        let mut req = TestRequest::default();
        for value in accept {
            req = req.append_header((ACCEPT, *value));
        }
        req.to_http_request().headers().clone()
    }

    fn of(accept: &[&str]) -> Acceptable {
        acceptable(&accepting(accept))
    }

    fn with(json: bool, csv_preferred: bool) -> Acceptable {
        Acceptable {
            json,
            csv_preferred,
        }
    }

    #[test]
    fn csv_is_preferred_by_quality_and_json_stays_the_default() {
        for (accept, want) in [
            (&[][..], Acceptable::JSON),
            (&["*/*"], Acceptable::JSON),
            (&["application/json"], Acceptable::JSON),
            (&[""], Acceptable::JSON),
            (&["not a media type;;;"], Acceptable::JSON),
            (&["text/csv"], with(false, true)),
            (&["TEXT/CSV"], with(false, true)),
            (&["text/*"], with(false, true)),
            (&["text/csv, */*;q=0.1"], with(true, true)),
            (&["text/csv", "*/*;q=0.1"], with(true, true)),
            (&["*/*", "text/csv"], with(true, true)),
            (&["text/csv, */*"], with(true, true)),
            (&["application/json, text/csv"], with(true, false)),
            (&["text/csv;q=0.5, application/json"], with(true, false)),
            (&["text/csv, application/json;q=0.9"], with(true, true)),
            (&["text/csv;q=0.5, */*"], with(true, false)),
            (&["text/csv;q=0"], with(false, false)),
            (&["text/csv;q=0, application/json"], with(true, false)),
            (&["application/json;q=0, text/csv"], with(false, true)),
            (&["image/png"], with(false, false)),
            (&["application/problem+json"], with(true, false)),
            (
                &["text/html,application/xhtml+xml,*/*;q=0.8"],
                with(true, false),
            ),
        ] {
            assert_eq!(of(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn problem_details_keep_their_rule() {
        for (accept, want) in [
            ("application/problem+json", true),
            ("application/json, application/problem+json", true),
            ("application/json, application/problem+json;q=0.5", false),
            ("application/problem+json;q=0", false),
            ("*/*", false),
            ("text/csv, application/problem+json", true),
        ] {
            assert_eq!(problem_preferred(&accepting(&[accept])), want, "{accept}");
        }
    }

    #[test]
    fn an_event_stream_is_asked_for_by_name_and_never_by_a_wildcard() {
        for (accept, want) in [
            ("text/event-stream", true),
            ("text/event-stream, application/json;q=0.9", true),
            ("application/json, text/event-stream;q=0.5", false),
            ("text/event-stream;q=0", false),
            ("*/*", false),
            ("text/*", false),
        ] {
            assert_eq!(
                event_stream_preferred(&accepting(&[accept])),
                want,
                "{accept}"
            );
        }
        assert!(event_stream_preferred(&accepting(&[
            "*/*",
            "text/event-stream"
        ])));
    }
}
