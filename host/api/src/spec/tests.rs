use serde_json::json;

use super::*;

fn spec() -> ToolSpec {
    ToolSpec {
        name: "fs.read".parse().unwrap(),
        summary: "Read a file".into(),
        description: "Read a file".into(),
        category: Category::FileSystem,
        action_type: "code:read".parse().unwrap(),
        params_schema: json!({"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}}}),
        result_schema: json!({}),
        side_effect: false,
        specifier_template: Some("{path}".into()),
        examples: vec![],
        resources: vec![],
    }
}

#[test]
fn tool_names_are_normalised_and_checked() {
    assert_eq!(" FS.Read ".parse::<ToolName>().unwrap().as_str(), "fs.read");
    for bad in [
        "read", "fs.", ".read", "fs.re-ad", "fs.1read", "fs read", "",
    ] {
        assert!(bad.parse::<ToolName>().is_err(), "{bad} accepted");
    }
    assert_eq!("a.b.c".parse::<ToolName>().unwrap().namespace(), "a");
}

#[test]
fn unknown_category_and_action_type_are_errors() {
    assert!("filesystem".parse::<Category>().is_err());
    assert_eq!(
        "file-system".parse::<Category>().unwrap(),
        Category::FileSystem
    );
    assert!("code:explode".parse::<ActionType>().is_err());
    assert_eq!("db:query".parse::<ActionType>().unwrap().category(), "db");
}

#[test]
fn template_must_name_declared_parameters() {
    let mut s = spec();
    s.check().unwrap();
    s.specifier_template = Some("{file}".into());
    let err = s.check().unwrap_err().to_string();
    assert!(err.contains("`file`"), "{err}");
    s.specifier_template = Some("{path".into());
    assert!(s.check().is_err());
}

#[test]
fn summary_must_be_one_line() {
    let mut s = spec();
    s.summary = "two\nlines".into();
    assert!(s.check().is_err());
}

#[test]
fn specifier_renders_strings_raw_and_others_as_json() {
    let s = spec();
    assert_eq!(s.render_specifier(&json!({"path": "a b"})).unwrap(), "a b");
    let mut s2 = spec();
    s2.specifier_template = Some("{path}:{n}".into());
    assert_eq!(
        s2.render_specifier(&json!({"path": "x", "n": 3})).unwrap(),
        "x:3"
    );
    assert_eq!(s2.render_specifier(&json!({})).unwrap(), ":");
    assert_eq!(render_template("{app} {args}", &json!({"app": "x "})), "x ");
    assert_eq!(
        render_template("{app} {args}", &json!({"app": "x", "args": ["-a"]})),
        "x [\"-a\"]"
    );
}
