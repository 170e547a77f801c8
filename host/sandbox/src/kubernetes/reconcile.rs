//! Which sandbox pods are orphans: left behind by a Warden replica that
//! exited without cleaning up (killed, crashed, its node lost).
//!
//! A pod is this replica's orphan when it carries this instance's label,
//! this replica's host name (stable under a StatefulSet: `warden-0`), and
//! names a host process that is no longer alive (see
//! [`crate::reconcile::is_orphan`]). Pods of other replicas are never
//! touched: their own restart reclaims them, and `activeDeadlineSeconds`
//! ends them when the replica never comes back.

use std::collections::HashSet;

use super::api::Cluster;
use super::config::is_label_value;
use super::manifests::{HOST_NAME_LABEL, POD_LABEL};
use crate::SandboxError;
use crate::reconcile::{is_orphan, process_start};
use crate::spec::{INSTANCE_LABEL, MANAGED_LABEL};

/// This machine's (or pod's) host name as a label value.
pub fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    label_safe(raw.trim())
}

/// `s` with every character a label value refuses replaced by `-`, cut
/// to 63 bytes, trimmed to start and end alphanumeric.
pub fn label_safe(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.is_empty() || !is_label_value(trimmed) {
        return "unnamed".to_owned();
    }
    trimmed.to_owned()
}

/// Removes this replica's orphaned pods of `instance` and the egress
/// policies no live pod uses; returns how many pods.
pub async fn reconcile(
    cluster: &Cluster,
    instance: &str,
    host_name: &str,
) -> Result<usize, SandboxError> {
    let selector =
        format!("{MANAGED_LABEL}=true,{INSTANCE_LABEL}={instance},{HOST_NAME_LABEL}={host_name}");
    let mut removed = 0;
    let mut live = HashSet::new();
    for pod in cluster.list_pods(&selector).await? {
        if is_orphan(&pod.labels, process_start) {
            cluster.delete_pod(&pod.name).await?;
            removed += 1;
        } else {
            live.insert(pod.name);
        }
    }
    // A policy whose pod was never made (a crash between the two) or is
    // gone now.
    for policy in cluster.list_policies(&selector).await? {
        let used = policy
            .labels
            .get(POD_LABEL)
            .is_some_and(|pod| live.contains(pod));
        if !used {
            cluster.delete_policy(&policy.name).await?;
        }
    }
    Ok(removed)
}
