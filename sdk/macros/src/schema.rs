//! JSON Schema (draft 2020-12) derived from Rust types at compile time.
//!
//! Covers what tool arguments and results are made of: scalars, strings,
//! `Option`, sequences, string-keyed maps, `serde_json::Value`, and the
//! structs and enums defined in the plugin module (named-field structs,
//! newtypes, unit-only enums, internally tagged enums), honouring the serde
//! attributes that change the JSON shape. Anything else is a compile error
//! that says what to do, never a wrong schema.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use syn::spanned::Spanned;
use syn::{Fields, GenericArgument, Item, ItemEnum, ItemStruct, PathArguments, Type};

use crate::docs;

/// The structs and enums of the plugin module, by name.
#[derive(Default)]
pub struct Types<'a> {
    structs: BTreeMap<String, &'a ItemStruct>,
    enums: BTreeMap<String, &'a ItemEnum>,
}

impl<'a> Types<'a> {
    pub fn collect(items: &'a [Item]) -> Types<'a> {
        let mut types = Types::default();
        for item in items {
            match item {
                Item::Struct(s) => {
                    types.structs.insert(s.ident.to_string(), s);
                }
                Item::Enum(e) => {
                    types.enums.insert(e.ident.to_string(), e);
                }
                _ => {}
            }
        }
        types
    }

    /// The schema of `ty`.
    pub fn schema(&self, ty: &Type) -> syn::Result<Value> {
        self.schema_in(ty, &mut Vec::new())
    }

    fn schema_in(&self, ty: &Type, stack: &mut Vec<String>) -> syn::Result<Value> {
        match ty {
            Type::Reference(r) => self.schema_in(&r.elem, stack),
            Type::Paren(p) => self.schema_in(&p.elem, stack),
            Type::Group(g) => self.schema_in(&g.elem, stack),
            Type::Tuple(t) if t.elems.is_empty() => Ok(json!({"type": "null"})),
            Type::Slice(s) => {
                Ok(json!({"type": "array", "items": self.schema_in(&s.elem, stack)?}))
            }
            Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return Err(unsupported(ty));
                };
                let name = last.ident.to_string();
                let args = generic_types(&last.arguments);
                self.path_schema(ty, &name, &args, stack)
            }
            _ => Err(unsupported(ty)),
        }
    }

    fn path_schema(
        &self,
        ty: &Type,
        name: &str,
        args: &[&Type],
        stack: &mut Vec<String>,
    ) -> syn::Result<Value> {
        let arg = |i: usize| args.get(i).copied().ok_or_else(|| unsupported(ty));
        Ok(match name {
            "bool" => json!({"type": "boolean"}),
            "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
                json!({"type": "integer", "minimum": 0})
            }
            "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => json!({"type": "integer"}),
            "f32" | "f64" => json!({"type": "number"}),
            "String" | "str" | "PathBuf" | "Path" | "Cow" => json!({"type": "string"}),
            "char" => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            "Value" => json!({}),
            "Option" => nullable(self.schema_in(arg(0)?, stack)?),
            "Box" | "Arc" | "Rc" => self.schema_in(arg(0)?, stack)?,
            "Vec" | "VecDeque" => {
                json!({"type": "array", "items": self.schema_in(arg(0)?, stack)?})
            }
            "HashSet" | "BTreeSet" => {
                json!({"type": "array", "uniqueItems": true, "items": self.schema_in(arg(0)?, stack)?})
            }
            "HashMap" | "BTreeMap" => {
                let key = self.schema_in(arg(0)?, stack)?;
                if key != json!({"type": "string"}) {
                    return Err(syn::Error::new(
                        ty.span(),
                        "map keys must be strings in JSON",
                    ));
                }
                json!({"type": "object", "additionalProperties": self.schema_in(arg(1)?, stack)?})
            }
            local => {
                if stack.iter().any(|s| s == local) {
                    return Err(syn::Error::new(
                        ty.span(),
                        format!(
                            "`{local}` refers to itself; recursive types cannot be described as tool arguments"
                        ),
                    ));
                }
                stack.push(local.to_owned());
                let schema = if let Some(s) = self.structs.get(local) {
                    self.struct_schema(s, stack)
                } else if let Some(e) = self.enums.get(local) {
                    self.enum_schema(e, stack)
                } else {
                    Err(unsupported(ty))
                };
                stack.pop();
                schema?
            }
        })
    }

    fn struct_schema(&self, s: &ItemStruct, stack: &mut Vec<String>) -> syn::Result<Value> {
        let attrs = docs::serde(&s.attrs)?;
        reject_unsupported(&attrs, s.ident.span())?;
        let mut schema = match &s.fields {
            Fields::Named(_) => {
                self.object(&s.fields, attrs.rename_all.as_deref(), attrs.default, stack)?
            }
            Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                let Some(field) = f.unnamed.first() else {
                    return Err(syn::Error::new(s.span(), "expected one field"));
                };
                self.schema_in(&field.ty, stack)?
            }
            _ => {
                return Err(syn::Error::new(
                    s.span(),
                    "tool types must be structs with named fields or newtypes",
                ));
            }
        };
        describe(&mut schema, &docs::doc(&s.attrs));
        Ok(schema)
    }

    /// An object schema for named fields: properties, required, and no
    /// other properties (typos in arguments are errors, not ignored).
    fn object(
        &self,
        fields: &Fields,
        rename_all: Option<&str>,
        all_default: bool,
        stack: &mut Vec<String>,
    ) -> syn::Result<Value> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for field in fields {
            let attrs = docs::serde(&field.attrs)?;
            reject_unsupported(&attrs, field.span())?;
            if attrs.skip {
                continue;
            }
            let Some(ident) = &field.ident else {
                return Err(syn::Error::new(field.span(), "expected a named field"));
            };
            let rust_name = ident.to_string();
            let rust_name = rust_name.trim_start_matches("r#");
            let name = match attrs.rename {
                Some(r) => r,
                None => docs::rename(rust_name, rename_all, ident.span())?,
            };
            let mut schema = self.schema_in(&field.ty, stack)?;
            describe(&mut schema, &docs::doc(&field.attrs));
            let optional =
                all_default || attrs.default || attrs.skip_serializing_if || is_option(&field.ty);
            if !optional {
                required.push(Value::String(name.clone()));
            }
            properties.insert(name, schema);
        }
        let mut schema =
            json!({"type": "object", "properties": properties, "additionalProperties": false});
        if !required.is_empty() {
            schema["required"] = Value::Array(required);
        }
        Ok(schema)
    }

    fn enum_schema(&self, e: &ItemEnum, stack: &mut Vec<String>) -> syn::Result<Value> {
        let attrs = docs::serde(&e.attrs)?;
        reject_unsupported(&attrs, e.ident.span())?;
        let variant_name = |v: &syn::Variant| -> syn::Result<String> {
            let va = docs::serde(&v.attrs)?;
            match va.rename {
                Some(r) => Ok(r),
                None => docs::rename(
                    &v.ident.to_string(),
                    attrs.rename_all.as_deref(),
                    v.ident.span(),
                ),
            }
        };
        let all_unit = e.variants.iter().all(|v| matches!(v.fields, Fields::Unit));
        let mut schema = match (&attrs.tag, all_unit) {
            (None, true) => {
                let names = e
                    .variants
                    .iter()
                    .map(variant_name)
                    .collect::<syn::Result<Vec<_>>>()?;
                json!({"type": "string", "enum": names})
            }
            (Some(tag), _) => {
                let mut one_of = Vec::new();
                for v in &e.variants {
                    let name = variant_name(v)?;
                    let mut object = match &v.fields {
                        Fields::Unit => {
                            json!({"type": "object", "properties": {}, "additionalProperties": false})
                        }
                        Fields::Named(_) => {
                            let va = docs::serde(&v.attrs)?;
                            self.object(&v.fields, va.rename_all.as_deref(), false, stack)?
                        }
                        Fields::Unnamed(_) => {
                            return Err(syn::Error::new(
                                v.span(),
                                "variants of an internally tagged enum must be unit or have named fields",
                            ));
                        }
                    };
                    object["properties"][tag.as_str()] = json!({"const": name});
                    let mut required = vec![Value::String(tag.clone())];
                    if let Some(Value::Array(r)) = object.get("required") {
                        required.extend(r.iter().cloned());
                    }
                    object["required"] = Value::Array(required);
                    describe(&mut object, &docs::doc(&v.attrs));
                    one_of.push(object);
                }
                json!({"type": "object", "oneOf": one_of})
            }
            (None, false) => {
                return Err(syn::Error::new(
                    e.ident.span(),
                    "enums with data need #[serde(tag = \"...\")] to be described as tool arguments",
                ));
            }
        };
        describe(&mut schema, &docs::doc(&e.attrs));
        Ok(schema)
    }
}

