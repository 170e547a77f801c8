//! The memo from the attacker's side: every way to make a start take a
//! file's digest or manifest from the memo when the file is not what
//! was admitted.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use warden_runtime::{CacheKey, Runtime, RuntimeConfig};
use warden_signing::{SecretKey, Signers};

use super::*;
use crate::{AdmissionPolicy, Admitted, RegistryError};

/// Long enough that a later write lands in a later clock tick.
const TEST_SETTLED: Duration = Duration::from_millis(50);

struct Setup {
    _dir: tempfile::TempDir,
    plugin: PathBuf,
    memo_file: PathBuf,
    policy: AdmissionPolicy,
    cache: PathBuf,
}

/// A signed copy of the hello guest, settled, and where its memo goes.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("hello.wasm");
    std::fs::copy(warden_test_artifacts::HELLO, &plugin).unwrap();
    let key = SecretKey::generate().unwrap();
    crate::sign_file(&plugin, &key).unwrap();
    std::thread::sleep(TEST_SETTLED * 2);
    Setup {
        memo_file: dir.path().join("admitted.json"),
        cache: dir.path().join("cache"),
        plugin,
        policy: AdmissionPolicy {
            signers: Signers::new().publisher("tests", key.public()),
            insecure_allow_unsigned: false,
        },
        _dir: dir,
    }
}

fn memo(file: &Path, key: u8) -> AdmissionMemo {
    AdmissionMemo::open(file.to_path_buf(), [key; 32]).with_settled(TEST_SETTLED)
}

/// A full admission remembered and saved, as a start does.
fn memoise(s: &Setup) -> Admitted {
    let m = memo(&s.memo_file, 1);
    let admitted = Admitted::read_with(&s.policy, &s.plugin, Some(&m)).unwrap();
    assert!(admitted.hashed());
    m.save().unwrap();
    admitted
}

fn runtime(cache: &Path) -> Runtime {
    Runtime::new(
        RuntimeConfig::new(Some(cache.to_path_buf())).with_cache_key(CacheKey::new([7; 32])),
    )
    .unwrap()
}

#[test]
fn an_unchanged_file_is_admitted_from_the_memo_as_a_full_admission_would() {
    let s = setup();
    let full = memoise(&s);
    let again = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(!again.hashed(), "an unchanged file was hashed again");
    assert_eq!(again.admission, full.admission);
    assert_eq!(again.manifest, full.manifest);
}

#[tokio::test]
async fn a_memoised_admission_loads_from_the_cache_or_from_the_file_it_checks() {
    let s = setup();
    let rt = runtime(&s.cache);
    // The full admission's load fills the compile cache.
    let first = memoise(&s).load(&rt).await.unwrap();
    let read = || Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    let cached = read().load(&rt).await.unwrap();
    assert_eq!(cached.plugin.digest(), first.plugin.digest());
    assert_eq!(cached.plugin.origin(), warden_runtime::LoadOrigin::Cached);
    assert_eq!(
        cached.files().unwrap().0.as_ref(),
        std::fs::read(&s.plugin).unwrap()
    );

    // No cache entry: the file is read and compiled, being unchanged.
    let empty = runtime(&s.cache.join("elsewhere"));
    let compiled = read().load(&empty).await.unwrap();
    assert_eq!(
        compiled.plugin.origin(),
        warden_runtime::LoadOrigin::Compiled
    );
    assert_eq!(compiled.plugin.digest(), first.plugin.digest());
}

