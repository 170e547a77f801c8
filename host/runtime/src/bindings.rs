//! Host bindings of the `warden:tool` world: the one `bindgen!` over `wit/`.
//! Exports are async (they run on fibers so epochs can interrupt them);
//! the `host` imports are synchronous and cannot trap.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "plugin",
    exports: { default: async },
});

pub use warden::tool::host::LogLevel;
pub use warden::tool::types::{Category, ErrorKind};

/// The host's category for a WIT category.
pub fn category(c: Category) -> warden_api::Category {
    use warden_api::Category as C;
    match c {
        Category::FileSystem => C::FileSystem,
        Category::CodeExecution => C::CodeExecution,
        Category::VersionControl => C::VersionControl,
        Category::Web => C::Web,
        Category::Database => C::Database,
        Category::Terminal => C::Terminal,
        Category::Design => C::Design,
        Category::Communication => C::Communication,
        Category::Analytics => C::Analytics,
        Category::Deployment => C::Deployment,
        Category::Memory => C::Memory,
        Category::Browser => C::Browser,
        Category::ExternalData => C::ExternalData,
        Category::Desktop => C::Desktop,
        Category::Mcp => C::Mcp,
    }
}
