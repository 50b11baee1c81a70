//! The lease of a replica alone: there is nobody to share it with.

use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::ports::Lease;

/// Always held: one replica without Redis does its background work itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct SoleLease;

#[async_trait]
impl Lease for SoleLease {
    async fn hold(&self, _ttl: Duration) -> bool {
        true
    }

    async fn release(&self) {}
}
