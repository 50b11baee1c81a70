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

impl Store {
    /// Replaces every portal table but `api_keys` with the fixture's data, in one transaction:
    /// a failure part-way leaves the database exactly as it was.
    pub async fn seed(&self, fixture: &ValidFixture) -> Result<(), StoreError> {
        with_connection!(&self.pools, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
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
        })
        .map_err(query_failed)
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
