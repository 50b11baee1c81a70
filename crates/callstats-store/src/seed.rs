//! Replacing the portal data with a fixture, in one transaction.

use callstats_domain::ports::StoreError;
use diesel::SqliteConnection;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::fixture::ValidFixture;
use crate::pool::{SqliteConn, with_connection};
use crate::schema::{call_scores, kpi_metrics, kpi_rows, kpi_sheets, off_days, operators, scripts};
use crate::store::{Store, query_failed};

/// Rows per INSERT: far below both backends' bind-parameter limits (Postgres 65,535, SQLite
/// 32,766) for the widest table, and large enough that a big fixture needs few statements.
const ROWS_PER_INSERT: usize = 1_000;

/// Inserts `$rows` into `$table` in statements of [`ROWS_PER_INSERT`] rows.
macro_rules! insert_rows {
    ($conn:ident, $table:expr, $rows:expr) => {
        for chunk in $rows.chunks(ROWS_PER_INSERT) {
            let statement = diesel::insert_into($table).values(chunk.to_vec());
            ExecuteOwned::execute_owned($conn, statement).await?;
        }
    };
}

/// Runs a statement that owns its values. This is the one place where the backends need
/// different code: diesel builds a multi-row INSERT for SQLite only on its synchronous
/// connection, so the SQLite side hands the statement to the connection's blocking thread,
/// while Postgres sends it through the async connection.
pub(crate) trait ExecuteOwned<S> {
    fn execute_owned(&mut self, statement: S) -> impl Future<Output = QueryResult<usize>> + Send;
}

impl<S> ExecuteOwned<S> for AsyncPgConnection
where
    S: diesel_async::methods::ExecuteDsl<AsyncPgConnection> + Send + 'static,
{
    fn execute_owned(&mut self, statement: S) -> impl Future<Output = QueryResult<usize>> + Send {
        statement.execute(self)
    }
}

impl<S> ExecuteOwned<S> for SqliteConn
where
    S: diesel::query_dsl::methods::ExecuteDsl<SqliteConnection> + Send + 'static,
{
    fn execute_owned(&mut self, statement: S) -> impl Future<Output = QueryResult<usize>> + Send {
        self.spawn_blocking(move |conn| {
            diesel::query_dsl::methods::ExecuteDsl::execute(statement, conn)
        })
    }
}

/// What seeding does with portal data already in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it (`callstats seed --replace`).
    Replace,
    /// Refuse, and change nothing.
    Refuse,
}

/// Why seeding changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(
        "the database already holds portal data; nothing was changed (pass --replace to replace it)"
    )]
    HoldsData,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What ends a seeding transaction early.
enum Abort {
    HoldsData,
    Query(diesel::result::Error),
}

impl From<diesel::result::Error> for Abort {
    fn from(error: diesel::result::Error) -> Self {
        Self::Query(error)
    }
}

impl Store {
    /// Replaces every portal table but `api_keys` with the fixture's data, in one transaction:
    /// a failure part-way leaves the database exactly as it was. With [`Existing::Refuse`], a
    /// database that holds any portal data is left as it is.
    pub async fn seed(&self, fixture: &ValidFixture, existing: Existing) -> Result<(), SeedError> {
        let outcome = with_connection!(&self.pools, |conn| {
            conn.transaction::<_, Abort, _>(async |conn| {
                if existing == Existing::Refuse {
                    let held = [
                        operators::table.count().get_result::<i64>(conn).await?,
                        off_days::table.count().get_result::<i64>(conn).await?,
                        kpi_sheets::table.count().get_result::<i64>(conn).await?,
                        scripts::table.count().get_result::<i64>(conn).await?,
                        call_scores::table.count().get_result::<i64>(conn).await?,
                    ];
                    if held.iter().any(|rows| *rows > 0) {
                        return Err(Abort::HoldsData);
                    }
                }
                // Children first, so the foreign keys hold at every step.
                diesel::delete(kpi_metrics::table).execute(conn).await?;
                diesel::delete(kpi_rows::table).execute(conn).await?;
                diesel::delete(kpi_sheets::table).execute(conn).await?;
                diesel::delete(off_days::table).execute(conn).await?;
                diesel::delete(call_scores::table).execute(conn).await?;
                diesel::delete(scripts::table).execute(conn).await?;
                diesel::delete(operators::table).execute(conn).await?;
                insert_rows!(conn, operators::table, fixture.operators);
                insert_rows!(conn, off_days::table, fixture.off_days);
                insert_rows!(conn, kpi_sheets::table, fixture.sheets);
                insert_rows!(conn, kpi_rows::table, fixture.kpi_rows);
                insert_rows!(conn, kpi_metrics::table, fixture.metrics);
                insert_rows!(conn, scripts::table, fixture.scripts);
                insert_rows!(conn, call_scores::table, fixture.call_scores);
                Ok(())
            })
            .await
        });
        match outcome {
            Ok(()) => Ok(()),
            Err(Abort::HoldsData) => Err(SeedError::HoldsData),
            Err(Abort::Query(error)) => Err(query_failed(error).into()),
        }
    }

    /// Whether the roster is empty (`callstats demo` seeds the demo data only then).
    pub async fn has_operators(&self) -> Result<bool, StoreError> {
        let any: Option<String> = with_connection!(&self.pools, |conn| {
            operators::table
                .select(operators::agent_number)
                .first(conn)
                .await
                .optional()
        })
        .map_err(query_failed)?;
        Ok(any.is_some())
    }
}
