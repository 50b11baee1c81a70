//! What a message or a log line may show of a URL. Every URL the program shows (the database's,
//! the call platform's, Redis's) goes through [`url()`], so a password, a token in the query or a
//! user name never reaches stderr or a log.

/// Shown instead of a user, a password, a query value or a fragment.
const HIDDEN: &str = "***";

/// Shown instead of a URL that does not parse.
const NOT_SHOWN: &str = "[a URL that does not parse, not shown]";

/// `raw` with its user information (user and password), every query value and its fragment
/// replaced by `***`; the scheme, host, port, path and the query's parameter names stay, so
/// the message still says where. A query item without `=` may be a bare token and is hidden
/// whole. A URL that does not parse, or has no `//` part (`user:password@host` reads as the
/// scheme `user`), is not shown at all: what cannot be parsed cannot be known to hold no secret.
///
/// ```
/// use callstats_infra::redact;
///
/// assert_eq!(
///     redact::url("postgres://app:s3cret@db:5432/portal?sslpassword=k3y&sslmode=require"),
///     "postgres://***@db:5432/portal?sslpassword=***&sslmode=***"
/// );
/// assert_eq!(redact::url("http://platform.example/v2"), "http://platform.example/v2");
/// ```
#[must_use]
pub fn url(raw: &str) -> String {
    let mut parsed = match url::Url::parse(raw.trim()) {
        Ok(parsed) if !parsed.cannot_be_a_base() => parsed,
        _ => return NOT_SHOWN.to_owned(),
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // Only a URL without a host refuses these, and one with a user or password has a host.
        let _ = parsed.set_password(None);
        let _ = parsed.set_username(HIDDEN);
    }
    if let Some(query) = parsed.query() {
        let hidden: Vec<String> = query
            .split('&')
            .map(|item| match item.split_once('=') {
                Some((name, _)) => format!("{name}={HIDDEN}"),
                None => HIDDEN.to_owned(),
            })
            .collect();
        parsed.set_query(Some(&hidden.join("&")));
    }
    if parsed.fragment().is_some() {
        parsed.set_fragment(Some(HIDDEN));
    }
    parsed.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each form a secret takes in a URL, with the secret and what is shown instead.
    #[test]
    fn no_user_password_query_value_or_fragment_is_ever_shown() {
        for (raw, secrets, shown) in [
            (
                "http://u:S3cret@127.0.0.1:1",
                &["S3cret", "u:"][..],
                "http://***@127.0.0.1:1/",
            ),
            (
                "http://only-a-user@platform.example/v2",
                &["only-a-user"],
                "http://***@platform.example/v2",
            ),
            (
                "https://:pw-alone@platform.example",
                &["pw-alone"],
                "https://***@platform.example/",
            ),
            (
                "http://platform.example/v2?token=t0k3n&page=2",
                &["t0k3n"],
                "http://platform.example/v2?token=***&page=***",
            ),
            (
                "http://platform.example/?BareT0ken",
                &["BareT0ken"],
                "http://platform.example/?***",
            ),
            (
                "http://platform.example/#access_token=fr4g",
                &["fr4g"],
                "http://platform.example/#***",
            ),
            (
                "postgres://app@db/portal?sslpassword=k3y&sslmode=require",
                &["k3y"],
                "postgres://***@db/portal?sslpassword=***&sslmode=***",
            ),
            (
                "postgres://app@db/portal?PassWord=Hunter2&SSLPASSWORD=Hunter3",
                &["Hunter2", "Hunter3"],
                "postgres://***@db/portal?PassWord=***&SSLPASSWORD=***",
            ),
            (
                "redis://:redispass@cache:6379/0",
                &["redispass"],
                "redis://***@cache:6379/0",
            ),
            (
                "postgres://app:p%40ss@db:5432/portal",
                &["p%40ss", "p@ss"],
                "postgres://***@db:5432/portal",
            ),
        ] {
            let redacted = url(raw);
            assert_eq!(redacted, shown, "{raw}");
            for secret in secrets {
                assert!(!redacted.contains(secret), "{raw} shown as {redacted}");
            }
        }
    }

    #[test]
    fn a_url_that_does_not_parse_is_not_shown() {
        for raw in [
            "postgres://app:pa/ss@db:5432/portal",
            "postgres://app:p@ss@[db/portal",
            "http://u:S3cret@[::1",
            "u:S3cret@platform.example",
            "S3cret",
            "",
        ] {
            let redacted = url(raw);
            assert_eq!(redacted, NOT_SHOWN, "{raw}");
        }
    }

    #[test]
    fn a_url_without_secrets_is_shown_whole() {
        for raw in [
            "http://127.0.0.1:9000/calls",
            "https://platform.example/v2/",
            "postgres://db.internal:5432/portal",
            "postgres:///portal",
            "redis://cache:6379",
        ] {
            assert_eq!(url(raw), raw);
        }
        assert_eq!(
            url("postgres:///portal?host=/run/postgresql&password=x"),
            "postgres:///portal?host=***&password=***"
        );
    }
}
