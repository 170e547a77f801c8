//! Blueprints: what an author (the connected agent, the client's model,
//! an operator's command) proposes for a recurring gap.
//!
//! Attack: an author widening what its tool may do, or naming it. A
//! blueprint carries only the capability, the texts, the schemas, the
//! body, the acceptance cases and a rationale; any other field (`name`,
//! `sandbox`, `network`, `category`, `grants`, dependencies, ...) refuses
//! the whole blueprint, at every depth. Everything that matters for
//! safety is derived by the host (`derive.rs`). Every part is bounded, so
//! a proposal cannot flood the store or the approval prompt.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BlueprintError, CapabilitySig};

/// The longest title, in characters.
pub const MAX_TITLE: usize = 120;
/// The longest description or rationale, in characters.
pub const MAX_TEXT: usize = 4096;
/// The largest input or output schema, serialised.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// The largest arguments or expectation of one case, serialised.
pub const MAX_CASE_BYTES: usize = 32 * 1024;
/// Acceptance cases: at least, at most.
pub const MIN_CASES: usize = 3;
pub const MAX_CASES: usize = 64;

/// Size limits an operator sets (`[toolsmith]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest `lib.rs`, in bytes.
    pub max_source_bytes: usize,
    /// The largest prebuilt component, in bytes (decoded).
    pub max_component_bytes: usize,
}

impl Limits {
    /// The largest blueprint text read at all: the body's limit plus room
    /// for the bounded rest.
    pub fn max_blueprint_bytes(&self) -> usize {
        let body = self
            .max_source_bytes
            .max(self.max_component_bytes.saturating_mul(4) / 3 + 4);
        body.saturating_add(2 * MAX_SCHEMA_BYTES)
            .saturating_add(MAX_CASES * MAX_CASE_BYTES)
            .saturating_add(3 * MAX_TEXT * 4 + 4096)
    }
}

/// A proposed tool, exactly as an author may write it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blueprint {
    /// `domain:action`, the gap it fills; the host names the tool from it.
    pub capability: String,
    pub title: String,
    pub description: String,
    /// JSON Schema (2020-12) of the arguments; `type` must be `object`.
    pub input_schema: Value,
    /// JSON Schema (2020-12) of the structured result; `type` `object`.
    pub output_schema: Value,
    pub body: Body,
    pub cases: Vec<Case>,
    pub rationale: String,
    /// The witness: the arguments of a request the gap recorded, as the
    /// author renders them (the gap log keeps no arguments). Validation
    /// calls the tool with them and the call must succeed. Required when
    /// the host recorded requests for the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<Value>,
}

/// What the tool is made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Body {
    /// `src/lib.rs` against `warden-sdk`; the host writes everything else
    /// (`Cargo.toml`, dependencies, profile).
    Rust { lib_rs: String },
    /// A prebuilt component: its sha256 (hex) and its bytes in base64.
    Component { sha256: String, base64: String },
}

/// One acceptance case: a call and what it must give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    /// The arguments (an object).
    pub args: Value,
    pub expect: Expect,
}

/// What a case expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Expect {
    /// A result; optionally checked against a schema, a value, or fields.
    Ok(OkExpect),
    /// An error result; optionally containing a text.
    Error(ErrorExpect),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OkExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldExpect>,
}

/// A field of the structured result, by JSON pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldExpect {
    pub pointer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exists: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
}

impl Blueprint {
    /// Reads and checks a blueprint; any unknown field, oversized part or
    /// malformed piece refuses it whole.
    pub fn parse(text: &str, limits: &Limits) -> Result<Blueprint, BlueprintError> {
        if text.len() > limits.max_blueprint_bytes() {
            return Err(BlueprintError::TooLarge {
                what: "the blueprint".into(),
                limit: limits.max_blueprint_bytes(),
            });
        }
        let mut read = serde_json::Deserializer::from_str(text);
        let blueprint: Blueprint =
            serde_path_to_error::deserialize(&mut read).map_err(|e| BlueprintError::Malformed {
                reason: match e.path().to_string().as_str() {
                    "." => e.inner().to_string(),
                    at => format!("at `{at}`: {}", e.inner()),
                },
            })?;
        read.end().map_err(|e| BlueprintError::Malformed {
            reason: e.to_string(),
        })?;
        blueprint.check(limits)?;
        Ok(blueprint)
    }

    /// Reads and checks a blueprint given as a JSON value (an MCP tool's
    /// argument).
    pub fn from_value(value: Value, limits: &Limits) -> Result<Blueprint, BlueprintError> {
        let text = serde_json::to_string(&value).map_err(|e| BlueprintError::Malformed {
            reason: e.to_string(),
        })?;
        Blueprint::parse(&text, limits)
    }

