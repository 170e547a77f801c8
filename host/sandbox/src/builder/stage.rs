//! The builder image's contents, assembled on the host: the SDK's
//! sources under a workspace root of their own, the crates.io
//! dependencies vendored at the lock file's versions, and the template
//! crate (the host's `Cargo.toml`, lock file and cargo configuration)
//! with its dependencies pre-built. The pre-build runs in a private mount
//! namespace where the stage sits at the image's own paths, so the
//! fingerprints cargo keeps match inside the builder and a tool's build
//! compiles only its own crate.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::BuilderRecipe;
use crate::SandboxError;

/// The SDK's sources a generated tool's crate depends on, relative to
/// the workspace root (the SDK's `wit_bindgen::generate!` reads `wit/`).
const SDK_PARTS: &[&str] = &["sdk", "wit", "host/api"];
/// The members of the vendored SDK's workspace root.
const SDK_MEMBERS: &str = r#"members = ["sdk", "sdk/macros", "host/api"]"#;

/// What [`assemble`] needs from the machine.
pub(super) struct Inputs<'a> {
    pub recipe: &'a BuilderRecipe,
    /// The workspace holding `sdk/`, `wit/`, `host/api/` and `Cargo.toml`.
    pub source_root: &'a Path,
    /// The rustup toolchain's directory (`bin/cargo`, `lib/rustlib`).
    pub toolchain: &'a Path,
    /// Where cargo finds (or fetches) the crates to vendor.
    pub cargo_home: &'a Path,
    /// The stage: `vendor/` and `template/` are made here.
    pub dir: &'a Path,
    pub image: &'a str,
}

