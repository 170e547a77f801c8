//! Rules that name the signed-in principal behind a call (an OAuth
//! token's subject, client or a claim): `[[agents.NAME.principals]]`.
//! They only tighten: a matching entry's `deny` and `ask` rules apply on
//! top of the agent's own, and nothing here allows.
//!
//! Attack it stops: one agent shared by many people or clients (a
//! connector mapped by `agent-claim`, say) letting each do what the most
//! trusted of them may — an operator can deny or gate tools for a given
//! subject, client or claim value without making an agent for each.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{PolicyError, RuleSet};

/// Who signed in, as the caller read it from a verified token.
#[derive(Debug, Clone, Copy)]
pub struct PrincipalFacts<'a> {
    pub subject: &'a str,
    pub client_id: Option<&'a str>,
    /// Claims kept as text (only those the operator selected).
    pub claims: &'a BTreeMap<String, String>,
}

/// One entry: which principals, and the rules for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PrincipalRulesConfig {
    /// The token's `sub`.
    #[serde(default)]
    pub subject: Option<String>,
    /// The OAuth client (`client_id`, else `azp`).
    #[serde(default)]
    pub client_id: Option<String>,
    /// A kept claim (`[serve.oauth] keep-claims`) and its value, as
    /// `NAME=VALUE`.
    #[serde(default)]
    pub claim: Option<String>,
    /// Rules that deny these principals' calls.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Rules that make these principals' calls ask a person.
    #[serde(default)]
    pub ask: Vec<String>,
}

/// A compiled entry: every condition given must hold.
#[derive(Debug, Clone)]
pub(crate) struct PrincipalRules {
    subject: Option<String>,
    client_id: Option<String>,
    claim: Option<(String, String)>,
    pub rules: RuleSet,
}

impl PrincipalRules {
    pub fn compile(config: &PrincipalRulesConfig, at: &str) -> Result<PrincipalRules, PolicyError> {
        let invalid = |problem: &str| PolicyError::InvalidPrincipal {
            at: at.to_owned(),
            problem: problem.to_owned(),
        };
        let claim = match &config.claim {
            Some(text) => {
                let (name, value) = text
                    .split_once('=')
                    .ok_or_else(|| invalid("`claim` is `NAME=VALUE`"))?;
                Some((name.trim().to_owned(), value.trim().to_owned()))
            }
            None => None,
        };
        if config.subject.is_none() && config.client_id.is_none() && claim.is_none() {
            return Err(invalid(
                "name the principals: `subject`, `client-id` or `claim`",
            ));
        }
        let rules = RuleSet::parse(&[], &config.ask, &config.deny).map_err(|e| {
            PolicyError::InvalidPrincipal {
                at: at.to_owned(),
                problem: e.to_string(),
            }
        })?;
        Ok(PrincipalRules {
            subject: config.subject.clone(),
            client_id: config.client_id.clone(),
            claim,
            rules,
        })
    }

    pub fn matches(&self, p: &PrincipalFacts<'_>) -> bool {
        self.subject.as_deref().is_none_or(|s| s == p.subject)
            && self
                .client_id
                .as_deref()
                .is_none_or(|c| Some(c) == p.client_id)
            && self
                .claim
                .as_ref()
                .is_none_or(|(n, v)| p.claims.get(n) == Some(v))
    }
}

impl crate::AgentPolicy {
    /// The first `deny` (or, with `deny` false, `ask`) rule of an entry
    /// matching the call's principal that fires on the call.
    pub(crate) fn principal_rule(
        &self,
        call: &crate::Call<'_>,
        env: &crate::Env<'_>,
        prepared: &crate::specifier::Prepared<'_>,
        name: &str,
        deny: bool,
    ) -> Option<crate::Decision> {
        let principal = call.principal.as_ref()?;
        for entry in self.principals.iter().filter(|e| e.matches(principal)) {
            let list = if deny {
                &entry.rules.deny
            } else {
                &entry.rules.ask
            };
            let candidates = list.candidates(name, &prepared.probe(true, env));
            if let Some(rule) = candidates.iter().find(|r| prepared.fires(r, env)) {
                let (verb, verdict) = if deny {
                    (
                        "` is denied for this principal by rule `",
                        crate::Verdict::Deny,
                    )
                } else {
                    (
                        "` needs approval for this principal by rule `",
                        crate::Verdict::Ask,
                    )
                };
                let reason = prepared.describe(name, "`", &[verb, rule.text(), "`"]);
                return Some(
                    crate::Decision::new(verdict, crate::Layer::Rule, reason)
                        .with_rule(rule.text()),
                );
            }
        }
        None
    }
}
