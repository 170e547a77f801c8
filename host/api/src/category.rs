use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a tool acts on. Every tool declares exactly one; there is no
/// catch-all, so a new tool can never slip into a level by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Category {
    FileSystem,
    CodeExecution,
    VersionControl,
    Web,
    Database,
    Terminal,
    Design,
    Communication,
    Analytics,
    Deployment,
    Memory,
    Browser,
    ExternalData,
    Desktop,
    Mcp,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 15] = [
        Category::FileSystem,
        Category::CodeExecution,
        Category::VersionControl,
        Category::Web,
        Category::Database,
        Category::Terminal,
        Category::Design,
        Category::Communication,
        Category::Analytics,
        Category::Deployment,
        Category::Memory,
        Category::Browser,
        Category::ExternalData,
        Category::Desktop,
        Category::Mcp,
    ];

    /// The kebab-case name used in WIT, manifests and config.
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::FileSystem => "file-system",
            Category::CodeExecution => "code-execution",
            Category::VersionControl => "version-control",
            Category::Web => "web",
            Category::Database => "database",
            Category::Terminal => "terminal",
            Category::Design => "design",
            Category::Communication => "communication",
            Category::Analytics => "analytics",
            Category::Deployment => "deployment",
            Category::Memory => "memory",
            Category::Browser => "browser",
            Category::ExternalData => "external-data",
            Category::Desktop => "desktop",
            Category::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Category {
    type Err = crate::SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| crate::SpecError::UnknownCategory(s.to_owned()))
    }
}
