//! Paths of the guest components the tests use, built by `build.rs` from
//! `tests/components` and `plugins` for wasm32-wasip2, and their
//! signatures by a test-only publisher key.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// A publisher key for the test suite only: it is public, so nothing but
/// the tests' own trust files ever lists it.
const TEST_KEY: &str = "warden-secret-key-v1
key-id: 296132a9a66e1e67
seed: cfbf6a964e730b98ad6b348479e3d19b734a4ecbd5d4086898fab9ffcbca8264
";

/// The test publisher's name in [`signers_file`].
pub const TEST_PUBLISHER: &str = "warden-tests";

/// The test-only secret key.
pub fn test_key() -> warden_signing::SecretKey {
    match warden_signing::SecretKey::from_text(TEST_KEY) {
        Ok(key) => key,
        Err(e) => unreachable!("the embedded test key is valid: {e}"),
    }
}

/// Signs every guest with the test key (`NAME.wasm.sig` beside each) and
/// returns a signers file (`--signers`, `WARDEN_SIGNERS`) that admits that key.
/// Safe to call from many test processes at once: every write is atomic
/// and ed25519 signatures are deterministic.
pub fn signers_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| match sign_all() {
        Ok(path) => path,
        Err(e) => unreachable!("signing the test guests failed: {e}"),
    })
}

fn sign_all() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let key = test_key();
    for (_, path) in ALL {
        warden_registry::sign_file(Path::new(path), &key)?;
    }
    let dir = Path::new(env!("OUT_DIR"));
    let public = dir.join("warden-tests.pub");
    let signers = dir.join("signers.toml");
    write_new_or_same(&public, &key.public().to_text())?;
    write_new_or_same(
        &signers,
        &format!(
            "[[publishers]]\nname = \"{TEST_PUBLISHER}\"\nkey = {:?}\n",
            public.display().to_string()
        ),
    )?;
    Ok(signers)
}

/// Signs `component` with the test key (`FILE.sig` beside it): for tests
/// that change a guest and need the result admitted.
pub fn sign(component: &Path) {
    if let Err(e) = warden_registry::sign_file(component, &test_key()) {
        unreachable!("signing {}: {e}", component.display());
    }
}

/// The test publisher's public key file (signs the guests first).
pub fn public_key_file() -> PathBuf {
    signers_file().with_file_name("warden-tests.pub")
}

/// Writes `text` through a unique temporary file and a rename.
fn write_new_or_same(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The envelope of an MCP `tools/call` error result (the `result` object):
/// its JSON text. Fails the test when the result is not an error or
/// carries structured content, which clients would hold to the tool's
/// output schema.
#[expect(clippy::panic, reason = "a test helper: it fails the test")]
pub fn error_envelope(result: &serde_json::Value) -> serde_json::Value {
    assert_eq!(result["isError"], true, "not an error result: {result}");
    assert!(
        result.get("structuredContent").is_none(),
        "an error result carries structured content: {result}"
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|e| {
        panic!("an error result's text is its envelope as JSON ({e}): {result}")
    })
}
