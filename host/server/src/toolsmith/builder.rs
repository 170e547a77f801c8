//! The builder's recipe as the sandbox crate builds and runs it: the
//! toolsmith's texts and layout (`warden-toolsmith`) on top of the sandbox
//! base image. Its digest is the builder digest every `tool:create`
//! approval is bound to.

use warden_sandbox::builder::BuilderRecipe;
use warden_toolsmith::layout;

/// The builder recipe, on top of the sandbox base image's recipe.
pub fn builder_recipe() -> BuilderRecipe {
    let parent = warden_sandbox::images::ImageKind::Base.recipe().digest();
    BuilderRecipe {
        canonical: warden_toolsmith::builder_recipe(&parent),
        toolchain: warden_toolsmith::TOOLCHAIN.into(),
        target: warden_toolsmith::TARGET.into(),
        cargo_toml: warden_toolsmith::CARGO_TOML.into(),
        cargo_lock: warden_toolsmith::CARGO_LOCK.into(),
        cargo_config: warden_toolsmith::CARGO_CONFIG.into(),
        template_lib_rs: warden_toolsmith::TEMPLATE_LIB_RS.into(),
        rust_dir: layout::RUST.into(),
        vendor_dir: layout::VENDOR.into(),
        template_dir: layout::TEMPLATE.into(),
        build_dir: layout::BUILD.into(),
        artifact: layout::ARTIFACT.into(),
    }
}

/// The builder's identity: the digest of its image recipe.
pub fn builder_digest() -> String {
    builder_recipe().digest()
}