    /// The capability signature, checked: it must be the one its own
    /// generated name folds back into (no `_` in the domain), and that
    /// name must fit in 64 characters.
    pub fn signature(&self) -> Result<CapabilitySig, BlueprintError> {
        let bad = |reason: String| BlueprintError::Capability { reason };
        let (domain, action) = self
            .capability
            .split_once(':')
            .ok_or_else(|| bad("it must be `domain:action`".into()))?;
        let sig = CapabilitySig::new(domain, action).map_err(|e| bad(e.to_string()))?;
        let name = sig.tool_name();
        if CapabilitySig::of_tool(&name).ok().as_ref() != Some(&sig) {
            return Err(bad(format!(
                "`{domain}` may not contain `_` (the tool name `{name}` would read as another capability)"
            )));
        }
        if name.len() > crate::MAX_TOOL_NAME {
            return Err(bad(format!(
                "the tool name `{name}` is longer than {} characters",
                crate::MAX_TOOL_NAME
            )));
        }
        Ok(sig)
    }

    /// The canonical text every digest of the blueprint covers: its JSON
    /// with object keys sorted, no whitespace. A reformatted blueprint is
    /// the same blueprint; any changed value is another one.
    pub fn canonical(&self) -> String {
        // serde_json's map is ordered by key (no `preserve_order`), and
        // the structs serialise in declaration order.
        serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    fn check(&self, limits: &Limits) -> Result<(), BlueprintError> {
        self.signature()?;
        text("title", &self.title, MAX_TITLE, true)?;
        text("description", &self.description, MAX_TEXT, false)?;
        text("rationale", &self.rationale, MAX_TEXT, false)?;
        crate::schema::object_schema("input_schema", &self.input_schema)?;
        crate::schema::object_schema("output_schema", &self.output_schema)?;
        match &self.body {
            Body::Rust { lib_rs } => {
                if lib_rs.trim().is_empty() {
                    return Err(BlueprintError::Invalid {
                        what: "body.rust.lib_rs".into(),
                        reason: "is empty".into(),
                    });
                }
                if lib_rs.len() > limits.max_source_bytes {
                    return Err(BlueprintError::TooLarge {
                        what: "body.rust.lib_rs".into(),
                        limit: limits.max_source_bytes,
                    });
                }
            }
            Body::Component { sha256, base64 } => {
                let hex = sha256.len() == 64
                    && sha256
                        .chars()
                        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
                if !hex {
                    return Err(BlueprintError::Invalid {
                        what: "body.component.sha256".into(),
                        reason: "must be 64 lowercase hex digits".into(),
                    });
                }
                let b64 = base64
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='));
                if !b64 || base64.is_empty() {
                    return Err(BlueprintError::Invalid {
                        what: "body.component.base64".into(),
                        reason: "must be standard base64".into(),
                    });
                }
                if base64.len() / 4 * 3 > limits.max_component_bytes {
                    return Err(BlueprintError::TooLarge {
                        what: "body.component".into(),
                        limit: limits.max_component_bytes,
                    });
                }
            }
        }
        if let Some(witness) = &self.witness {
            if !witness.is_object() {
                return Err(BlueprintError::Invalid {
                    what: "witness".into(),
                    reason: "must be the arguments object of a call".into(),
                });
            }
            if witness.to_string().len() > MAX_CASE_BYTES {
                return Err(BlueprintError::TooLarge {
                    what: "witness".into(),
                    limit: MAX_CASE_BYTES,
                });
            }
        }
        crate::cases::check(&self.cases)
    }

    /// The witness as an acceptance case: a success.
    pub fn witness_case(&self) -> Option<Case> {
        self.witness.as_ref().map(|args| Case {
            name: "witness".into(),
            args: args.clone(),
            expect: Expect::Ok(OkExpect::default()),
        })
    }
}

fn text(what: &str, value: &str, max: usize, one_line: bool) -> Result<(), BlueprintError> {
    if value.trim().is_empty() {
        return Err(BlueprintError::Invalid {
            what: what.into(),
            reason: "is empty".into(),
        });
    }
    if value.chars().count() > max {
        return Err(BlueprintError::TooLarge {
            what: what.into(),
            limit: max,
        });
    }
    // Control and bidirectional characters would let a blueprint dress
    // up what a person sees in the approval prompt.
    let hidden = value.chars().any(|c| {
        (c.is_control() && !(c == '\n' || c == '\t') || one_line && c == '\n')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
    });
    if hidden {
        return Err(BlueprintError::Invalid {
            what: what.into(),
            reason: "contains control or bidirectional characters".into(),
        });
    }
    Ok(())
}