fn generic_types(args: &PathArguments) -> Vec<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// `T` or null: a `type` keyword gains `"null"`, anything else an `anyOf`.
fn nullable(schema: Value) -> Value {
    match schema.get("type") {
        Some(Value::String(t)) if schema.get("oneOf").is_none() => {
            let mut s = schema.clone();
            s["type"] = json!([t, "null"]);
            if let Some(Value::Array(values)) = s.get_mut("enum") {
                values.push(Value::Null);
            }
            s
        }
        _ => json!({"anyOf": [schema, {"type": "null"}]}),
    }
}

fn describe(schema: &mut Value, doc: &str) {
    if !doc.is_empty()
        && let Value::Object(map) = schema
    {
        map.insert("description".into(), Value::String(doc.to_owned()));
    }
}

fn reject_unsupported(attrs: &docs::Serde, span: proc_macro2::Span) -> syn::Result<()> {
    match attrs.unsupported.first() {
        None => Ok(()),
        Some(opt) => Err(syn::Error::new(
            span,
            format!(
                "#[serde({opt})] is not supported in tool types: the JSON Schema could not describe it"
            ),
        )),
    }
}

fn unsupported(ty: &Type) -> syn::Error {
    syn::Error::new(
        ty.span(),
        "unsupported type in a tool signature: use bool, integers, floats, String, PathBuf, Option, Vec, \
         sets, String-keyed maps, serde_json::Value, or a struct/enum defined inside this #[plugin] module",
    )
}
