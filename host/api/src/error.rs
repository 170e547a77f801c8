use thiserror::Error;

/// Why a tool spec or manifest is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("unknown category `{0}` (expected one of: {cats})", cats = crate::Category::ALL.map(|c| c.as_str()).join(", "))]
    UnknownCategory(String),
    #[error(
        "unknown action type `{0}`: action types are `category:action` from the built-in taxonomy (e.g. `code:read`)"
    )]
    UnknownActionType(String),
    #[error(
        "invalid tool name `{0}`: expected `<plugin>_<tool>` (e.g. `fs_read`): a lower-case \
         letter, then letters, digits, `_` or `-`, at most 64 in all, as model APIs require{hint}",
        hint = crate::spec::renamed_hint(.0)
    )]
    InvalidToolName(String),
    #[error("tool `{tool}` is named outside its plugin's namespace `{plugin}_`")]
    ForeignNamespace { tool: String, plugin: String },
    #[error("tool `{tool}`: {problem}")]
    InvalidSpec { tool: String, problem: String },
    #[error("duplicate tool `{0}`")]
    DuplicateTool(String),
    #[error("manifest: {0}")]
    Manifest(String),
}
