//! Capability signatures: the `domain:action` an unfulfilled request is
//! filed under, derived by the host from what was asked for (an unknown
//! tool's name, or the tool a capability request named).
//!
//! Attack: an agent choosing what a gap (and later a generated tool) is
//! called: shadowing a built-in, smuggling text into names, logs and
//! prompts, or flooding the log with endless spellings. The host derives
//! the signature from the name alone, each part `[a-z][a-z0-9_]{0,31}`
//! after case folding; anything else is not a gap at all.

/// The longest domain or action.
const MAX_PART: usize = 32;

/// `domain:action`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapabilitySig {
    domain: String,
    action: String,
}

/// Why a name gives no signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error(
        "`{part}` is not a capability name: it must be 1 to 32 of a-z, 0-9 and `_`, starting with a letter"
    )]
    BadPart { part: String },
}

fn part(text: &str) -> Result<String, SignatureError> {
    let ok = text.len() <= MAX_PART
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(text.to_owned())
    } else {
        Err(SignatureError::BadPart {
            part: text.chars().take(MAX_PART + 8).collect(),
        })
    }
}

impl CapabilitySig {
    /// A signature from its parts, each checked.
    pub fn new(domain: &str, action: &str) -> Result<CapabilitySig, SignatureError> {
        Ok(CapabilitySig {
            domain: part(domain)?,
            action: part(action)?,
        })
    }

    /// The signature of a tool name nobody offers: case folded, `.`, `-`
    /// and `/` read as `_`, a generated tool's `gen_` prefix dropped; the
    /// part before the first `_` is the domain, the rest the action
    /// (`call` when there is none). `weather_forecast` and
    /// `Weather.Forecast` are `weather:forecast`; `fetch` is
    /// `fetch:call`.
    pub fn of_tool(name: &str) -> Result<CapabilitySig, SignatureError> {
        let folded: String = name
            .trim()
            .chars()
            .map(|c| match c {
                '.' | '-' | '/' => '_',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        let bare = folded.strip_prefix("gen_").unwrap_or(&folded);
        match bare.split_once('_') {
            Some((domain, action)) => CapabilitySig::new(domain, action),
            None => CapabilitySig::new(bare, "call"),
        }
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    pub fn action(&self) -> &str {
        &self.action
    }

    /// The name a generated tool for this signature gets.
    pub fn tool_name(&self) -> String {
        format!("gen_{}_{}", self.domain, self.action)
    }
}

impl std::fmt::Display for CapabilitySig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.domain, self.action)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn names_fold_into_one_signature() {
        for name in [
            "weather_forecast",
            "Weather.Forecast",
            "weather-forecast",
            " weather/forecast ",
            "gen_weather_forecast",
        ] {
            let sig = CapabilitySig::of_tool(name).unwrap();
            assert_eq!(sig.to_string(), "weather:forecast", "{name}");
            assert_eq!(sig.tool_name(), "gen_weather_forecast");
        }
        assert_eq!(
            CapabilitySig::of_tool("fetch").unwrap().to_string(),
            "fetch:call"
        );
        assert_eq!(
            CapabilitySig::of_tool("pdf_render_page")
                .unwrap()
                .to_string(),
            "pdf:render_page"
        );
    }

    #[test]
    fn anything_else_is_no_signature() {
        let long = "a".repeat(33);
        for name in [
            "",
            "_x",
            "9lives_run",
            "wea ther_x",
            "x_\u{202e}y",
            "x_y\u{0}",
            "x_ÿ",
            "x:y",
            long.as_str(),
            "gen_",
            "x__",
        ] {
            let got = CapabilitySig::of_tool(name);
            assert!(got.is_err(), "{name:?}: {got:?}");
        }
        let err = CapabilitySig::of_tool(&"b".repeat(500))
            .unwrap_err()
            .to_string();
        assert!(err.len() < 200, "the message quotes a bounded part: {err}");
    }
}
