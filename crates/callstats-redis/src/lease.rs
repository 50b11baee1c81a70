//! A lease in Redis: one key holding its holder's token, renewed by the holder and taken by
//! anyone once it expires. A Redis that cannot be reached holds it for everyone (each replica
//! then does the work for its own in-process tier), as its locks do.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::ports::Lease;

use crate::{HOLD, Redis, lock_token};

/// The lease `name` in Redis, held under a token of this adapter's own.
#[derive(Clone)]
pub struct RedisLease {
    redis: Arc<Redis>,
    name: String,
    token: String,
}

impl RedisLease {
    #[must_use]
    pub fn new(redis: Arc<Redis>, name: &str) -> Self {
        Self {
            redis,
            name: format!("lease:{name}"),
            token: lock_token(),
        }
    }
}

#[async_trait]
impl Lease for RedisLease {
    async fn hold(&self, ttl: Duration) -> bool {
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("EVAL")
            .arg(HOLD)
            .arg(1)
            .arg(self.redis.key(&self.name))
            .arg(&self.token)
            .arg(ttl.as_millis().max(1));
        match self.redis.run::<(i64,)>("lease", &pipeline).await {
            Some((held,)) => held == 1,
            None => true,
        }
    }

    async fn release(&self) {
        self.redis
            .unlock("lease release", &self.name, &self.token)
            .await;
    }
}
