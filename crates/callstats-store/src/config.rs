//! Where the portal database is and how the pool talks to it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Default pool size for Postgres: enough for a small server on two cores.
pub const DEFAULT_POSTGRES_POOL_SIZE: usize = 8;
/// Default pool size for SQLite: reads run on blocking threads, one file serialises writes.
pub const DEFAULT_SQLITE_POOL_SIZE: usize = 4;
/// Default bound on connecting and on waiting for a free connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default bound on one statement (Postgres `statement_timeout`, SQLite busy timeout).
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A database URL the store understands: `sqlite://PATH` or `postgres://…`.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `postgres://` or `postgresql://`, passed to the driver as given.
    Postgres(String),
    /// The SQLite file, created when missing (its directory must exist).
    Sqlite(PathBuf),
}

/// A database URL or pool setting the store cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "unsupported database URL {0:?}: expected sqlite://PATH (e.g. sqlite://callstats.db) or postgres://USER@HOST:PORT/DATABASE"
    )]
    UnsupportedUrl(String),
    #[error(
        "invalid database URL \"sqlite://\": it names no file; expected sqlite://PATH, e.g. sqlite://callstats.db"
    )]
    EmptySqlitePath,
    #[error("the pool size must be at least 1")]
    ZeroPoolSize,
    #[error("could not build the connection pool: {0}")]
    Pool(String),
}

impl DatabaseUrl {
    /// Parses `sqlite://PATH` (relative or, with a third slash, absolute) or
    /// `postgres://…`/`postgresql://…`.
    pub fn parse(raw: &str) -> Result<Self, ConfigError> {
        let raw = raw.trim();
        if let Some(path) = raw.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(ConfigError::EmptySqlitePath);
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            return Ok(Self::Postgres(raw.to_owned()));
        }
        Err(ConfigError::UnsupportedUrl(redact(raw)))
    }

    /// The name of the backend, for messages.
    #[must_use]
    pub const fn backend_name(&self) -> &'static str {
        match self {
            Self::Postgres(_) => "postgres",
            Self::Sqlite(_) => "sqlite",
        }
    }
}

/// The URL with any password replaced, safe for logs and messages.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Postgres(url) => f.write_str(&redact(url)),
            Self::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

/// The URL with its password (`user:password@`, or a `password=` query parameter) replaced by
/// `***`. A URL that does not parse (an unencoded `/`, `?` or `@` in a password, say) is shown
/// as its scheme alone: what cannot be parsed cannot be known to hold no password.
fn redact(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw) else {
        let scheme = raw.split_once("://").map_or("", |(scheme, _)| scheme);
        return format!("{scheme}://[unparseable URL, not shown]");
    };
    if url.password().is_some() {
        // Only URLs that cannot have a password refuse one; this one has one.
        let _ = url.set_password(Some("***"));
    }
    if url
        .query_pairs()
        .any(|(name, _)| name.eq_ignore_ascii_case("password"))
    {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if name.eq_ignore_ascii_case("password") {
                    "***".to_owned()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.to_string()
}

/// Whether the store's sessions may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The API's sessions: Postgres `default_transaction_read_only`, SQLite `query_only`.
    ReadOnly,
    /// Migrations, seeding and key administration.
    ReadWrite,
}

/// Everything the pool needs.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub url: DatabaseUrl,
    pub access: Access,
    /// Most connections open at once.
    pub pool_size: usize,
    /// Bound on opening a connection and on waiting for a free one.
    pub connect_timeout: Duration,
    /// Bound on one statement.
    pub statement_timeout: Duration,
}

impl StoreConfig {
    /// The defaults for this backend.
    #[must_use]
    pub fn new(url: DatabaseUrl, access: Access) -> Self {
        let pool_size = match url {
            DatabaseUrl::Postgres(_) => DEFAULT_POSTGRES_POOL_SIZE,
            DatabaseUrl::Sqlite(_) => DEFAULT_SQLITE_POOL_SIZE,
        };
        Self {
            url,
            access,
            pool_size,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_name_a_relative_or_absolute_file() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://callstats.db").unwrap(),
            DatabaseUrl::Sqlite(PathBuf::from("callstats.db"))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/callstats.db").unwrap(),
            DatabaseUrl::Sqlite(PathBuf::from("/var/lib/callstats.db"))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite://"),
            Err(ConfigError::EmptySqlitePath)
        );
    }

    #[test]
    fn postgres_urls_are_kept_and_other_schemes_rejected() {
        let url = "postgresql://app@db:5432/portal";
        assert_eq!(
            DatabaseUrl::parse(url).unwrap(),
            DatabaseUrl::Postgres(url.to_owned())
        );
        assert!(matches!(
            DatabaseUrl::parse("mysql://root@db/portal"),
            Err(ConfigError::UnsupportedUrl(_))
        ));
        assert!(DatabaseUrl::parse("callstats.db").is_err());
    }

    #[test]
    fn passwords_never_appear_when_a_url_is_shown() {
        let url =
            DatabaseUrl::parse("postgres://app:s3cret@db:5432/portal?sslmode=disable").unwrap();
        assert_eq!(
            url.to_string(),
            "postgres://app:***@db:5432/portal?sslmode=disable"
        );
        assert!(!format!("{url:?}").contains("s3cret"));
        let err = DatabaseUrl::parse("mysql://root:hunter2@db/portal").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn passwords_in_the_query_or_with_reserved_characters_are_never_shown() {
        for (raw, secret) in [
            (
                "postgres://app@db/portal?password=hunter2&sslmode=require",
                "hunter2",
            ),
            (
                "postgres://app@db/portal?sslmode=require&PASSWORD=Hunter3",
                "Hunter3",
            ),
            ("postgres://app:pa/ss@db:5432/portal", "pa/ss"),
            ("postgres://app:pa?ss@db:5432/portal", "pa?ss"),
            ("postgres://app:p@ss@db:5432/portal", "p@ss"),
            ("postgres://app:p%40ss@db:5432/portal", "p%40ss"),
        ] {
            let shown = DatabaseUrl::parse(raw).unwrap().to_string();
            assert!(!shown.contains(secret), "{raw} shown as {shown}");
            assert!(shown.starts_with("postgres://"), "{shown}");
        }
        assert_eq!(
            DatabaseUrl::parse("postgres://app@db/portal?password=x&sslmode=require")
                .unwrap()
                .to_string(),
            "postgres://app@db/portal?password=***&sslmode=require"
        );
    }
}
