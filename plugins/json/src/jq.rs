//! Compiling and running a jq filter with jaq.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use warden_sdk::ToolError;

/// Runs `filter` over the JSON `input`; returns at most `max` results and
/// whether there were more.
pub fn run(
    filter: &str,
    input: &str,
    max: usize,
) -> Result<(Vec<serde_json::Value>, bool), ToolError> {
    let input = jaq_json::read::parse_single(input.as_bytes()).map_err(|e| {
        ToolError::invalid_argument(format!("the input is not JSON: {e}")).with_code("invalid_json")
    })?;
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let program = File {
        code: filter,
        path: (),
    };
    let bad_filter = |what: String| {
        ToolError::invalid_argument(format!("filter `{filter}`: {what}"))
            .with_code("invalid_filter")
    };
    let modules = loader
        .load(&arena, program)
        .map_err(|errs| bad_filter(format!("does not parse ({} error(s))", errs.len())))?;
    let compiled = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| bad_filter(format!("does not compile: {}", undefined(&errs))))?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&compiled.lut, Vars::new([]));
    let mut results = Vec::new();
    for out in compiled.id.run((ctx, input)).map(unwrap_valr) {
        if results.len() == max {
            return Ok((results, true));
        }
        let val = out.map_err(|e| {
            ToolError::failed(format!("filter `{filter}` failed: {e}")).with_code("filter_error")
        })?;
        let json = serde_json::from_str(&val.to_string()).map_err(|e| {
            ToolError::failed(format!(
                "filter `{filter}` produced a value that is not JSON ({val}): {e}"
            ))
            .with_code("not_json")
        })?;
        results.push(json);
    }
    Ok((results, false))
}

/// The names a filter used but nobody defined.
fn undefined<S: std::fmt::Debug, E: std::fmt::Debug>(errs: &[(S, E)]) -> String {
    errs.iter()
        .map(|(_, e)| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join("; ")
}
