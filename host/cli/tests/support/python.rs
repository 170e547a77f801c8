//! The interpreter of the virtualenv `cargo xtask test` installs the
//! official MCP Python SDK into (`WARDEN_TEST_PYTHON`).

#![allow(clippy::panic, reason = "tests fail loudly")]

use std::path::PathBuf;

/// The test suite's Python, or a panic saying how to get one.
pub fn python() -> PathBuf {
    match std::env::var_os("WARDEN_TEST_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "WARDEN_TEST_PYTHON is not set: run the suite with `cargo xtask test`, which installs the MCP Python SDK into a virtualenv"
        ),
    }
}
