//! The sandbox images, built locally from Debian packages: no registry is
//! ever pulled from.

mod apt;
mod build;
mod recipe;

pub use apt::{AptSource, debian_mirror, parse_deb822, parse_one_line, sources};
pub use build::{BuildOptions, Progress, build_images};
pub use recipe::{File, ImageKind, Recipe, SANDBOX_UID, SUITE};
