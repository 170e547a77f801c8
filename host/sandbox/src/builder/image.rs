//! `ensure_image`: the builder image for a recipe, built when its tag is
//! missing: a stopped container of the sandbox base image receives the
//! toolchain (only what a build runs: cargo, rustc and their libraries,
//! the host's and the target's std; no docs) and the stage, and is
//! committed under the recipe's tag. A failed build leaves no tag.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::BuilderRecipe;
use super::stage::{self, Inputs};
use crate::SandboxError;
use crate::docker::Docker;
use crate::images::ImageKind;

/// Where the builder image comes from.
#[derive(Debug, Clone)]
pub struct ImageOptions {
    /// Image names are `<prefix>-toolsmith-builder:<digest>`; the parent
    /// is `<prefix>-base:<digest>` (`warden sandbox build-images`).
    pub prefix: String,
    /// Scratch space for the stage, removed when the build ends.
    pub work_dir: PathBuf,
    /// The workspace holding `sdk/`, `wit/`, `host/api/` and `Cargo.toml`.
    pub source_root: PathBuf,
    /// Where cargo finds (or fetches) the crates to vendor: `$CARGO_HOME`.
    pub cargo_home: PathBuf,
}

/// The builder image for `recipe`, built first when it does not exist;
/// returns its reference.
pub async fn ensure_image(
    docker: &Docker,
    recipe: &BuilderRecipe,
    options: &ImageOptions,
) -> Result<String, SandboxError> {
    let image = recipe.tag(&options.prefix);
    if docker.image_exists(&image).await? {
        return Ok(image);
    }
    let parent = ImageKind::Base.recipe().tag(&options.prefix);
    if !docker.image_exists(&parent).await? {
        return Err(SandboxError::ImageMissing { image: parent });
    }
    let toolchain = find_toolchain(&recipe.toolchain, &recipe.target).await?;
    let (tag, toolchain) = (&image, &toolchain);
    in_stage(options, "builder", |dir| async move {
        stage::assemble(&Inputs {
            recipe,
            source_root: &options.source_root,
            toolchain: &toolchain.dir,
            cargo_home: &options.cargo_home,
            dir: &dir,
            image: tag,
        })
        .await?;
        commit(docker, &parent, tag, recipe, toolchain, &dir).await
    })
    .await?;
    Ok(image)
}

/// Runs `work` in a stage directory of its own under the work directory
/// (`toolsmith-WHAT-PID`): emptied first, removed whatever happened.
async fn in_stage<T, F, Fut>(options: &ImageOptions, what: &str, work: F) -> Result<T, SandboxError>
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: std::future::Future<Output = Result<T, SandboxError>>,
{
    let dir = options
        .work_dir
        .join(format!("toolsmith-{what}-{}", std::process::id()));
    let _ = tokio::fs::remove_dir_all(&dir).await;
    let result = work(dir.clone()).await;
    let cleaned = tokio::fs::remove_dir_all(&dir)
        .await
        .map_err(|e| SandboxError::io(format!("removing {}", dir.display()), e));
    let value = result?;
    cleaned?;
    Ok(value)
}

/// A cold build of `lib_rs`: the tool's crate and the recipe's whole
/// dependency set compiled from their sources (the SDK copied, the crates
/// vendored), nothing pre-built, exactly as making the image pre-builds
/// its template; returns how long that took. A build container cannot do
/// this itself (it has no C linker for the dependencies' build scripts),
/// so this is the one cold build there is, for measuring it. Needs what
/// making the image needs (root, `unshare`, the pinned toolchain), not
/// Docker.
pub async fn cold_build(
    recipe: &BuilderRecipe,
    options: &ImageOptions,
    lib_rs: &str,
) -> Result<std::time::Duration, SandboxError> {
    let toolchain = find_toolchain(&recipe.toolchain, &recipe.target).await?;
    let recipe = BuilderRecipe {
        template_lib_rs: lib_rs.to_owned(),
        ..recipe.clone()
    };
    in_stage(options, "cold", |dir| async move {
        let started = std::time::Instant::now();
        stage::assemble(&Inputs {
            recipe: &recipe,
            source_root: &options.source_root,
            toolchain: &toolchain.dir,
            cargo_home: &options.cargo_home,
            dir: &dir,
            image: "(a cold build)",
        })
        .await
        .map(|()| started.elapsed())
    })
    .await
}

/// A rustup toolchain on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub dir: PathBuf,
    /// Its host triple, e.g. `x86_64-unknown-linux-gnu`.
    pub host: String,
}

