//! The shared tier of the call-day store: every replica sees the days any of them fetched.
//!
//! A day is one Redis string `{prefix}day:{YYYY-MM-DD}` holding the day in the domain's versioned
//! encoding (`callstats_infra::encoding::call_day`). The missing days of a request are read with
//! one `MGET`. An entry that is not this version, does not decode, or holds another day is a miss,
//! never an error: the day is fetched again and overwritten. `SET NX PX` on
//! `{prefix}daylock:{YYYY-MM-DD}` lets one replica fetch a day while the others wait for its entry.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::calendar::Day;
use callstats_domain::call_day::CallDay;
use callstats_domain::ports::CallDayCache;
use callstats_infra::encoding::call_day::{decode, encode};

use crate::Redis;

fn name(day: Day) -> String {
    format!("day:{day}")
}

fn lock_name(day: Day) -> String {
    format!("daylock:{day}")
}

token_adapter! {
    /// The call days in Redis.
    RedisCallDays
}

#[async_trait]
impl CallDayCache for RedisCallDays {
    async fn get(&self, days: &[Day]) -> Vec<Option<Arc<CallDay>>> {
        let mut pipeline = redis::pipe();
        let keys: Vec<String> = days.iter().map(|day| self.redis.key(&name(*day))).collect();
        pipeline.cmd("MGET").arg(&keys);
        let Some((entries,)) = self
            .redis
            .run::<(Vec<Option<Vec<u8>>>,)>("day read", &pipeline)
            .await
        else {
            return vec![None; days.len()];
        };
        let mut decoded: Vec<Option<Arc<CallDay>>> = days
            .iter()
            .zip(&entries)
            .map(|(day, entry)| {
                let bytes = entry.as_deref()?;
                let kept = decode(bytes, *day);
                if kept.is_none() {
                    metrics::counter!("callstats_call_day_undecodable_total").increment(1);
                }
                kept.map(Arc::new)
            })
            .collect();
        decoded.resize(days.len(), None);
        decoded
    }

    async fn put(&self, day: Arc<CallDay>, ttl: Duration) {
        self.redis
            .set("day write", &name(day.day()), &encode(&day), ttl)
            .await;
    }

    async fn try_lock(&self, day: Day, ttl: Duration) -> bool {
        self.redis
            .try_lock("day lock", &lock_name(day), &self.token, ttl)
            .await
    }

    async fn unlock(&self, day: Day) {
        self.redis
            .unlock("day unlock", &lock_name(day), &self.token)
            .await;
    }
}
