//! Settings that must never be printed (the upstream token, URLs that may carry a password):
//! `Debug` shows `[redacted]`, there is no `Display`, and the value is read with `expose`. A
//! message that names such a URL shows it through `callstats_infra::redact::url`.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

/// A setting's value that no log, error or debug output may show.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for the one place that uses it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl FromStr for Secret {
    type Err = Infallible;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Ok(Self(value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::Cli;

    #[test]
    fn parsed_arguments_never_show_a_token_or_a_url_password() {
        for args in [
            vec![
                "callstats",
                "serve",
                "--call-platform-token",
                "tok-3f9a",
                "--redis-url",
                "redis://:redispass@cache:6379",
                "--database-url",
                "postgres://app:dbpass@db/portal",
            ],
            vec![
                "callstats",
                "serve",
                "--call-platform-url",
                "http://u:platformpass@127.0.0.1:1",
            ],
            vec!["callstats", "sim", "--token", "tok-3f9a"],
            vec![
                "callstats",
                "demo",
                "--database-url",
                "postgres://app:dbpass@db/portal",
            ],
        ] {
            let parsed = Cli::try_parse_from(&args).unwrap();
            let shown = format!("{parsed:?} {parsed:#?}");
            for secret in ["tok-3f9a", "redispass", "dbpass", "platformpass"] {
                assert!(!shown.contains(secret), "{args:?} shows {secret}: {shown}");
            }
        }
    }
}
