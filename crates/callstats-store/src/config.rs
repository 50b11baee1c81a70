//! Where the portal database is and how the pool talks to it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use callstats_infra::redact;

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
    /// The SQLite file (created when missing only by a store that may create it,
    /// [`IfMissing::Create`]; its directory must exist).
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
    #[error("the SQLite database {0} cannot be opened: {1}")]
    SqlitePath(String, String),
    #[error(
        "{0}-wal holds transactions not yet written to {0}, and neither the file nor its folder \
         can be written here, so they would be ignored: run `callstats migrate` on it once \
         where it is writable (SQLite then folds them in), then make it read-only again"
    )]
    UnsavedWal(String),
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
        Err(ConfigError::UnsupportedUrl(redact::url(raw)))
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

/// The URL as messages and logs show it: a Postgres URL without its user, password and query
/// values (`redact::url`), a SQLite file as its path.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Postgres(url) => f.write_str(&redact::url(url)),
            Self::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

/// Whether the store's sessions may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The API's sessions: Postgres `default_transaction_read_only`, SQLite `query_only`.
    ReadOnly,
    /// Migrations, seeding and key administration.
    ReadWrite,
}

/// What a store does when its SQLite file does not exist (Postgres has no such choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMissing {
    /// Create an empty database on the first connection (`migrate`, `seed`, `keys`, `demo`).
    /// A read-only store never creates one.
    Create,
    /// Never create one: each connection fails while the file is missing, so a file deleted
    /// under a running `serve` makes its queries fail instead of a new empty database appearing.
    Fail,
}

/// Everything the pool needs.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub url: DatabaseUrl,
    pub access: Access,
    /// Whether a missing SQLite file is created (default: [`IfMissing::Fail`]).
    pub if_missing: IfMissing,
    /// Most connections open at once.
    pub pool_size: usize,
    /// Bound on opening a connection and on waiting for a free one.
    pub connect_timeout: Duration,
    /// Bound on one statement.
    pub statement_timeout: Duration,
}

impl StoreConfig {
    /// The defaults for this backend; a missing SQLite file is not created.
    #[must_use]
    pub fn new(url: DatabaseUrl, access: Access) -> Self {
        let pool_size = match url {
            DatabaseUrl::Postgres(_) => DEFAULT_POSTGRES_POOL_SIZE,
            DatabaseUrl::Sqlite(_) => DEFAULT_SQLITE_POOL_SIZE,
        };
        Self {
            url,
            access,
            if_missing: IfMissing::Fail,
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
    fn a_postgres_url_is_shown_without_its_user_password_or_query_values() {
        let url = DatabaseUrl::parse(
            "postgres://app:s3cret@db:5432/portal?sslmode=disable&sslpassword=k3y",
        )
        .unwrap();
        assert_eq!(
            url.to_string(),
            "postgres://***@db:5432/portal?sslmode=***&sslpassword=***"
        );
        let debug = format!("{url:?}");
        assert!(
            !debug.contains("s3cret") && !debug.contains("k3y"),
            "{debug}"
        );
        let err = DatabaseUrl::parse("mysql://root:hunter2@db/portal?password=x2").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(!err.to_string().contains("x2"), "{err}");
        let unparsed = DatabaseUrl::parse("postgres://app:pa/ss@db:5432/portal").unwrap();
        assert!(!unparsed.to_string().contains("pa/ss"), "{unparsed}");
    }
}
