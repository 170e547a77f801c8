//! The deployment manifests (`deploy/`) and the Kubernetes backend's
//! golden manifests validate against the Kubernetes OpenAPI schemas:
//! `tests/deploy/validate.py` with `kubernetes-validate`, which `cargo
//! xtask test` installs into the test virtualenv (`WARDEN_TEST_PYTHON`,
//! from `tests/mcp/requirements.txt`).

#![allow(clippy::panic, clippy::expect_used, reason = "tests fail loudly")]

use std::path::PathBuf;
use std::process::Command;

#[test]
fn deployment_manifests_validate_against_the_kubernetes_schemas() {
    let Some(python) = std::env::var_os("WARDEN_TEST_PYTHON").map(PathBuf::from) else {
        panic!(
            "WARDEN_TEST_PYTHON is not set: run the suite with `cargo xtask test`, which installs \
             kubernetes-validate into a virtualenv (tests/mcp/requirements.txt)"
        );
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(python)
        .arg(root.join("tests/deploy/validate.py"))
        .arg(&root)
        .output()
        .expect("running tests/deploy/validate.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains(" 0 failures"), "{text}");
}
