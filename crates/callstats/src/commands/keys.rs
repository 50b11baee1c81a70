//! `callstats keys create|list|revoke`. A new key is 256 bits from the OS random generator;
//! its plaintext is printed alone on one line of stdout, once, and only its digest is stored.

use std::io::Write as _;

use anyhow::Context as _;
use callstats_domain::access::{ApiKeySecret, DEFAULT_RATE_LIMIT};
use callstats_domain::scope::ScopeSet;
use callstats_store::Store;
use callstats_store::keys::{KeyError, KeyListing, NewKey};
use clap::{Args, Subcommand};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::args::DatabaseArgs;
use crate::commands::migrated;
use crate::failure::Failure;

#[derive(Debug, Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Issue a key and print it (alone, on stdout); it cannot be shown again.
    Create(CreateArgs),
    /// List keys (never their plaintext).
    List(ListArgs),
    /// Revoke the key with this id, or every key with this name.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Label of the key, shown by /ping and `keys list`.
    #[arg(long)]
    pub name: String,
    /// Comma-separated scopes: calls, kpi:aggregate, kpi:detail, operators, scripts.
    #[arg(long, value_name = "LIST")]
    pub scopes: String,
    /// Requests per minute.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RATE_LIMIT)]
    pub rate_limit: u32,
    /// Pin the key to this domain: requests with another Origin are refused.
    #[arg(long, value_name = "DOMAIN")]
    pub origin: Option<String>,
    /// When the key stops working (RFC 3339, e.g. 2027-01-01T00:00:00+05:00).
    #[arg(long, value_name = "RFC3339")]
    pub expires_at: Option<String>,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// A key id (as `keys list` shows) or a key name.
    #[arg(value_name = "ID_OR_NAME")]
    pub id_or_name: String,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub async fn run(args: KeysArgs) -> Result<(), Failure> {
    match args.command {
        KeysCommand::Create(args) => create(args).await,
        KeysCommand::List(args) => list(args).await,
        KeysCommand::Revoke(args) => revoke(args).await,
    }
}

/// Issues `key`: 32 bytes from the OS random generator, stored as a digest. The caller shows
/// the returned plaintext once.
pub async fn issue(
    store: &Store,
    key: &NewKey,
    now: OffsetDateTime,
) -> anyhow::Result<(ApiKeySecret, KeyListing)> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|error| anyhow::anyhow!("the OS random generator failed: {error}"))?;
    let secret = ApiKeySecret::from_random_bytes(&bytes);
    let listing = store
        .create_key(key, &secret, now)
        .await
        .context("cannot store the key")?;
    Ok((secret, listing))
}

/// Checks the request completely before the database is opened: every mistake is exit 2.
fn new_key(args: &CreateArgs, now: OffsetDateTime) -> Result<NewKey, Failure> {
    let scopes = ScopeSet::parse_list(&args.scopes).map_err(Failure::config)?;
    let mut key = NewKey::new(&args.name, scopes)
        .and_then(|key| key.rate_limit(args.rate_limit))
        .map_err(Failure::config)?;
    if let Some(origin) = &args.origin {
        key = key.origin(origin).map_err(Failure::config)?;
    }
    if let Some(raw) = &args.expires_at {
        let at = OffsetDateTime::parse(raw, &Rfc3339).map_err(|_| {
            Failure::config(anyhow::anyhow!(
                "invalid --expires-at {raw:?}: expected RFC 3339, e.g. 2027-01-01T00:00:00+05:00"
            ))
        })?;
        if at <= now {
            eprintln!(
                "warning: --expires-at {raw} is in the past: the key is issued already expired"
            );
        }
        key = key.expires_at(at);
    }
    Ok(key)
}

async fn create(args: CreateArgs) -> Result<(), Failure> {
    let now = OffsetDateTime::now_utc();
    let key = new_key(&args, now)?;
    let store = migrated(args.database.open_admin()?).await?;
    let (secret, listing) = issue(&store, &key, now).await?;
    // The plaintext alone on stdout, so `KEY=$(callstats keys create …)` captures exactly it.
    writeln!(std::io::stdout().lock(), "{}", secret.expose()).context("cannot write the key")?;
    eprintln!(
        "issued key {} {:?} ({}…): scopes {}; {} requests/minute; origin {}; expires {}",
        listing.id,
        listing.name,
        listing.display_prefix,
        scopes_text(listing.scopes),
        listing.rate_limit_per_minute,
        listing.allowed_origin.as_deref().unwrap_or("any"),
        listing
            .expires_at
            .map_or_else(|| "never".to_owned(), timestamp),
    );
    eprintln!("store it now: it is not kept and cannot be shown again");
    Ok(())
}

fn scopes_text(scopes: ScopeSet) -> String {
    let list = scopes.to_list();
    if list.is_empty() {
        "none (only /ping)".to_owned()
    } else {
        list
    }
}

/// An instant as `keys list` shows it: RFC 3339, in UTC.
pub(crate) fn timestamp(at: OffsetDateTime) -> String {
    at.format(&Rfc3339)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}

fn status(key: &KeyListing, now: OffsetDateTime) -> String {
    match (key.revoked_at, key.expires_at) {
        (Some(at), _) => format!("revoked {}", timestamp(at)),
        (None, Some(at)) if at <= now => format!("expired {}", timestamp(at)),
        _ => "active".to_owned(),
    }
}

async fn list(args: ListArgs) -> Result<(), Failure> {
    let store = migrated(args.database.open_admin()?).await?;
    let keys = store.list_keys().await?;
    let now = OffsetDateTime::now_utc();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>4}  {:<20}  {:<8}  {:<45}  {:>5}  {:<20}  {:<25}  {:<25}  STATUS",
        "ID", "NAME", "PREFIX", "SCOPES", "RATE", "ORIGIN", "CREATED", "EXPIRES"
    )?;
    for key in &keys {
        writeln!(
            out,
            "{:>4}  {:<20}  {:<8}  {:<45}  {:>5}  {:<20}  {:<25}  {:<25}  {}",
            key.id,
            key.name,
            format!("{}…", key.display_prefix),
            scopes_text(key.scopes),
            key.rate_limit_per_minute,
            key.allowed_origin.as_deref().unwrap_or("any"),
            timestamp(key.created_at),
            key.expires_at.map_or_else(|| "never".to_owned(), timestamp),
            status(key, now),
        )?;
    }
    eprintln!("{} key(s)", keys.len());
    Ok(())
}

async fn revoke(args: RevokeArgs) -> Result<(), Failure> {
    let store = migrated(args.database.open_admin()?).await?;
    let revocation = match store
        .revoke_keys(&args.id_or_name, OffsetDateTime::now_utc())
        .await
    {
        Ok(revocation) => revocation,
        Err(error @ KeyError::NotFound(_)) => return Err(error.into()),
        Err(error) => return Err(anyhow::Error::from(error).context("cannot revoke").into()),
    };
    for (id, name) in &revocation.revoked {
        eprintln!("revoked key {id} {name:?}");
    }
    if revocation.already_revoked > 0 {
        eprintln!(
            "{} matching key(s) were already revoked",
            revocation.already_revoked
        );
    }
    Ok(())
}
