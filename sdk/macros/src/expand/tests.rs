//! The macro's checks, driven with token streams: every mistake a plugin
//! author can make in a tool declaration is a compile error that says what
//! to write instead.

use quote::quote;
use serde_json::{Value, json};

use super::plugin;

fn expand_err(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
    match plugin(attr, item) {
        Ok(_) => panic!("expected a compile error"),
        Err(e) => e.to_string(),
    }
}

/// The manifest JSON the expansion embeds.
fn manifest(item: proc_macro2::TokenStream) -> Value {
    let out = plugin(quote!(name = "demo"), item)
        .expect("expands")
        .to_string();
    let start = out
        .find("const __WARDEN_MANIFEST_JSON")
        .expect("manifest const");
    let lit_start = start + out[start..].find('"').expect("literal");
    let lit: syn::LitStr =
        syn::parse_str(&out[lit_start..lit_start + out[lit_start..].find(';').expect("end")])
            .expect("string literal");
    serde_json::from_str(&lit.value()).expect("manifest is JSON")
}

fn tool_with(opts: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        mod demo {
            #[derive(Deserialize)]
            pub struct Args { pub path: String }
            /// Does a thing.
            #[tool(#opts)]
            fn go(args: Args) -> Result<String, ToolError> { Ok(args.path) }
        }
    }
}

#[test]
fn missing_category_is_a_compile_error() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "demo_go",
            action = "code:read",
            side_effect = false
        )),
    );
    assert!(e.contains("needs `category"), "{e}");
}

#[test]
fn unknown_category_is_a_compile_error() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "demo_go",
            category = "filesystem",
            action = "code:read",
            side_effect = false
        )),
    );
    assert!(
        e.contains("unknown category `filesystem`") && e.contains("file-system"),
        "{e}"
    );
}

#[test]
fn unknown_action_type_is_a_compile_error() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "demo_go",
            category = "file-system",
            action = "code:explode",
            side_effect = false
        )),
    );
    assert!(e.contains("unknown action type `code:explode`"), "{e}");
}

#[test]
fn side_effect_must_be_declared() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "demo_go",
            category = "file-system",
            action = "code:read"
        )),
    );
    assert!(e.contains("side_effect"), "{e}");
}

#[test]
fn tool_names_must_be_in_the_plugin_namespace() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "other_go",
            category = "file-system",
            action = "code:read",
            side_effect = false
        )),
    );
    assert!(e.contains("namespace"), "{e}");
}

#[test]
fn specifier_must_name_a_parameter() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "demo_go",
            category = "file-system",
            action = "code:read",
            side_effect = false,
            specifier = "{file}"
        )),
    );
    assert!(e.contains("`file`"), "{e}");
}

#[test]
fn examples_must_be_json() {
    let e = expand_err(
        quote!(name = "demo"),
        tool_with(quote!(
            name = "demo_go",
            category = "file-system",
            action = "code:read",
            side_effect = false,
            example(description = "x", args = "{not json")
        )),
    );
    assert!(e.contains("not JSON"), "{e}");
}

#[test]
fn unsupported_argument_types_are_compile_errors() {
    let e = expand_err(
        quote!(name = "demo"),
        quote! {
            mod demo {
                #[derive(Deserialize)]
                pub struct Args { pub when: std::time::SystemTime }
                /// Does a thing.
                #[tool(name = "demo_go", category = "memory", action = "memory:read", side_effect = false)]
                fn go(args: Args) -> Result<String, ToolError> { Ok(String::new()) }
            }
        },
    );
    assert!(e.contains("unsupported type"), "{e}");
}

#[test]
fn a_tool_must_return_a_result() {
    let e = expand_err(
        quote!(name = "demo"),
        quote! {
            mod demo {
                pub struct Args { pub a: u8 }
                /// Does a thing.
                #[tool(name = "demo_go", category = "memory", action = "memory:read", side_effect = false)]
                fn go(args: Args) -> String { String::new() }
            }
        },
    );
    assert!(e.contains("Result<T, ToolError>"), "{e}");
}

#[test]
fn a_tool_needs_a_summary() {
    let e = expand_err(
        quote!(name = "demo"),
        quote! {
            mod demo {
                pub struct Args { pub a: u8 }
                #[tool(name = "demo_go", category = "memory", action = "memory:read", side_effect = false)]
                fn go(args: Args) -> Result<u8, ToolError> { Ok(args.a) }
            }
        },
    );
    assert!(e.contains("doc comment"), "{e}");
}

