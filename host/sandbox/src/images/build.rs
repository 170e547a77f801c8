//! `warden sandbox build-images`: debootstrap a root filesystem, install
//! the recipe's packages in a chroot, add Warden's files, and import the
//! tree into Docker as an image tagged with the recipe digest.
//!
//! A build that fails at any step leaves no tag behind: the tree is
//! imported untagged, and tagged only once the import and the tar that
//! fed it both succeeded; an untagged image from a failed build is
//! removed by id.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::apt::debian_mirror;
use super::recipe::{ImageKind, Recipe, SUITE};
use crate::SandboxError;
use crate::docker::Docker;

/// What to build and where.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Image names are `<prefix>-<kind>:<digest>`.
    pub prefix: String,
    /// Scratch space for root filesystems and the package cache; each
    /// build's tree is removed when it ends.
    pub work_dir: PathBuf,
    /// Where the apt configuration naming the Debian mirror lives.
    pub apt_dir: PathBuf,
    pub kinds: Vec<ImageKind>,
}

/// A step of a build, for the caller to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The image for this recipe already exists: nothing to do.
    Cached { kind: ImageKind, image: String },
    /// A step started: `n` of `of`.
    Step {
        kind: ImageKind,
        n: u32,
        of: u32,
        what: String,
    },
    /// A line a build tool printed.
    Output { kind: ImageKind, line: String },
    Built {
        kind: ImageKind,
        image: String,
        elapsed: Duration,
    },
}

const STEPS: u32 = 6;

/// Builds every requested image whose recipe digest has no image yet;
/// returns the image references, in request order.
pub async fn build_images(
    docker: &Docker,
    options: &BuildOptions,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> Result<Vec<String>, SandboxError> {
    let mut images = Vec::new();
    for &kind in &options.kinds {
        let recipe = kind.recipe();
        let image = recipe.tag(&options.prefix);
        if docker.image_exists(&image).await? {
            progress(&Progress::Cached {
                kind,
                image: image.clone(),
            });
            images.push(image);
            continue;
        }
        let started = Instant::now();
        let dir = options
            .work_dir
            .join(format!("build-{kind}-{}", std::process::id()));
        let result = Build {
            docker,
            recipe,
            image: &image,
            dir: &dir,
            options,
        }
        .run(progress)
        .await;
        let cleaned = remove_tree(&dir).await;
        result?;
        cleaned?;
        progress(&Progress::Built {
            kind,
            image: image.clone(),
            elapsed: started.elapsed(),
        });
        images.push(image);
    }
    Ok(images)
}

struct Build<'a> {
    docker: &'a Docker,
    recipe: Recipe,
    image: &'a str,
    dir: &'a Path,
    options: &'a BuildOptions,
}

