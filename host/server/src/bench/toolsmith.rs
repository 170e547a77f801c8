//! `warden bench --toolsmith COMPONENT`: the toolsmith's chain after the
//! approval, on a real `warden serve --stdio` child measured from
//! outside. An operator proposes and approves (in the store, as `warden
//! toolsmith approve` does) one version after another of a blueprint of
//! ten cases for a prebuilt component (the `gen-words` test component:
//! its tool is `gen_words_count`); the served host picks each up at its
//! next round, validates it through its gate, signs and activates it,
//! and tells the connected client. Per version, from the audit chain's
//! moves and the client's clock: validation (`validating` to `validated`:
//! the cases, the host's negative cases, the witness and the scorecard,
//! without the build) and activation to the client's
//! `notifications/tools/list_changed`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::process::Command;
use warden_api::Attribution;
use warden_store::Store;

use super::mcp::Stdio_;
use super::{failed, io};
use crate::ServerError;
use crate::toolsmith::Toolsmith;

/// How long one version may take from approval to the client's notice.
const PER_VERSION: Duration = Duration::from_secs(60);

/// The blueprint of version `n`: ten cases (nine counts, one trap).
fn blueprint(component: &[u8], n: usize) -> Value {
    use base64::Engine as _;
    let mut cases: Vec<Value> = (0..9)
        .map(|words| {
            json!({
                "name": format!("{words} words"),
                "args": {"text": vec!["w"; words].join(" ")},
                "expect": {"ok": {"equals": {"words": words}}},
            })
        })
        .collect();
    cases.push(json!({"name": "trap", "args": {"text": "trap"}, "expect": {"error": {}}}));
    json!({
        "capability": "words:count",
        "title": "Count words",
        "description": format!("Counts the words of a text (version {n})."),
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "output_schema": {"type": "object", "properties": {"words": {"type": "integer", "minimum": 0}}, "required": ["words"]},
        "body": {"component": {
            "sha256": warden_signing::sha256_digest(component).trim_start_matches("sha256:"),
            "base64": base64::engine::general_purpose::STANDARD.encode(component),
        }},
        "cases": cases,
        "rationale": "warden bench",
        "witness": {"text": "how many words is this"},
    })
}

/// The served host's configuration: the toolsmith's sandbox may read
/// `data` (the component asks to read files).
fn config(dir: &Path, versions: usize) -> String {
    format!(
        "[agents.bench]\nlevel = \"standard\"\n\n\
         [toolsmith]\ncategory = \"analytics\"\nmax-blueprints-per-day = {}\n\n\
         [toolsmith.sandbox]\nfs = [{{ path = \"{}\", mode = \"ro\" }}]\nnetwork = \"none\"\n\
         limits = {{ deadline-ms = 5000 }}\n\n\
         [toolsmith.capabilities.\"words:*\"]\naction-type = \"code:read\"\n",
        versions + 1,
        dir.join("data").display()
    )
}

/// p50, p95 and the largest of `samples`, in milliseconds.
fn in_ms(mut samples: Vec<Duration>) -> Value {
    samples.sort();
    let pct = |p: f64| {
        let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
        samples
            .get(i)
            .map_or(0.0, |d| (d.as_secs_f64() * 10_000.0).round() / 10.0)
    };
    json!({"n": samples.len(), "p50": pct(0.5), "p95": pct(0.95), "max": pct(1.0)})
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// When blueprint `id` moved to each state, from the audit chain.
fn moves(store: &dyn Store, id: u64) -> Result<Vec<(String, u64)>, ServerError> {
    let mut found = Vec::new();
    let mut after = 0;
    loop {
        let records = store.records_after(after, 1000)?;
        let Some(last) = records.last() else {
            return Ok(found);
        };
        after = last.seq;
        found.extend(
            records
                .iter()
                .filter(|r| r.kind == "blueprint-moved" && r.event["id"] == id)
                .map(|r| (r.event["to"].as_str().unwrap_or("").to_owned(), r.at_ms)),
        );
    }
}

fn at(moves: &[(String, u64)], state: &str) -> Result<u64, ServerError> {
    moves
        .iter()
        .find(|(to, _)| to == state)
        .map(|(_, at)| *at)
        .ok_or_else(|| failed(format!("the audit chain has no move to `{state}`")))
}

/// Runs the bench: `versions` measured after one warm-up.
pub async fn run(warden: &Path, component: &Path, versions: usize) -> Result<Value, ServerError> {
    let dir = super::tempfile_dir()?;
    let result = measure(warden, component, versions.max(1), &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(
    warden: &Path,
    component: &Path,
    versions: usize,
    dir: &Path,
) -> Result<Value, ServerError> {
    let wasm = std::fs::read(component).map_err(io("reading the component"))?;
    std::fs::create_dir_all(dir.join("data")).map_err(io("creating the data directory"))?;
    let config_path = dir.join("warden.toml");
    std::fs::write(&config_path, config(dir, versions)).map_err(io("writing the config"))?;
    let state_dir = dir.join("state");
    let mut command = Command::new(warden);
    command
        .arg("serve")
        .arg("--config")
        .arg(&config_path)
        .arg("--state-dir")
        .arg(&state_dir)
        .args(["--agent", "bench", "--stdio"]);
    let (mut client, _) = Stdio_::open(command, dir.join("serve.log")).await?;
    // Listing registers the session for list changes.
    client.request("tools/list", json!({})).await?;

    let config = crate::Config::load(&config_path)?;
    let store = crate::state::open(&state_dir, &crate::StateConfig::default())?;
    let smith = Toolsmith::new(store.clone(), &config, Arc::new(warden_api::SystemClock));
    let operator = Attribution {
        actor: "bench".into(),
        confirm: true,
        reason: Some("warden bench".into()),
    };
    let (mut validation, mut activation, mut approval) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..=versions {
        let text = blueprint(&wasm, n).to_string();
        let approved_at = Instant::now();
        let id = smith.propose(&text, "operator:bench")?.id;
        smith.approve(id, &operator, None)?;
        let heard_ms = loop {
            if client
                .notice(
                    "notifications/tools/list_changed",
                    Duration::from_millis(500),
                )
                .await
                .is_ok()
            {
                break now_ms();
            }
            if let Some(b) = store.blueprint(id)?
                && b.state == "failed"
            {
                return Err(failed(format!(
                    "version {n} failed: {}",
                    b.reason.unwrap_or_default()
                )));
            }
            if approved_at.elapsed() > PER_VERSION {
                return Err(failed(format!(
                    "version {n}: no tools/list_changed within {PER_VERSION:?}"
                )));
            }
        };
        let heard = approved_at.elapsed();
        let moved = moves(store.as_ref(), id)?;
        let active = at(&moved, "active")?;
        if n == 0 {
            continue;
        }
        let validating = at(&moved, "validating")?;
        let validated = at(&moved, "validated")?;
        validation.push(Duration::from_millis(validated.saturating_sub(validating)));
        activation.push(Duration::from_millis(heard_ms.saturating_sub(active)));
        approval.push(heard);
    }
    client.close().await;
    Ok(json!({
        "versions": versions,
        "cases_per_blueprint": 10,
        "validation_ms": in_ms(validation),
        "activation_to_list_changed_ms": in_ms(activation),
        "approval_to_list_changed_ms": in_ms(approval),
        "note": "validation: `validating` to `validated` on the audit chain (ms resolution), \
                 without the build; activation: the move to `active` to the client's \
                 notifications/tools/list_changed; approval: includes the host's round \
                 (every 2 s) that picks an approval made outside it up",
    }))
}
