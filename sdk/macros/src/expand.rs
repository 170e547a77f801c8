//! The expansion of `#[plugin]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, Item, ItemFn, ItemMod, LitStr, PathArguments, ReturnType, Type};
use warden_api::{Example, FsAccess, Manifest, PluginId, RequestedCapabilities, ToolSpec};

use crate::attrs::{self, ToolOpts};
use crate::docs;
use crate::schema::Types;

/// One `#[tool]` function.
struct Tool {
    spec: ToolSpec,
    func: syn::Ident,
    takes_context: bool,
    resources: Vec<attrs::ResourceOpt>,
}

pub fn plugin(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let opts = attrs::plugin(attr)?;
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = &mut module.content else {
        return Err(syn::Error::new(
            module.span(),
            "#[plugin] needs an inline module: `mod name { ... }`",
        ));
    };

    let snapshot = items.clone();
    let types = Types::collect(&snapshot);
    let mut tools = Vec::new();
    for item in items.iter_mut() {
        if let Item::Fn(f) = item
            && let Some(pos) = f.attrs.iter().position(attrs::is_tool)
        {
            let attr = f.attrs.remove(pos);
            let tool_opts = attrs::tool(&attr)?;
            tools.push(tool(f, tool_opts, &types)?);
        }
    }

    let filesystem = match opts.filesystem.value().as_str() {
        "none" => FsAccess::None,
        "read" => FsAccess::Read,
        "read-write" => FsAccess::ReadWrite,
        _ => {
            return Err(syn::Error::new(
                opts.filesystem.span(),
                "filesystem must be \"none\", \"read\" or \"read-write\"",
            ));
        }
    };
    let manifest = Manifest {
        manifest_version: warden_api::MANIFEST_VERSION,
        wit: warden_api::WIT_PACKAGE.to_owned(),
        plugin: PluginId {
            name: opts.name.value(),
            version: std::env::var("CARGO_PKG_VERSION").unwrap_or_else(|_| "0.0.0".into()),
        },
        capabilities: RequestedCapabilities {
            filesystem,
            network: opts
                .network
                .iter()
                .map(|p| p.value().parse().map_err(|e| err_at(p, e)))
                .collect::<syn::Result<_>>()?,
            env: opts.env.iter().map(LitStr::value).collect(),
        },
        tools: tools.iter().map(|t| t.spec.clone()).collect(),
    };
    for key in &opts.env {
        warden_api::check_env_key(&key.value()).map_err(|e| err_at(key, e))?;
    }
    manifest
        .check()
        .map_err(|e| syn::Error::new(opts.name.span(), e.to_string()))?;

    let generated = generate(&manifest, &tools);
    items.extend(syn::parse2::<syn::File>(generated)?.items);
    Ok(quote!(#module))
}

fn tool(f: &ItemFn, opts: ToolOpts, types: &Types) -> syn::Result<Tool> {
    let required = |v: Option<LitStr>, what: &str| {
        v.ok_or_else(|| syn::Error::new(opts.span, format!("#[tool] needs `{what} = \"...\"`")))
    };
    let name_lit = required(opts.name.clone(), "name")?;
    let category_lit = required(opts.category.clone(), "category")?;
    let action_lit = required(opts.action.clone(), "action")?;
    let side_effect = opts.side_effect.ok_or_else(|| {
        syn::Error::new(
            opts.span,
            "#[tool] needs `side_effect = true` or `side_effect = false`",
        )
    })?;

    let inputs: Vec<&FnArg> = f.sig.inputs.iter().collect();
    let (takes_context, args_ty) = match inputs.as_slice() {
        [FnArg::Typed(args)] => (false, &*args.ty),
        [FnArg::Typed(ctx), FnArg::Typed(args)] if matches!(*ctx.ty, Type::Reference(_)) => {
            (true, &*args.ty)
        }
        _ => {
            return Err(syn::Error::new(
                f.sig.inputs.span(),
                "a tool takes `(args: Args)` or `(ctx: &Context, args: Args)`",
            ));
        }
    };
    let result_ty = ok_type(&f.sig.output)?;

    let description = docs::doc(&f.attrs);
    let summary = match opts.summary {
        Some(s) => s,
        None => description
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
    };
    if summary.is_empty() {
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "a tool needs a doc comment (its first line is the summary) or `summary = \"...\"`",
        ));
    }
    let mut examples = Vec::new();
    for ex in &opts.examples {
        let args = serde_json::from_str(&ex.args.value()).map_err(|e| {
            syn::Error::new(ex.args.span(), format!("example args are not JSON: {e}"))
        })?;
        examples.push(Example {
            description: ex.description.clone(),
            args,
        });
    }
    let params_schema = types.schema(args_ty)?;
    let spec = ToolSpec {
        name: name_lit.value().parse().map_err(|e| err_at(&name_lit, e))?,
        summary,
        description,
        category: category_lit
            .value()
            .parse()
            .map_err(|e| err_at(&category_lit, e))?,
        action_type: action_lit
            .value()
            .parse()
            .map_err(|e| err_at(&action_lit, e))?,
        params_schema,
        result_schema: types.schema(result_ty)?,
        side_effect,
        specifier_template: opts.specifier,
        examples,
        resources: opts.resources.iter().map(|r| r.id.clone()).collect(),
    };
    spec.check().map_err(|e| err_at(&name_lit, e))?;
    Ok(Tool {
        spec,
        func: f.sig.ident.clone(),
        takes_context,
        resources: opts.resources,
    })
}

