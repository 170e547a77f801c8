//! The builder's identity, as text a digest covers: the recipe of the
//! image a blueprint's source is compiled in. It is built the way the
//! sandbox images are (a recipe's canonical text, hashed by the caller):
//! the parent image's recipe digest, the pinned toolchain and target,
//! and the files the host writes around the author's `lib.rs`. A change
//! to any of them is another builder, and voids every approval bound to
//! the old one.

/// Bumped when the build procedure itself changes meaning.
const FORMAT: &str = "warden-toolsmith-builder/1";

/// The toolchain the builder runs (the workspace's `rust-toolchain.toml`).
pub const TOOLCHAIN: &str = "1.95.0";

/// The target every generated tool is built for.
pub const TARGET: &str = "wasm32-wasip2";

/// The `Cargo.toml` the host writes for every generated tool: fixed
/// dependencies, no build script, a fixed release profile. Only
/// `src/lib.rs` comes from the blueprint.
pub const CARGO_TOML: &str = r#"[package]
name = "generated"
version = "0.1.0"
edition = "2024"
build = false
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
warden-sdk = { path = "/vendor/warden-sdk" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

[profile.release]
opt-level = "s"
debug = false
strip = true
lto = true
codegen-units = 1
panic = "abort"
"#;

/// The builder recipe's canonical text, on top of the image whose recipe
/// digest is `parent` (the sandbox base image).
pub fn builder_recipe(parent: &str) -> String {
    format!(
        "{FORMAT}\nparent {parent}\ntoolchain {TOOLCHAIN}\ntarget {TARGET}\nnetwork none\n\
         build cargo build --frozen --offline --release --target {TARGET}\n\
         file Cargo.toml\n{CARGO_TOML}"
    )
}
