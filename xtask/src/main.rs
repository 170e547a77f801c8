//! Project automation, so a fresh machine needs only cargo and rustup:
//!
//!   cargo xtask demo    build the bundled plugins and show calls with and
//!                       without grants on a scratch workspace
//!   cargo xtask test    the whole test suite
//!   cargo xtask lint    rustfmt and clippy (-D warnings), host and guests
//!   cargo xtask plugins build the bundled plugins (release, wasm32-wasip2)
//!   cargo xtask fuzz [SECONDS]
//!                       run each fuzz target (cargo-fuzz) for SECONDS (default 30)

mod demo;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    let root = root()?;
    match task.as_str() {
        "demo" => demo::run(&root),
        "test" => test(&root),
        "lint" => lint(&root),
        "plugins" => plugins(&root).map(drop),
        "fuzz" => fuzz(&root, std::env::args().nth(2).as_deref().unwrap_or("30")),
        _ => bail!("usage: cargo xtask demo|test|lint|plugins|fuzz [SECONDS]"),
    }
}

fn root() -> anyhow::Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask lives one level below the workspace root")
}

/// Runs a command in `dir`, echoing it; fails if it fails.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> anyhow::Result<()> {
    eprintln!("+ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .with_context(|| format!("running {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Makes sure the wasm32-wasip2 target is installed for this toolchain.
pub fn ensure_wasm_target(root: &Path) -> anyhow::Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(root)
        .output()
        .context("running rustup: install rustup from your package manager or rustup.rs")?;
    if !String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == "wasm32-wasip2")
    {
        run(root, "rustup", &["target", "add", "wasm32-wasip2"])?;
    }
    Ok(())
}

/// Builds the bundled plugins; returns the directory holding the `.wasm` files.
pub fn plugins(root: &Path) -> anyhow::Result<PathBuf> {
    ensure_wasm_target(root)?;
    run(
        root,
        "cargo",
        &[
            "build",
            "--manifest-path",
            "plugins/Cargo.toml",
            "--target",
            "wasm32-wasip2",
            "--release",
        ],
    )?;
    Ok(root.join("plugins/target/wasm32-wasip2/release"))
}

fn has_nextest(root: &Path) -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn test(root: &Path) -> anyhow::Result<()> {
    ensure_wasm_target(root)?;
    if has_nextest(root) {
        run(
            root,
            "cargo",
            &["nextest", "run", "--workspace", "--no-fail-fast"],
        )?;
        // nextest does not run doctests.
        run(root, "cargo", &["test", "--workspace", "--doc"])
    } else {
        eprintln!("cargo-nextest not found; using cargo test");
        run(root, "cargo", &["test", "--workspace", "--no-fail-fast"])
    }
}

/// Runs every fuzz target for `seconds` each, installing cargo-fuzz if it
/// is missing. Sanitizer flags are nightly-only; RUSTC_BOOTSTRAP lets the
/// pinned stable toolchain accept them, so no second toolchain is needed.
fn fuzz(root: &Path, seconds: &str) -> anyhow::Result<()> {
    let seconds: u32 = seconds
        .parse()
        .context("fuzz SECONDS must be a whole number")?;
    let has_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_fuzz {
        run(root, "cargo", &["install", "cargo-fuzz", "--locked"])?;
    }
    let fuzz_dir = root.join("fuzz");
    for target in ["shell", "rules"] {
        let time = format!("-max_total_time={seconds}");
        eprintln!("+ cargo fuzz run {target} -- {time}");
        let status = Command::new("cargo")
            .args(["fuzz", "run", target, "--", &time, "-max_len=512"])
            .current_dir(&fuzz_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .status()
            .context("running cargo fuzz")?;
        if !status.success() {
            bail!("fuzz target `{target}` found a failure (see fuzz/artifacts/{target})");
        }
    }
    Ok(())
}

/// The nested workspaces of guest crates.
const GUEST_WORKSPACES: [&str; 3] = [
    "plugins/Cargo.toml",
    "tests/components/Cargo.toml",
    "examples/Cargo.toml",
];

fn lint(root: &Path) -> anyhow::Result<()> {
    ensure_wasm_target(root)?;
    run(root, "cargo", &["fmt", "--all", "--check"])?;
    for manifest in GUEST_WORKSPACES {
        run(
            root,
            "cargo",
            &["fmt", "--manifest-path", manifest, "--all", "--check"],
        )?;
    }
    run(
        root,
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    for manifest in GUEST_WORKSPACES {
        run(
            root,
            "cargo",
            &[
                "clippy",
                "--manifest-path",
                manifest,
                "--target",
                "wasm32-wasip2",
                "--",
                "-D",
                "warnings",
            ],
        )?;
    }
    Ok(())
}
