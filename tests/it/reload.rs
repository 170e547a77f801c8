//! Hot reload and signed loading: a plugin swapped under load, failed
//! replacements that keep the old version, the tamper matrix of the
//! loading policy on real components, and the registry on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use warden_api::{CallHooks, CallRequest, Grants, ToolHost};
use warden_gate::{Gate, Registration};
use warden_policy::{AgentPolicy, Mode, RuleSet};
use warden_registry::{AdmissionPolicy, Registry, load_file, signature_path};
use warden_runtime::{LoadOrigin, Plugin, Runtime, RuntimeConfig};
use warden_signing::{PluginSignature, SecretKey, Signers};

use crate::common::{self, data, error};

fn registration(plugin: Plugin) -> Registration {
    Registration {
        owner: plugin.name().to_owned(),
        source: format!("{} {}", plugin.name(), plugin.manifest().plugin.version),
        backend: Arc::new(plugin),
        grants: Grants::default(),
        ceiling: None,
        generated: false,
    }
}

fn which(id: usize, millis: u64) -> CallRequest {
    let mut context = common::context();
    context.request_id = format!("r{id}");
    CallRequest {
        tool: "swap_which".into(),
        args: json!({ "millis": millis }),
        context,
    }
}

/// Counts the calls that reported they began.
#[derive(Debug, Default)]
struct Started {
    count: std::sync::atomic::AtomicUsize,
    changed: tokio::sync::Notify,
}

impl warden_api::CallEvents for Started {
    fn progress(&self, _done: f64, _total: Option<f64>, message: Option<&str>) {
        if message == Some("started") {
            self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.changed.notify_waiters();
        }
    }

    fn log(&self, _level: warden_api::LogLevel, _source: &str, _message: &str) {}
}

impl Started {
    async fn wait_for(&self, n: usize) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if self.count.load(std::sync::atomic::Ordering::SeqCst) >= n {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), wait)
            .await
            .expect("every call began");
    }
}

