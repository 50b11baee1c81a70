//! Answers asked as partners ask them: one GET with a key, timed and told by its status and
//! `Retry-After`; many at once; the paths shared out to clients that ask again when told to
//! wait; and a probe asking in the background while a scenario runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use xtask::process::{agent, get_with};
use xtask::serve::seconds;

/// Attempts a client makes at one path at the most.
const ATTEMPTS: usize = 5;

/// One answer: its status (0 when the request failed), `Retry-After`, and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<u64>,
    pub took: Duration,
}

/// A GET with `key` on a kept-alive connection of `agent`, its body read whole.
pub fn ask(agent: &ureq::Agent, port: u16, path: &str, key: &str) -> Reply {
    let started = Instant::now();
    match get_with(agent, &format!("127.0.0.1:{port}"), path, key, &[]) {
        Ok((status, headers, _)) => Reply {
            status,
            retry_after: headers
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.parse().ok()),
            took: started.elapsed(),
        },
        Err(_) => Reply {
            status: 0,
            retry_after: None,
            took: started.elapsed(),
        },
    }
}

/// Every path asked at once, one thread and one connection each.
pub fn at_once(port: u16, key: &str, paths: &[String]) -> Vec<Reply> {
    std::thread::scope(|scope| {
        let asked: Vec<_> = paths
            .iter()
            .map(|path| scope.spawn(move || ask(&agent(), port, path, key)))
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .collect()
    })
}

/// The paths shared out to one client a key, each on a connection of its own asking its share
/// one after another, and asking a path again after the wait `retry` gives for its answer
/// ([`ATTEMPTS`] at most): every attempt, path by path.
pub fn share_out(
    port: u16,
    keys: &[String],
    paths: &[String],
    retry: impl Fn(&Reply) -> Option<Duration> + Sync,
) -> Vec<Vec<Reply>> {
    let retry = &retry;
    std::thread::scope(|scope| {
        let asked: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                scope.spawn(move || {
                    let agent = agent();
                    let share = paths.iter().skip(index).step_by(keys.len());
                    share
                        .map(|path| {
                            let mut attempts = Vec::new();
                            while attempts.len() < ATTEMPTS {
                                let reply = ask(&agent, port, path, key);
                                attempts.push(reply);
                                match retry(&reply) {
                                    Some(wait) => std::thread::sleep(wait),
                                    None => break,
                                }
                            }
                            attempts
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .flatten()
            .collect()
    })
}

/// How a probe connects.
#[derive(Debug, Clone, Copy)]
pub enum Connect {
    /// One connection, kept alive: as a partner's client asks.
    KeptAlive,
    /// A new connection for every request: as a load balancer's health check asks, and as a
    /// new client meets a server whose connections are taken.
    Anew,
}

/// Asks its paths in turn, one every `every`, in a thread of its own until stopped or until the
/// paths run out.
pub struct Probe {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Reply>>,
}

impl Probe {
    pub fn start(
        port: u16,
        key: &str,
        paths: impl Iterator<Item = String> + Send + 'static,
        every: Duration,
        connect: Connect,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (key, stopped) = (key.to_owned(), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let kept = agent();
            let mut replies = Vec::new();
            for path in paths {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let started = Instant::now();
                replies.push(match connect {
                    Connect::KeptAlive => ask(&kept, port, &path, &key),
                    Connect::Anew => ask(&agent(), port, &path, &key),
                });
                std::thread::sleep(every.saturating_sub(started.elapsed()));
            }
            replies
        });
        Self { stop, thread }
    }

    /// Stops asking: every answer it got.
    pub fn stop(self) -> Vec<Reply> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

/// `200 ×4 (2.31 s), 429 ×56 (12 ms)`: how many of each status, and the slowest of each.
pub fn by_status(replies: &[Reply]) -> String {
    let mut statuses: BTreeMap<u16, (usize, Duration)> = BTreeMap::new();
    for reply in replies {
        let entry = statuses.entry(reply.status).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(reply.took);
    }
    statuses
        .iter()
        .map(|(status, (count, slowest))| {
            let status = if *status == 0 {
                "failed".to_owned()
            } else {
                status.to_string()
            };
            format!("{status} ×{count} ({})", seconds(*slowest))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_counted_by_status_with_the_slowest_of_each() {
        let reply = |status, millis| Reply {
            status,
            retry_after: None,
            took: Duration::from_millis(millis),
        };
        assert_eq!(
            by_status(&[reply(429, 3), reply(200, 2310), reply(429, 12), reply(0, 1)]),
            "failed ×1 (1 ms), 200 ×1 (2.31 s), 429 ×2 (12 ms)"
        );
    }

    #[test]
    fn a_client_asks_again_only_while_told_to_and_at_most_five_times() {
        // Nothing listens on port 1: every attempt fails (status 0).
        let keys = ["a".to_owned(), "b".to_owned()];
        let paths: Vec<String> = (0..3).map(|n| format!("/{n}")).collect();
        let once = share_out(1, &keys, &paths, |_| None);
        assert_eq!(once.len(), 3, "every path, each by one client");
        assert!(once.iter().all(|attempts| attempts.len() == 1));
        let again = share_out(1, &keys, &paths, |reply| {
            (reply.status != 200).then_some(Duration::ZERO)
        });
        assert!(again.iter().all(|attempts| attempts.len() == ATTEMPTS));
    }
}
