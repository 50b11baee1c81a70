//! The process's file limit and the connection bound: every open connection is a file
//! descriptor, so the server may hold at most the soft file limit (`ulimit -n`) less what the
//! rest of the process uses. At start-up the soft limit is raised toward the hard one when the
//! connection bound needs it; when it cannot be, the bound is lowered to fit, with a warning.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors the process needs besides its client connections: listeners, the database pool,
/// Redis, the upstream's pooled connections, the log, the blocking pool's files, and slack.
pub const RESERVED_FILES: u64 = 128;

/// What the bound becomes against the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// The connection bound to serve with.
    pub connections: usize,
    /// The soft limit to ask for first, when it is below what the bound needs and the hard
    /// limit allows more.
    pub raise_to: Option<u64>,
}

/// The bound `wanted` against the soft and hard limits (`None`: unlimited).
#[must_use]
pub fn fit(wanted: usize, soft: Option<u64>, hard: Option<u64>) -> Fit {
    let needed = u64::try_from(wanted)
        .unwrap_or(u64::MAX)
        .saturating_add(RESERVED_FILES);
    let raise_to = match (soft, hard) {
        (Some(soft), hard) if soft < needed => {
            Some(hard.map_or(needed, |hard| hard.min(needed))).filter(|target| *target > soft)
        }
        _ => None,
    };
    let available = raise_to.or(soft).map_or(u64::MAX, |limit| {
        limit.saturating_sub(RESERVED_FILES).max(1)
    });
    Fit {
        connections: usize::try_from(available).map_or(wanted, |available| wanted.min(available)),
        raise_to,
    }
}

/// The connection bound to serve with: `wanted`, or less when the file limit is lower and cannot
/// be raised enough (said in a warning).
#[must_use]
pub fn connection_bound(wanted: usize) -> usize {
    let limit = getrlimit(Resource::Nofile);
    let mut plan = fit(wanted, limit.current, limit.maximum);
    if let Some(target) = plan.raise_to {
        let raised = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: limit.maximum,
            },
        );
        if raised.is_err() {
            plan = fit(wanted, limit.current, limit.current);
        }
    }
    if plan.connections < wanted {
        tracing::warn!(
            wanted,
            connections = plan.connections,
            file_limit = getrlimit(Resource::Nofile).current,
            "the file limit is below CALLSTATS_MAX_CONNECTIONS: serving at most this many \
             connections at once (raise the limit, e.g. `ulimit -n`, to serve more)"
        );
    }
    plan.connections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_with_room_keeps_the_bound_and_raises_nothing() {
        assert_eq!(
            fit(10_000, Some(20_000), Some(20_000)),
            Fit {
                connections: 10_000,
                raise_to: None
            }
        );
        assert_eq!(fit(10_000, None, None).connections, 10_000, "unlimited");
    }

    #[test]
    fn a_low_soft_limit_is_raised_toward_the_hard_one() {
        assert_eq!(
            fit(10_000, Some(1_024), Some(1_048_576)),
            Fit {
                connections: 10_000,
                raise_to: Some(10_128)
            }
        );
        assert_eq!(
            fit(10_000, Some(1_024), Some(4_096)),
            Fit {
                connections: 4_096 - 128,
                raise_to: Some(4_096)
            },
            "as far as the hard limit goes, and the bound fits under it"
        );
    }

    #[test]
    fn a_limit_that_cannot_be_raised_lowers_the_bound_below_it() {
        assert_eq!(
            fit(10_000, Some(1_024), Some(1_024)),
            Fit {
                connections: 1_024 - 128,
                raise_to: None
            }
        );
        assert_eq!(fit(10_000, Some(64), Some(64)).connections, 1, "never 0");
    }
}
