//! How the validation gate judges a generated tool's calls: what a case's
//! observed result must be to pass, and the negative cases the host adds
//! from the input schema, which the author cannot remove.
//!
//! Attack: a tool that goes live on cases it only seems to pass — a
//! success without structured content, or with content its own
//! `outputSchema` does not describe (clients hold results to it), or an
//! author's cases that never try bad input. Every success must carry
//! `structuredContent` (an object) valid against the output schema,
//! whatever the case expects; an error case passes only on an error; and
//! the host's negative cases (a required property missing, a property of
//! the wrong type) are arguments the input schema rejects, so the gate
//! must refuse them before the tool runs.

use serde_json::{Map, Value};

use crate::blueprint::{Case, Expect, OkExpect};

/// What one call gave, as the validation gate saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observed<'a> {
    /// A success with this data (its `structuredContent` when an object).
    Ok(&'a Value),
    /// An error result with this message.
    Error(&'a str),
}

/// Whether `observed` passes `case`; the reason when it does not.
pub fn judge(case: &Case, observed: Observed<'_>, output_schema: &Value) -> Result<(), String> {
    match (&case.expect, observed) {
        (Expect::Ok(expect), Observed::Ok(data)) => judge_ok(expect, data, output_schema),
        (Expect::Ok(_), Observed::Error(message)) => {
            Err(format!("expected a result, got an error: {message}"))
        }
        (Expect::Error(expect), Observed::Error(message)) => match &expect.contains {
            Some(text) if !message.contains(text.as_str()) => {
                Err(format!("the error does not contain `{text}`: {message}"))
            }
            _ => Ok(()),
        },
        (Expect::Error(_), Observed::Ok(data)) => {
            Err(format!("expected an error, got a result: {data}"))
        }
    }
}

fn judge_ok(expect: &OkExpect, data: &Value, output_schema: &Value) -> Result<(), String> {
    if !data.is_object() {
        return Err(format!(
            "the result has no structuredContent (its data is not an object: {data})"
        ));
    }
    violations("the outputSchema", output_schema, data)?;
    if let Some(schema) = &expect.schema {
        violations("the case's schema", schema, data)?;
    }
    if let Some(equals) = &expect.equals
        && equals != data
    {
        return Err(format!("expected {equals}, got {data}"));
    }
    for field in &expect.fields {
        match (data.pointer(&field.pointer), &field.equals) {
            (None, _) => return Err(format!("`{}` is missing from {data}", field.pointer)),
            (Some(got), Some(want)) if got != want => {
                return Err(format!("`{}` is {got}, expected {want}", field.pointer));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `Err` naming the first violations of `schema` by `value`.
fn violations(what: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let validator = jsonschema::draft202012::new(schema)
        .map_err(|e| format!("{what} does not compile: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| format!("{} at `{}`", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("violates {what}: {}", errors.join("; ")))
    }
}

/// A call the host adds: arguments the input schema rejects.
#[derive(Debug, Clone, PartialEq)]
pub struct NegativeCase {
    pub name: String,
    pub args: Value,
}

/// The host's negative cases for a tool with `input_schema`, made from
/// `valid` (a success case's arguments): one with the first required
/// property removed, one with the first typed property given a value of
/// another type. Only arguments the schema really rejects are returned.
pub fn negative_cases(input_schema: &Value, valid: &Value) -> Vec<NegativeCase> {
    let Some(args) = valid.as_object() else {
        return Vec::new();
    };
    let mut cases = Vec::new();
    let required = input_schema
        .get("required")
        .and_then(Value::as_array)
        .and_then(|r| r.iter().find_map(Value::as_str));
    if let Some(name) = required {
        let mut missing = args.clone();
        missing.remove(name);
        cases.push(NegativeCase {
            name: format!("host: `{name}` missing"),
            args: Value::Object(missing),
        });
    }
    let typed = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| {
            p.iter()
                .find_map(|(name, s)| Some((name, s.get("type")?.as_str()?)))
        });
    if let Some((name, ty)) = typed {
        let mut wrong = args.clone();
        wrong.insert(name.clone(), other_than(ty));
        cases.push(NegativeCase {
            name: format!("host: `{name}` not of type {ty}"),
            args: Value::Object(wrong),
        });
    }
    let Ok(validator) = jsonschema::draft202012::new(input_schema) else {
        return Vec::new();
    };
    cases.retain(|c| !validator.is_valid(&c.args));
    cases
}

/// A JSON value that is not of JSON Schema type `ty`.
fn other_than(ty: &str) -> Value {
    match ty {
        "string" => Value::from(12345),
        "object" | "array" | "null" => Value::from("not this"),
        _ => Value::Object(Map::new()),
    }
}
