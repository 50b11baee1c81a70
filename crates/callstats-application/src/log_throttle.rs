//! Warnings at most once a minute per subject: a failing database or a day answered stale over
//! and over logs a line a minute, not one per request.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

const MINUTE: Duration = Duration::from_secs(60);

/// When each subject was last let through.
pub(crate) struct LogThrottle<K> {
    last: Mutex<HashMap<K, Instant>>,
}

impl<K: Eq + Hash> Default for LogThrottle<K> {
    fn default() -> Self {
        Self {
            last: Mutex::default(),
        }
    }
}

impl<K: Eq + Hash> LogThrottle<K> {
    /// Whether `subject` may be logged now: not let through in the last minute. Subjects
    /// older than a minute are forgotten, so the map holds a minute's subjects at most.
    pub(crate) fn due(&self, subject: K) -> bool {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.retain(|_, at| now.duration_since(*at) < MINUTE);
        if last.contains_key(&subject) {
            return false;
        }
        last.insert(subject, now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_is_due_once_a_minute_and_others_apart() {
        let warnings = LogThrottle::default();
        assert!(warnings.due("a"));
        assert!(!warnings.due("a"));
        assert!(warnings.due("b"));
        assert!(!warnings.due("b"));
    }
}
