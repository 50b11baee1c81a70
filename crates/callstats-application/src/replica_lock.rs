//! Work done once across replicas: a lock per entry in the tier every replica shares. The
//! replica that takes the lock does the work and stores the entry; the others wait for the
//! entry rather than doing the work again. The response cache (an answer) and the call-day
//! store (a day fetched from the call platform) both go through [`claim`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

/// How often a replica waiting for another's entry looks for it.
pub const POLL: Duration = Duration::from_millis(50);

/// One entry of the shared tier: its lock and the entry itself.
#[async_trait]
pub trait SharedEntry: Send + Sync + 'static {
    type Value: Send;
    /// Tries to become the one doing the work, for at most `ttl`.
    async fn try_lock(&self, ttl: Duration) -> bool;
    /// Gives the lock up.
    async fn unlock(&self);
    /// The entry, when it is stored (and still usable).
    async fn stored(&self) -> Option<Self::Value>;
}

/// Where a replica stands with an entry.
pub enum Claim<E: SharedEntry> {
    /// The entry is stored already: by another replica, or by a run that ended between the
    /// caller's miss and its claim.
    Stored(E::Value),
    /// The lock is this replica's: do the work, store the entry, then [`Lock::release`].
    Held(Lock<E>),
    /// Another replica holds the lock and has not stored the entry yet.
    Taken,
}

/// Takes the lock of `entry` for `ttl`, or finds the entry stored.
pub async fn claim<E: SharedEntry>(entry: Arc<E>, ttl: Duration) -> Claim<E> {
    if entry.try_lock(ttl).await {
        // Whoever held the lock before may have stored the entry meanwhile: then the work is
        // not done again.
        if let Some(value) = entry.stored().await {
            entry.unlock().await;
            return Claim::Stored(value);
        }
        return Claim::Held(Lock { entry: Some(entry) });
    }
    entry.stored().await.map_or(Claim::Taken, Claim::Stored)
}

/// A held lock. Dropped without [`Lock::release`] (the work panicked, or its task was
/// cancelled), it is given up by a task of its own, so the other replicas do not wait out its
/// lifetime.
pub struct Lock<E: SharedEntry> {
    entry: Option<Arc<E>>,
}

impl<E: SharedEntry> Lock<E> {
    pub async fn release(mut self) {
        if let Some(entry) = self.entry.take() {
            entry.unlock().await;
        }
    }
}

impl<E: SharedEntry> Drop for Lock<E> {
    fn drop(&mut self) {
        if let (Some(entry), Ok(runtime)) =
            (self.entry.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move { entry.unlock().await });
        }
    }
}

#[cfg(test)]
mod tests {

    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// An entry of a shared tier in memory.
    #[derive(Default)]
    struct Slot {
        locked: AtomicBool,
        value: Mutex<Option<&'static str>>,
    }

    #[async_trait]
    impl SharedEntry for Slot {
        type Value = &'static str;
        async fn try_lock(&self, _ttl: Duration) -> bool {
            !self.locked.swap(true, Ordering::SeqCst)
        }
        async fn unlock(&self) {
            self.locked.store(false, Ordering::SeqCst);
        }
        async fn stored(&self) -> Option<&'static str> {
            *self.value.lock().unwrap()
        }
    }

    #[tokio::test]
    async fn the_first_claim_holds_the_lock_and_the_others_wait_for_its_entry() {
        let slot = Arc::new(Slot::default());
        let Claim::Held(lock) = claim(Arc::clone(&slot), POLL).await else {
            panic!("the first claim takes the lock");
        };
        assert!(matches!(claim(Arc::clone(&slot), POLL).await, Claim::Taken));
        *slot.value.lock().unwrap() = Some("entry");
        lock.release().await;
        assert!(!slot.locked.load(Ordering::SeqCst));
        assert!(matches!(
            claim(Arc::clone(&slot), POLL).await,
            Claim::Stored("entry")
        ));
        assert!(
            !slot.locked.load(Ordering::SeqCst),
            "a lock taken when the entry is stored is given up at once"
        );
    }

    #[tokio::test]
    async fn a_lock_dropped_unreleased_is_given_up() {
        let slot = Arc::new(Slot::default());
        let worker = {
            let slot = Arc::clone(&slot);
            tokio::spawn(async move {
                let _lock = claim(slot, POLL).await;
                panic!("the work failed");
            })
        };
        assert!(worker.await.unwrap_err().is_panic());
        for _ in 0..100 {
            if !slot.locked.load(Ordering::SeqCst) {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the lock is still held");
    }
}
