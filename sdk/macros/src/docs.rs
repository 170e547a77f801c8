//! Doc comments and serde attributes, read off syn attributes.

use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Meta};

/// The doc comment of an item, with the one leading space of `/// ` removed.
pub fn doc(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            let line = s.value();
            lines.push(line.strip_prefix(' ').map(str::to_owned).unwrap_or(line));
        }
    }
    lines.join("\n").trim().to_owned()
}

/// The serde attributes of an item or field that change its JSON shape.
#[derive(Debug, Default)]
pub struct Serde {
    pub rename: Option<String>,
    pub rename_all: Option<String>,
    pub tag: Option<String>,
    pub default: bool,
    pub skip: bool,
    pub skip_serializing_if: bool,
    /// Options the schema cannot represent; an error names them.
    pub unsupported: Vec<String>,
}

pub fn serde(attrs: &[Attribute]) -> syn::Result<Serde> {
    let mut out = Serde::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "rename" => out.rename = Some(meta.value()?.parse::<LitStr>()?.value()),
                "rename_all" => out.rename_all = Some(meta.value()?.parse::<LitStr>()?.value()),
                "tag" => out.tag = Some(meta.value()?.parse::<LitStr>()?.value()),
                "default" => {
                    out.default = true;
                    if meta.input.peek(syn::Token![=]) {
                        meta.value()?.parse::<LitStr>()?;
                    }
                }
                "skip" | "skip_deserializing" => out.skip = true,
                "skip_serializing_if" => {
                    out.skip_serializing_if = true;
                    meta.value()?.parse::<LitStr>()?;
                }
                "deny_unknown_fields" | "skip_serializing" => {}
                "alias" | "with" | "deserialize_with" | "serialize_with" | "bound" | "crate" => {
                    meta.value()?.parse::<LitStr>()?;
                }
                other => {
                    out.unsupported.push(other.to_owned());
                    if meta.input.peek(syn::Token![=]) {
                        meta.value()?.parse::<Expr>()?;
                    }
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// Applies a serde `rename_all` rule to a Rust identifier.
pub fn rename(ident: &str, rule: Option<&str>, span: proc_macro2::Span) -> syn::Result<String> {
    let words = split_words(ident);
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let capital = |w: &String| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default()
    };
    Ok(match rule {
        None => ident.to_owned(),
        Some("lowercase") => ident.to_lowercase(),
        Some("UPPERCASE") => ident.to_uppercase(),
        Some("snake_case") => lower.join("_"),
        Some("SCREAMING_SNAKE_CASE") => lower.join("_").to_uppercase(),
        Some("kebab-case") => lower.join("-"),
        Some("SCREAMING-KEBAB-CASE") => lower.join("-").to_uppercase(),
        Some("camelCase") => {
            let mut s = lower.first().cloned().unwrap_or_default();
            s.extend(lower.iter().skip(1).map(capital));
            s
        }
        Some("PascalCase") => lower.iter().map(capital).collect(),
        Some(other) => {
            return Err(syn::Error::new(
                span,
                format!("unknown serde rename_all rule `{other}`"),
            ));
        }
    })
}

/// Splits `snake_case` and `PascalCase` identifiers into words.
fn split_words(ident: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in ident.chars() {
        if c == '_' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        } else if c.is_uppercase() && !current.is_empty() {
            words.push(std::mem::take(&mut current));
            current.push(c);
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}