async fn swap_gate() -> (Gate, Plugin, Plugin) {
    let rt = common::runtime();
    let v1 = common::load(&rt, warden_test_artifacts::SWAP_V1).await;
    let v2 = common::load(&rt, warden_test_artifacts::SWAP_V2).await;
    assert_eq!(v1.name(), v2.name(), "both builds are plugin `swap`");
    let gate = Gate::builder()
        .limits(common::limits())
        .agent(AgentPolicy::rules_only(
            "test-agent",
            Mode::Autonomous,
            RuleSet::default(),
        ))
        .register(registration(v1.clone()))
        .unwrap()
        .build();
    (gate, v1, v2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_swapped_under_twenty_calls_fails_none_and_mixes_none() {
    let (gate, _, v2) = swap_gate().await;
    // Each call reports when it has begun (a progress line from inside
    // the guest): the swap comes once all twenty run, not after a guess.
    let started = Arc::new(Started::default());
    let in_flight: Vec<_> = (0..20)
        .map(|i| {
            let gate = gate.clone();
            let hooks = CallHooks {
                events: Some(started.clone() as Arc<dyn warden_api::CallEvents>),
                ..CallHooks::default()
            };
            tokio::spawn(async move { gate.call_with(which(i, 1500), hooks).await })
        })
        .collect();
    started.wait_for(20).await;
    assert!(
        in_flight.iter().all(|h| !h.is_finished()),
        "all 20 calls are still running when the plugin is replaced"
    );
    let change = gate
        .replace(vec![("swap".into(), Some(registration(v2)))])
        .unwrap();
    assert_eq!(change.replaced, vec!["swap_which"]);
    let after: Vec<_> = (20..25)
        .map(|i| {
            let gate = gate.clone();
            tokio::spawn(async move { gate.call(which(i, 10)).await })
        })
        .collect();
    for h in in_flight {
        let e = h.await.unwrap();
        assert!(e.is_ok(), "{e:?}");
        assert_eq!(data(&e)["started"], "1.0.0", "{e:?}");
        assert_eq!(data(&e)["finished"], "1.0.0", "{e:?}");
    }
    for h in after {
        let e = h.await.unwrap();
        assert!(e.is_ok(), "{e:?}");
        assert_eq!(data(&e)["started"], "2.0.0");
        assert_eq!(data(&e)["finished"], "2.0.0");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conflicting_replacement_changes_nothing() {
    let (gate, v1, _) = swap_gate().await;
    let mut clash = registration(v1);
    clash.owner = "another".into();
    clash.source = "another (a copy)".into();
    let e = gate
        .replace(vec![("another".into(), Some(clash))])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("swap_which") && e.contains("another (a copy)"),
        "{e}"
    );
    let ok = gate.call(which(1, 1)).await;
    assert_eq!(data(&ok)["started"], "1.0.0");
    gate.replace(vec![("swap".into(), None)]).unwrap();
    let gone = gate.call(which(2, 1)).await;
    assert_eq!(error(&gone).1, "not_found");
    assert!(gate.list_tools("test-agent").is_empty());
}

/// A signed copy of the hello example in its own directory.
struct Signed {
    dir: tempfile::TempDir,
    key: SecretKey,
}

impl Signed {
    fn new() -> Signed {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(warden_test_artifacts::HELLO, dir.path().join("hello.wasm")).unwrap();
        let key = SecretKey::generate().unwrap();
        warden_registry::sign_file(&dir.path().join("hello.wasm"), &key).unwrap();
        Signed { dir, key }
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("hello.wasm")
    }

    fn roots(&self) -> Signers {
        Signers::new().publisher("acme", self.key.public())
    }
}

/// A runtime whose compile cache is a fresh directory, to see whether
/// anything was compiled.
fn fresh_runtime(cache: &Path) -> Runtime {
    Runtime::new(RuntimeConfig::new(Some(cache.to_path_buf())).with_cache_key(common::cache_key()))
        .unwrap()
}

fn cache_is_empty(cache: &Path) -> bool {
    std::fs::read_dir(cache).map_or(true, |mut d| d.next().is_none())
}

/// The offset of a byte inside the component's `warden:manifest` section
/// (the plugin name's first letter).
fn manifest_offset(bytes: &[u8]) -> usize {
    let section = warden_runtime::manifest_section(bytes).unwrap();
    let start = section.as_ptr() as usize - bytes.as_ptr() as usize;
    let needle = br#""name":"hello""#;
    start
        + section
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("the manifest names the plugin")
        + 8
}

/// (case, component bytes, signature text if any, policy, expected check).
type Case<'a> = (
    &'a str,
    Vec<u8>,
    Option<String>,
    &'a AdmissionPolicy,
    &'a str,
);

#[tokio::test(flavor = "multi_thread")]
async fn the_tamper_matrix_is_refused_before_any_code_runs() {
    let signed = Signed::new();
    let file = signed.file();
    let original = std::fs::read(&file).unwrap();
    let sig_text = std::fs::read_to_string(signature_path(&file)).unwrap();
    let policy = AdmissionPolicy {
        signers: signed.roots(),
        insecure_allow_unsigned: false,
    };

    let mut flipped_component = original.clone();
    let at = original.len() / 2;
    flipped_component[at] ^= 0x01;
    let mut flipped_manifest = original.clone();
    let at_name = manifest_offset(&original);
    assert_eq!(original[at_name], b'h');
    flipped_manifest[at_name] ^= 0x20; // "hello" -> "Hello", inside the manifest
    let mut sig = PluginSignature::from_text(&sig_text).unwrap();
    sig.signature[7] ^= 0x01;
    let flipped_signature = sig.to_text();
    let stranger = SecretKey::generate().unwrap();
    let digest = warden_registry::digest_of(&file, &original).unwrap();
    let wrong_key = PluginSignature::sign(&digest, &stranger).to_text();
    let key_id = signed.key.public().key_id().to_string();
    let revoked_key = AdmissionPolicy {
        signers: signed.roots().revoke_key(&key_id),
        insecure_allow_unsigned: false,
    };
    let revoked_digest = AdmissionPolicy {
        signers: signed.roots().revoke_digest(&digest),
        insecure_allow_unsigned: true,
    };
    let insecure = AdmissionPolicy {
        signers: signed.roots(),
        insecure_allow_unsigned: true,
    };
    let cases: Vec<Case<'_>> = vec![
        (
            "flipped byte in component",
            flipped_component,
            Some(sig_text.clone()),
            &policy,
            "tampered",
        ),
        (
            "flipped byte in manifest",
            flipped_manifest,
            Some(sig_text.clone()),
            &policy,
            "tampered",
        ),
        (
            "flipped byte in signature",
            original.clone(),
            Some(flipped_signature),
            &policy,
            "bad_signature",
        ),
        (
            "wrong key",
            original.clone(),
            Some(wrong_key),
            &policy,
            "unknown_key",
        ),
        (
            "revoked key",
            original.clone(),
            Some(sig_text.clone()),
            &revoked_key,
            "revoked_key",
        ),
        (
            "revoked digest",
            original.clone(),
            Some(sig_text.clone()),
            &revoked_digest,
            "revoked_digest",
        ),
        ("unsigned", original.clone(), None, &policy, "unsigned"),
        (
            "unsigned, insecure flag",
            original.clone(),
            None,
            &insecure,
            "ok",
        ),
        (
            "signed",
            original.clone(),
            Some(sig_text.clone()),
            &policy,
            "ok",
        ),
    ];
    for (case, bytes, sig, policy, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hello.wasm");
        std::fs::write(&path, &bytes).unwrap();
        if let Some(sig) = &sig {
            std::fs::write(signature_path(&path), sig).unwrap();
        }
        let cache = dir.path().join("cache");
        let result = load_file(&fresh_runtime(&cache), policy, &path).await;
        match (result, want) {
            (Ok(c), "ok") => {
                assert_eq!(c.plugin.name(), "hello", "{case}");
                assert_eq!(c.admission.signer.is_some(), sig.is_some(), "{case}");
            }
            (Ok(_), _) => panic!("{case}: loaded, but should be refused as {want}"),
            (Err(e), "ok") => panic!("{case}: refused: {e}"),
            (Err(e), want) => {
                let shown = e.to_string();
                let check = match &e {
                    warden_registry::RegistryError::Refused { source, .. } => source.check(),
                    other => panic!("{case}: not a refusal: {other}"),
                };
                assert_eq!(check, want, "{case}: {shown}");
                assert!(
                    shown.contains("hello.wasm"),
                    "{case}: names the file: {shown}"
                );
                assert!(
                    cache_is_empty(&cache),
                    "{case}: nothing was compiled, so nothing ran"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_registry_installs_lists_refuses_conflicts_and_reloads_from_cache() {
    let state = tempfile::tempdir().unwrap();
    let key = SecretKey::generate().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    for (name, src) in [
        ("hello.wasm", warden_test_artifacts::HELLO),
        ("v1.wasm", warden_test_artifacts::SWAP_V1),
        ("v2.wasm", warden_test_artifacts::SWAP_V2),
    ] {
        let path = plugins.path().join(name);
        std::fs::copy(src, &path).unwrap();
        warden_registry::sign_file(&path, &key).unwrap();
    }
    let policy = AdmissionPolicy {
        signers: Signers::new().publisher("acme", key.public()),
        insecure_allow_unsigned: false,
    };
    let cache = state.path().join("cache");
    let registry = Registry::open(state.path(), policy.clone(), fresh_runtime(&cache)).unwrap();
    let hello = registry
        .prepare(&plugins.path().join("hello.wasm"))
        .await
        .unwrap();
    let v1 = registry
        .prepare(&plugins.path().join("v1.wasm"))
        .await
        .unwrap();
    registry
        .check_conflicts(&[hello.clone(), v1.clone()])
        .unwrap();
    registry.commit(&hello).unwrap();
    registry.commit(&v1).unwrap();
    let listed = registry.list().unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str()))
            .collect::<Vec<_>>(),
        vec![("hello", "0.1.0"), ("swap", "1.0.0")]
    );
    assert_eq!(listed[1].publisher.as_deref(), Some("acme"));
    assert_eq!(listed[1].tools, vec!["swap_which"]);

    // The same name replaces; another name exporting the same tool clashes.
    let v2 = registry
        .prepare(&plugins.path().join("v2.wasm"))
        .await
        .unwrap();
    registry.check_conflicts(std::slice::from_ref(&v2)).unwrap();
    registry.commit(&v2).unwrap();
    assert_eq!(registry.list().unwrap()[1].version, "2.0.0");
    let e = registry
        .check_conflicts(&[hello.clone(), hello.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hello_count_lines") && e.contains("hello"),
        "{e}"
    );

    // A restart loads from the compile cache, admitting each blob again.
    let again = Registry::open(state.path(), policy.clone(), fresh_runtime(&cache)).unwrap();
    let loaded = again.load_installed().await.unwrap();
    assert_eq!(loaded.len(), 2);
    assert!(
        loaded
            .iter()
            .all(|c| c.plugin.origin() == LoadOrigin::Cached)
    );

    // A blob changed at rest is refused at the next start.
    let blob = state.path().join("plugins/blobs").join(format!(
        "{}.wasm",
        listed[0].digest.trim_start_matches("sha256:")
    ));
    let mut bytes = std::fs::read(&blob).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x01;
    std::fs::write(&blob, bytes).unwrap();
    let e = again.load_installed().await.unwrap_err().to_string();
    assert!(e.contains("tampered"), "{e}");

    again.remove("hello").unwrap();
    assert_eq!(again.list().unwrap().len(), 1);
    assert!(!blob.exists(), "an unreferenced blob is removed");
    assert!(
        again
            .remove("hello")
            .unwrap_err()
            .to_string()
            .contains("no plugin named")
    );
}
