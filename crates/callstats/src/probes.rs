//! What `/readyz` checks: the adapters the service cannot answer without.

use std::sync::Arc;

use async_trait::async_trait;
use callstats_domain::error::cause_chain;
use callstats_redis::Redis;
use callstats_store::Store;
use callstats_web::ops::Probe;

/// The portal database answers.
pub struct StoreProbe(pub Arc<Store>);

#[async_trait]
impl Probe for StoreProbe {
    fn name(&self) -> &'static str {
        "portal database"
    }

    async fn check(&self) -> Result<(), String> {
        self.0
            .has_operators()
            .await
            .map(drop)
            .map_err(|err| cause_chain(&err))
    }
}

/// Redis answers a PING.
pub struct RedisProbe(pub Arc<Redis>);

#[async_trait]
impl Probe for RedisProbe {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn check(&self) -> Result<(), String> {
        self.0.ping().await
    }
}
