//! The toolsmith's builder against the real Docker engine: the builder
//! image (built once per recipe digest, on the sandbox base image), the
//! isolation of a build container seen from inside it, and builds of a
//! tiny generated tool: reproducible, a component, a compile error kept
//! as the reason. One test, so one run builds the image at most once.
//! Needs Docker and the sandbox base image (`cargo xtask test` provides
//! both).

use std::path::PathBuf;

use warden_sandbox::Docker;
use warden_sandbox::builder::{
    BuildError, BuildLimits, ImageOptions, build, build_spec, cold_build, ensure_image,
};
use warden_sandbox::spec::Network;
use warden_sandbox::{ExecRequest, SandboxConfig};
use warden_server::toolsmith::check_component;
use warden_toolsmith::EXAMPLE_LIB_RS as WORD_COUNT;
use warden_toolsmith::{Derived, Sandbox};

pub fn image_options() -> ImageOptions {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    ImageOptions {
        prefix: SandboxConfig::default().image_prefix,
        work_dir: PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        source_root: root,
        cargo_home,
    }
}

/// The builder image, built first when missing.
pub async fn builder_image(docker: &Docker) -> String {
    let recipe = warden_server::toolsmith::builder_recipe();
    ensure_image(docker, &recipe, &image_options())
        .await
        .unwrap_or_else(|e| panic!("the toolsmith builder image: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn ts_builder_isolation_and_reproducible_builds() {
    let docker = Docker::connect().await.unwrap();
    let recipe = warden_server::toolsmith::builder_recipe();
    let image = builder_image(&docker).await;
    assert_eq!(image, recipe.tag(&image_options().prefix));
    let again = ensure_image(&docker, &recipe, &image_options())
        .await
        .unwrap();
    assert_eq!(again, image, "an unchanged recipe is not rebuilt");

    // Isolation, as configured and as seen from inside.
    let limits = BuildLimits::default();
    let spec = build_spec(&image, &recipe, &limits);
    assert_eq!(spec.network, Network::None);
    assert!(spec.read_only_rootfs && spec.drop_all_capabilities && spec.no_new_privileges);
    assert!(spec.mounts.is_empty(), "no host mounts: {:?}", spec.mounts);
    assert_eq!(spec.user, "1000:1000");
    let id = docker.start(&spec).await.unwrap();
    let probe = docker
        .exec(
            &id,
            &ExecRequest {
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "id -u; ls /sys/class/net; grep CapEff /proc/self/status; \
                     touch /opt/warden/vendor/x 2>&1; touch /etc/x 2>&1; \
                     touch /opt/warden/build/ok && echo build-writable; env | sort"
                        .into(),
                ],
                max_bytes: 1 << 16,
                ..ExecRequest::default()
            },
        )
        .await
        .unwrap();
    docker.remove(&id).await.unwrap();
    let out = String::from_utf8_lossy(&probe.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1000", "{out}");
    assert_eq!(lines[1], "lo", "only loopback: {out}");
    assert!(
        lines[2].ends_with("0000000000000000"),
        "no capabilities: {out}"
    );
    assert_eq!(out.matches("Read-only file system").count(), 2, "{out}");
    assert!(out.contains("build-writable"), "{out}");
    let env: Vec<&str> = lines
        .iter()
        .copied()
        .skip_while(|l| *l != "build-writable")
        .skip(1)
        .filter(|l| {
            !["PWD=", "SHLVL=", "_=", "HOSTNAME="]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(|l| l.split('=').next().unwrap_or_default())
        .collect();
    assert_eq!(env, ["CARGO_HOME", "HOME", "PATH", "TMPDIR"], "{out}");

    // Two builds of one source: one component, one sha256.
    let first = build(&docker, &image, &recipe, &limits, WORD_COUNT)
        .await
        .unwrap_or_else(|e| panic!("build: {e}"));
    let second = build(&docker, &image, &recipe, &limits, WORD_COUNT)
        .await
        .unwrap();
    assert_eq!(first.sha256, second.sha256, "builds are reproducible");
    assert_eq!(first.sha256, warden_signing::sha256_digest(&first.wasm));
    assert_eq!(
        &first.wasm[..8],
        b"\0asm\x0d\x00\x01\x00",
        "a component, not a core module"
    );
    assert!(
        !first.log.contains("Compiling serde"),
        "the dependency set is pre-built: {}",
        first.log
    );
    eprintln!(
        "toolsmith build (pre-built dependencies): {:?} and {:?}, {} bytes, {}",
        first.elapsed,
        second.elapsed,
        first.wasm.len(),
        first.sha256
    );

    // The validation gate's first checks, on the real component.
    let runtime = warden_server::toolsmith::fuel_runtime(None).unwrap();
    let derived = Derived {
        name: "gen_text_count".into(),
        capability: "text:count".into(),
        category: "analytics".into(),
        action_type: "code:read".into(),
        grants: Sandbox::default(),
        side_effect: false,
    };
    let plugin = check_component(&runtime, &first.wasm, &derived, &|_| false)
        .await
        .unwrap_or_else(|e| panic!("the built component passes: {e}"));
    assert_eq!(plugin.manifest().tools[0].name.as_str(), "gen_text_count");
    let renamed = Derived {
        name: "gen_text_words".into(),
        ..derived.clone()
    };
    let err = check_component(&runtime, &first.wasm, &renamed, &|_| false)
        .await
        .unwrap_err();
    assert!(err.contains("named `gen_text_words`"), "{err}");
    let err = check_component(&runtime, &first.wasm, &derived, &|n| n == "gen_text_count")
        .await
        .unwrap_err();
    assert!(err.contains("already the name"), "{err}");
    let err = check_component(&runtime, b"\0asm\x01\0\0\0", &derived, &|_| false)
        .await
        .unwrap_err();
    assert!(err.contains("linker"), "{err}");

    // A compile error is a failure with rustc's words, and no component.
    let broken = WORD_COUNT.replace("split_whitespace", "split_whitespacee");
    match build(&docker, &image, &recipe, &limits, &broken).await {
        Err(BuildError::Compile { log, .. }) => {
            assert!(log.contains("split_whitespacee"), "{log}");
        }
        other => panic!("a compile error must fail the build: {other:?}"),
    }
}

/// A cold build (what `cargo bench --bench builder` times) compiles the
/// source it is given, with the whole dependency set from the vendored
/// sources: a mistake in that source fails it with rustc's words, after
/// the dependencies built. Needs root and `unshare`, as making the image
/// does; not Docker.
#[tokio::test(flavor = "multi_thread")]
async fn ts_a_cold_build_compiles_the_source_it_is_given() {
    let recipe = warden_server::toolsmith::builder_recipe();
    let broken = WORD_COUNT.replace("split_whitespace", "split_whitespace_cold");
    let err = cold_build(&recipe, &image_options(), &broken)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("split_whitespace_cold"), "{err}");
    assert!(err.contains("pre-building"), "the step is named: {err}");
}
