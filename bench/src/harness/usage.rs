//! What a process uses, read from /proc (Linux): its resident memory now and at its peak, its
//! CPU time and its open file descriptors.

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};

/// Peak resident set size of a process (`VmHWM` in /proc), in KiB.
pub fn peak_rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmHWM:")
}

/// Resident set size of a process now (`VmRSS` in /proc), in KiB.
pub fn rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    kib_of(&status, field).with_context(|| format!("no {field} in {path}"))
}

/// A `Field:   12345 kB` line of a /proc status file.
fn kib_of(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .and_then(|value| value.trim().parse().ok())
}

/// The file descriptors a process has open.
pub fn open_fds(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/fd");
    let entries = std::fs::read_dir(&path).with_context(|| format!("cannot read {path}"))?;
    Ok(u64::try_from(entries.count())?)
}

/// The user and system time `pid` has used so far.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("cannot read the CPU time of process {pid}"))?;
    cpu_time_of(&stat).ok_or_else(|| anyhow!("unexpected /proc/{pid}/stat: {stat}"))
}

/// The user and system time of a `/proc/PID/stat` line, counted in the kernel's user-visible
/// clock ticks: 100 a second on Linux, whatever the kernel's own rate.
fn cpu_time_of(stat: &str) -> Option<Duration> {
    const TICKS_A_SECOND: u64 = 100;
    // The command name, in parentheses, may hold spaces and parentheses: the fields are
    // counted after its last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    let ticks = |i: usize| fields.get(i).and_then(|t| t.parse::<u64>().ok());
    Some(Duration::from_millis(
        (ticks(11)? + ticks(12)?) * 1000 / TICKS_A_SECOND,
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn the_peak_rss_is_read_from_vm_hwm() {
        let status =
            "Name:\tcallstats\nVmPeak:\t  900000 kB\nVmHWM:\t   48128 kB\nVmRSS:\t   40000 kB\n";
        assert_eq!(kib_of(status, "VmHWM:"), Some(48128));
        assert_eq!(kib_of(status, "VmRSS:"), Some(40000));
        assert_eq!(kib_of("VmRSS:\t 1 kB\n", "VmHWM:"), None);
    }

    #[test]
    fn this_process_has_memory_and_open_files() {
        let pid = std::process::id();
        assert!(rss_kib(pid).unwrap() > 0);
        assert!(peak_rss_kib(pid).unwrap() >= rss_kib(pid).unwrap());
        assert!(
            open_fds(pid).unwrap() >= 3,
            "stdin, stdout and stderr at least"
        );
    }

    #[test]
    fn the_cpu_time_is_utime_and_stime_after_the_command_name() {
        let stat = "4242 (tokio rt) (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 37 0 0 20 0 12 0 1000 100000 500 18446744073709551615";
        assert_eq!(cpu_time_of(stat), Some(Duration::from_millis(2870)));
        assert_eq!(cpu_time_of("4242 (callstats) S 1 2"), None);
        assert_eq!(cpu_time_of("no command name"), None);
    }

    #[test]
    fn the_cpu_time_of_this_process_grows_as_it_works() {
        let before = cpu_time(std::process::id()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spin = Instant::now();
            while spin.elapsed() < Duration::from_millis(5) {}
            let used = cpu_time(std::process::id()).unwrap().saturating_sub(before);
            if used >= Duration::from_millis(50) {
                return;
            }
            assert!(Instant::now() < deadline, "20 s of spinning used {used:?}");
        }
    }
}
