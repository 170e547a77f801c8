//! The dependency rules of DESIGN.md, checked against `cargo metadata`:
//! each fast-moving or security-sensitive dependency lives in one crate,
//! the pure crates depend on no internal crate and no runtime, and every
//! edge between Warden's own crates is one the table below allows (a new
//! crate or edge is added here on purpose, with the architecture doc).

use std::collections::BTreeMap;

use cargo_metadata::{DependencyKind, MetadataCommand};

/// (dependency, the only workspace crate allowed to depend on it).
const CONFINED: &[(&str, &str)] = &[
    ("wasmtime", "warden-runtime"),
    ("wasmtime-wasi", "warden-runtime"),
    ("wasmtime-wasi-http", "warden-runtime"),
    ("bollard", "warden-sandbox"),
    ("kube", "warden-sandbox"),
    ("k8s-openapi", "warden-sandbox"),
    ("rmcp", "warden-mcp"),
    ("rusqlite", "warden-store"),
    ("sqlx", "warden-store"),
    ("ed25519-dalek", "warden-signing"),
    ("sha2", "warden-signing"),
    ("ring", "warden-signing"),
    // JWT validation for `[serve.oauth]`: the second stated exception to
    // "key handling only in signing" (DESIGN.md).
    ("jsonwebtoken", "warden-server"),
];

/// Test crates that stand in for the outside world (a third-party MCP
/// server for the bridge tests): never linked into Warden, so the
/// confinement rules (which keep a dependency inside one of Warden's own
/// crates) do not apply to them.
const OUTSIDE: &[&str] = &["warden-bridge-fixture"];

/// Crates that must stay pure: no internal crates (but the edges in
/// [`PURE_EDGES`]), no async runtime, no I/O frameworks.
const PURE: &[&str] = &[
    "warden-api",
    "warden-policy",
    "warden-shell",
    "warden-signing",
    "warden-toolsmith",
];
/// (pure crate, the internal crate it may depend on): the policy engine reads
/// command lines through the shell analyser, itself pure.
const PURE_EDGES: &[(&str, &str)] = &[("warden-policy", "warden-shell")];
/// Every Warden crate and the Warden crates it may depend on (normal and
/// build dependencies; tests may use more). The call path runs mcp ->
/// gate -> a backend (runtime, sandbox); the server assembles them and no
/// crate of the call path depends on it or on the binary.
const EDGES: &[(&str, &[&str])] = &[
    ("warden-api", &[]),
    ("warden-shell", &[]),
    ("warden-signing", &[]),
    ("warden-policy", &["warden-shell"]),
    // The git tools' pure core: address classes and host syntax from api.
    ("warden-vcs", &["warden-api"]),
    // Capability signatures, blueprints, derivation, approval binding, lifecycle.
    ("warden-toolsmith", &[]),
    ("warden-runtime", &["warden-api", "warden-signing"]),
    // The git tools run warden-vcs's invocations in containers.
    (
        "warden-sandbox",
        &["warden-api", "warden-signing", "warden-vcs"],
    ),
    (
        "warden-store",
        &["warden-api", "warden-policy", "warden-signing"],
    ),
    (
        "warden-registry",
        &["warden-api", "warden-runtime", "warden-signing"],
    ),
    (
        "warden-gate",
        &["warden-api", "warden-policy", "warden-signing"],
    ),
    ("warden-mcp", &["warden-api", "warden-signing"]),
    (
        "warden-server",
        &[
            "warden-api",
            "warden-gate",
            "warden-mcp",
            "warden-policy",
            "warden-registry",
            "warden-runtime",
            "warden-sandbox",
            "warden-signing",
            "warden-store",
            "warden-toolsmith",
        ],
    ),
    (
        "warden",
        &[
            "warden-server",
            "warden-api",
            "warden-gate",
            "warden-mcp",
            "warden-policy",
            "warden-registry",
            "warden-runtime",
            "warden-sandbox",
            "warden-signing",
            "warden-store",
        ],
    ),
    ("warden-sdk", &["warden-api", "warden-sdk-macros"]),
    ("warden-sdk-macros", &["warden-api"]),
    // Test support.
    (
        "warden-test-artifacts",
        &["warden-registry", "warden-signing"],
    ),
    ("warden-it", &[]),
    ("warden-bridge-fixture", &[]),
];
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
        if OUTSIDE.contains(&name.as_str()) {
            continue;
        }
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

#[test]
fn every_edge_between_warden_crates_is_allowed() {
    let metadata = MetadataCommand::new()
        .manifest_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml"))
        .no_deps()
        .exec()
        .expect("cargo metadata");
    let mut violations = Vec::new();
    for package in metadata.workspace_packages() {
        let name = package.name.as_str();
        if !name.starts_with("warden") {
            continue;
        }
        let Some((_, allowed)) = EDGES.iter().find(|(crate_name, _)| *crate_name == name) else {
            violations.push(format!("{name} is not in the table of allowed edges"));
            continue;
        };
        for dep in package
            .dependencies
            .iter()
            .filter(|d| d.kind != DependencyKind::Development && d.name.starts_with("warden"))
        {
            if !allowed.contains(&dep.name.as_str()) {
                violations.push(format!(
                    "{name} depends on {}, which the table does not allow",
                    dep.name
                ));
            }
        }
    }
    for (crate_name, _) in EDGES {
        if !metadata
            .workspace_packages()
            .iter()
            .any(|p| p.name.as_str() == *crate_name)
        {
            violations.push(format!(
                "{crate_name} is in the table but not a workspace member"
            ));
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
