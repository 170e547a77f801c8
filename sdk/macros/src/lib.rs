//! Procedural macros of `warden-sdk`.
//!
//! Owns: `#[plugin]`, which reads a module of `#[tool]` functions and the
//! types they take and return, derives each tool's spec and JSON Schemas
//! from those Rust types, checks everything the host would check at load
//! (categories, action types, names, specifier templates) so mistakes are
//! compile errors, embeds the manifest as the `warden:manifest` custom
//! section, and generates the WIT exports.
//!
//! Does not own: the runtime support the generated code calls
//! (`warden_sdk::__private`).

mod attrs;
mod docs;
mod expand;
mod schema;

use proc_macro::TokenStream;

/// Turns an inline module of `#[tool]` functions into a Warden plugin.
///
/// Plugin options: `name = "fs"` (required; tool names must start with
/// `fs.`), `filesystem = "none" | "read" | "read-write"` (the most
/// directory access the plugin asks for; default `none`).
///
/// Tool options: `name`, `category`, `action`, `side_effect` (all
/// required), `summary` (default: the first line of the doc comment),
/// `specifier = "{path}"`, `example(description = "...", args = "{...}")`
/// and `resource(id = "...", path = "docs/x.md")` (repeatable).
#[proc_macro_attribute]
pub fn plugin(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand::plugin(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}
