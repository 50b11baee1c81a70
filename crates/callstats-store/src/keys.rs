//! API key administration: issue, list, revoke. Only the SHA-256 digest of a key and its
//! display prefix are stored; the plaintext is the caller's to show once.

use callstats_domain::access::{ApiKeySecret, DEFAULT_RATE_LIMIT};
use callstats_domain::ports::StoreError;
use callstats_domain::scope::ScopeSet;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;

use crate::pool::{load_all, with_connection};
use crate::rows::{KeyRow, NewKeyRow};
use crate::schema::api_keys;
use crate::store::{Store, query_failed};

/// Longest key name, in characters.
pub const KEY_NAME_MAX_CHARS: usize = 100;

/// A key request that cannot be honoured, or a key that is not there.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "invalid key name: expected 1 to 100 characters without control characters, and not only digits (digits alone name a key id)"
    )]
    InvalidName,
    #[error("invalid rate limit {0}: expected at least 1 request per minute")]
    InvalidRateLimit(u32),
    #[error(
        "invalid origin {0:?}: expected a bare domain such as dash.example.uz (no scheme, port or path)"
    )]
    InvalidOrigin(String),
    #[error("no key with id or name {0:?}")]
    NotFound(String),
    #[error(transparent)]
    Unavailable(#[from] StoreError),
}

/// What a new key may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    name: String,
    scopes: ScopeSet,
    rate_limit_per_minute: u32,
    allowed_origin: Option<String>,
    expires_at: Option<OffsetDateTime>,
}

impl NewKey {
    /// A key with the default quota, no Origin pinning and no expiry.
    pub fn new(name: &str, scopes: ScopeSet) -> Result<Self, KeyError> {
        let name = name.trim();
        let chars = name.chars().count();
        if chars == 0
            || chars > KEY_NAME_MAX_CHARS
            || name.chars().any(char::is_control)
            || name.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(KeyError::InvalidName);
        }
        Ok(Self {
            name: name.to_owned(),
            scopes,
            rate_limit_per_minute: DEFAULT_RATE_LIMIT,
            allowed_origin: None,
            expires_at: None,
        })
    }

    pub fn rate_limit(mut self, per_minute: u32) -> Result<Self, KeyError> {
        if per_minute == 0 || i32::try_from(per_minute).is_err() {
            return Err(KeyError::InvalidRateLimit(per_minute));
        }
        self.rate_limit_per_minute = per_minute;
        Ok(self)
    }

    /// Pins the key to a domain: letters, digits, dots and hyphens (stored lower-case).
    pub fn origin(mut self, domain: &str) -> Result<Self, KeyError> {
        let valid = !domain.is_empty()
            && domain.len() <= 253
            && domain
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && !domain.starts_with('.')
            && !domain.ends_with('.');
        if !valid {
            return Err(KeyError::InvalidOrigin(domain.chars().take(80).collect()));
        }
        self.allowed_origin = Some(domain.to_ascii_lowercase());
        Ok(self)
    }

    #[must_use]
    pub fn expires_at(mut self, at: OffsetDateTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A key as `keys list` shows it: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyListing {
    pub id: i64,
    pub name: String,
    /// `cs_` and the next four characters, enough to tell keys apart.
    pub display_prefix: String,
    pub scopes: ScopeSet,
    pub rate_limit_per_minute: u32,
    pub allowed_origin: Option<String>,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
}

impl TryFrom<KeyRow> for KeyListing {
    type Error = StoreError;

    fn try_from(row: KeyRow) -> Result<Self, StoreError> {
        let created_at = OffsetDateTime::from_unix_timestamp(row.created_at_unix)
            .map_err(|error| StoreError::from_source("api_keys.created_at_unix", error))?;
        let display_prefix = row.display_prefix.clone();
        let record = callstats_domain::access::ApiKeyRecord::try_from(row)?;
        Ok(Self {
            id: record.id,
            name: record.name.to_string(),
            display_prefix,
            scopes: record.scopes,
            rate_limit_per_minute: record.rate_limit_per_minute,
            allowed_origin: record.allowed_origin,
            created_at,
            expires_at: record.expires_at,
            revoked_at: record.revoked_at,
        })
    }
}

/// What `revoke_keys` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    /// Ids and names of the keys revoked now.
    pub revoked: Vec<(i64, String)>,
    /// Matching keys that were revoked before.
    pub already_revoked: usize,
}

