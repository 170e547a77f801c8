//! One build: a container of the builder image, the author's `lib.rs` on
//! its stdin, the component out through its stdout, the container removed
//! whatever happened.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::BuilderRecipe;
use crate::SandboxError;
use crate::docker::{Docker, ExecRequest};
use crate::images::SANDBOX_UID;
use crate::spec::{ContainerSpec, Network};

/// Label on every build container, so a leftover one is recognisable.
pub const BUILD_LABEL: &str = "warden.toolsmith.build";

/// The limits of one build container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildLimits {
    /// Wall-clock time for the whole build; then the container is removed.
    pub deadline: Duration,
    /// Memory, the tmpfs build directory included; no swap.
    pub memory_bytes: u64,
    pub nano_cpus: u64,
    pub pids: u32,
    /// Size of the tmpfs build directory (the pre-built dependency set is
    /// copied there: about 180 MB).
    pub tmpfs_bytes: u64,
    /// The largest component accepted.
    pub max_artifact_bytes: usize,
    /// Compiler output kept for the reason of a failure.
    pub max_log_bytes: usize,
}

impl Default for BuildLimits {
    fn default() -> BuildLimits {
        BuildLimits {
            deadline: Duration::from_secs(180),
            memory_bytes: 2 << 30,
            nano_cpus: 2_000_000_000,
            pids: 256,
            tmpfs_bytes: 1 << 30,
            max_artifact_bytes: 8 << 20,
            max_log_bytes: 16 << 10,
        }
    }
}

/// A built component.
#[derive(Debug, Clone)]
pub struct Built {
    pub wasm: Vec<u8>,
    /// `sha256:<hex>` of `wasm`.
    pub sha256: String,
    /// The builder image it was built in.
    pub image: String,
    /// What cargo printed (capped).
    pub log: String,
    pub elapsed: Duration,
}

