//! The fixture MCP server as a Docker image, for the bridge's `docker`
//! runtime tests: the sandbox base image (Debian bookworm: the glibc the
//! fixture binary links against) plus `target/debug/warden-bridge-fixture`
//! at `/usr/local/bin`, made with `docker create`, `docker cp` and
//! `docker commit` — no registry, no builder, no build context. Tagged
//! by the digest of the binary and of the base image's recipe, so it is
//! made once per fixture build (about a second) and reused after.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr,
    dead_code,
    reason = "test support fails loudly; each test binary uses part of it"
)]

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use warden_sandbox::images::ImageKind;

/// Where the fixture binary is inside the image.
pub const FIXTURE_IN_IMAGE: &str = "/usr/local/bin/warden-bridge-fixture";

pub use crate::support::bridged::fixture_binary;

/// Runs `docker ARGS`; its stdout when it succeeds.
pub fn docker(args: &[&str]) -> Result<String, String> {
    let out = Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| format!("running docker: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Makes a Docker engine answer (`scripts/ensure-docker`), or fails
/// saying why.
pub fn ensure_docker() {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-docker");
        let out = Command::new("bash").arg(script).output().unwrap();
        assert!(
            out.status.success(),
            "these tests need a Docker engine (scripts/ensure-docker): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// The fixture image's reference, made when missing.
pub fn fixture_image() -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(make_fixture_image).clone()
}

fn make_fixture_image() -> String {
    ensure_docker();
    let binary = fixture_binary();
    let base = ImageKind::Base.recipe().tag("warden-sandbox");
    let bytes = std::fs::read(&binary).unwrap();
    let digest = warden_signing::sha256_digest(format!("{base}\n").as_bytes())
        + &warden_signing::sha256_digest(&bytes);
    let digest = warden_signing::sha256_digest(digest.as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    let tag = format!("warden-test-bridge-fixture:{}", &hex[..16]);
    if docker(&["image", "inspect", "--format", "{{.Id}}", &tag]).is_ok() {
        return tag;
    }
    if let Err(e) = docker(&["image", "inspect", "--format", "{{.Id}}", &base]) {
        panic!(
            "the sandbox base image `{base}` is missing; build it first with \
             `warden sandbox build-images` (`cargo xtask test` does): {e}"
        );
    }
    let started = Instant::now();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!("warden-fixture-image-{}-{nanos:x}", std::process::id());
    docker(&[
        "create",
        "--name",
        &name,
        "--network",
        "none",
        &base,
        "true",
    ])
    .unwrap();
    let made = docker(&[
        "cp",
        binary.to_str().unwrap(),
        &format!("{name}:{FIXTURE_IN_IMAGE}"),
    ])
    .and_then(|_| {
        docker(&[
            "commit",
            "--change",
            &format!("ENTRYPOINT [\"{FIXTURE_IN_IMAGE}\"]"),
            "--change",
            "CMD []",
            &name,
            &tag,
        ])
    });
    let _ = docker(&["rm", "-f", &name]);
    if let Err(e) = made {
        panic!("making the fixture image `{tag}`: {e}");
    }
    eprintln!("made the fixture image {tag} in {:?}", started.elapsed());
    tag
}

/// `docker inspect` of a container, as JSON.
pub fn inspect(id: &str) -> serde_json::Value {
    let text = docker(&["inspect", id]).unwrap();
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    all[0].clone()
}

/// Ids of the containers (running or not) carrying every `label=value`.
pub fn containers(labels: &[(&str, &str)]) -> Vec<String> {
    let mut args = vec!["ps".to_owned(), "-aq".to_owned(), "--no-trunc".to_owned()];
    for (k, v) in labels {
        args.push("--filter".into());
        args.push(format!("label={k}={v}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    docker(&args)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .collect()
}
