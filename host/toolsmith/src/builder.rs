//! The builder's identity, as text a digest covers: the recipe of the
//! image a blueprint's source is compiled in. It is built the way the
//! sandbox images are (a recipe's canonical text, hashed by the caller):
//! the parent image's recipe digest, the pinned toolchain and target,
//! the layout inside the image, and the files the host writes around the
//! author's `lib.rs` (`Cargo.toml`, the lock file, the cargo
//! configuration that keeps the build offline). A change to any of them
//! is another builder, and voids every approval bound to the old one.

/// Bumped when the build procedure itself changes meaning.
const FORMAT: &str = "warden-toolsmith-builder/2";

/// The toolchain the builder runs (the workspace's `rust-toolchain.toml`).
pub const TOOLCHAIN: &str = "1.95.0";

/// The target every generated tool is built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Where things are inside the builder image. The dependency set is
/// pre-built at exactly these paths, so a tool's build reuses it.
pub mod layout {
    /// The toolchain (`bin/cargo`, `bin/rustc`, the host and wasm std).
    pub const RUST: &str = "/opt/warden/rust";
    /// The vendored dependency set: the SDK's sources (`sdk/`, `wit/`,
    /// `host/api/` under a workspace root of their own) and the crates.io
    /// crates (`crates/`).
    pub const VENDOR: &str = "/opt/warden/vendor";
    /// The pre-built crate (host-written files and `target/`), copied to
    /// [`BUILD`] at the start of every build.
    pub const TEMPLATE: &str = "/opt/warden/template";
    /// The build directory: a tmpfs in the build container.
    pub const BUILD: &str = "/opt/warden/build";
    /// The component a build produces, relative to [`BUILD`].
    pub const ARTIFACT: &str = "target/wasm32-wasip2/release/generated.wasm";
}

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
warden-sdk = { path = "/opt/warden/vendor/sdk" }
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

/// The lock file of [`CARGO_TOML`]: the exact crates.io versions the
/// dependency set is vendored and pre-built from.
pub const CARGO_LOCK: &str = include_str!("builder.lock");

/// `.cargo/config.toml` of the build directory: crates.io is replaced by
/// the vendored directory and cargo never goes online.
pub const CARGO_CONFIG: &str = r#"[source.crates-io]
replace-with = "vendored"

[source.vendored]
directory = "/opt/warden/vendor/crates"

[net]
offline = true

[term]
color = "never"
progress.when = "never"
"#;

/// The `lib.rs` the dependency set is pre-built with when the image is
/// made (its own outputs are removed afterwards; a tool's build replaces
/// it).
pub const TEMPLATE_LIB_RS: &str = r#"#[warden_sdk::plugin(name = "gen_builder")]
mod tool {
    use warden_sdk::prelude::*;

    #[derive(Deserialize)]
    pub struct Args {
        /// The text.
        pub text: String,
    }

    #[derive(Serialize)]
    pub struct Out {
        pub words: u64,
    }

    /// Count words.
    #[tool(name = "gen_builder_probe", category = "analytics", action = "code:read", side_effect = false)]
    fn probe(args: Args) -> Result<Out, ToolError> {
        Ok(Out { words: args.text.split_whitespace().count() as u64 })
    }
}
"#;

/// The builder recipe's canonical text, on top of the image whose recipe
/// digest is `parent` (the sandbox base image).
pub fn builder_recipe(parent: &str) -> String {
    format!(
        "{FORMAT}\nparent {parent}\ntoolchain {TOOLCHAIN}\ntarget {TARGET}\nnetwork none\n\
         layout rust {} vendor {} template {} build {} artifact {}\n\
         build cargo build --frozen --offline --release --target {TARGET}\n\
         file Cargo.toml\n{CARGO_TOML}\
         file Cargo.lock\n{CARGO_LOCK}\
         file .cargo/config.toml\n{CARGO_CONFIG}\
         file template src/lib.rs\n{TEMPLATE_LIB_RS}",
        layout::RUST,
        layout::VENDOR,
        layout::TEMPLATE,
        layout::BUILD,
        layout::ARTIFACT,
    )
}