impl Inputs<'_> {
    fn fail(&self, step: &str, reason: impl Into<String>) -> SandboxError {
        SandboxError::BuildImage {
            image: self.image.to_owned(),
            step: step.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Assembles and pre-builds the stage in `inputs.dir`.
pub(super) async fn assemble(inputs: &Inputs<'_>) -> Result<(), SandboxError> {
    let vendor = inputs.dir.join("vendor");
    let template = inputs.dir.join("template");
    for part in SDK_PARTS {
        let to = vendor.join(part);
        if let Some(parent) = to.parent() {
            create_dir(parent).await?;
        }
        run(
            inputs,
            &format!("copying {part}"),
            Command::new("cp")
                .arg("-a")
                .arg(inputs.source_root.join(part))
                .arg(&to),
        )
        .await?;
        let _ = tokio::fs::remove_dir_all(to.join("target")).await;
    }
    let root = inputs.source_root.join("Cargo.toml");
    let manifest = tokio::fs::read_to_string(&root)
        .await
        .map_err(|e| SandboxError::io(format!("reading {}", root.display()), e))?;
    let manifest = sdk_workspace(&manifest).ok_or_else(|| {
        inputs.fail(
            "writing the SDK's workspace",
            format!("{} has no `members = [...]` list", root.display()),
        )
    })?;
    write(&vendor.join("Cargo.toml"), &manifest).await?;
    let r = inputs.recipe;
    write(&template.join("Cargo.toml"), &r.cargo_toml).await?;
    write(&template.join("Cargo.lock"), &r.cargo_lock).await?;
    write(&template.join(".cargo/config.toml"), &r.cargo_config).await?;
    write(&template.join("src/lib.rs"), &r.template_lib_rs).await?;
    prebuild(inputs, &vendor, &template).await?;
    remove_template_outputs(&template, &r.target).await
}

/// The workspace `Cargo.toml` with only the SDK's crates as members (its
/// `[workspace.package]`, dependencies and lints are what they inherit).
pub(super) fn sdk_workspace(manifest: &str) -> Option<String> {
    let mut out = String::new();
    let mut in_members = false;
    let mut replaced = false;
    for line in manifest.lines() {
        let trimmed = line.trim_start();
        if in_members {
            in_members = !trimmed.starts_with(']');
            continue;
        }
        if !replaced && trimmed.starts_with("members") && trimmed.contains('[') {
            out.push_str(SDK_MEMBERS);
            out.push('\n');
            replaced = true;
            in_members = !trimmed.contains(']');
            continue;
        }
        if trimmed.starts_with("exclude") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    replaced.then_some(out)
}

/// Vendors the crates and pre-builds the template, both at the image's
/// paths: a tmpfs over the layout's top directory (in this namespace
/// only), the toolchain, the vendor directory and the template bound to
/// the paths they have in the image.
async fn prebuild(inputs: &Inputs<'_>, vendor: &Path, template: &Path) -> Result<(), SandboxError> {
    let r = inputs.recipe;
    let top = top_dir(&r.rust_dir).ok_or_else(|| {
        inputs.fail(
            "pre-building",
            format!("`{}` is not an absolute path", r.rust_dir),
        )
    })?;
    let script = r#"set -eu
mount -t tmpfs -o mode=0755 tmpfs "$TOP"
mkdir -p "$RUST" "$VENDOR" "$BUILD"
mount --bind -o ro "$TOOLCHAIN" "$RUST"
mount --bind "$STAGE_VENDOR" "$VENDOR"
mount --bind "$STAGE_TEMPLATE" "$BUILD"
cd "$BUILD"
CARGO_HOME="$HOST_CARGO_HOME" cargo vendor --locked --versioned-dirs "$VENDOR/crates" >/dev/null
CARGO_HOME="$BUILD/.cargo-home" cargo build --frozen --offline --release --target "$TARGET"
"#;
    run(
        inputs,
        "vendoring and pre-building the dependency set",
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", script])
            .env_clear()
            .env(
                "PATH",
                format!("{}/bin:/usr/sbin:/usr/bin:/sbin:/bin", r.rust_dir),
            )
            .env("HOME", &r.build_dir)
            .env("TOP", &top)
            .env("RUST", &r.rust_dir)
            .env("VENDOR", &r.vendor_dir)
            .env("BUILD", &r.build_dir)
            .env("TOOLCHAIN", inputs.toolchain)
            .env("STAGE_VENDOR", vendor)
            .env("STAGE_TEMPLATE", template)
            .env("HOST_CARGO_HOME", inputs.cargo_home)
            .env("TARGET", &r.target),
    )
    .await
}

/// `/opt` for `/opt/warden/rust`.
fn top_dir(path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    path.ancestors()
        .filter(|a| a.parent().is_some())
        .last()
        .map(Path::to_path_buf)
}

/// Removes the template crate's own outputs, so a build that fails can
/// never hand out the template's component.
async fn remove_template_outputs(template: &Path, target: &str) -> Result<(), SandboxError> {
    let release = template.join("target").join(target).join("release");
    for dir in [
        release.clone(),
        release.join("deps"),
        release.join(".fingerprint"),
    ] {
        let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
            continue;
        };
        while let Ok(Some(e)) = entries.next_entry().await {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("generated") || name.starts_with("libgenerated")) {
                continue;
            }
            let path = e.path();
            let removed = if e.file_type().await.is_ok_and(|t| t.is_dir()) {
                tokio::fs::remove_dir_all(&path).await
            } else {
                tokio::fs::remove_file(&path).await
            };
            removed.map_err(|e| SandboxError::io(format!("removing {}", path.display()), e))?;
        }
    }
    Ok(())
}

async fn create_dir(dir: &Path) -> Result<(), SandboxError> {
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| SandboxError::io(format!("creating {}", dir.display()), e))
}

async fn write(path: &Path, text: &str) -> Result<(), SandboxError> {
    if let Some(parent) = path.parent() {
        create_dir(parent).await?;
    }
    tokio::fs::write(path, text)
        .await
        .map_err(|e| SandboxError::io(format!("writing {}", path.display()), e))
}

/// Runs a command to completion; fails with the tail of its output.
async fn run(inputs: &Inputs<'_>, step: &str, command: &mut Command) -> Result<(), SandboxError> {
    let output = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| inputs.fail(step, e.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let tail: String = text
        .chars()
        .rev()
        .take(4000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(inputs.fail(step, format!("{}; last output:\n{tail}", output.status)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_workspace_keeps_what_members_inherit() {
        let manifest = "[workspace]\nresolver = \"3\"\nmembers = [\n    \"host/api\",\n    \"xtask\",\n]\nexclude = [\"plugins\"]\n\n[workspace.package]\nversion = \"0.1.0\"\n";
        let out = sdk_workspace(manifest).unwrap();
        assert!(out.contains(SDK_MEMBERS));
        assert!(!out.contains("xtask") && !out.contains("exclude"));
        assert!(out.contains("[workspace.package]\nversion = \"0.1.0\""));
        assert_eq!(sdk_workspace("[package]\nname = \"x\"\n"), None);
    }

    #[test]
    fn the_top_dir_is_the_first_component() {
        assert_eq!(top_dir("/opt/warden/rust"), Some(PathBuf::from("/opt")));
        assert_eq!(top_dir("opt/warden"), None);
    }
}