/// The attacker edits the component after the memo was written, keeps
/// its size and puts its modification time back.
fn tamper_in_place(path: &Path) {
    let before = std::fs::metadata(path).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let section = warden_runtime::manifest_section(&bytes).unwrap();
    let at = section.as_ptr() as usize - bytes.as_ptr() as usize + section.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(path, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    assert_eq!(after.len(), before.len());
}

#[test]
fn a_file_rewritten_with_its_old_size_and_mtime_is_hashed_again_and_refused() {
    let s = setup();
    memoise(&s);
    tamper_in_place(&s.plugin);
    let err = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap_err();
    assert!(matches!(err, RegistryError::Refused { .. }), "{err}");
}

#[test]
fn another_signed_file_renamed_onto_the_path_is_hashed_again() {
    let s = setup();
    memoise(&s);
    // A different, validly signed plugin takes the path.
    let other = s.plugin.with_file_name("other.wasm");
    std::fs::copy(warden_test_artifacts::FS, &other).unwrap();
    let key = SecretKey::generate().unwrap();
    crate::sign_file(&other, &key).unwrap();
    std::fs::rename(&other, &s.plugin).unwrap();
    std::fs::rename(
        crate::signature_path(&other),
        crate::signature_path(&s.plugin),
    )
    .unwrap();
    let policy = AdmissionPolicy {
        signers: s.policy.signers.clone().publisher("other", key.public()),
        insecure_allow_unsigned: false,
    };
    let admitted = Admitted::read_with(&policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(admitted.hashed());
    assert_eq!(admitted.name(), "fs");
}

/// Rewrites the memo file's one entry with `edit`, keeping its tag.
fn forge(file: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut memo: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    edit(&mut memo["entries"][0]);
    std::fs::write(file, serde_json::to_vec(&memo).unwrap()).unwrap();
}

#[test]
fn a_memo_entry_with_another_manifest_or_digest_is_ignored() {
    let s = setup();
    let full = memoise(&s);
    // More capability than the signed manifest asks for.
    forge(&s.memo_file, |e| {
        let signed = e["manifest"].as_str().unwrap().to_owned();
        let widened = signed.replace("\"read\"", "\"read-write\"");
        assert_ne!(widened, signed);
        e["manifest"] = widened.into();
    });
    let admitted = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(
        admitted.hashed(),
        "a forged manifest was taken from the memo"
    );
    assert_eq!(admitted.manifest, full.manifest);

    forge(&s.memo_file, |e| {
        e["digest"] = format!("sha256:{}", "0".repeat(64)).into()
    });
    let admitted = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(admitted.hashed(), "a forged digest was taken from the memo");
    assert_eq!(admitted.admission, full.admission);
}

#[test]
fn an_entry_moved_to_another_path_or_made_under_another_key_is_ignored() {
    let s = setup();
    memoise(&s);
    let copy = s.plugin.with_file_name("copy.wasm");
    std::fs::copy(&s.plugin, &copy).unwrap();
    std::fs::copy(
        crate::signature_path(&s.plugin),
        crate::signature_path(&copy),
    )
    .unwrap();
    let identity = Identity::of(&std::fs::metadata(&copy).unwrap());
    forge(&s.memo_file, |e| {
        e["path"] = copy.to_str().unwrap().into();
        e["identity"] = serde_json::to_value(identity).unwrap();
    });
    assert_eq!(memo(&s.memo_file, 1).recall(&copy, &identity), None);

    memoise(&s);
    let identity = Identity::of(&std::fs::metadata(&s.plugin).unwrap());
    assert!(memo(&s.memo_file, 1).recall(&s.plugin, &identity).is_some());
    assert_eq!(memo(&s.memo_file, 2).recall(&s.plugin, &identity), None);
}

#[test]
fn a_signer_removed_since_is_refused_though_the_file_is_memoised() {
    let s = setup();
    memoise(&s);
    let policy = AdmissionPolicy::default();
    let err = Admitted::read_with(&policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap_err();
    assert!(matches!(err, RegistryError::Refused { .. }), "{err}");
}

#[test]
fn a_file_changed_too_recently_to_be_told_apart_is_not_memoised() {
    let s = setup();
    std::fs::write(&s.plugin, std::fs::read(&s.plugin).unwrap()).unwrap();
    let m = AdmissionMemo::open(s.memo_file.clone(), [1; 32]);
    Admitted::read_with(&s.policy, &s.plugin, Some(&m)).unwrap();
    m.save().unwrap();
    let again = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(again.hashed());
}

#[tokio::test]
async fn a_file_changed_between_a_memoised_admission_and_its_load_does_not_load() {
    let s = setup();
    memoise(&s);
    let admitted = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(!admitted.hashed());
    tamper_in_place(&s.plugin);
    let empty = runtime(&s.cache.join("empty"));
    let err = admitted.load(&empty).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("changed on disk since it was admitted"),
        "{err}"
    );
}

#[test]
fn a_corrupt_memo_is_an_empty_one_and_is_rewritten() {
    let s = setup();
    std::fs::write(&s.memo_file, b"{ not json").unwrap();
    let m = memo(&s.memo_file, 1);
    assert!(
        Admitted::read_with(&s.policy, &s.plugin, Some(&m))
            .unwrap()
            .hashed()
    );
    m.save().unwrap();
    let again = Admitted::read_with(&s.policy, &s.plugin, Some(&memo(&s.memo_file, 1))).unwrap();
    assert!(!again.hashed());
}
