//! Action types: the built-in `category:action` taxonomy plus types
//! registered explicitly in configuration, and the selectors rules and
//! approval lists use (`code:write`, or the shortcut `code` for every
//! `code:*`). An unknown string is an error at load, never "no match".

use std::collections::BTreeSet;

use crate::PolicyError;

#[derive(Debug, Clone)]
pub struct ActionTypes {
    known: BTreeSet<String>,
}

/// Matches one action type or every action of a category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionSelector {
    Exact(String),
    Category(String),
}

impl ActionSelector {
    pub fn matches(&self, action_type: &str) -> bool {
        match self {
            ActionSelector::Exact(t) => t == action_type,
            ActionSelector::Category(c) => {
                action_type.split_once(':').is_some_and(|(cat, _)| cat == c)
            }
        }
    }
}

fn well_formed(t: &str) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    matches!(t.split_once(':'), Some((c, a)) if part(c) && part(a))
}

impl ActionTypes {
    /// The built-in taxonomy (from `warden-api`) plus custom types, each
    /// `category:action` in lower case and not already built in.
    pub fn new(builtin: &[&str], custom: &[String]) -> Result<ActionTypes, PolicyError> {
        let mut known: BTreeSet<String> = builtin.iter().map(|s| (*s).to_owned()).collect();
        for t in custom {
            if !well_formed(t) {
                return Err(PolicyError::InvalidActionType(t.clone()));
            }
            if !known.insert(t.clone()) {
                return Err(PolicyError::DuplicateActionType(t.clone()));
            }
        }
        Ok(ActionTypes { known })
    }

    pub fn is_known(&self, action_type: &str) -> bool {
        self.known.contains(action_type)
    }

    /// Parses `category:action` (must be known) or a category shortcut
    /// (must have at least one known action).
    pub fn selector(&self, s: &str) -> Result<ActionSelector, PolicyError> {
        if s.contains(':') {
            if self.is_known(s) {
                return Ok(ActionSelector::Exact(s.to_owned()));
            }
        } else if self
            .known
            .iter()
            .any(|k| k.split_once(':').is_some_and(|(c, _)| c == s))
        {
            return Ok(ActionSelector::Category(s.to_owned()));
        }
        Err(PolicyError::UnknownActionType(s.to_owned()))
    }

    /// Every known action type a selector covers.
    pub fn expand(&self, selector: &ActionSelector) -> Vec<&str> {
        self.known
            .iter()
            .map(String::as_str)
            .filter(|t| selector.matches(t))
            .collect()
    }
}
