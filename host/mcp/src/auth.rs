//! Bearer tokens to agents.
//!
//! Attacks it stops: guessing a token byte by byte from response timing
//! (every configured token is compared in full, in constant time, whatever
//! matched), and learning anything without a token (a missing or wrong
//! token gets a bare 401).

use http::HeaderMap;

/// The configured tokens and the agent each one acts as.
#[derive(Clone)]
pub(crate) struct Tokens {
    entries: Vec<(Vec<u8>, String)>,
    /// The agent for requests when no tokens are configured (loopback only;
    /// the listener refuses other addresses without tokens).
    open_agent: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.entries.len())
            .field("open_agent", &self.open_agent)
            .finish()
    }
}

/// Equal in constant time for inputs of a given length.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(x ^ y);
    }
    diff == 0
}

impl Tokens {
    pub fn new(tokens: &[(String, String)], open_agent: Option<String>) -> Tokens {
        Tokens {
            entries: tokens
                .iter()
                .map(|(token, agent)| (token.as_bytes().to_vec(), agent.clone()))
                .collect(),
            open_agent,
        }
    }

    /// Whether requests authenticate with tokens (else every request is
    /// the open agent's).
    pub fn uses_tokens(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The agent a request's `Authorization: Bearer` token maps to.
    pub fn agent(&self, headers: &HeaderMap) -> Option<String> {
        if self.entries.is_empty() {
            return self.open_agent.clone();
        }
        let presented = headers
            .get(http::header::AUTHORIZATION)?
            .as_bytes()
            .strip_prefix(b"Bearer ")?;
        self.matches(presented)
    }

    /// The agent `presented` is the token of (every token compared in
    /// full, whatever matched).
    pub fn matches(&self, presented: &[u8]) -> Option<String> {
        let mut found = None;
        for (token, agent) in &self.entries {
            if ct_eq(token, presented) && found.is_none() {
                found = Some(agent.clone());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn only_an_exact_token_maps_to_its_agent() {
        let t = Tokens::new(
            &[
                ("secret-a".into(), "a".into()),
                ("secret-b".into(), "b".into()),
            ],
            None,
        );
        assert_eq!(t.agent(&headers("Bearer secret-b")).as_deref(), Some("b"));
        assert_eq!(t.agent(&headers("Bearer secret-")), None);
        assert_eq!(t.agent(&headers("Bearer secret-bb")), None);
        assert_eq!(t.agent(&headers("secret-a")), None);
        assert_eq!(t.agent(&HeaderMap::new()), None);
    }

    #[test]
    fn without_tokens_the_open_agent_applies() {
        let t = Tokens::new(&[], Some("local".into()));
        assert_eq!(t.agent(&HeaderMap::new()).as_deref(), Some("local"));
    }
}
