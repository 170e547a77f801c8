//! The options of `#[plugin(...)]` and `#[tool(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Attribute, LitBool, LitStr};

/// `#[plugin(name = "...", filesystem = "...", network = [...], env = [...])]`.
pub struct PluginOpts {
    pub name: LitStr,
    pub filesystem: LitStr,
    /// Requested network patterns, e.g. `["api.example.com:443"]`.
    pub network: Vec<LitStr>,
    /// Requested environment variable names.
    pub env: Vec<LitStr>,
}

pub fn plugin(attr: TokenStream) -> syn::Result<PluginOpts> {
    let mut name = None;
    let mut filesystem = None;
    let mut network = Vec::new();
    let mut env = Vec::new();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            name = Some(meta.value()?.parse::<LitStr>()?);
        } else if meta.path.is_ident("filesystem") {
            filesystem = Some(meta.value()?.parse::<LitStr>()?);
        } else if meta.path.is_ident("network") {
            network = string_list(&meta)?;
        } else if meta.path.is_ident("env") {
            env = string_list(&meta)?;
        } else {
            return Err(meta.error(
                "unknown plugin option; expected `name`, `filesystem`, `network` or `env`",
            ));
        }
        Ok(())
    });
    parser.parse2(attr)?;
    Ok(PluginOpts {
        name: name.ok_or_else(|| {
            syn::Error::new(Span::call_site(), "#[plugin] needs `name = \"...\"`")
        })?,
        filesystem: filesystem.unwrap_or_else(|| LitStr::new("none", Span::call_site())),
        network,
        env,
    })
}

/// `key = ["a", "b"]`.
fn string_list(meta: &ParseNestedMeta) -> syn::Result<Vec<LitStr>> {
    let array: syn::ExprArray = meta.value()?.parse()?;
    array
        .elems
        .iter()
        .map(|e| match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Ok(s.clone()),
            other => Err(syn::Error::new_spanned(other, "expected a string literal")),
        })
        .collect()
}

pub struct ExampleOpt {
    pub description: String,
    pub args: LitStr,
}

pub struct ResourceOpt {
    pub id: String,
    pub path: LitStr,
}

/// `#[tool(...)]` on a function.
pub struct ToolOpts {
    pub span: Span,
    pub name: Option<LitStr>,
    pub category: Option<LitStr>,
    pub action: Option<LitStr>,
    pub side_effect: Option<bool>,
    pub summary: Option<String>,
    pub specifier: Option<String>,
    pub examples: Vec<ExampleOpt>,
    pub resources: Vec<ResourceOpt>,
}

pub fn is_tool(attr: &Attribute) -> bool {
    attr.path().is_ident("tool")
}

pub fn tool(attr: &Attribute) -> syn::Result<ToolOpts> {
    let mut opts = ToolOpts {
        span: attr
            .path()
            .get_ident()
            .map_or_else(Span::call_site, |i| i.span()),
        name: None,
        category: None,
        action: None,
        side_effect: None,
        summary: None,
        specifier: None,
        examples: Vec::new(),
        resources: Vec::new(),
    };
    attr.parse_nested_meta(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => opts.name = Some(meta.value()?.parse()?),
            "category" => opts.category = Some(meta.value()?.parse()?),
            "action" => opts.action = Some(meta.value()?.parse()?),
            "side_effect" => opts.side_effect = Some(meta.value()?.parse::<LitBool>()?.value),
            "summary" => opts.summary = Some(meta.value()?.parse::<LitStr>()?.value()),
            "specifier" => opts.specifier = Some(meta.value()?.parse::<LitStr>()?.value()),
            "example" => opts.examples.push(example(&meta)?),
            "resource" => opts.resources.push(resource(&meta)?),
            _ => {
                return Err(meta.error(
                    "unknown tool option; expected name, category, action, side_effect, summary, \
                     specifier, example(...) or resource(...)",
                ));
            }
        }
        Ok(())
    })?;
    Ok(opts)
}

fn example(meta: &ParseNestedMeta) -> syn::Result<ExampleOpt> {
    let mut description = None;
    let mut args = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("description") {
            description = Some(inner.value()?.parse::<LitStr>()?.value());
        } else if inner.path.is_ident("args") {
            args = Some(inner.value()?.parse::<LitStr>()?);
        } else {
            return Err(inner.error("expected `description` or `args`"));
        }
        Ok(())
    })?;
    Ok(ExampleOpt {
        description: description
            .ok_or_else(|| meta.error("example needs `description = \"...\"`"))?,
        args: args.ok_or_else(|| meta.error("example needs `args = \"{...}\"`"))?,
    })
}

fn resource(meta: &ParseNestedMeta) -> syn::Result<ResourceOpt> {
    let mut id = None;
    let mut path = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("id") {
            id = Some(inner.value()?.parse::<LitStr>()?.value());
        } else if inner.path.is_ident("path") {
            path = Some(inner.value()?.parse::<LitStr>()?);
        } else {
            return Err(inner.error("expected `id` or `path`"));
        }
        Ok(())
    })?;
    Ok(ResourceOpt {
        id: id.ok_or_else(|| meta.error("resource needs `id = \"...\"`"))?,
        path: path.ok_or_else(|| {
            meta.error("resource needs `path = \"docs/...\"` (relative to the crate)")
        })?,
    })
}
