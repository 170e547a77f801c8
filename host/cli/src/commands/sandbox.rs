//! `warden sandbox build-images`: build the Docker images the sandboxed
//! tools run in, from Debian packages (no registry pulls), and with
//! `--toolsmith-builder` the toolsmith's builder image.

use crate::out::out;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use warden_sandbox::images::{BuildOptions, ImageKind, Progress, build_images};

use crate::Outcome;

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Build the sandbox images (base, browser, desktop, git) that are missing;
    /// an image whose recipe is unchanged is not rebuilt.
    BuildImages(BuildArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// A warden.toml (for `[sandbox] image-prefix` and `state-dir`).
    #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
    pub config: Option<PathBuf>,
    /// Build only these images (repeatable): base, browser, desktop, git.
    #[arg(long = "only", value_name = "IMAGE", value_parser = parse_kind)]
    pub only: Vec<ImageKind>,
    /// Scratch space for root filesystems (default: STATE_DIR/image-build).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// The apt configuration naming the Debian mirror.
    #[arg(long, value_name = "DIR", default_value = "/etc/apt")]
    pub apt_dir: PathBuf,
    /// Also build the toolsmith's builder image (on the base image; from
    /// the Rust toolchain on this machine and the source tree this
    /// warden was built from; about 1.15 GB).
    #[arg(long)]
    pub toolsmith_builder: bool,
}

fn parse_kind(s: &str) -> Result<ImageKind, String> {
    ImageKind::parse(s).ok_or_else(|| format!("unknown image `{s}`: base, browser or desktop"))
}

pub fn run(command: SandboxCommand) -> anyhow::Result<Outcome> {
    match command {
        SandboxCommand::BuildImages(args) => build(args),
    }
}

fn build(args: BuildArgs) -> anyhow::Result<Outcome> {
    let config = match &args.config {
        Some(path) => warden_server::Config::load(path)?,
        None => warden_server::Config::default(),
    };
    let sandbox = config.sandbox.clone().unwrap_or_default();
    let state = config
        .state_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(".warden"));
    let options = BuildOptions {
        prefix: sandbox.image_prefix,
        work_dir: args.work_dir.unwrap_or_else(|| state.join("image-build")),
        apt_dir: args.apt_dir,
        kinds: if args.only.is_empty() {
            ImageKind::ALL.to_vec()
        } else {
            args.only
        },
    };
    let builder = args.toolsmith_builder.then(|| {
        warden_server::toolsmith::DockerBuilder::local(&options.prefix, &options.work_dir)
    });
    let rt = super::setup::tokio()?;
    let images = rt.block_on(async {
        let docker = warden_sandbox::Docker::connect().await?;
        let mut images = build_images(&docker, &options, &mut show)
            .await
            .context("building the sandbox images")?;
        if let Some(builder) = builder {
            eprintln_progress("toolsmith builder image (about 90 s when missing)");
            images.push(
                builder
                    .ensure_image(&docker)
                    .await
                    .map_err(|e| anyhow::anyhow!(e))?,
            );
        }
        anyhow::Ok(images)
    })?;
    for image in images {
        out!("{image}");
    }
    Ok(Outcome::Ok)
}

#[expect(clippy::print_stderr, reason = "build progress goes to stderr")]
fn eprintln_progress(what: &str) {
    eprintln!("[toolsmith-builder] {what}");
}

#[expect(clippy::print_stderr, reason = "build progress goes to stderr")]
fn show(p: &Progress) {
    match p {
        Progress::Cached { kind, image } => eprintln!("[{kind}] {image} is up to date"),
        Progress::Step { kind, n, of, what } => eprintln!("[{kind} {n}/{of}] {what}"),
        Progress::Output { kind, line } => eprintln!("[{kind}]   {line}"),
        Progress::Built {
            kind,
            image,
            elapsed,
        } => eprintln!("[{kind}] built {image} in {:.0} s", elapsed.as_secs_f64()),
    }
}
