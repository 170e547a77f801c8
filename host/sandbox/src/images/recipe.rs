//! What each image contains, as data: its Debian packages, the files
//! Warden adds and the commands that finish it. An image's tag is a digest
//! of its recipe (and its parent's), so a changed recipe is a new image
//! and an unchanged one is never rebuilt.

use std::fmt;

/// The Debian release every image is built from. Part of the digest.
pub const SUITE: &str = "bookworm";

/// Bumped when the build procedure itself changes meaning.
const FORMAT: &str = "warden-image-recipe/1";

/// The unprivileged user every sandboxed process runs as.
pub const SANDBOX_UID: u32 = 1000;

/// The unprivileged user tools run as, made in the images that are a
/// parent of none (the base image and the git image): uid
/// [`SANDBOX_UID`].
const ADD_AGENT: &[&str] = &[
    "useradd",
    "--uid",
    "1000",
    "--create-home",
    "--shell",
    "/bin/sh",
    "agent",
];

/// Which image a tool runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ImageKind {
    /// Shell, coreutils, git, python3: `terminal_exec` and `code_run`.
    Base,
    /// Base plus headless chromium: the `browser_*` tools.
    Browser,
    /// Base plus Xvfb, xdotool, scrot and a small Tk program: `desktop_*`.
    Desktop,
    /// git, openssh-client and CA certificates only (no shell tools an
    /// agent would use, no python): the `git_*` tools. iptables is there
    /// for the egress firewall of clone, fetch and push containers.
    Git,
}

impl ImageKind {
    pub const ALL: [ImageKind; 4] = [
        ImageKind::Base,
        ImageKind::Browser,
        ImageKind::Desktop,
        ImageKind::Git,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ImageKind::Base => "base",
            ImageKind::Browser => "browser",
            ImageKind::Desktop => "desktop",
            ImageKind::Git => "git",
        }
    }

    pub fn parse(s: &str) -> Option<ImageKind> {
        ImageKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn recipe(self) -> Recipe {
        match self {
            ImageKind::Base => Recipe {
                kind: self,
                parent: None,
                packages: &[
                    "bash",
                    "coreutils",
                    "procps",
                    "util-linux",
                    "git",
                    "python3",
                    "ca-certificates",
                    "iptables",
                    // The differential test (tests/it/sandbox/differential.rs)
                    // traces every execve of a line with it. An agent gains
                    // nothing it lacked: ptrace of its own children is
                    // already open to it (python3, ctypes), and the
                    // container keeps no capabilities.
                    "strace",
                ],
                files: &[],
                setup: &[ADD_AGENT],
            },
            ImageKind::Browser => Recipe {
                kind: self,
                parent: Some(ImageKind::Base),
                packages: &["chromium", "fonts-dejavu-core"],
                files: &[File {
                    path: "/opt/warden/a11y.py",
                    mode: 0o755,
                    text: include_str!("a11y.py"),
                }],
                setup: &[],
            },
            ImageKind::Desktop => Recipe {
                kind: self,
                parent: Some(ImageKind::Base),
                packages: &[
                    "xvfb",
                    "xdotool",
                    "scrot",
                    "python3-tk",
                    "fonts-dejavu-core",
                ],
                files: &[File {
                    path: "/usr/local/bin/warden-notepad",
                    mode: 0o755,
                    text: include_str!("notepad.py"),
                }],
                setup: &[],
            },
            ImageKind::Git => Recipe {
                kind: self,
                parent: None,
                packages: &["git", "openssh-client", "ca-certificates", "iptables"],
                files: &[],
                setup: &[ADD_AGENT],
            },
        }
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A file Warden adds to an image.
#[derive(Debug, Clone, Copy)]
pub struct File {
    pub path: &'static str,
    pub mode: u32,
    pub text: &'static str,
}

/// How one image is made.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    pub kind: ImageKind,
    /// Built on a copy of this image's root filesystem.
    pub parent: Option<ImageKind>,
    pub packages: &'static [&'static str],
    pub files: &'static [File],
    /// Commands run in the chroot after the packages are installed.
    pub setup: &'static [&'static [&'static str]],
}

impl Recipe {
    /// The recipe as canonical text: what the digest covers.
    pub fn canonical(&self) -> String {
        let mut text = format!("{FORMAT}\nsuite {SUITE}\nimage {}\n", self.kind);
        if let Some(parent) = self.parent {
            text.push_str(&format!("parent {}\n", parent.recipe().digest()));
        }
        for p in self.packages {
            text.push_str(&format!("package {p}\n"));
        }
        for f in self.files {
            text.push_str(&format!(
                "file {} {:o} {}\n",
                f.path,
                f.mode,
                warden_signing::sha256_digest(f.text.as_bytes())
            ));
        }
        for cmd in self.setup {
            text.push_str(&format!("run {}\n", cmd.join(" ")));
        }
        text
    }

    /// `sha256:<hex>` of the canonical recipe.
    pub fn digest(&self) -> String {
        warden_signing::sha256_digest(self.canonical().as_bytes())
    }

    /// The image reference: `<prefix>-<kind>:<first 16 hex digits of the digest>`.
    pub fn tag(&self, prefix: &str) -> String {
        let digest = self.digest();
        let hex = digest.trim_start_matches("sha256:");
        format!("{prefix}-{}:{}", self.kind, &hex[..16.min(hex.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stable_and_distinct() {
        let tags: Vec<_> = ImageKind::ALL
            .iter()
            .map(|k| k.recipe().tag("warden-sandbox"))
            .collect();
        assert_eq!(tags[0], ImageKind::Base.recipe().tag("warden-sandbox"));
        assert!(tags[0].starts_with("warden-sandbox-base:"));
        assert_eq!(tags[0].len(), "warden-sandbox-base:".len() + 16);
        assert_ne!(tags[1], tags[2]);
    }

    #[test]
    fn a_parent_change_changes_the_child() {
        let browser = ImageKind::Browser.recipe();
        assert!(
            browser
                .canonical()
                .contains(&ImageKind::Base.recipe().digest())
        );
    }
}
