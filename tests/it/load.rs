//! Loading components: cache behaviour and clear errors for bad input.

use crate::common;
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
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
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
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
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

/// Entries do not pile up. Swept: an entry no load used for longer than
/// `UNUSED_FOR` (a replaced plugin), one compiled for other engine
/// settings, and a temporary file of a write that never ended. Kept: an
/// entry a load just used (however old it was before), a fresh temporary
/// file (a write under way), and files that are not the cache's.
#[tokio::test(flavor = "multi_thread")]
async fn entries_no_load_used_for_long_are_swept_and_used_ones_stay() {
    let cache = tempfile::tempdir().unwrap();
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
    let first = Runtime::new(config.clone()).unwrap();
    let fs = first
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    first
        .load(Path::new(warden_test_artifacts::PROBE))
        .await
        .unwrap();
    let fs_entry = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let hex = fs.digest().trim_start_matches("sha256:");
            p.file_name().unwrap().to_string_lossy().starts_with(hex)
        })
        .unwrap();
    let long_ago = std::time::SystemTime::now()
        - warden_runtime::UNUSED_FOR
        - std::time::Duration::from_secs(86_400);
    let dir = cache.path();
    for (name, text) in [
        (
            format!("{}-0000000000000000.cwasm", "ab".repeat(32)),
            "foreign",
        ),
        (".tmpABC123".to_owned(), "half"),
        ("notes.txt".to_owned(), "not ours"),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::write(dir.join(".tmpNEW456"), "under way").unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.ends_with(".tmpNEW456") {
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(long_ago).unwrap();
        }
    }

    // A restarted host loads fs (a cache hit marks it used), then sweeps.
    let again = Runtime::new(config).unwrap();
    let fs = again
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    assert_eq!(fs.origin(), LoadOrigin::Cached);
    let swept = again.sweep_cache(std::time::SystemTime::now()).unwrap();
    assert_eq!(swept.files, 3, "{swept:?}");
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut kept = vec![
        ".tmpNEW456".to_owned(),
        fs_entry.file_name().unwrap().to_string_lossy().into_owned(),
        "notes.txt".to_owned(),
    ];
    kept.sort();
    assert_eq!(left, kept);
    // Nothing left to sweep; the kept entry still loads from the cache.
    assert_eq!(
        again
            .sweep_cache(std::time::SystemTime::now())
            .unwrap()
            .files,
        0
    );
    let third = Runtime::new(
        RuntimeConfig::new(Some(dir.to_path_buf())).with_cache_key(common::cache_key()),
    )
    .unwrap();
    let fs = third
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    assert_eq!(fs.origin(), LoadOrigin::Cached);
}

