//! Which managed containers are orphans: left behind by a Warden host that
//! exited without cleaning up (killed, crashed, power loss).
//!
//! A container is an orphan when the host process its labels name is no
//! longer alive: no process with that pid, or one that started at another
//! time (the pid was reused). Containers of live hosts — other Warden
//! processes on the same engine — are never touched.

use std::collections::BTreeMap;

use crate::spec::{HOST_PID_LABEL, HOST_START_LABEL, HostIdentity};

/// The start time of process `pid` (clock ticks since boot, field 22 of
/// /proc/PID/stat), or `None` when there is no such process.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// This process, as container labels name it.
pub fn this_host() -> HostIdentity {
    let pid = std::process::id();
    let start = process_start(pid).unwrap_or(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    HostIdentity {
        id: format!("{pid:x}-{nanos:x}"),
        pid,
        start,
    }
}

/// Whether the host process `pid`, started at `start`, is gone: no
/// process with that pid, or one started at another time (the pid was
/// reused).
pub fn is_gone(pid: u32, start: u64, start_of: impl Fn(u32) -> Option<u64>) -> bool {
    start_of(pid) != Some(start)
}

/// Whether a managed container with these labels is an orphan, given a
/// way to look up a process's start time.
pub fn is_orphan(labels: &BTreeMap<String, String>, start_of: impl Fn(u32) -> Option<u64>) -> bool {
    let pid = labels
        .get(HOST_PID_LABEL)
        .and_then(|p| p.parse::<u32>().ok());
    let start = labels
        .get(HOST_START_LABEL)
        .and_then(|s| s.parse::<u64>().ok());
    match (pid, start) {
        (Some(pid), Some(start)) => is_gone(pid, start, start_of),
        // Managed but without a readable owner: nobody will ever clean it.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pid: &str, start: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (HOST_PID_LABEL.to_owned(), pid.to_owned()),
            (HOST_START_LABEL.to_owned(), start.to_owned()),
        ])
    }

    #[test]
    fn dead_or_reused_pids_are_orphans_live_hosts_are_not() {
        let alive = |pid: u32| (pid == 10).then_some(500);
        assert!(!is_orphan(&labels("10", "500"), alive));
        assert!(is_orphan(&labels("10", "499"), alive), "pid reused");
        assert!(is_orphan(&labels("11", "500"), alive), "no such process");
        assert!(is_orphan(&BTreeMap::new(), alive), "no owner labels");
    }

    #[test]
    fn this_process_is_alive() {
        let me = this_host();
        assert_eq!(process_start(me.pid), Some(me.start));
        assert!(!is_orphan(
            &labels(&me.pid.to_string(), &me.start.to_string()),
            process_start
        ));
    }
}