/// `T` of a `-> Result<T, E>` return type.
fn ok_type(output: &ReturnType) -> syn::Result<&Type> {
    if let ReturnType::Type(_, ty) = output
        && let Type::Path(p) = &**ty
        && let Some(last) = p.path.segments.last()
        && last.ident == "Result"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(syn::GenericArgument::Type(t)) = args.args.first()
    {
        return Ok(t);
    }
    Err(syn::Error::new(
        output.span(),
        "a tool returns `Result<T, ToolError>`",
    ))
}

fn err_at(lit: &LitStr, e: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(lit.span(), e.to_string())
}

fn generate(manifest: &Manifest, tools: &[Tool]) -> TokenStream {
    let json = manifest.to_json();
    let json_lit = LitStr::new(&json, Span::call_site());
    let bytes = syn::LitByteStr::new(json.as_bytes(), Span::call_site());
    let len = json.len();

    let arms = tools.iter().map(|t| {
        let name = t.spec.name.as_str();
        let func = &t.func;
        let call = if t.takes_context {
            quote!(|ctx, args| #func(ctx, args))
        } else {
            quote!(|_ctx, args| #func(args))
        };
        quote!(#name => ::warden_sdk::__private::run(&ctx, &args_json, #call),)
    });
    let resource_arms = tools.iter().flat_map(|t| {
        let name = t.spec.name.as_str();
        t.resources.iter().map(move |r| {
            let id = &r.id;
            let path = format!("/{}", r.path.value());
            quote!((#name, #id) => ::core::result::Result::Ok(
                ::std::string::String::from(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), #path)))
            ),)
        })
    });
    let plugin_ty = format_ident!("__WardenPlugin");

    quote! {
        #[doc(hidden)]
        const __WARDEN_MANIFEST_JSON: &str = #json_lit;

        /// The manifest, readable by the host without running this code.
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        #[allow(unsafe_code)]
        #[unsafe(link_section = "warden:manifest")]
        #[used]
        static __WARDEN_MANIFEST_SECTION: [u8; #len] = *#bytes;

        #[doc(hidden)]
        struct #plugin_ty;

        impl ::warden_sdk::__private::Guest for #plugin_ty {
            fn tools() -> ::std::vec::Vec<::warden_sdk::__private::WitToolSpec> {
                ::warden_sdk::__private::tools(__WARDEN_MANIFEST_JSON)
            }

            fn invoke(
                context: ::warden_sdk::__private::WitCallContext,
                name: ::std::string::String,
                args_json: ::std::string::String,
            ) -> ::core::result::Result<::std::string::String, ::warden_sdk::__private::WitToolError> {
                let ctx = ::warden_sdk::__private::context(context);
                match name.as_str() {
                    #(#arms)*
                    other => ::core::result::Result::Err(::warden_sdk::__private::unknown_tool(other)),
                }
            }

            fn resource(
                tool: ::std::string::String,
                id: ::std::string::String,
            ) -> ::core::result::Result<::std::string::String, ::warden_sdk::__private::WitToolError> {
                match (tool.as_str(), id.as_str()) {
                    #(#resource_arms)*
                    _ => ::core::result::Result::Err(::warden_sdk::__private::unknown_resource(&tool, &id)),
                }
            }
        }

        ::warden_sdk::__private::bindings::__export!(#plugin_ty with_types_in ::warden_sdk::__private::bindings);
    }
}

#[cfg(test)]
mod tests;
