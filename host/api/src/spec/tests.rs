use serde_json::json;

use super::*;

fn spec() -> ToolSpec {
    ToolSpec {
        name: "fs_read".parse().unwrap(),
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
    assert_eq!(" FS_Read ".parse::<ToolName>().unwrap().as_str(), "fs_read");
    for good in ["fs_read", "fs_re-ad", "browser_accessibility_scan", "a_1"] {
        assert!(good.parse::<ToolName>().is_ok(), "{good} refused");
    }
    let longest = format!("a_{}", "b".repeat(MAX_TOOL_NAME - 2));
    assert!(longest.parse::<ToolName>().is_ok());
    for bad in [
        "read",
        "fs_",
        "_read",
        "1fs_read",
        "fs read",
        "",
        "fs.read",
        "fs:read",
        "fs_réad",
        &format!("{longest}c"),
    ] {
        assert!(bad.parse::<ToolName>().is_err(), "{bad} accepted");
    }
    let err = "fs.read".parse::<ToolName>().unwrap_err().to_string();
    assert!(err.contains("use `fs_read`"), "{err}");
    let name = "my_plugin_run".parse::<ToolName>().unwrap();
    assert!(name.in_namespace("my_plugin") && name.in_namespace("my"));
    assert!(!name.in_namespace("my_plugin_run") && !name.in_namespace("other"));
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
