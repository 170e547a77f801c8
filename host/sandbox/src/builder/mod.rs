//! The toolsmith's builder: the local image a generated tool's source is
//! compiled in, and the build of one `lib.rs` in a container of it.
//!
//! Attack: an author's source doing harm while it compiles — proc-macros
//! and build scripts run arbitrary code at compile time
//! (rust-lang/cargo#5720) — by reaching the network, reading host files
//! or secrets, writing outside its build directory, gaining privileges,
//! or exhausting the machine; and an author choosing the dependencies,
//! the compiler flags or a build script. The author supplies only
//! `src/lib.rs`. `Cargo.toml`, the lock file and the cargo configuration
//! are the host's ([`BuilderRecipe`]), baked into the image together with
//! the toolchain and the vendored, pre-built dependency set. A build
//! container has no network, a read-only root filesystem, a size-capped
//! tmpfs as its only writable build directory, no capabilities,
//! no-new-privileges, a non-root user, memory (no swap), CPU and pids
//! limits, no host mounts at all, an environment of four fixed variables,
//! and a deadline after which it is removed ([`build_spec`], [`build`]).
//!
//! The image is built once per recipe digest ([`ensure_image`]), like the
//! sandbox images, and never pulled: on top of the sandbox base image,
//! from the pinned rustup toolchain already on the machine and the
//! workspace's own SDK sources.

mod image;
mod recipe;
mod run;
mod stage;

pub use image::{ImageOptions, Toolchain, cold_build, ensure_image, find_toolchain};
pub use recipe::BuilderRecipe;
pub use run::{BuildError, BuildLimits, Built, build, build_spec};
