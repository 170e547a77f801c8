//! The `http` plugin (`http_fetch`) against a real server on 127.0.0.1:
//! responses, truncation, the host's body cap, and redirects, each hop
//! checked by the host.

use std::path::Path;

use serde_json::{Value, json};
use warden_api::{Envelope, Grants};
use warden_runtime::{HttpLimits, Plugin, Runtime, RuntimeConfig};

use crate::common::{self, data, error};
use crate::server::Server;

fn net(patterns: &[String]) -> Grants {
    Grants {
        net: patterns.iter().map(|p| p.parse().unwrap()).collect(),
        ..Grants::default()
    }
}

async fn plugin_with(http: HttpLimits) -> Plugin {
    let mut config =
        RuntimeConfig::new(Some(common::cache_dir())).with_cache_key(common::cache_key());
    config.http = http;
    let runtime = Runtime::new(config).unwrap();
    runtime
        .load(Path::new(warden_test_artifacts::HTTP))
        .await
        .unwrap()
}

async fn fetch(plugin: &Plugin, grants: &Grants, args: Value) -> Envelope {
    common::call(plugin, "http_fetch", args, grants, common::limits()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn fetches_a_granted_url() {
    let server = Server::start();
    let plugin = common::load(&common::runtime(), warden_test_artifacts::HTTP).await;
    let grants = net(&[format!("127.0.0.1:{}", server.port())]);
    let e = fetch(&plugin, &grants, json!({"url": server.url("/hello")})).await;
    let out = data(&e);
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "hello from the test server");
    assert_eq!(out["content_type"], "text/plain");
    assert_eq!(out["truncated"], false);
    assert_eq!(out["headers"]["content-length"], "26");

    let e = fetch(
        &plugin,
        &Grants::default(),
        json!({"url": server.url("/hello")}),
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("ToolError", "network_denied"),
        "{msg}"
    );
    assert!(
        msg.contains("`127.0.0.1`") && msg.contains("--grant-net"),
        "{msg}"
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_are_truncated_by_the_tool_and_capped_by_the_host() {
    let server = Server::start();
    let grants = net(&[format!("127.0.0.1:{}", server.port())]);
    let plugin = plugin_with(HttpLimits {
        max_response_bytes: 4000,
        ..HttpLimits::DEFAULT
    })
    .await;
    let e = fetch(
        &plugin,
        &grants,
        json!({"url": server.url("/big?n=3000"), "max_bytes": 1000}),
    )
    .await;
    let out = data(&e);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["body_bytes"], 1000);
    assert_eq!(out["body"].as_str().unwrap().len(), 1000);

    let e = fetch(
        &plugin,
        &grants,
        json!({"url": server.url("/big?n=10000"), "max_bytes": 100000}),
    )
    .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "http_failed", "{msg}");
    assert!(msg.contains("exceeds limit: 4000 bytes"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn redirects_are_followed_and_every_hop_is_checked() {
    let a = Server::start();
    let b = Server::start();
    let plugin = common::load(&common::runtime(), warden_test_artifacts::HTTP).await;
    let both = net(&[
        format!("127.0.0.1:{}", a.port()),
        format!("127.0.0.1:{}", b.port()),
    ]);
    // Granted to granted: followed; credentials do not cross origins.
    let to_b = a.url(&format!("/redirect?to={}", b.url("/headers")));
    let e = fetch(
        &plugin,
        &both,
        json!({"url": to_b, "headers": {"authorization": "Bearer t0ken"}}),
    )
    .await;
    let out = data(&e);
    assert_eq!(out["status"], 200);
    assert_eq!(out["url"], b.url("/headers"));
    assert_eq!(out["redirects"], json!([b.url("/headers")]));
    let seen = out["body"].as_str().unwrap().to_ascii_lowercase();
    assert!(!seen.contains("authorization"), "{seen}");

    // Granted to a port not granted: refused at the hop.
    let only_a = net(&[format!("127.0.0.1:{}", a.port())]);
    let e = fetch(&plugin, &only_a, json!({"url": to_b})).await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "network_denied", "{msg}");
    assert!(
        msg.contains(&format!("--grant-net 127.0.0.1:{}", b.port())),
        "{msg}"
    );

    // Granted (with every host allowed) to non-public addresses: refused
    // by the address rules.
    let open = net(&[
        "insecure:allow-all".into(),
        format!("127.0.0.1:{}", a.port()),
    ]);
    for (to, class) in [
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        (&*format!("http://localhost:{}/hello", b.port()), "loopback"),
        ("http://192.168.1.1/", "private"),
    ] {
        let url = a.url(&format!("/redirect?to={to}"));
        let e = fetch(&plugin, &open, json!({"url": url})).await;
        let (_, code, msg) = error(&e);
        assert_eq!(code, "network_denied", "{to}: {msg}");
        assert!(msg.contains(class), "{to}: {msg}");
    }
    assert_eq!(
        b.hits(),
        1,
        "only the allowed hop reached the second server"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_caps_redirects_whatever_the_tool_asks() {
    let server = Server::start();
    let grants = net(&[format!("127.0.0.1:{}", server.port())]);
    let plugin = plugin_with(HttpLimits {
        max_redirects: 2,
        ..HttpLimits::DEFAULT
    })
    .await;
    let hop3 = server.url("/hello");
    let hop2 = server.url(&format!("/redirect?to={hop3}"));
    let hop1 = server.url(&format!("/redirect?to={hop2}"));
    let start = server.url(&format!("/redirect?to={hop1}"));
    let e = fetch(&plugin, &grants, json!({"url": start, "max_redirects": 10})).await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "network_denied", "{msg}");
    assert!(msg.contains("cap of 2"), "{msg}");
    // Within the cap it works.
    let e = fetch(&plugin, &grants, json!({"url": hop2})).await;
    assert_eq!(data(&e)["body"], "hello from the test server");
}

#[tokio::test(flavor = "multi_thread")]
async fn confusing_urls_are_refused_before_any_request() {
    let server = Server::start();
    let plugin = common::load(&common::runtime(), warden_test_artifacts::HTTP).await;
    let grants = net(&["insecure:allow-all".into(), "127.0.0.1".into()]);
    for url in [
        format!("http://user:pw@127.0.0.1:{}/hello", server.port()),
        format!("http://127.0.0.1:{}\\@evil.example/", server.port()),
        format!("http://127.0.0.1:{}/a b", server.port()),
        "ftp://127.0.0.1/".to_owned(),
    ] {
        let e = fetch(&plugin, &grants, json!({"url": url})).await;
        let (_, code, msg) = error(&e);
        assert_eq!(code, "invalid_url", "{url}: {msg}");
    }
    assert_eq!(server.hits(), 0);
}
