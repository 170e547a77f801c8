//! `[serve.oauth]` end to end: a test issuer (keys made per run, its JWK
//! set on loopback) mints access tokens; `warden serve --http` fetches the
//! keys; the official MCP Python SDK (`tests/mcp/oauth_client.py`)
//! discovers the metadata, is challenged, signs in, and sees wrong
//! audience, wrong issuer, expired, unknown-key and under-scoped tokens
//! refused with the right status and challenge; a principal mapped to an
//! agent gets that agent's rules, and a rule naming a principal applies to
//! it alone; the audit records carry the principal; an operator signs in
//! to the console with an access token, an agent's token does not.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "tests fail loudly and show the client's transcript"
)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

#[path = "support/issuer.rs"]
mod issuer;

use issuer::{Issuer, es256_key, sign};

#[path = "support/python.rs"]
mod python;
use python::python;

#[path = "support/http_serve.rs"]
mod http_serve;
use http_serve::{free_port, serve};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

const STATIC_TOKEN: &str = "ci-token-0123456789abcdef";

fn config(dir: &Path, issuer: &Issuer, audience: &str) -> String {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello from the workspace\n").unwrap();
    format!(
        r#"
workspace = "/workspace"

[[plugins]]
path = "{fs}"
grant-fs = ["{ws}:/workspace:rw"]

[agents.alice]
level = "standard"
rules = {{ allow = ["fs_write"] }}
principals = [{{ subject = "mallory", deny = ["fs_write"] }}]

[agents.bob]
level = "standard"
rules = {{ deny = ["fs_write"] }}

[agents.ci]
level = "standard"

[[serve.tokens]]
agent = "ci"
token = "{STATIC_TOKEN}"

[serve.oauth]
issuer = "{iss}"
audience = "{audience}"
jwks-url = "{jwks}"
required-scopes = ["mcp:tools"]
keep-claims = ["team"]

[[serve.oauth.agents]]
agent = "bob"
claim = "sub"
equals = "bob"

[[serve.oauth.agents]]
agent = "alice"
claim = "client_id"
equals = "chat-client"

[[serve.oauth.operators]]
claim = "scope"
equals = "warden:operate"

[signers]
publishers = [{{ name = "warden-tests", key = "{key}" }}]
"#,
        fs = warden_test_artifacts::FS,
        ws = ws.display(),
        iss = issuer.url,
        jwks = issuer.jwks_url,
        key = warden_test_artifacts::public_key_file().display(),
    )
}

#[test]
fn an_oauth_client_signs_in_and_bad_tokens_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::start();
    let port = free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let config_path = dir.path().join("warden.toml");
    std::fs::write(&config_path, config(dir.path(), &issuer, &audience)).unwrap();
    let state = dir.path().join("state");

    let claims = |sub: &str, client: &str| {
        json!({
            "iss": issuer.url, "aud": audience, "sub": sub, "client_id": client,
            "scope": "mcp:tools", "exp": now() + 600, "iat": now(), "team": "blue",
        })
    };
    let with = |field: &str, value: Value| {
        let mut c = claims("alice", "chat-client");
        c[field] = value;
        issuer.token(&c)
    };
    let operator = |exp: u64, aud: &str| {
        json!({
            "iss": issuer.url, "aud": aud, "sub": "dana", "client_id": "ops-console",
            "scope": "warden:operate", "exp": exp, "iat": now(),
        })
    };
    let (stranger, _) = es256_key("k2");
    let tokens = json!({
        "alice": issuer.token(&claims("alice", "chat-client")),
        "bob": issuer.token(&claims("bob", "other-client")),
        "mallory": issuer.token(&claims("mallory", "chat-client")),
        "wrong_aud": with("aud", json!("http://127.0.0.1:1/mcp")),
        "wrong_iss": with("iss", json!("http://127.0.0.1:1")),
        "expired": with("exp", json!(now() - 3600)),
        "unknown_key": sign(&stranger, "k2", &claims("alice", "chat-client")),
        "no_scope": with("scope", json!("profile")),
        "static": STATIC_TOKEN,
        "operator": issuer.token(&operator(now() + 600, &audience)),
        "operator_expired": issuer.token(&operator(now() - 3600, &audience)),
        "operator_wrong_aud": issuer.token(&operator(now() + 600, "http://127.0.0.1:1/mcp")),
    });
    let tokens_path = dir.path().join("tokens.json");
    std::fs::write(&tokens_path, tokens.to_string()).unwrap();

    let served = serve(&config_path, &state, port);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/oauth_client.py");
    let output = Command::new(python())
        .arg(script)
        .args(["--url", &audience, "--issuer", &issuer.url])
        .arg("--tokens")
        .arg(&tokens_path)
        .output()
        .unwrap();
    drop(served);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the OAuth client's checks failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );
    // The key set was fetched once at start and once for the unknown key
    // (and not for every token).
    let fetches = *issuer.fetches.lock().unwrap();
    assert!((1..=2).contains(&fetches), "JWKS fetched {fetches} times");

    // Every decision and outcome of an OAuth call names its principal.
    let tail = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", "tail", "-n", "200", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&tail.stdout);
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let find = |kind: &str, agent: &str, subject: &str| {
        records
            .iter()
            .find(|r| {
                let text = r.to_string();
                text.contains(kind)
                    && text.contains(&format!("\"agent\":\"{agent}\""))
                    && text.contains(&format!("\"subject\":\"{subject}\""))
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} record of {agent} as {subject} in:\n{text}"))
    };
    let principal = |r: &Value| -> Value {
        fn search(v: &Value) -> Option<Value> {
            match v {
                Value::Object(m) => m
                    .get("principal")
                    .cloned()
                    .or_else(|| m.values().find_map(search)),
                Value::Array(a) => a.iter().find_map(search),
                _ => None,
            }
        }
        search(r).unwrap_or_else(|| panic!("no principal in {r}"))
    };
    for kind in ["\"decision\"", "\"outcome\""] {
        let alice = principal(&find(kind, "alice", "alice"));
        assert_eq!(alice["subject"], "alice", "{alice}");
        assert_eq!(alice["client-id"], "chat-client", "{alice}");
        assert_eq!(alice["issuer"], issuer.url.as_str(), "{alice}");
        assert_eq!(alice["claims"]["team"], "blue", "{alice}");
    }
    let bob = principal(&find("\"decision\"", "bob", "bob"));
    assert_eq!(bob["client-id"], "other-client", "{bob}");
    // Mallory's write, denied by the rule naming her subject.
    let mallory = find("fs_write", "alice", "mallory").to_string();
    assert!(
        mallory.contains("\"decision\":\"deny\"") && mallory.contains("for this principal"),
        "{mallory}"
    );
}
