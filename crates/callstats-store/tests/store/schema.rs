//! Both backends' migrations produce the same tables, columns, types, nullability, keys and
//! indexes: the test that catches drift between the two migration directories.

use callstats_store::testing::{Backend, TestDatabase};
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Integer, Text};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Text)]
    column_name: String,
    #[diesel(sql_type = Text)]
    data_type: String,
    #[diesel(sql_type = Bool)]
    not_null: bool,
    /// Position in the primary key, 0 when not part of it.
    #[diesel(sql_type = Integer)]
    pk: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, QueryableByName)]
struct Index {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Bool)]
    is_unique: bool,
}

const SQLITE_COLUMNS: &str = r#"
    SELECT m.name AS table_name, p.name AS column_name, p.type AS data_type,
           p."notnull" AS not_null, p.pk AS pk
    FROM sqlite_master m JOIN pragma_table_info(m.name) p
    WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
      AND m.name <> '__diesel_schema_migrations'
    ORDER BY 1, 2"#;

const SQLITE_INDEXES: &str = r#"
    SELECT i.name AS name, i."unique" AS is_unique
    FROM sqlite_master m JOIN pragma_index_list(m.name) i
    WHERE m.type = 'table' AND i.origin = 'c'
    ORDER BY 1"#;

const POSTGRES_COLUMNS: &str = r#"
    SELECT c.table_name::text AS table_name, c.column_name::text AS column_name,
           c.data_type::text AS data_type, c.is_nullable = 'NO' AS not_null,
           COALESCE((
               SELECT k.ordinal_position FROM information_schema.key_column_usage k
               JOIN information_schema.table_constraints t
                 ON t.constraint_name = k.constraint_name AND t.table_schema = k.table_schema
               WHERE t.constraint_type = 'PRIMARY KEY' AND k.table_schema = c.table_schema
                 AND k.table_name = c.table_name AND k.column_name = c.column_name
           ), 0)::int AS pk
    FROM information_schema.columns c
    WHERE c.table_schema = 'public' AND c.table_name <> '__diesel_schema_migrations'
    ORDER BY 1, 2"#;

const POSTGRES_INDEXES: &str = r#"
    SELECT indexname::text AS name, indexdef LIKE 'CREATE UNIQUE%' AS is_unique
    FROM pg_indexes
    WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey'
      AND tablename <> '__diesel_schema_migrations'
    ORDER BY 1"#;

/// One vocabulary for both: SQLite's declared types upper-case, Postgres's long names, and
/// SQLite's `INTEGER PRIMARY KEY` (a 64-bit row id) and primary keys (implicitly NOT NULL).
fn normalise(mut columns: Vec<Column>) -> Vec<Column> {
    let single_pk: Vec<String> = {
        let mut tables: Vec<&str> = columns
            .iter()
            .filter(|c| c.pk > 0)
            .map(|c| c.table_name.as_str())
            .collect();
        tables.sort_unstable();
        let mut single = Vec::new();
        for t in &tables {
            if tables.iter().filter(|x| *x == t).count() == 1 {
                single.push((*t).to_owned());
            }
        }
        single
    };
    for c in &mut columns {
        c.data_type = c.data_type.to_lowercase();
        if c.data_type == "timestamp without time zone" {
            c.data_type = "timestamp".into();
        }
        if c.data_type == "blob" {
            c.data_type = "bytea".into();
        }
        if c.data_type == "integer" && c.pk == 1 && single_pk.contains(&c.table_name) {
            c.data_type = "bigint".into();
        }
        c.not_null |= c.pk > 0;
    }
    columns.sort();
    columns
}

async fn sqlite_schema(db: &TestDatabase) -> (Vec<Column>, Vec<Index>) {
    let path = db.url().trim_start_matches("sqlite://").to_owned();
    tokio::task::spawn_blocking(move || {
        use diesel::{Connection as _, RunQueryDsl as _};
        let mut conn = diesel::SqliteConnection::establish(&path).unwrap();
        let columns = diesel::sql_query(SQLITE_COLUMNS).load(&mut conn).unwrap();
        let indexes = diesel::sql_query(SQLITE_INDEXES).load(&mut conn).unwrap();
        (columns, indexes)
    })
    .await
    .unwrap()
}

async fn postgres_schema(db: &TestDatabase) -> (Vec<Column>, Vec<Index>) {
    use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
    let mut conn = diesel_async::AsyncPgConnection::establish(db.url())
        .await
        .unwrap();
    let columns = diesel::sql_query(POSTGRES_COLUMNS)
        .load(&mut conn)
        .await
        .unwrap();
    let indexes = diesel::sql_query(POSTGRES_INDEXES)
        .load(&mut conn)
        .await
        .unwrap();
    (columns, indexes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_migrate_to_the_same_schema() {
    let sqlite = TestDatabase::create(Backend::Sqlite).await.unwrap();
    sqlite.migrated_store().await;
    let (sqlite_columns, sqlite_indexes) = sqlite_schema(&sqlite).await;
    let sqlite_columns = normalise(sqlite_columns);
    let tables: std::collections::BTreeSet<_> = sqlite_columns
        .iter()
        .map(|c| c.table_name.as_str())
        .collect();
    assert_eq!(
        tables.into_iter().collect::<Vec<_>>(),
        [
            "api_keys",
            "call_days",
            "call_scores",
            "kpi_metrics",
            "kpi_rows",
            "kpi_sheets",
            "off_days",
            "operators",
            "scripts"
        ]
    );

    let Some(postgres) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    postgres.migrated_store().await;
    let (postgres_columns, postgres_indexes) = postgres_schema(&postgres).await;
    assert_eq!(normalise(postgres_columns), sqlite_columns);
    assert_eq!(postgres_indexes, sqlite_indexes);
    assert!(
        sqlite_indexes.contains(&Index {
            name: "api_keys_key_digest".into(),
            is_unique: true
        }),
        "{sqlite_indexes:?}"
    );
}

/// Also pins that migrations run on a current-thread runtime (as actix's workers are).
#[tokio::test]
async fn migrating_twice_applies_nothing_the_second_time() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDatabase::create(backend).await else {
            continue;
        };
        let store = db.store(callstats_store::config::Access::ReadWrite);
        assert_eq!(
            store.pending_migrations().await.unwrap().len(),
            3,
            "{backend:?}"
        );
        assert_eq!(store.migrate().await.unwrap().len(), 3, "{backend:?}");
        assert!(
            store.pending_migrations().await.unwrap().is_empty(),
            "{backend:?}"
        );
        assert!(store.migrate().await.unwrap().is_empty(), "{backend:?}");
    }
}
