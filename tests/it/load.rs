//! Loading components: cache behaviour and clear errors for bad input.

use std::path::Path;

use warden_runtime::{LoadOrigin, Runtime, RuntimeConfig, RuntimeError};

fn fs_bytes() -> Vec<u8> {
    std::fs::read(warden_test_artifacts::FS).unwrap()
}

async fn load_bytes(bytes: &[u8], name: &str) -> Result<warden_runtime::Plugin, RuntimeError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    Runtime::new(RuntimeConfig::new(None))
        .unwrap()
        .load(&path)
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn second_load_uses_the_compile_cache() {
    let cache = tempfile::tempdir().unwrap();
    let config = RuntimeConfig::new(Some(cache.path().to_path_buf()));
    let first = Runtime::new(config.clone())
        .unwrap()
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    assert_eq!(first.origin(), LoadOrigin::Compiled);
    // A new runtime (as after a restart) finds the compiled form on disk.
    let second = Runtime::new(config)
        .unwrap()
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    assert_eq!(second.origin(), LoadOrigin::Cached);
    assert_eq!(first.digest(), second.digest());
    assert!(first.digest().starts_with("sha256:"));
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupt_cache_entry_is_recompiled() {
    let cache = tempfile::tempdir().unwrap();
    let config = RuntimeConfig::new(Some(cache.path().to_path_buf()));
    Runtime::new(config.clone())
        .unwrap()
        .load(Path::new(warden_test_artifacts::PROBE))
        .await
        .unwrap();
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"garbage").unwrap();
    }
    let again = Runtime::new(config)
        .unwrap()
        .load(Path::new(warden_test_artifacts::PROBE))
        .await
        .unwrap();
    assert_eq!(again.origin(), LoadOrigin::Compiled);
}

#[tokio::test(flavor = "multi_thread")]
async fn truncated_component_is_a_clear_error_naming_the_file() {
    let bytes = fs_bytes();
    let err = load_bytes(&bytes[..bytes.len() / 2], "half.wasm")
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, RuntimeError::InvalidComponent { .. }),
        "{msg}"
    );
    assert!(msg.contains("half.wasm"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupt_component_is_a_clear_error_naming_the_file() {
    let mut bytes = fs_bytes();
    // Scribble over the middle of the code.
    let mid = bytes.len() / 3;
    for b in &mut bytes[mid..mid + 64] {
        *b = 0xff;
    }
    let err = load_bytes(&bytes, "corrupt.wasm").await.unwrap_err();
    assert!(err.to_string().contains("corrupt.wasm"), "{err}");

    let err = load_bytes(b"not wasm at all", "text.wasm")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("text.wasm"), "{err}");

    let err = load_bytes(b"", "empty.wasm").await.unwrap_err();
    assert!(err.to_string().contains("empty.wasm"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_core_module_is_not_a_plugin() {
    // The smallest core module: magic + version 1.
    let err = load_bytes(b"\0asm\x01\0\0\0", "core.wasm")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a component"), "{err}");
}

/// Overwrites the first occurrence of `from` at or after `start`.
fn replace_after(bytes: &mut [u8], start: usize, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at = start
        + bytes[start..]
            .windows(from.len())
            .position(|w| w == from)
            .expect("pattern present");
    bytes[at..at + to.len()].copy_from_slice(to);
}

fn section_start(bytes: &[u8]) -> usize {
    bytes
        .windows(15)
        .position(|w| w == b"warden:manifest")
        .expect("manifest section")
}

#[tokio::test(flavor = "multi_thread")]
async fn component_without_manifest_is_refused() {
    let mut bytes = fs_bytes();
    let at = section_start(&bytes);
    replace_after(&mut bytes, at, b"warden:manifest", b"warden:manifesX");
    let err = load_bytes(&bytes, "nomanifest.wasm").await.unwrap_err();
    assert!(matches!(err, RuntimeError::Manifest { .. }), "{err}");
    assert!(
        err.to_string().contains("no `warden:manifest` section"),
        "{err}"
    );
}

/// A manifest section edited after the build (here: a changed summary) no
/// longer matches what the code's `tools()` reports, and loading refuses it.
#[tokio::test(flavor = "multi_thread")]
async fn manifest_that_lies_about_tools_is_refused() {
    let mut bytes = fs_bytes();
    let needle = b"\"summary\":\"Read a UTF-8 text file";
    let forged = b"\"summary\":\"Read a UTF-9 text file";
    let at = section_start(&bytes);
    replace_after(&mut bytes, at, needle, forged);
    // inspect believes the forged section...
    let shown = warden_runtime::inspect(&bytes).unwrap();
    assert!(shown.manifest.tools[0].summary.contains("UTF-9"));
    // ...the loader does not.
    let err = load_bytes(&bytes, "forged.wasm").await.unwrap_err();
    assert!(
        matches!(err, RuntimeError::ManifestMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("fs.read"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_reads_the_manifest_without_running_code() {
    let bytes = fs_bytes();
    let i = warden_runtime::inspect(&bytes).unwrap();
    assert_eq!(i.manifest.plugin.name, "fs");
    assert_eq!(i.manifest.tools.len(), 5);
    assert_eq!(i.digest, warden_signing_digest(&bytes));
}

fn warden_signing_digest(bytes: &[u8]) -> String {
    warden_runtime::component_digest(bytes)
}