impl Build<'_> {
    fn fail(&self, step: &str, reason: impl Into<String>) -> SandboxError {
        SandboxError::BuildImage {
            image: self.image.to_owned(),
            step: step.to_owned(),
            reason: reason.into(),
        }
    }

    /// Every recipe from the root ancestor down to this one.
    fn chain(&self) -> Vec<Recipe> {
        let mut chain = vec![self.recipe];
        while let Some(parent) = chain.last().and_then(|r| r.parent) {
            chain.push(parent.recipe());
        }
        chain.reverse();
        chain
    }

    async fn run(&self, progress: &mut (dyn FnMut(&Progress) + Send)) -> Result<(), SandboxError> {
        let kind = self.recipe.kind;
        let step = |n: u32, what: &str, progress: &mut (dyn FnMut(&Progress) + Send)| {
            progress(&Progress::Step {
                kind,
                n,
                of: STEPS,
                what: what.to_owned(),
            });
        };
        remove_tree(self.dir).await?;
        let rootfs = self.dir.join("rootfs");
        let cache = self.options.work_dir.join("debs");
        for d in [&rootfs, &cache] {
            tokio::fs::create_dir_all(d)
                .await
                .map_err(|e| SandboxError::io(format!("creating {}", d.display()), e))?;
        }
        let mirror = debian_mirror(&self.options.apt_dir)?;
        let chain = self.chain();
        let root_packages = chain[0].packages.join(",");

        step(1, &format!("debootstrap {SUITE} from {mirror}"), progress);
        let cache_arg = format!("--cache-dir={}", absolute(&cache)?.display());
        let include = format!("--include={root_packages}");
        let rootfs_s = rootfs.display().to_string();
        self.tool(
            "debootstrap",
            "debootstrap",
            &[
                "--variant=minbase",
                &include,
                &cache_arg,
                SUITE,
                &rootfs_s,
                &mirror,
            ],
            progress,
        )
        .await?;

        step(2, "installing packages in the chroot", progress);
        let proc_dir = rootfs.join("proc");
        self.tool(
            "mount /proc",
            "mount",
            &["-t", "proc", "proc", &proc_dir.display().to_string()],
            progress,
        )
        .await?;
        let inside = self.inside(&rootfs, &chain, progress).await;
        let unmounted = self
            .tool(
                "umount /proc",
                "umount",
                &[&proc_dir.display().to_string()],
                progress,
            )
            .await;
        inside?;
        unmounted?;

        step(5, "importing into Docker", progress);
        let id = self.import(&rootfs).await?;
        step(6, &format!("tagging {}", self.image), progress);
        if let Err(e) = self.docker.tag_image(&id, self.image).await {
            let _ = self.docker.remove_image(&id).await;
            return Err(e);
        }
        Ok(())
    }

    /// Steps 2-4, with /proc mounted in the chroot.
    async fn inside(
        &self,
        rootfs: &Path,
        chain: &[Recipe],
        progress: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<(), SandboxError> {
        let write = |path: PathBuf, text: &str, mode: u32| {
            let text = text.to_owned();
            async move {
                use std::os::unix::fs::PermissionsExt as _;
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent).await?;
                }
                tokio::fs::write(&path, text).await?;
                tokio::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).await
            }
        };
        let policy = rootfs.join("usr/sbin/policy-rc.d");
        write(policy.clone(), "#!/bin/sh\nexit 101\n", 0o755)
            .await
            .map_err(|e| self.fail("writing policy-rc.d", e.to_string()))?;
        if let Ok(resolv) = tokio::fs::read_to_string("/etc/resolv.conf").await {
            let _ = tokio::fs::remove_file(rootfs.join("etc/resolv.conf")).await;
            write(rootfs.join("etc/resolv.conf"), &resolv, 0o644)
                .await
                .map_err(|e| self.fail("writing resolv.conf", e.to_string()))?;
        }
        let extra: Vec<&str> = chain[1..]
            .iter()
            .flat_map(|r| r.packages.iter().copied())
            .collect();
        if !extra.is_empty() {
            self.chroot(rootfs, &["apt-get", "update", "-q"], progress)
                .await?;
            let mut install = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
            install.extend(extra);
            self.chroot(rootfs, &install, progress).await?;
        }
        // Packages that could not be configured during installation
        // (no session bus, no init) are finished here.
        self.chroot(
            rootfs,
            &["apt-get", "--fix-broken", "install", "-y", "-q"],
            progress,
        )
        .await?;
        progress(&Progress::Step {
            kind: self.recipe.kind,
            n: 3,
            of: STEPS,
            what: "adding Warden's files and users".into(),
        });
        for recipe in chain {
            for cmd in recipe.setup {
                self.chroot(rootfs, cmd, progress).await?;
            }
            for f in recipe.files {
                let path = rootfs.join(f.path.trim_start_matches('/'));
                write(path, f.text, f.mode)
                    .await
                    .map_err(|e| self.fail(&format!("writing {}", f.path), e.to_string()))?;
            }
        }
        progress(&Progress::Step {
            kind: self.recipe.kind,
            n: 4,
            of: STEPS,
            what: "cleaning the package caches".into(),
        });
        self.chroot(rootfs, &["apt-get", "clean"], progress).await?;
        let _ = tokio::fs::remove_file(&policy).await;
        let _ = tokio::fs::write(rootfs.join("etc/resolv.conf"), "").await;
        let lists = rootfs.join("var/lib/apt/lists");
        if let Ok(mut entries) = tokio::fs::read_dir(&lists).await {
            while let Ok(Some(e)) = entries.next_entry().await {
                if e.file_type().await.is_ok_and(|t| t.is_file()) {
                    let _ = tokio::fs::remove_file(e.path()).await;
                }
            }
        }
        Ok(())
    }

    async fn chroot(
        &self,
        rootfs: &Path,
        argv: &[&str],
        progress: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<(), SandboxError> {
        let mut args = vec![rootfs.to_str().unwrap_or_default()];
        args.extend_from_slice(argv);
        self.tool(&argv.join(" "), "chroot", &args, progress).await
    }

    /// Runs a build tool, forwarding its output lines as progress; fails
    /// with its last lines when it fails.
    async fn tool(
        &self,
        step: &str,
        program: &str,
        args: &[&str],
        progress: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<(), SandboxError> {
        let mut child = Command::new(program)
            .args(args)
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("DEBIAN_FRONTEND", "noninteractive")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| self.fail(step, format!("could not run {program}: {e}")))?;
        let mut out = child.stdout.take().map(|s| BufReader::new(s).lines());
        let mut err = child.stderr.take().map(|s| BufReader::new(s).lines());
        let mut tail: VecDeque<String> = VecDeque::new();
        while out.is_some() || err.is_some() {
            let line = tokio::select! {
                l = next_line(&mut out), if out.is_some() => l,
                l = next_line(&mut err), if err.is_some() => l,
            };
            if let Some(line) = line {
                if tail.len() == 20 {
                    tail.pop_front();
                }
                tail.push_back(line.clone());
                progress(&Progress::Output {
                    kind: self.recipe.kind,
                    line,
                });
            }
        }
        let status = child
            .wait()
            .await
            .map_err(|e| self.fail(step, e.to_string()))?;
        if status.success() {
            Ok(())
        } else {
            Err(self.fail(
                step,
                format!(
                    "{program} {status}; last output:\n{}",
                    Vec::from(tail).join("\n")
                ),
            ))
        }
    }

    /// Tars the tree into the engine's import endpoint; the image is
    /// tagged only by the caller, after both sides succeeded.
    async fn import(&self, rootfs: &Path) -> Result<String, SandboxError> {
        let mut tar = Command::new("tar")
            .args(["--numeric-owner", "--one-file-system", "-C"])
            .arg(rootfs)
            .args(["-cf", "-", "."])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| self.fail("tar", e.to_string()))?;
        let stdout = tar
            .stdout
            .take()
            .ok_or_else(|| self.fail("tar", "no stdout"))?;
        let body = crate::docker::byte_stream(stdout);
        let imported = self.docker.import_rootfs(body).await;
        let status = tar
            .wait()
            .await
            .map_err(|e| self.fail("tar", e.to_string()))?;
        let id = imported?;
        if !status.success() {
            let _ = self.docker.remove_image(&id).await;
            return Err(self.fail("tar", format!("tar {status}")));
        }
        Ok(id)
    }
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Option<tokio::io::Lines<R>>,
) -> Option<String> {
    let reader = lines.as_mut()?;
    match reader.next_line().await {
        Ok(Some(line)) => Some(line),
        _ => {
            *lines = None;
            None
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf, SandboxError> {
    std::path::absolute(path)
        .map_err(|e| SandboxError::io(format!("resolving {}", path.display()), e))
}

/// Removes a build tree, first unmounting anything still mounted inside
/// it (a /proc from a build that was killed), and refusing to delete
/// while a mount remains.
async fn remove_tree(dir: &Path) -> Result<(), SandboxError> {
    if !dir.exists() {
        return Ok(());
    }
    let dir_abs = absolute(dir)?;
    for mount in mounts_under(&dir_abs) {
        let _ = Command::new("umount").arg("-l").arg(&mount).status().await;
    }
    if let Some(left) = mounts_under(&dir_abs).first() {
        return Err(SandboxError::io(
            format!("removing {}", dir.display()),
            std::io::Error::other(format!("{} is still mounted", left.display())),
        ));
    }
    tokio::fs::remove_dir_all(&dir_abs)
        .await
        .map_err(|e| SandboxError::io(format!("removing {}", dir.display()), e))
}

fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(PathBuf::from)
        .filter(|m| m.starts_with(dir))
        .collect()
}
