//! Reading a git tool's arguments (the gate has validated them against
//! the schema; these say which one is wrong if not).

use serde_json::Value;
use warden_api::BackendCall;

use crate::tools::Failure;

pub(super) fn opt_str<'a>(
    call: &'a BackendCall<'_>,
    name: &str,
) -> Result<Option<&'a str>, Failure> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Failure::args(format!("`{name}` must be a string"))),
    }
}

pub(super) fn str_arg<'a>(call: &'a BackendCall<'_>, name: &str) -> Result<&'a str, Failure> {
    opt_str(call, name)?.ok_or_else(|| Failure::args(format!("`{name}` is required")))
}

pub(super) fn flag(call: &BackendCall<'_>, name: &str) -> Result<bool, Failure> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Failure::args(format!("`{name}` must be true or false"))),
    }
}

pub(super) fn strings(call: &BackendCall<'_>, name: &str) -> Result<Vec<String>, Failure> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| Failure::args(format!("`{name}[{i}]` must be a string")))
            })
            .collect(),
        Some(_) => Err(Failure::args(format!(
            "`{name}` must be an array of strings"
        ))),
    }
}

pub(super) fn opt_u32(call: &BackendCall<'_>, name: &str) -> Result<Option<u32>, Failure> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| Failure::args(format!("`{name}` must be a whole number"))),
    }
}
