//! The global budget of the calls held by every day being fetched at once
//! (`CALLSTATS_CALL_DAY_IN_FLIGHT_MB`, docs/operations.md "Memory"): each fetch reserves the
//! heap bytes its calls so far hold, page by page, and gives them back when it ends, so the
//! fetches in flight together never hold more than the budget, however many run at once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Heap bytes the fetches in flight may hold together.
#[derive(Debug)]
pub(crate) struct InFlightBudget {
    limit: usize,
    used: AtomicUsize,
}

impl InFlightBudget {
    pub(crate) const fn new(limit: usize) -> Self {
        Self {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    pub(crate) const fn limit(&self) -> usize {
        self.limit
    }

    /// A reservation of nothing yet, given back when dropped.
    pub(crate) const fn reserve(&self) -> Reservation<'_> {
        Reservation {
            budget: self,
            bytes: 0,
        }
    }
}

/// What one fetch holds of the budget.
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    budget: &'a InFlightBudget,
    bytes: usize,
}

impl Reservation<'_> {
    /// Holds `bytes` of the budget from now on; `false`, with the reservation unchanged, when
    /// that would take the fetches in flight past the budget.
    pub(crate) fn resize(&mut self, bytes: usize) -> bool {
        let used = &self.budget.used;
        if bytes <= self.bytes {
            used.fetch_sub(self.bytes - bytes, Ordering::AcqRel);
        } else {
            let more = bytes - self.bytes;
            let limit = self.budget.limit;
            let grown = used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(more).filter(|total| *total <= limit)
            });
            if grown.is_err() {
                return false;
            }
        }
        self.bytes = bytes;
        true
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_share_the_budget_and_give_it_back() {
        let budget = InFlightBudget::new(100);
        let mut first = budget.reserve();
        let mut second = budget.reserve();
        assert!(first.resize(60));
        assert!(!second.resize(41), "past the budget together");
        assert!(second.resize(40));
        assert!(first.resize(10), "shrinking always fits");
        assert!(second.resize(90));
        drop(second);
        assert!(first.resize(100));
        drop(first);
        assert_eq!(budget.used.load(Ordering::Acquire), 0);
    }
}