/// The one entry in `cache`.
fn only_entry(cache: &Path) -> std::path::PathBuf {
    let entries: Vec<_> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flipped_byte_in_a_cached_artifact_is_recompiled_not_loaded() {
    let cache = tempfile::tempdir().unwrap();
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
    let load = |config: RuntimeConfig| async move {
        Runtime::new(config)
            .unwrap()
            .load(Path::new(warden_test_artifacts::FS))
            .await
            .unwrap()
    };
    assert_eq!(load(config.clone()).await.origin(), LoadOrigin::Compiled);
    let entry = only_entry(cache.path());
    let good = std::fs::read(&entry).unwrap();
    // Every region of the file counts: the tag, the start and the end of
    // the compiled code.
    for at in [0, 40, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x80;
        std::fs::write(&entry, &bad).unwrap();
        assert_eq!(
            load(config.clone()).await.origin(),
            LoadOrigin::Compiled,
            "byte {at} flipped"
        );
        assert_eq!(
            std::fs::read(&entry).unwrap(),
            good,
            "rewritten after byte {at}"
        );
    }
    assert_eq!(load(config.clone()).await.origin(), LoadOrigin::Cached);

    // Another key (another host's entry, or one forged without the key).
    let other = RuntimeConfig::new(Some(cache.path().to_path_buf()))
        .with_cache_key(warden_runtime::CacheKey::new([9; 32]));
    assert_eq!(load(other).await.origin(), LoadOrigin::Compiled);
    assert_eq!(load(config.clone()).await.origin(), LoadOrigin::Compiled);

    // No key: no cache at all, nothing read or written.
    std::fs::remove_file(only_entry(cache.path())).unwrap();
    let keyless = RuntimeConfig::new(Some(cache.path().to_path_buf()));
    assert_eq!(load(keyless.clone()).await.origin(), LoadOrigin::Compiled);
    assert_eq!(load(keyless).await.origin(), LoadOrigin::Compiled);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

/// The race between checking an entry and mapping its code: whoever can
/// write the cache file rewrites it in place (same file, same length)
/// after the host checked and loaded it. What runs must still be what
/// was checked; code mapped from the entry's file would now be the
/// attacker's bytes (here `int3` everywhere) and the call would trap.
#[tokio::test(flavor = "multi_thread")]
async fn an_entry_rewritten_in_place_after_it_was_checked_changes_nothing_that_runs() {
    use std::io::{Seek, Write};
    let cache = tempfile::tempdir().unwrap();
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
    let load = || async {
        Runtime::new(config.clone())
            .unwrap()
            .load(Path::new(warden_test_artifacts::FS))
            .await
            .unwrap()
    };
    assert_eq!(load().await.origin(), LoadOrigin::Compiled);
    let plugin = load().await;
    assert_eq!(plugin.origin(), LoadOrigin::Cached);

    let entry = only_entry(cache.path());
    let len = std::fs::metadata(&entry).unwrap().len() as usize;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&entry)
        .unwrap();
    file.rewind().unwrap();
    file.write_all(&vec![0xcc; len]).unwrap();
    file.sync_all().unwrap();
    drop(file);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "still mine\n").unwrap();
    let grants = common::grant(dir.path(), warden_api::FsAccess::Read);
    for _ in 0..2 {
        let e = common::call(
            &plugin,
            "fs_read",
            serde_json::json!({"path": "a.txt"}),
            &grants,
            common::limits(),
        )
        .await;
        assert_eq!(common::data(&e)["content"], "still mine\n");
    }
    // The rewritten entry itself is refused next time, as any change is.
    assert_eq!(load().await.origin(), LoadOrigin::Compiled);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_moved_under_another_components_name_is_not_loaded() {
    let cache = tempfile::tempdir().unwrap();
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
    let runtime = Runtime::new(config.clone()).unwrap();
    runtime
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    let fs_entry = only_entry(cache.path());
    runtime
        .load(Path::new(warden_test_artifacts::PROBE))
        .await
        .unwrap();
    let probe_entry = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| *p != fs_entry)
        .unwrap();
    // The fs plugin's authentic compiled code under the probe's name.
    std::fs::copy(&fs_entry, &probe_entry).unwrap();
    let probe = Runtime::new(config)
        .unwrap()
        .load(Path::new(warden_test_artifacts::PROBE))
        .await
        .unwrap();
    assert_eq!(probe.origin(), LoadOrigin::Compiled);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cache_is_owner_only_even_when_it_existed_wider() {
    use std::os::unix::fs::PermissionsExt;
    let cache = tempfile::tempdir().unwrap();
    let config =
        RuntimeConfig::new(Some(cache.path().to_path_buf())).with_cache_key(common::cache_key());
    Runtime::new(config.clone())
        .unwrap()
        .load(Path::new(warden_test_artifacts::FS))
        .await
        .unwrap();
    let entry = only_entry(cache.path());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&entry), 0o600);
    assert_eq!(mode(cache.path()), 0o700);
    let wide =
        |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    wide(&entry, 0o666);
    wide(cache.path(), 0o777);
    Runtime::new(config).unwrap();
    assert_eq!(mode(&entry), 0o600);
    assert_eq!(mode(cache.path()), 0o700);
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
    assert!(err.to_string().contains("fs_read"), "{err}");
}

/// The same forged component against a host with a compile cache: a
/// load from the cache skips the `tools()` check, so the cache must never
/// hold a component that failed it; the forgery is refused on every load.
#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_that_lies_is_refused_again_and_never_cached() {
    let mut bytes = fs_bytes();
    let at = section_start(&bytes);
    replace_after(
        &mut bytes,
        at,
        b"\"summary\":\"Read a UTF-8 text file",
        b"\"summary\":\"Read a UTF-9 text file",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forged.wasm");
    std::fs::write(&path, &bytes).unwrap();
    let cache = dir.path().join("cache");
    let config = RuntimeConfig::new(Some(cache.clone())).with_cache_key(common::cache_key());
    for attempt in 1..=2 {
        // A new runtime each time, as after a restart.
        let err = Runtime::new(config.clone())
            .unwrap()
            .load(&path)
            .await
            .unwrap_err();
        assert!(
            matches!(err, RuntimeError::ManifestMismatch { .. }),
            "load {attempt}: {err}"
        );
        let entries = std::fs::read_dir(&cache).unwrap().count();
        assert_eq!(entries, 0, "load {attempt} cached a refused component");
    }
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
