//! The dependency rules of DESIGN.md, checked against `cargo metadata`:
//! each fast-moving or security-sensitive dependency lives in one crate,
//! and the pure crates depend on no internal crate and no runtime.

use std::collections::BTreeMap;

use cargo_metadata::{DependencyKind, MetadataCommand};

/// (dependency, the only workspace crate allowed to depend on it).
const CONFINED: &[(&str, &str)] = &[
    ("wasmtime", "warden-runtime"),
    ("wasmtime-wasi", "warden-runtime"),
    ("wasmtime-wasi-http", "warden-runtime"),
    ("bollard", "warden-sandbox"),
    ("rmcp", "warden-mcp"),
    ("rusqlite", "warden-store"),
    ("ed25519-dalek", "warden-signing"),
    ("sha2", "warden-signing"),
    ("ring", "warden-signing"),
];

/// Crates that must stay pure: no internal crates (but the edges in
/// [`PURE_EDGES`]), no async runtime, no I/O frameworks.
const PURE: &[&str] = &[
    "warden-api",
    "warden-policy",
    "warden-shell",
    "warden-signing",
];
/// (pure crate, the internal crate it may depend on): the policy engine reads
/// command lines through the shell analyser, itself pure.
const PURE_EDGES: &[(&str, &str)] = &[("warden-policy", "warden-shell")];
const RUNTIMES: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "axum",
    "hyper",
    "reqwest",
    "anyhow",
];

#[test]
fn dependency_rules_hold() {
    let metadata = MetadataCommand::new()
        .manifest_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml"))
        .no_deps()
        .exec()
        .expect("cargo metadata");
    let members: BTreeMap<String, _> = metadata
        .workspace_packages()
        .into_iter()
        .map(|p| (p.name.to_string(), p))
        .collect();
    for owner in ["warden-runtime", "warden-store", "warden-signing"] {
        assert!(members.contains_key(owner), "{owner} is a member");
    }
    for pure in PURE {
        assert!(members.contains_key(*pure), "{pure} is a member");
    }
    // The store is the one crate that opens SQLite, and it does.
    assert!(
        members["warden-store"]
            .dependencies
            .iter()
            .any(|d| d.name == "rusqlite"),
        "warden-store uses rusqlite"
    );
    let mut violations = Vec::new();
    for (name, package) in &members {
        for dep in package
            .dependencies
            .iter()
            .filter(|d| d.kind != DependencyKind::Development)
        {
            for (confined, owner) in CONFINED {
                if dep.name == *confined && name != owner {
                    violations.push(format!("{name} depends on {confined}; only {owner} may"));
                }
            }
            if PURE.contains(&name.as_str()) {
                let allowed = PURE_EDGES.contains(&(name.as_str(), dep.name.as_str()));
                if dep.name.starts_with("warden-") && !allowed {
                    violations.push(format!(
                        "{name} is pure but depends on internal crate {}",
                        dep.name
                    ));
                }
                if RUNTIMES.contains(&dep.name.as_str()) {
                    violations.push(format!("{name} is pure but depends on {}", dep.name));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "dependency rules broken:\n{}",
        violations.join("\n")
    );
}