impl Store {
    /// Stores a new key's digest and returns it as listed. The caller made `secret` from the
    /// OS random generator and shows it once; it is not stored.
    pub async fn create_key(
        &self,
        key: &NewKey,
        secret: &ApiKeySecret,
        now: OffsetDateTime,
    ) -> Result<KeyListing, KeyError> {
        let row = NewKeyRow {
            name: key.name.clone(),
            key_digest: secret.digest().to_hex(),
            display_prefix: secret.display_prefix().to_owned(),
            scopes: key.scopes.to_list(),
            rate_limit_per_minute: i32::try_from(key.rate_limit_per_minute)
                .map_err(|_| KeyError::InvalidRateLimit(key.rate_limit_per_minute))?,
            allowed_origin: key.allowed_origin.clone(),
            created_at_unix: now.unix_timestamp(),
            expires_at_unix: key.expires_at.map(OffsetDateTime::unix_timestamp),
            revoked_at_unix: None,
        };
        let stored: KeyRow = with_connection!(&self.pools, |conn| {
            diesel::insert_into(api_keys::table)
                .values(&row)
                .returning(KeyRow::as_returning())
                .get_result(conn)
                .await
        })
        .map_err(query_failed)?;
        Ok(KeyListing::try_from(stored)?)
    }

    /// Every key, oldest first.
    pub async fn list_keys(&self) -> Result<Vec<KeyListing>, KeyError> {
        let rows: Vec<KeyRow> = load_all!(
            &self.pools,
            api_keys::table
                .select(KeyRow::as_select())
                .order(api_keys::id)
        )?;
        Ok(rows
            .into_iter()
            .map(KeyListing::try_from)
            .collect::<Result<_, _>>()?)
    }

    /// Moves the expiry of key `id` to `until` when the key is still usable at `now` (neither
    /// revoked nor expired: an ended key stays ended). Returns whether it was moved.
    pub async fn extend_key(
        &self,
        id: i64,
        until: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<bool, KeyError> {
        let (until, now) = (until.unix_timestamp(), now.unix_timestamp());
        let moved = with_connection!(&self.pools, |conn| {
            diesel::update(
                api_keys::table
                    .filter(api_keys::id.eq(id))
                    .filter(api_keys::revoked_at_unix.is_null())
                    .filter(
                        api_keys::expires_at_unix
                            .is_null()
                            .or(api_keys::expires_at_unix.gt(now)),
                    ),
            )
            .set(api_keys::expires_at_unix.eq(until))
            .execute(conn)
            .await
        })
        .map_err(query_failed)?;
        Ok(moved > 0)
    }

    /// Revokes the key with this id or, when no key has that id, every key with this name.
    /// Revoking a revoked key changes nothing (its first revocation time stays).
    pub async fn revoke_keys(
        &self,
        id_or_name: &str,
        now: OffsetDateTime,
    ) -> Result<Revocation, KeyError> {
        let id = id_or_name.trim().parse::<i64>().ok();
        let name = id_or_name.trim().to_owned();
        let revoked_at = now.unix_timestamp();
        // Two statements, not one transaction: a SQLite transaction that reads before it writes
        // fails at once ("database is locked") when another connection wrote in between (a
        // running service persisting call days), where a lone UPDATE waits its turn. A key
        // revoked between the two counts as already revoked.
        let (matching, revoked): (Vec<KeyRow>, Vec<KeyRow>) =
            with_connection!(&self.pools, |conn| {
                async {
                    let by_id = match id {
                        Some(id) => {
                            api_keys::table
                                .filter(api_keys::id.eq(id))
                                .select(KeyRow::as_select())
                                .load(conn)
                                .await?
                        }
                        None => Vec::new(),
                    };
                    let matching = if by_id.is_empty() {
                        api_keys::table
                            .filter(api_keys::name.eq(&name))
                            .select(KeyRow::as_select())
                            .load(conn)
                            .await?
                    } else {
                        by_id
                    };
                    let ids: Vec<i64> = matching.iter().map(|key| key.id).collect();
                    let revoked = diesel::update(
                        api_keys::table
                            .filter(api_keys::id.eq_any(ids))
                            .filter(api_keys::revoked_at_unix.is_null()),
                    )
                    .set(api_keys::revoked_at_unix.eq(revoked_at))
                    .returning(KeyRow::as_returning())
                    .get_results(conn)
                    .await?;
                    Ok::<_, diesel::result::Error>((matching, revoked))
                }
                .await
            })
            .map_err(query_failed)?;
        if matching.is_empty() {
            return Err(KeyError::NotFound(id_or_name.chars().take(80).collect()));
        }
        Ok(Revocation {
            already_revoked: matching.len() - revoked.len(),
            revoked: revoked.into_iter().map(|key| (key.id, key.name)).collect(),
        })
    }
}
