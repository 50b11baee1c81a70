//! All statistics of the service, as pure functions from port records to response values.

pub mod agents;
pub mod freshness;
pub mod intervals;
pub mod kpi;
pub mod portal;
pub mod queues;
pub mod round;
pub mod service_level;
pub mod summary;
pub mod trend;

pub use agents::{PriorWeight, agent_leaderboard};
pub use freshness::{Freshness, freshness};
pub use intervals::intervals_response;
pub use kpi::{AggregateMinRows, kpi_month, select_sheet};
pub use portal::{roster, schedule, sheet_listing, top_scripts};
pub use queues::queues_response;
pub use summary::{call_summary, comparison};
pub use trend::trend_response;
