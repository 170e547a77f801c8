#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::*;

const LIMITS: Limits = Limits {
    max_source_bytes: 4096,
    max_component_bytes: 4096,
};

/// A blueprint that passes every check.
fn good() -> Value {
    json!({
        "capability": "words:count",
        "title": "Count words",
        "description": "Counts the words of a text.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "output_schema": {"type": "object", "properties": {"words": {"type": "integer"}}},
        "body": {"rust": {"lib_rs": "// counts words\n"}},
        "cases": [
            {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
            {"name": "none", "args": {"text": ""}, "expect": {"ok": {"fields": [{"pointer": "/words", "equals": 0}]}}},
            {"name": "missing", "args": {}, "expect": {"error": {"contains": "text"}}}
        ],
        "rationale": "Agents asked for word counts three times."
    })
}

fn parse(v: &Value) -> Result<Blueprint, BlueprintError> {
    Blueprint::parse(&v.to_string(), &LIMITS)
}

fn known_action(a: &str) -> bool {
    ["words:count", "code:read", "tool:create"].contains(&a)
}

fn known_category(c: &str) -> bool {
    ["analytics", "web"].contains(&c)
}

fn sandbox() -> Sandbox {
    Sandbox {
        fs: vec![FsGrant {
            path: "data".into(),
            mode: FsMode::Ro,
        }],
        network: Network::None,
        limits: ToolLimits::default(),
    }
}

fn derived(
    bp: &Blueprint,
    caps: &BTreeMap<String, CapabilityRule>,
) -> Result<Derived, BlueprintError> {
    derive(
        bp,
        &DeriveFrom {
            sandbox: &sandbox(),
            category: Some("analytics"),
            capabilities: caps,
            known_action: &known_action,
            known_category: &known_category,
        },
    )
}

#[test]
fn a_good_blueprint_is_read() {
    let bp = parse(&good()).unwrap();
    assert_eq!(bp.signature().unwrap().to_string(), "words:count");
}

#[test]
fn author_cannot_widen_or_name() {
    // Every field that would choose a safety fact, at the top and inside.
    for (key, value) in [
        ("name", json!("fs_read")),
        (
            "sandbox",
            json!({"network": {"allow": ["evil.example:443"]}}),
        ),
        ("network", json!({"allow": ["evil.example:443"]})),
        ("grants", json!({"fs": [{"path": "/", "mode": "rw"}]})),
        ("category", json!("file-system")),
        ("action_type", json!("code:read")),
        ("side_effect", json!(false)),
        ("dependencies", json!({"reqwest": "*"})),
        ("limits", json!({"fuel": 0})),
    ] {
        let mut bp = good();
        bp[key] = value;
        let err = parse(&bp).unwrap_err();
        assert!(
            matches!(&err, BlueprintError::Malformed { reason } if reason.contains("unknown field")),
            "{key}: {err}"
        );
    }
    let mut bp = good();
    bp["body"]["rust"]["cargo_toml"] = json!("[dependencies]\nevil = \"*\"");
    assert!(parse(&bp).is_err(), "no Cargo.toml from the author");
    let mut bp = good();
    bp["cases"][0]["grants"] = json!({});
    assert!(parse(&bp).is_err(), "no field inside a case either");

    // What is derived comes from the operator only.
    let bp = parse(&good()).unwrap();
    let d = derived(&bp, &BTreeMap::new()).unwrap();
    assert_eq!(d.name, "gen_words_count");
    assert_eq!(d.category, "analytics");
    assert_eq!(d.action_type, "words:count");
    assert_eq!(d.grants, sandbox());
    assert!(!d.side_effect, "a read-only directory and no network");
}

#[test]
fn capability_cannot_read_as_another_name() {
    for cap in [
        "fs_read:x",
        "Words:count",
        "words",
        "words:count:x",
        "a:b c",
    ] {
        let mut bp = good();
        bp["capability"] = json!(cap);
        assert!(parse(&bp).is_err(), "{cap}");
    }
    let mut bp = good();
    bp["capability"] = json!(format!("{}:{}", "d".repeat(30), "a".repeat(32)));
    let err = parse(&bp).unwrap_err().to_string();
    assert!(err.contains("longer than 64"), "{err}");
}

#[test]
fn cases_need_three_with_a_success_and_an_error() {
    let mut bp = good();
    bp["cases"].as_array_mut().unwrap().pop();
    assert!(parse(&bp).unwrap_err().to_string().contains("at least 3"));
    let mut bp = good();
    bp["cases"][2]["expect"] = json!({"ok": {}});
    assert!(parse(&bp).unwrap_err().to_string().contains("error case"));
    let mut bp = good();
    for i in 0..2 {
        bp["cases"][i]["expect"] = json!({"error": {}});
    }
    assert!(parse(&bp).unwrap_err().to_string().contains("success"));
    let mut bp = good();
    bp["cases"][1]["name"] = json!("two");
    assert!(parse(&bp).unwrap_err().to_string().contains("another case"));
    let mut bp = good();
    bp["cases"][0]["args"] = json!("a b");
    assert!(parse(&bp).is_err());
}

#[test]
fn schemas_must_be_valid_object_schemas() {
    for bad in [
        json!({"type": "objekt"}),
        json!({"type": "string"}),
        json!({"type": "object", "properties": 3}),
        json!("object"),
    ] {
        let mut bp = good();
        bp["input_schema"] = bad.clone();
        assert!(parse(&bp).is_err(), "{bad}");
        let mut bp = good();
        bp["output_schema"] = bad.clone();
        assert!(parse(&bp).is_err(), "{bad}");
    }
    let mut bp = good();
    bp["cases"][0]["expect"] = json!({"ok": {"schema": {"type": 5}}});
    assert!(parse(&bp).is_err());
}

#[test]
fn every_part_is_bounded() {
    let mut bp = good();
    bp["body"]["rust"]["lib_rs"] = json!("x".repeat(4097));
    assert!(matches!(parse(&bp), Err(BlueprintError::TooLarge { .. })));
    let mut bp = good();
    bp["title"] = json!("t".repeat(MAX_TITLE + 1));
    assert!(matches!(parse(&bp), Err(BlueprintError::TooLarge { .. })));
    let mut bp = good();
    bp["title"] = json!("Count\u{202e}sdrow");
    assert!(parse(&bp).is_err(), "bidirectional text in the prompt");
    let mut bp = good();
    bp["input_schema"]["description"] = json!("d".repeat(MAX_SCHEMA_BYTES));
    assert!(matches!(parse(&bp), Err(BlueprintError::TooLarge { .. })));
    let huge = "x".repeat(LIMITS.max_blueprint_bytes() + 1);
    assert!(matches!(
        Blueprint::parse(&huge, &LIMITS),
        Err(BlueprintError::TooLarge { .. })
    ));
}

#[test]
fn derivation_needs_the_taxonomy_and_never_gives_tool_create() {
    let mut bp = good();
    bp["capability"] = json!("weather:forecast");
    let bp = parse(&bp).unwrap();
    let err = derived(&bp, &BTreeMap::new()).unwrap_err().to_string();
    assert!(err.contains("not in the taxonomy"), "{err}");
    let caps = BTreeMap::from([(
        "weather:*".to_owned(),
        CapabilityRule {
            category: Some("web".into()),
            action_type: Some("code:read".into()),
        },
    )]);
    let d = derived(&bp, &caps).unwrap();
    assert_eq!(
        (d.category.as_str(), d.action_type.as_str()),
        ("web", "code:read")
    );
    let caps = BTreeMap::from([(
        "weather:forecast".to_owned(),
        CapabilityRule {
            category: None,
            action_type: Some("tool:create".into()),
        },
    )]);
    assert!(
        derived(&bp, &caps).is_err(),
        "a generated tool never creates tools"
    );
}

#[test]
fn side_effects_follow_the_grants() {
    let mut s = sandbox();
    assert!(!s.side_effect());
    s.network = Network::Allow(vec!["api.example.com:443".into()]);
    assert!(s.side_effect());
    assert!(
        s.in_words()
            .iter()
            .any(|w| w.contains("api.example.com:443"))
    );
    let mut s = sandbox();
    s.fs[0].mode = FsMode::Rw;
    assert!(s.side_effect());
    s.network = Network::Allow(vec!["*.example.com:443".into()]);
    assert!(s.check().is_err());
}

#[test]
fn canonical_text_ignores_formatting_not_values() {
    let a = parse(&good()).unwrap();
    let pretty = serde_json::to_string_pretty(&good()).unwrap();
    let b = Blueprint::parse(&pretty, &LIMITS).unwrap();
    assert_eq!(a.canonical(), b.canonical());
    let mut edited = good();
    edited["body"]["rust"]["lib_rs"] = json!("// counts words!\n");
    assert_ne!(a.canonical(), parse(&edited).unwrap().canonical());
}

#[test]
fn binding_names_what_changed() {
    let approved = Binding {
        blueprint: "sha256:a".into(),
        builder: "sha256:b".into(),
        grants: "sha256:c".into(),
    };
    assert!(approved.changed(&approved.clone()).is_empty());
    let mut now = approved.clone();
    now.grants = "sha256:wider".into();
    assert_eq!(approved.changed(&now), ["the grants"]);
    now.blueprint = "sha256:edited".into();
    assert_eq!(approved.changed(&now), ["the blueprint", "the grants"]);
}

#[test]
fn only_legal_moves() {
    use State::*;
    assert!(Pending.can_move(Approved));
    assert!(Pending.can_move(Rejected));
    for to in [Building, Validating, Validated, Active, Failed] {
        assert!(!Pending.can_move(to), "pending -> {to} skips the person");
    }
    assert!(!Rejected.can_move(Approved));
    assert!(!Rejected.can_move(Pending));
    assert!(!Failed.can_move(Building));
    assert!(Approved.can_move(Building));
    assert!(Superseded.can_move(Active));
    assert!(Rejected.is_final() && Failed.is_final() && Retired.is_final());
    for s in State::ALL {
        assert_eq!(State::parse(s.as_str()), Some(s));
    }
}

#[test]
fn builder_identity_covers_parent_and_files() {
    let a = builder_recipe("sha256:base");
    assert!(a.contains(TOOLCHAIN) && a.contains(TARGET) && a.contains("build = false"));
    assert_ne!(a, builder_recipe("sha256:other"));
}

fn case(expect: Value) -> Case {
    serde_json::from_value(json!({"name": "c", "args": {}, "expect": expect})).unwrap()
}

#[test]
fn a_success_needs_structured_content_valid_against_the_output_schema() {
    let out = json!({"type": "object", "properties": {"words": {"type": "integer"}}, "required": ["words"]});
    let ok = case(json!({"ok": {"fields": [{"pointer": "/words", "equals": 2}]}}));
    assert_eq!(judge(&ok, Observed::Ok(&json!({"words": 2})), &out), Ok(()));
    let text = judge(&ok, Observed::Ok(&json!("2 words")), &out).unwrap_err();
    assert!(text.contains("no structuredContent"), "{text}");
    let wrong = judge(&ok, Observed::Ok(&json!({"words": "two"})), &out).unwrap_err();
    assert!(
        wrong.contains("outputSchema") && wrong.contains("/words"),
        "{wrong}"
    );
    let other = judge(&ok, Observed::Ok(&json!({"words": 3})), &out).unwrap_err();
    assert!(other.contains("`/words` is 3"), "{other}");
    // Even a case that expects nothing in particular holds the schema.
    let any = case(json!({"ok": {}}));
    assert!(judge(&any, Observed::Ok(&json!({})), &out).is_err());
    assert!(judge(&any, Observed::Error("trapped"), &out).is_err());
}

#[test]
fn an_error_case_passes_only_on_an_error() {
    let out = json!({"type": "object"});
    let err = case(json!({"error": {"contains": "text"}}));
    assert_eq!(
        judge(&err, Observed::Error("`text` is required"), &out),
        Ok(())
    );
    assert!(judge(&err, Observed::Error("boom"), &out).is_err());
    assert!(judge(&err, Observed::Ok(&json!({"words": 0})), &out).is_err());
}

#[test]
fn host_negative_cases_are_rejected_by_the_input_schema() {
    let input = json!({"type": "object", "properties": {"text": {"type": "string"}, "max": {"type": "integer"}}, "required": ["text"]});
    let cases = negative_cases(&input, &json!({"text": "a b", "max": 3}));
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["host: `text` missing", "host: `max` not of type integer"]
    );
    assert_eq!(cases[0].args, json!({"max": 3}));
    assert_eq!(cases[1].args, json!({"text": "a b", "max": {}}));
    let v = jsonschema::draft202012::new(&input).unwrap();
    assert!(cases.iter().all(|c| !v.is_valid(&c.args)));
    // A schema that accepts anything gets no negative case.
    assert!(negative_cases(&json!({"type": "object"}), &json!({"a": 1})).is_empty());
}
