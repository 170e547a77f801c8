//! Network and environment grants, driven through the probe's raw
//! `wasi:sockets` and `wasi:http` actions against real servers on
//! 127.0.0.1: what a grant admits, what the address rules refuse, and that
//! a refusal is a WASI error the guest sees along with the host's reason.

use serde_json::{Value, json};
use warden_api::{EnvGrant, Grants, Secret};

use crate::common::{self, data};
use crate::server::Server;

fn net(patterns: &[&str]) -> Grants {
    Grants {
        net: patterns.iter().map(|p| p.parse().unwrap()).collect(),
        ..Grants::default()
    }
}

/// (ok, detail) of a probe action.
async fn probe(grants: &Grants, action: Value) -> (bool, String) {
    let probe = common::probe().await;
    let e = common::call(&probe, "probe_run", action, grants, common::limits()).await;
    let out = data(&e);
    (
        out["ok"].as_bool().unwrap(),
        out["detail"].as_str().unwrap().to_owned(),
    )
}

fn get(authority: &str, path: &str) -> Value {
    json!({"action": "http-get", "scheme": "http", "authority": authority, "path": path})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_host_is_reachable_and_others_are_refused_with_the_grant_to_ask_for() {
    let server = Server::start();
    let port = server.port();
    let grants = net(&[&format!("127.0.0.1:{port}")]);
    let (ok, detail) = probe(&grants, get(&format!("127.0.0.1:{port}"), "/hello")).await;
    assert!(ok, "{detail}");
    assert_eq!(detail, "200 hello from the test server");

    let (ok, detail) = probe(
        &grants,
        get(&format!("not-granted.invalid:{port}"), "/hello"),
    )
    .await;
    assert!(!ok, "{detail}");
    assert!(detail.contains("HttpRequestDenied"), "{detail}");
    assert!(detail.contains("`not-granted.invalid`"), "{detail}");
    assert!(
        detail.contains(&format!("--grant-net not-granted.invalid:{port}")),
        "{detail}"
    );
    let (ok, detail) = probe(&grants, get(&format!("127.0.0.1:{}", port + 1), "/")).await;
    assert!(!ok && detail.contains("HttpRequestDenied"), "{detail}");
    assert_eq!(
        server.hits(),
        1,
        "refused requests must not reach the server"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_resolving_to_loopback_needs_loopback_granted() {
    let server = Server::start();
    let port = server.port();
    let authority = format!("localhost:{port}");
    let by_name = net(&[&authority]);
    let (ok, detail) = probe(&by_name, get(&authority, "/hello")).await;
    assert!(!ok, "{detail}");
    assert!(detail.contains("DestinationIpProhibited"), "{detail}");
    assert!(detail.contains("loopback"), "{detail}");
    assert!(detail.contains("`localhost` resolves to it"), "{detail}");
    assert_eq!(server.hits(), 0);

    let with_loopback = net(&[&authority, "127.0.0.1"]);
    let (ok, detail) = probe(&with_loopback, get(&authority, "/hello")).await;
    assert!(ok, "{detail}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_spelling_of_loopback_is_loopback() {
    let server = Server::start();
    let port = server.port();
    let spellings = [
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "127.1",
        "[::ffff:127.0.0.1]",
    ];
    let everything = net(&["insecure:allow-all"]);
    let loopback = net(&[&format!("127.0.0.1:{port}")]);
    for host in spellings {
        let authority = format!("{host}:{port}");
        let (ok, detail) = probe(&everything, get(&authority, "/hello")).await;
        assert!(!ok, "{host} under allow-all: {detail}");
        assert!(
            detail.contains("127.0.0.1 is a loopback address"),
            "{host}: {detail}"
        );
        let (ok, detail) = probe(&loopback, get(&authority, "/hello")).await;
        assert!(ok, "{host} with 127.0.0.1 granted: {detail}");
    }
    assert_eq!(server.hits(), spellings.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_and_private_addresses_are_refused_without_connecting() {
    let everything = net(&["insecure:allow-all"]);
    for (authority, class) in [
        ("169.254.169.254", "cloud metadata"),
        ("[fd00:ec2::254]", "cloud metadata"),
        ("10.0.0.1", "private"),
        ("[::ffff:192.168.0.1]", "private"),
        ("[64:ff9b::a9fe:a9fe]", "cloud metadata"),
        ("100.64.0.1", "CGNAT"),
    ] {
        let (ok, detail) = probe(&everything, get(authority, "/")).await;
        assert!(!ok, "{authority}: {detail}");
        assert!(detail.contains(class), "{authority}: {detail}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn urls_with_userinfo_are_refused() {
    let server = Server::start();
    let grants = net(&["insecure:allow-all", "127.0.0.1"]);
    let (ok, detail) = probe(
        &grants,
        get(&format!("user@127.0.0.1:{}", server.port()), "/hello"),
    )
    .await;
    assert!(!ok, "{detail}");
    assert!(detail.contains("credentials"), "{detail}");
    assert_eq!(server.hits(), 0);
}

fn connect(host: &str, port: u16) -> Value {
    json!({"action": "connect", "host": host, "port": port, "send": "ping"})
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_sockets_reach_granted_address_port_pairs_only() {
    let server = Server::start();
    let port = server.port();
    let grants = net(&[&format!("127.0.0.1:{port}")]);
    let (ok, detail) = probe(&grants, connect("127.0.0.1", port)).await;
    assert!(ok, "{detail}");
    assert_eq!(detail, "connected; reply: pong");

    let (ok, detail) = probe(&grants, connect("127.0.0.1", port + 1)).await;
    assert!(!ok, "{detail}");
    assert!(
        detail.starts_with("connect:") && detail.contains("access-denied"),
        "{detail}"
    );
    assert!(
        detail.contains(&format!("127.0.0.1:{}", port + 1)),
        "{detail}"
    );

    // No grant at all: no TCP.
    let (ok, detail) = probe(&Grants::default(), connect("127.0.0.1", port)).await;
    assert!(!ok, "{detail}");
    assert!(detail.contains("access-denied"), "{detail}");

    // Only addresses granted: no name lookup either.
    let (ok, detail) = probe(&grants, connect("localhost", port)).await;
    assert!(!ok, "{detail}");
    assert!(detail.starts_with("resolve localhost"), "{detail}");

    // A granted name that resolves to loopback is still loopback.
    let by_name = net(&[&format!("localhost:{port}")]);
    let (ok, detail) = probe(&by_name, connect("localhost", port)).await;
    assert!(!ok, "{detail}");
    assert!(detail.contains("loopback"), "{detail}");

    // An HTTPS-only grant admits no raw socket.
    let https_only = net(&[&format!("https://127.0.0.1:{port}")]);
    let (ok, detail) = probe(&https_only, connect("127.0.0.1", port)).await;
    assert!(!ok && detail.contains("access-denied"), "{detail}");
    assert_eq!(server.hits(), 1);
}

fn env(pairs: &[(&str, &str)]) -> Grants {
    Grants {
        env: pairs
            .iter()
            .map(|(k, v)| EnvGrant {
                key: (*k).into(),
                value: Secret::new(*v),
            })
            .collect(),
        ..Grants::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_granted_and_requested_env_keys_are_visible() {
    // PROBE_TOKEN: requested and granted. HOME: granted, not requested.
    // PROBE_MODE: requested, not granted.
    let grants = env(&[("PROBE_TOKEN", "tok-123"), ("HOME", "/root")]);
    let (ok, detail) = probe(&grants, json!({"action": "env-keys"})).await;
    assert!(ok);
    assert_eq!(detail, "PROBE_TOKEN");
    let (ok, detail) = probe(&grants, json!({"action": "env", "key": "PROBE_TOKEN"})).await;
    assert!(ok);
    assert_eq!(detail, "tok-123");
    for key in ["HOME", "PROBE_MODE", "PATH"] {
        let (ok, detail) = probe(&grants, json!({"action": "env", "key": key})).await;
        assert!(!ok, "{key} must be invisible: {detail}");
    }
    let (_, detail) = probe(&Grants::default(), json!({"action": "env-keys"})).await;
    assert_eq!(detail, "", "no grant, no environment");
}

#[test]
fn secrets_do_not_show_in_debug_or_serialized_grants() {
    let grants = env(&[("PROBE_TOKEN", "s3cr3t-value")]);
    let debug = format!("{grants:?}");
    let json = serde_json::to_string(&grants).unwrap();
    for text in [&debug, &json] {
        assert!(!text.contains("s3cr3t-value"), "{text}");
        assert!(text.contains("PROBE_TOKEN"), "{text}");
    }
}

/// A name grant lets a guest look names up for its sockets; the lookup
/// must not become a channel of its own. Resolving a name no grant
/// covers is refused before any query leaves the host: the guest sees
/// `access-denied` (a query that was sent would fail as unresolvable),
/// with the host's reason.
#[tokio::test(flavor = "multi_thread")]
async fn a_guest_resolves_only_names_a_grant_covers() {
    let server = Server::start();
    let port = server.port();
    let grants = net(&[&format!("localhost:{port}"), "*.example.org"]);
    for name in [
        "exfil-secret-4242.invalid",
        "internal-db.corp.invalid",
        "example.org",
        "localhost.evil.invalid",
    ] {
        let (ok, detail) = probe(&grants, connect(name, port)).await;
        assert!(!ok, "{name}: {detail}");
        assert!(
            detail.starts_with(&format!("resolve {name}")) && detail.contains("access-denied"),
            "{name}: {detail}"
        );
        assert!(detail.contains("lookup of"), "the host's reason: {detail}");
    }
    // A granted name (and a name under a granted domain) is looked up.
    for name in ["localhost", "a.example.org"] {
        let (_, detail) = probe(&grants, connect(name, port)).await;
        assert!(
            !(detail.starts_with("resolve") && detail.contains("access-denied")),
            "{name}: {detail}"
        );
    }
    assert_eq!(server.hits(), 0);
}
