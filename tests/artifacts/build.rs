//! Builds every guest component (tests/components, plugins, examples) for
//! wasm32-wasip2, once per test build, into a target dir under OUT_DIR (the
//! outer target dir is locked by the build that runs this script), and
//! generates one path constant per component plus `for_each_guest!`, which
//! the integration tests use to prove every guest has a test.

use std::path::{Path, PathBuf};
use std::process::Command;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir.join("../..").canonicalize()?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let target = out.join("guests");

    for dir in [
        "tests/components",
        "plugins",
        "sdk",
        "wit",
        "host/api/src",
        "host/api/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }

    let mut guests = Vec::new();
    for workspace in ["tests/components", "plugins", "examples"] {
        build(&root.join(workspace), &target)?;
        guests.extend(members(&root.join(workspace))?);
    }

    let release = target.join("wasm32-wasip2/release");
    let mut code = String::new();
    let mut names = Vec::new();
    for (crate_name, short) in &guests {
        let path = release.join(format!("{}.wasm", crate_name.replace('-', "_")));
        if !path.is_file() {
            return Err(format!(
                "guest {crate_name} built no component at {}",
                path.display()
            )
            .into());
        }
        code.push_str(&format!(
            "/// The `{crate_name}` component.\npub const {}: &str = {:?};\n",
            short.to_uppercase(),
            path.display().to_string()
        ));
        names.push(short.clone());
    }
    code.push_str(&format!(
        "/// Every guest: (name, path).\npub const ALL: &[(&str, &str)] = &[{}];\n",
        names
            .iter()
            .map(|n| format!("({n:?}, {})", n.to_uppercase()))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    code.push_str(&format!(
        "/// Calls `$m!(name)` for every guest.\n#[macro_export]\nmacro_rules! for_each_guest {{ ($m:ident) => {{ {} }} }}\n",
        names.iter().map(|n| format!("$m!({n});")).collect::<String>()
    ));
    std::fs::write(out.join("artifacts.rs"), code)?;
    Ok(())
}

fn build(workspace: &Path, target: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(target)
        // The outer build's flags are for the host, not for guests.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_MAKEFLAGS")
        .status()?;
    if !status.success() {
        return Err(format!("building guests in {} failed", workspace.display()).into());
    }
    Ok(())
}

/// (crate name, short name) of each member: `warden-plugin-fs` -> `fs`.
fn members(workspace: &Path) -> Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(workspace.join("Cargo.toml"))?;
    let list = text
        .split("members = [")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .ok_or("no members list")?;
    let mut out = Vec::new();
    for dir in list
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter(|s| !s.is_empty())
    {
        let cargo = std::fs::read_to_string(workspace.join(dir).join("Cargo.toml"))?;
        let name = cargo
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .map(|s| s.trim_matches('"').to_owned())
            .ok_or("no package name")?;
        let short = name
            .trim_start_matches("warden-plugin-")
            .trim_start_matches("warden-")
            .replace('-', "_");
        out.push((name, short));
    }
    Ok(out)
}