/// The directory of toolchain `version` (asked of `rustc` with
/// `RUSTUP_TOOLCHAIN` set), checked to be that version and to have the
/// target's std.
pub async fn find_toolchain(version: &str, target: &str) -> Result<Toolchain, SandboxError> {
    let fail = |reason: String| SandboxError::Image {
        reason: format!("the toolsmith builder needs Rust {version} with `{target}`: {reason}"),
    };
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .env("RUSTUP_TOOLCHAIN", version)
        .output()
        .await
        .map_err(|e| fail(format!("running rustc: {e}")))?;
    if !sysroot.status.success() {
        return Err(fail(format!(
            "`rustc --print sysroot` failed: {}",
            String::from_utf8_lossy(&sysroot.stderr).trim()
        )));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let rustc = dir.join("bin/rustc");
    let info = Command::new(&rustc)
        .arg("-vV")
        .output()
        .await
        .map_err(|e| fail(format!("running {}: {e}", rustc.display())))?;
    let info = String::from_utf8_lossy(&info.stdout).into_owned();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    if field("release:").as_deref() != Some(version) {
        return Err(fail(format!(
            "{} is release {:?} (install it: `rustup toolchain install {version} --profile minimal --target {target}`)",
            rustc.display(),
            field("release:")
        )));
    }
    let host = field("host:").ok_or_else(|| fail("rustc -vV names no host".into()))?;
    if !dir.join("lib/rustlib").join(target).is_dir() {
        return Err(fail(format!(
            "{} has no std for it (`rustup target add {target} --toolchain {version}`)",
            dir.display()
        )));
    }
    Ok(Toolchain { dir, host })
}

/// The toolchain's files a build needs, relative to its directory.
async fn toolchain_parts(toolchain: &Toolchain, target: &str) -> Result<Vec<String>, SandboxError> {
    let mut parts = vec![
        "bin/cargo".to_owned(),
        "bin/rustc".to_owned(),
        format!("lib/rustlib/{}", toolchain.host),
        format!("lib/rustlib/{target}"),
    ];
    let lib = toolchain.dir.join("lib");
    let mut entries = tokio::fs::read_dir(&lib)
        .await
        .map_err(|e| SandboxError::io(format!("reading {}", lib.display()), e))?;
    while let Ok(Some(e)) = entries.next_entry().await {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains(".so") {
            parts.push(format!("lib/{name}"));
        }
    }
    parts.sort();
    Ok(parts)
}

async fn commit(
    docker: &Docker,
    parent: &str,
    image: &str,
    recipe: &BuilderRecipe,
    toolchain: &Toolchain,
    stage: &Path,
) -> Result<(), SandboxError> {
    let id = docker.create_stopped(parent).await?;
    let result = async {
        let rust = format!("s,^,{}/,", recipe.rust_dir.trim_start_matches('/'));
        let mut args = vec!["--transform".to_owned(), rust];
        args.extend(toolchain_parts(toolchain, &recipe.target).await?);
        upload(docker, &id, &toolchain.dir, &args, image).await?;
        let layout = format!(
            "s,^vendor,{},;s,^template,{},",
            recipe.vendor_dir.trim_start_matches('/'),
            recipe.template_dir.trim_start_matches('/')
        );
        let args = [
            "--transform".to_owned(),
            layout,
            "vendor".into(),
            "template".into(),
        ];
        upload(docker, &id, stage, &args, image).await?;
        docker.commit(&id, image).await
    }
    .await;
    let removed = docker.remove(&id).await;
    result?;
    removed
}

/// Tars `args` (paths relative to `dir`, with tar options) into the
/// container's root.
async fn upload(
    docker: &Docker,
    id: &str,
    dir: &Path,
    args: &[String],
    image: &str,
) -> Result<(), SandboxError> {
    let fail = |reason: String| SandboxError::BuildImage {
        image: image.to_owned(),
        step: "copying files into the image".into(),
        reason,
    };
    let mut tar = Command::new("tar")
        .args(["--numeric-owner", "-C"])
        .arg(dir)
        .args(["-cf", "-"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("could not run tar: {e}")))?;
    let stdout = tar
        .stdout
        .take()
        .ok_or_else(|| fail("tar has no stdout".into()))?;
    let body = crate::docker::byte_stream(stdout);
    let uploaded = docker.upload_tar(id, body).await;
    let output = tar
        .wait_with_output()
        .await
        .map_err(|e| fail(e.to_string()))?;
    uploaded?;
    if !output.status.success() {
        return Err(fail(format!(
            "tar {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}