#[test]
fn schemas_follow_the_rust_types_and_serde_attributes() {
    let m = manifest(quote! {
        mod demo {
            /// Arguments.
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            pub struct Args {
                /// The path.
                pub file_path: String,
                pub max_lines: Option<u32>,
                #[serde(default)]
                pub flags: Vec<Flag>,
                #[serde(rename = "env")]
                pub environment: std::collections::BTreeMap<String, i64>,
                #[serde(skip)]
                pub internal: u8,
                pub mode: Mode,
            }
            #[derive(Deserialize)]
            #[serde(rename_all = "kebab-case")]
            pub enum Flag { DryRun, Verbose }
            #[derive(Deserialize)]
            #[serde(tag = "kind", rename_all = "snake_case")]
            pub enum Mode { Fast, Careful { retries: u8 } }
            #[derive(Serialize)]
            pub struct Out { pub ok: bool, pub note: Option<String> }
            /// Does a thing.
            ///
            /// At length.
            #[tool(name = "demo_go", category = "memory", action = "memory:read", side_effect = false, specifier = "{filePath}")]
            fn go(args: Args) -> Result<Out, ToolError> { todo!() }
        }
    });
    let tool = &m["tools"][0];
    assert_eq!(tool["summary"], "Does a thing.");
    assert_eq!(tool["description"], "Does a thing.\n\nAt length.");
    let p = &tool["params-schema"];
    assert_eq!(p["description"], "Arguments.");
    assert_eq!(p["required"], json!(["filePath", "env", "mode"]));
    assert_eq!(p["additionalProperties"], false);
    assert_eq!(
        p["properties"]["filePath"],
        json!({"type": "string", "description": "The path."})
    );
    assert_eq!(
        p["properties"]["maxLines"],
        json!({"type": ["integer", "null"], "minimum": 0})
    );
    assert_eq!(
        p["properties"]["flags"]["items"],
        json!({"type": "string", "enum": ["dry-run", "verbose"]})
    );
    assert_eq!(
        p["properties"]["env"]["additionalProperties"],
        json!({"type": "integer"})
    );
    assert!(p["properties"].get("internal").is_none());
    let mode = &p["properties"]["mode"]["oneOf"];
    assert_eq!(mode[0]["properties"]["kind"], json!({"const": "fast"}));
    assert_eq!(mode[1]["required"], json!(["kind", "retries"]));
    assert_eq!(tool["result-schema"]["required"], json!(["ok"]));
    assert_eq!(
        tool["result-schema"]["properties"]["note"]["type"],
        json!(["string", "null"])
    );
}

#[test]
fn recursive_types_are_refused() {
    let e = expand_err(
        quote!(name = "demo"),
        quote! {
            mod demo {
                pub struct Node { pub children: Vec<Node> }
                /// Does a thing.
                #[tool(name = "demo_go", category = "memory", action = "memory:read", side_effect = false)]
                fn go(args: Node) -> Result<u8, ToolError> { Ok(0) }
            }
        },
    );
    assert!(e.contains("refers to itself"), "{e}");
}

fn valid_tool() -> proc_macro2::TokenStream {
    tool_with(quote!(
        name = "demo_go",
        category = "web",
        action = "external_data:request",
        side_effect = false
    ))
}

#[test]
fn network_and_env_requests_reach_the_manifest() {
    let out = plugin(
        quote!(
            name = "demo",
            network = ["HTTPS://api.example.com", "*.cdn.example:443"],
            env = ["API_TOKEN"]
        ),
        valid_tool(),
    )
    .expect("expands")
    .to_string();
    assert!(
        out.contains(r#"\"network\":[\"https://api.example.com:443\",\"*.cdn.example:443\"]"#),
        "{out}"
    );
    assert!(out.contains(r#"\"env\":[\"API_TOKEN\"]"#), "{out}");
}

#[test]
fn a_bad_network_pattern_is_a_compile_error() {
    let e = expand_err(quote!(name = "demo", network = ["*"]), valid_tool());
    assert!(e.contains("insecure:allow-all"), "{e}");
    let e = expand_err(quote!(name = "demo", network = [42]), valid_tool());
    assert!(e.contains("string literal"), "{e}");
}

#[test]
fn a_bad_env_key_is_a_compile_error() {
    let e = expand_err(quote!(name = "demo", env = ["NOT-A-KEY"]), valid_tool());
    assert!(e.contains("not an environment variable name"), "{e}");
}