/// Why a build produced no component.
#[derive(Debug, Error)]
pub enum BuildError {
    #[error("the build did not finish within {0:?}; its container was removed")]
    Timeout(Duration),
    #[error("the build was killed (exit 137: the memory limit, most likely):\n{log}")]
    Killed { log: String },
    #[error("the source did not compile (exit {exit}):\n{log}")]
    Compile { exit: i64, log: String },
    #[error("the component is {bytes} bytes, more than the limit of {max}")]
    TooLarge { bytes: u64, max: usize },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// The build container for `image`: pure, so every isolation property is
/// unit-tested without Docker.
pub fn build_spec(image: &str, recipe: &BuilderRecipe, limits: &BuildLimits) -> ContainerSpec {
    ContainerSpec {
        image: image.to_owned(),
        user: format!("{SANDBOX_UID}:{SANDBOX_UID}"),
        cmd: vec!["sleep".into(), "infinity".into()],
        entrypoint: None,
        attached: false,
        env: build_env(recipe),
        working_dir: recipe.build_dir.clone(),
        labels: BTreeMap::from([(BUILD_LABEL.to_owned(), "true".to_owned())]),
        network: Network::None,
        extra_hosts: Vec::new(),
        mounts: Vec::new(),
        memory_bytes: limits.memory_bytes,
        nano_cpus: limits.nano_cpus,
        pids_limit: limits.pids,
        tmpfs: vec![
            // exec: rustc loads the pre-built proc-macros from here.
            (
                recipe.build_dir.clone(),
                format!(
                    "rw,exec,nosuid,nodev,size={},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
                    limits.tmpfs_bytes
                ),
            ),
            (
                "/tmp".into(),
                format!("rw,noexec,nosuid,nodev,size={},mode=1777", 64 << 20),
            ),
        ],
        read_only_rootfs: true,
        drop_all_capabilities: true,
        no_new_privileges: true,
    }
}

fn build_env(recipe: &BuilderRecipe) -> Vec<(String, String)> {
    vec![
        (
            "PATH".into(),
            format!("{}/bin:/usr/bin:/bin", recipe.rust_dir),
        ),
        ("HOME".into(), recipe.build_dir.clone()),
        (
            "CARGO_HOME".into(),
            format!("{}/.cargo-home", recipe.build_dir),
        ),
        ("TMPDIR".into(), "/tmp".into()),
    ]
}

/// The script a build runs: the pre-built crate into the tmpfs, the
/// author's `lib.rs` (stdin) over its source, then cargo, offline.
fn build_script(recipe: &BuilderRecipe) -> String {
    format!(
        "set -eu\ncp -a {template}/. {build}/\nrm -f {build}/{artifact}\n\
         cat > {build}/src/lib.rs\ncd {build}\n\
         exec cargo build --frozen --offline --release --target {target}",
        template = recipe.template_dir,
        build = recipe.build_dir,
        artifact = recipe.artifact,
        target = recipe.target,
    )
}

/// Builds `lib_rs` in a fresh container of `image`; the container is
/// removed whatever the outcome.
pub async fn build(
    docker: &Docker,
    image: &str,
    recipe: &BuilderRecipe,
    limits: &BuildLimits,
    lib_rs: &str,
) -> Result<Built, BuildError> {
    let started = Instant::now();
    let id = docker.start(&build_spec(image, recipe, limits)).await?;
    let result = run_in(docker, &id, recipe, limits, lib_rs, started).await;
    let removed = docker.remove(&id).await;
    let mut built = result?;
    removed?;
    built.image = image.to_owned();
    built.elapsed = started.elapsed();
    Ok(built)
}

async fn run_in(
    docker: &Docker,
    id: &str,
    recipe: &BuilderRecipe,
    limits: &BuildLimits,
    lib_rs: &str,
    started: Instant,
) -> Result<Built, BuildError> {
    let deadline = started + limits.deadline;
    let compiled = docker
        .exec(
            id,
            &ExecRequest {
                argv: vec!["sh".into(), "-c".into(), build_script(recipe)],
                env: build_env(recipe),
                user: None,
                working_dir: Some(recipe.build_dir.clone()),
                stdin: Some(lib_rs.as_bytes().to_vec()),
                deadline: Some(deadline),
                max_bytes: limits.max_log_bytes,
            },
        )
        .await?;
    let log = String::from_utf8_lossy(&compiled.stderr).into_owned();
    if compiled.timed_out {
        return Err(BuildError::Timeout(limits.deadline));
    }
    match compiled.exit_code {
        Some(0) => {}
        Some(137) => return Err(BuildError::Killed { log }),
        exit => {
            return Err(BuildError::Compile {
                exit: exit.unwrap_or(-1),
                log,
            });
        }
    }
    let copied = docker
        .exec(
            id,
            &ExecRequest {
                argv: vec![
                    "cat".into(),
                    format!("{}/{}", recipe.build_dir, recipe.artifact),
                ],
                env: build_env(recipe),
                user: None,
                working_dir: None,
                stdin: None,
                deadline: Some(deadline),
                max_bytes: limits.max_artifact_bytes.saturating_add(1),
            },
        )
        .await?;
    if copied.timed_out {
        return Err(BuildError::Timeout(limits.deadline));
    }
    if copied.exit_code != Some(0) {
        return Err(BuildError::Compile {
            exit: copied.exit_code.unwrap_or(-1),
            log: format!(
                "{log}\ncargo succeeded but left no {}: {}",
                recipe.artifact,
                String::from_utf8_lossy(&copied.stderr)
            ),
        });
    }
    if copied.stdout_total > limits.max_artifact_bytes as u64 {
        return Err(BuildError::TooLarge {
            bytes: copied.stdout_total,
            max: limits.max_artifact_bytes,
        });
    }
    let sha256 = warden_signing::sha256_digest(&copied.stdout);
    Ok(Built {
        wasm: copied.stdout,
        sha256,
        image: String::new(),
        log,
        elapsed: Duration::ZERO,
    })
}
