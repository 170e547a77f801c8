//! JSON in one canonical form (the JSON Canonicalization Scheme, RFC 8785),
//! so a digest of a JSON value does not depend on who serialised it: object
//! members sorted by the UTF-16 code units of their names, no whitespace,
//! strings escaped only where JSON requires it (short forms for `\b`,
//! `\t`, `\n`, `\f`, `\r`, `\u00xx` for the other control characters),
//! numbers as ECMAScript prints them (`1e+30`, `0.002`, `4.5`).

use std::fmt::Write as _;

use serde_json::Value;

/// `value` in canonical form.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) if i.unsigned_abs() <= MAX_EXACT => {
                let _ = write!(out, "{i}");
            }
            (_, Some(u), _) if u <= MAX_EXACT => {
                let _ = write!(out, "{u}");
            }
            (_, _, Some(f)) => out.push_str(&es_number(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (name, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, name);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Integers up to 2^53 print as integers (the doubles ECMAScript reads
/// them as are exact); larger ones go through the double, as RFC 8785 says.
const MAX_EXACT: u64 = 1 << 53;

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A double as ECMAScript's `Number.prototype.toString` prints it: the
/// shortest digits that read back to the same double, placed by the
/// exponent's range.
fn es_number(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        // JSON has no NaN or infinity; serde_json never holds them.
        return "0".to_owned();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    // `{:e}` prints the shortest round-trip digits: `d[.ddd]e<exp>`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    let body = if k <= n && n <= 21 {
        format!(
            "{digits}{}",
            "0".repeat(usize::try_from(n - k).unwrap_or(0))
        )
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-n).unwrap_or(0)))
    } else {
        let e = n - 1;
        let e = if e < 0 {
            e.to_string()
        } else {
            format!("+{e}")
        };
        match digits.split_at(1) {
            (first, "") => format!("{first}e{e}"),
            (first, rest) => format!("{first}.{rest}e{e}"),
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_as_ecmascript_prints_them() {
        // RFC 8785, appendix B (values that are exact in serde_json).
        for (value, expected) in [
            (json!(0.0), "0"),
            (json!(-0.0), "0"),
            (json!(1e30), "1e+30"),
            (json!(4.50), "4.5"),
            (json!(2e-3), "0.002"),
            (json!(1e-27), "1e-27"),
            (json!(333_333_333.333_333_3), "333333333.3333333"),
            (json!(1e21), "1e+21"),
            (json!(1e20), "100000000000000000000"),
            (json!(1.5e-7), "1.5e-7"),
            (json!(0.000_001), "0.000001"),
            (json!(-123.456), "-123.456"),
            (json!(9_007_199_254_740_992_u64), "9007199254740992"),
            (json!(9_007_199_254_740_993_u64), "9007199254740992"),
            (json!(-42), "-42"),
            (
                json!(295_147_905_179_352_830_000.0),
                "295147905179352830000",
            ),
        ] {
            assert_eq!(canonical_json(&value), expected, "{value}");
        }
    }

    #[test]
    fn members_sort_by_utf16_code_units_and_strings_escape_minimally() {
        // RFC 8785 section 3.2.3's sorting example.
        let value: Value = serde_json::from_str(
            r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh",
                "1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#,
        )
        .unwrap();
        assert_eq!(
            canonical_json(&value),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
             \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
             \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
        assert_eq!(
            canonical_json(&json!({"b": [1, "x\u{1}\u{7f}\"\\/\n"], "a": {"d": null, "c": true}})),
            "{\"a\":{\"c\":true,\"d\":null},\"b\":[1,\"x\\u0001\u{7f}\\\"\\\\/\\n\"]}"
        );
    }

    #[test]
    fn the_same_value_serialised_differently_has_one_form() {
        let a: Value = serde_json::from_str(r#"{ "y": 1.0, "x": [ 2, 3 ] }"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"x":[2,3],"y":1}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(canonical_json(&a), r#"{"x":[2,3],"y":1}"#);
    }
}
