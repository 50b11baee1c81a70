//! Admission's one call to count a request and find its answer, over a counter and a cache
//! that are not one store.

use std::sync::Arc;

use async_trait::async_trait;
use callstats_domain::access::QuotaBucket;
use callstats_domain::ports::{Found, QuotaCounter, RequestLedger, ResponseCache};

/// A [`RequestLedger`] that counts with `counter` and then reads `cache`: two calls, for a
/// counter and a cache kept apart (in process). A store that keeps both (Redis) implements
/// the ledger itself, in one round trip.
pub struct SeparateLedger {
    pub counter: Arc<dyn QuotaCounter>,
    pub cache: Arc<dyn ResponseCache>,
}

#[async_trait]
impl RequestLedger for SeparateLedger {
    async fn count<'a>(
        &self,
        window: &QuotaBucket,
        days: Option<&'a QuotaBucket>,
        answer: Option<&'a str>,
    ) -> Found {
        let requests = self.counter.increment(window).await;
        let days_used = match days {
            Some(days) => self.counter.peek(days).await,
            None => 0,
        };
        let answer = match answer {
            Some(key) => self.cache.get(key).await,
            None => None,
        };
        Found {
            requests,
            days_used,
            answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use callstats_domain::access::QuotaSubject;
    use callstats_domain::ports::{MockQuotaCounter, MockResponseCache};
    use time::macros::datetime;

    use super::*;

    #[tokio::test]
    async fn it_counts_the_request_reads_the_day_budget_and_finds_the_answer() {
        let now = datetime!(2026-11-21 06:15:30 UTC);
        let window = QuotaBucket::new(&QuotaSubject::Key(1), now);
        let days = QuotaBucket::new(&QuotaSubject::KeyDays(1), now);
        let mut counter = MockQuotaCounter::new();
        counter
            .expect_increment()
            .withf(|bucket| bucket.subject == QuotaSubject::Key(1))
            .times(2)
            .return_const(4_u64);
        counter
            .expect_peek()
            .withf(|bucket| bucket.subject == QuotaSubject::KeyDays(1))
            .times(1)
            .return_const(9_u64);
        let mut cache = MockResponseCache::new();
        cache
            .expect_get()
            .withf(|key| key == "v1/operators")
            .times(1)
            .return_const(Some(Bytes::from_static(b"{}")));
        let ledger = SeparateLedger {
            counter: Arc::new(counter),
            cache: Arc::new(cache),
        };
        assert_eq!(
            ledger
                .count(&window, Some(&days), Some("v1/operators"))
                .await,
            Found {
                requests: 4,
                days_used: 9,
                answer: Some(Bytes::from_static(b"{}")),
            }
        );
        // Nothing asked, nothing read: /ping, without a day budget.
        assert_eq!(
            ledger.count(&window, None, None).await,
            Found {
                requests: 4,
                days_used: 0,
                answer: None,
            }
        );
    }
}
