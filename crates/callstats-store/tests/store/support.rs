//! Shared test data and helpers.

use callstats_domain::calendar::{Day, Month};
use callstats_store::Store;
use callstats_store::config::Access;
use callstats_store::fixture::ValidFixture;
use callstats_store::testing::TestDatabase;

/// A small portal with every feature: both apostrophe forms, Cyrillic, staff, nulls, a draft,
/// two shifts in one month, an off-day of an agent not on the roster, boundary call times.
pub const PORTAL: &str = include_str!("../fixtures/portal.json");

pub fn portal() -> ValidFixture {
    ValidFixture::from_json(PORTAL).unwrap()
}

pub fn month(raw: &str) -> Month {
    Month::parse(raw).unwrap()
}

pub fn day(raw: &str) -> Day {
    Day::parse(raw).unwrap()
}

/// A migrated database seeded with [`PORTAL`], and a read-only store on it as the API uses.
pub async fn seeded(db: &TestDatabase) -> Store {
    let admin = db.migrated_store().await;
    admin
        .seed(&portal(), callstats_store::Existing::Replace)
        .await
        .unwrap();
    db.store(Access::ReadOnly)
}
