//! Name lookups from a guest, observed at a real DNS server: a name no
//! grant covers never reaches the resolver, so the lookup is no channel
//! out of the sandbox.
//!
//! The host resolves through the system resolver (`/etc/resolv.conf`).
//! To see every query it sends, the test re-runs itself in a new user,
//! mount and network namespace (`unshare`, unprivileged) where
//! `/etc/resolv.conf` names 127.0.0.1 and a small DNS server of the
//! test's own answers there and records every question it is asked.

use std::net::UdpSocket;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::json;
use warden_api::Grants;

use crate::common::{self, data};

/// Set in the re-run inside the namespaces.
const INNER: &str = "WARDEN_TEST_DNS_NAMESPACE";
const GRANTED: &str = "granted-host.test";
const REFUSED: &str = "exfil-secret-4242.test";

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_name_sends_no_query_to_the_resolver() {
    if std::env::var_os(INNER).is_none() {
        rerun_in_namespaces("a_refused_name_sends_no_query_to_the_resolver");
        return;
    }
    let asked = serve_dns();
    let grants = Grants {
        net: vec![format!("{GRANTED}:9").parse().unwrap()],
        ..Grants::default()
    };
    let probe = common::probe().await;
    let mut details = Vec::new();
    for name in [REFUSED, GRANTED] {
        let action = json!({"action": "connect", "host": name, "port": 9});
        let e = common::call(&probe, "probe_run", action, &grants, common::limits()).await;
        details.push((name, data(&e)["detail"].as_str().unwrap().to_owned()));
    }
    let asked = asked.lock().unwrap().clone();
    // What left the host, as the resolver saw it: the granted name (so
    // the test sees the host's queries), never the refused one.
    assert!(
        !asked.iter().any(|q| q.contains("exfil")),
        "a refused name was sent to the resolver: {asked:?}"
    );
    assert!(
        asked.iter().any(|q| q == GRANTED),
        "the granted name never reached the test's DNS server: {asked:?}"
    );
    // What the guest saw: a denial for the refused name, with the reason.
    for (name, detail) in details {
        let refused = detail.starts_with("resolve") && detail.contains("access-denied");
        assert_eq!(refused, name == REFUSED, "{name}: {detail}");
    }
}

/// Runs test `name` of this binary again in new namespaces with
/// `/etc/resolv.conf` pointing at 127.0.0.1, and fails if it fails.
fn rerun_in_namespaces(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\noptions attempts:1 timeout:2\n",
    )
    .unwrap();
    let exe = std::env::current_exe().unwrap();
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let script = r#"ip link set lo up && mount --bind "$0" /etc/resolv.conf && exec "$@""#;
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--net", "--"])
        .args(["sh", "-c", script])
        .arg(&resolv)
        .arg(&exe)
        .args(["--exact", &format!("{module}::{name}"), "--nocapture"])
        .env(INNER, "1")
        .output()
        .expect("unshare (util-linux) runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the run in a network namespace failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("1 passed"),
        "the test did not run in the namespace:\n{stdout}\n{stderr}"
    );
}

/// A DNS server on 127.0.0.1:53 that answers `GRANTED` with 127.0.0.1,
/// everything else with NXDOMAIN, and records every name asked.
fn serve_dns() -> Arc<Mutex<Vec<String>>> {
    let socket = UdpSocket::bind("127.0.0.1:53").expect("port 53 in the namespace");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            let Some((name, qtype, question_end)) = question(&buf[..n]) else {
                continue;
            };
            log.lock().unwrap().push(name.clone());
            let reply = answer(&buf[..question_end], &name, qtype);
            let _ = socket.send_to(&reply, from);
        }
    });
    asked
}

/// The first question of a query: (name, type, where the question ends).
fn question(msg: &[u8]) -> Option<(String, u16, usize)> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*msg.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(msg.get(at..at + len)?).into_owned());
        at += len;
    }
    let qtype = u16::from_be_bytes([*msg.get(at)?, *msg.get(at + 1)?]);
    Some((labels.join(".").to_ascii_lowercase(), qtype, at + 4))
}

fn answer(query: &[u8], name: &str, qtype: u16) -> Vec<u8> {
    const A: u16 = 1;
    let found = name == GRANTED;
    let mut reply = query.to_vec();
    // Response, recursion desired and available; NXDOMAIN for other names.
    reply[2] = 0x81;
    reply[3] = if found { 0x80 } else { 0x83 };
    let with_address = found && qtype == A;
    reply[6..8].copy_from_slice(&u16::from(with_address).to_be_bytes());
    reply[8..12].fill(0);
    if with_address {
        // A pointer to the question's name, type A, class IN, TTL 60.
        reply.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
    }
    reply
}
