//! What the builder image is made of, as data the caller (the server,
//! from `warden-toolsmith`) hands over: this crate knows how to build and
//! run the image, not what a generated tool's crate looks like.

/// The builder's recipe: its canonical text (what the image tag and
/// every approval's builder digest cover) and the files and paths it
/// describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuilderRecipe {
    /// The canonical text; its sha256 names the image.
    pub canonical: String,
    /// The rustup toolchain, e.g. `1.95.0`.
    pub toolchain: String,
    /// The target tools are built for, e.g. `wasm32-wasip2`.
    pub target: String,
    pub cargo_toml: String,
    pub cargo_lock: String,
    pub cargo_config: String,
    /// The `lib.rs` the dependency set is pre-built with.
    pub template_lib_rs: String,
    /// Absolute paths inside the image.
    pub rust_dir: String,
    pub vendor_dir: String,
    pub template_dir: String,
    pub build_dir: String,
    /// The built component, relative to `build_dir`.
    pub artifact: String,
}

impl BuilderRecipe {
    /// `sha256:<hex>` of the canonical text.
    pub fn digest(&self) -> String {
        warden_signing::sha256_digest(self.canonical.as_bytes())
    }

    /// The image reference: `<prefix>-toolsmith-builder:<first 16 hex digits>`.
    pub fn tag(&self, prefix: &str) -> String {
        let digest = self.digest();
        let hex = digest.trim_start_matches("sha256:");
        format!("{prefix}-toolsmith-builder:{}", &hex[..16.min(hex.len())])
    }
}
