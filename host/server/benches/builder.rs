//! The toolsmith's builder against the real Docker engine (issue 20's
//! build figure): a generated tool built from the image's pre-built
//! dependency set (target p50 <= 5 s), in a build container as the host
//! makes it (no network, read-only root, tmpfs build directory, limits),
//! timed from container start to component; and a cold build (target
//! <= 60 s): the same tool with nothing pre-built, its crate and the whole
//! dependency set compiled from the vendored sources, as making the image
//! pre-builds them (`warden_sandbox::builder::cold_build`). A build
//! container cannot compile the dependencies itself (it has no C linker
//! for their build scripts), so that is the only cold build there is.
//! Also prints how long the builder image took to be ready (its making,
//! when this run had to make it).
//!
//! cargo bench -p warden-server --bench builder [-- WARM_BUILDS]
//! (needs Docker and the sandbox base image: `scripts/ensure-docker`,
//! `warden sandbox build-images`; the cold build needs root and
//! `unshare`, as making the image does).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmarks fail loudly"
)]
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::time::{Duration, Instant};

use warden_sandbox::builder::{build, cold_build};
use warden_sandbox::{Docker, SandboxConfig};
use warden_server::toolsmith::{DockerBuilder, builder_recipe};
use warden_toolsmith::EXAMPLE_LIB_RS;

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let warm: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5)
        .max(1);
    let work = tempfile::tempdir().unwrap();
    let builder = DockerBuilder::local(&SandboxConfig::default().image_prefix, work.path());
    let docker = Docker::connect().await.unwrap();
    let recipe = builder_recipe();

    let t = Instant::now();
    let image = builder.ensure_image(&docker).await.unwrap();
    // A quick look when the image is there; its making when it is not.
    println!("builder image {image}: ready in {}", secs(t.elapsed()));

    let mut times = Vec::with_capacity(warm.max(1));
    for _ in 0..warm {
        let built = build(&docker, &image, &recipe, &builder.limits, EXAMPLE_LIB_RS)
            .await
            .unwrap_or_else(|e| panic!("build: {e}"));
        times.push(built.elapsed);
    }
    times.sort();
    println!(
        "build, pre-built dependencies ({warm} builds): p50 {}, max {}  [target p50 <= 5 s]",
        secs(times[times.len() / 2]),
        secs(times[times.len() - 1])
    );

    match cold_build(&recipe, &builder.options, EXAMPLE_LIB_RS).await {
        Ok(took) => println!(
            "cold build, nothing pre-built (the tool and its dependency set from source): {}  [target <= 60 s]",
            secs(took)
        ),
        Err(e) => println!("cold build: not measured: {e}"),
    }
}
