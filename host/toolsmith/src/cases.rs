//! Acceptance cases: at least three, at least one success and one error,
//! each named once, bounded, with arguments that are an object and
//! expectations that are well-formed (schemas compile, pointers parse).

use std::collections::BTreeSet;

use crate::BlueprintError;
use crate::blueprint::{Case, Expect, MAX_CASE_BYTES, MAX_CASES, MIN_CASES};

pub(crate) fn check(cases: &[Case]) -> Result<(), BlueprintError> {
    let invalid = |what: String, reason: &str| BlueprintError::Invalid {
        what,
        reason: reason.into(),
    };
    if cases.len() < MIN_CASES {
        return Err(invalid(
            "cases".into(),
            "needs at least 3 cases, at least one success and one error",
        ));
    }
    if cases.len() > MAX_CASES {
        return Err(BlueprintError::TooLarge {
            what: "cases".into(),
            limit: MAX_CASES,
        });
    }
    let ok = cases
        .iter()
        .filter(|c| matches!(c.expect, Expect::Ok(_)))
        .count();
    if ok == 0 || ok == cases.len() {
        return Err(invalid(
            "cases".into(),
            "needs at least one success and at least one error case",
        ));
    }
    let mut names = BTreeSet::new();
    for (i, case) in cases.iter().enumerate() {
        let what = format!("cases[{i}]");
        let good_name = !case.name.is_empty()
            && case.name.len() <= 64
            && case
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '));
        if !good_name {
            return Err(invalid(
                format!("{what}.name"),
                "must be 1 to 64 of letters, digits, `_`, `-` and spaces",
            ));
        }
        if !names.insert(case.name.as_str()) {
            return Err(invalid(format!("{what}.name"), "is used by another case"));
        }
        if !case.args.is_object() {
            return Err(invalid(format!("{what}.args"), "must be an object"));
        }
        let size = case.args.to_string().len()
            + serde_json::to_string(&case.expect).map_or(usize::MAX, |s| s.len());
        if size > MAX_CASE_BYTES {
            return Err(BlueprintError::TooLarge {
                what,
                limit: MAX_CASE_BYTES,
            });
        }
        if let Expect::Ok(ok) = &case.expect {
            if let Some(schema) = &ok.schema {
                crate::schema::valid(&format!("{what}.expect.ok.schema"), schema)?;
            }
            for (j, field) in ok.fields.iter().enumerate() {
                let pointer_ok = field.pointer.is_empty() || field.pointer.starts_with('/');
                if !pointer_ok {
                    return Err(invalid(
                        format!("{what}.expect.ok.fields[{j}].pointer"),
                        "must be a JSON pointer (`/a/b`)",
                    ));
                }
                if field.equals.is_none() && !field.exists {
                    return Err(invalid(
                        format!("{what}.expect.ok.fields[{j}]"),
                        "needs `equals` or `exists: true`",
                    ));
                }
            }
        }
    }
    Ok(())
}
