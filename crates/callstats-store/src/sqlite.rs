//! How the store opens its SQLite file: created only by a store that may create it, read as an
//! immutable snapshot when nothing here may write it, and given up when it is deleted.
//!
//! Connections open a `file:` URI with an explicit `mode` (`ro`, `rw` or `rwc`), so only
//! `rwc` ([`IfMissing::Create`] with write access) can create the file. When neither the file
//! nor its folder can be written by this process, SQLite cannot keep its `-shm` index of a
//! WAL database beside it, and would refuse even to read it; the file is then opened with
//! `immutable=1`, which reads it as it is, without locks or journal: a read-only copy, which
//! nothing is expected to change while it is served (docs/operations.md, "Storage").

use std::path::{Path, PathBuf};

use diesel::result::{DatabaseErrorKind, Error};
use diesel_async::pooled_connection::RecyclingMethod;
use futures::FutureExt as _;

use crate::config::{Access, ConfigError, IfMissing};
use crate::pool::SqliteConn;

/// The SQLite file of one store, as its connections open it.
pub(crate) struct SqliteFile {
    /// Absolute, so a connection opened later opens the same file.
    path: PathBuf,
    /// What every connection opens: the file, its `mode`, and `immutable=1` when read-only.
    pub(crate) uri: String,
    /// Neither the file nor its folder can be written here: read as an immutable snapshot.
    pub(crate) read_only: bool,
}

impl SqliteFile {
    pub(crate) fn new(
        path: &Path,
        access: Access,
        if_missing: IfMissing,
    ) -> Result<Self, ConfigError> {
        let unusable = |reason: String| ConfigError::SqlitePath(path.display().to_string(), reason);
        let path = std::path::absolute(path).map_err(|error| unusable(error.to_string()))?;
        let read_only = path.exists()
            && !writable(&path)
            && path.parent().is_none_or(|folder| !writable(folder));
        if read_only && has_unsaved_wal(&path) {
            return Err(ConfigError::UnsavedWal(path.display().to_string()));
        }
        let query = match (read_only, access, if_missing) {
            (true, _, _) => "mode=ro&immutable=1",
            (false, Access::ReadOnly, _) => "mode=ro",
            (false, Access::ReadWrite, IfMissing::Fail) => "mode=rw",
            (false, Access::ReadWrite, IfMissing::Create) => "mode=rwc",
        };
        let mut uri = url::Url::from_file_path(&path)
            .map_err(|()| unusable("it cannot be written as a file: URI".to_owned()))?;
        uri.set_query(Some(query));
        Ok(Self {
            path,
            uri: uri.into(),
            read_only,
        })
    }

    /// The check of a pooled connection before it is used again: the file is still at its path.
    /// An open connection goes on reading a file deleted under it, so without this check the
    /// pool would answer from a file that is gone; with it, the connection is dropped and the
    /// new one fails, as the file is missing (it is never created here unless asked).
    pub(crate) fn still_there(&self) -> RecyclingMethod<SqliteConn> {
        let path = self.path.clone();
        RecyclingMethod::CustomFunction(Box::new(move |_| {
            let present = path.exists();
            async move {
                if present {
                    Ok(())
                } else {
                    Err(Error::DatabaseError(
                        DatabaseErrorKind::ClosedConnection,
                        Box::new("the SQLite file was deleted".to_owned()),
                    ))
                }
            }
            .boxed()
        }))
    }
}

/// Whether this process may write `path` (the kernel's answer: a read-only mount, an immutable
/// file or its permissions; root passes the permissions only).
fn writable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

/// A `-wal` file beside the database with something in it: transactions an immutable read
/// would not see.
fn has_unsaved_wal(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).is_ok_and(|wal| wal.len() > 0)
}
