//! All statistics of the service, as pure functions from port records to response values.

pub mod agents;
pub mod kpi;
pub mod portal;
pub mod round;
pub mod summary;

pub use agents::{PriorWeight, agent_leaderboard};
pub use kpi::{kpi_month, select_sheet};
pub use portal::{roster, schedule, sheet_listing, top_scripts};
pub use summary::call_summary;
