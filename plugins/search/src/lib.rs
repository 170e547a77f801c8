//! Warden's search tools: `search_grep` (regex search with context lines)
//! and `search_glob` (glob listing), over the call's granted directories,
//! with the `regex`, `globset` and `walkdir` crates. Symlinks are never
//! followed.

mod grep;
mod walk;

#[warden_sdk::plugin(name = "search", filesystem = "read")]
mod search {
    use std::path::Path;

    use warden_sdk::prelude::*;

    use crate::{grep, walk};

    /// Arguments of `search_grep`.
    #[derive(Debug, Deserialize)]
    pub struct GrepArgs {
        /// A regular expression (Rust `regex` syntax), or plain text with
        /// `fixed_strings`.
        pub pattern: String,
        /// The file or directory to search (default: the granted directory).
        pub path: Option<String>,
        /// Only files matching one of these globs (`*.rs`, `src/**/*.ts`).
        pub include: Option<Vec<String>>,
        /// Skip files and directories matching one of these globs.
        pub exclude: Option<Vec<String>>,
        /// Match case-insensitively.
        pub ignore_case: Option<bool>,
        /// Treat `pattern` as literal text.
        pub fixed_strings: Option<bool>,
        /// Lines of context before and after each match (default 0, at most 20).
        pub context: Option<u32>,
        /// Most matches to return (default 200).
        pub max_results: Option<u32>,
    }

    /// One matching line.
    #[derive(Debug, Serialize)]
    pub struct Match {
        /// Relative to the searched directory.
        pub path: String,
        /// 1-based line number.
        pub line: u64,
        pub text: String,
        /// Lines before the match (up to `context`).
        pub before: Vec<String>,
        /// Lines after the match (up to `context`).
        pub after: Vec<String>,
    }

    #[derive(Debug, Serialize)]
    pub struct GrepResult {
        pub matches: Vec<Match>,
        /// Text files searched.
        pub files_searched: u64,
        /// True when more matches exist than `max_results`.
        pub truncated: bool,
    }

    /// Search files for a regular expression.
    ///
    /// Reports each matching line with its path, line number and optional
    /// context lines. Binary files are skipped; symlinks are not followed.
    #[tool(
        name = "search_grep",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        specifier = "{path}",
        example(
            description = "Find TODOs in Rust sources",
            args = r#"{"pattern": "TODO|FIXME", "include": ["*.rs"], "context": 1}"#
        )
    )]
    fn grep(ctx: &Context, args: GrepArgs) -> Result<GrepResult, ToolError> {
        let shown = args.path.clone().unwrap_or_else(|| ".".into());
        let root = ctx.resolve(&shown)?;
        let regex = regex::RegexBuilder::new(&if args.fixed_strings.unwrap_or(false) {
            regex::escape(&args.pattern)
        } else {
            args.pattern.clone()
        })
        .case_insensitive(args.ignore_case.unwrap_or(false))
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            ToolError::invalid_argument(format!("pattern: {e}")).with_code("invalid_pattern")
        })?;
        let filter = walk::Filter::new(
            args.include.as_deref().unwrap_or_default(),
            args.exclude.as_deref().unwrap_or_default(),
        )?;
        let meta = std::fs::symlink_metadata(&root).map_err(|e| ToolError::io(&shown, &e))?;
        let files = if meta.is_file() {
            let name = Path::new(&shown)
                .file_name()
                .map(Path::new)
                .unwrap_or(Path::new(&shown));
            vec![walk::Found {
                path: root.clone(),
                rel: name.to_path_buf(),
            }]
        } else {
            walk::files(ctx, &root, &filter, false)?
        };
        let opts = grep::Options {
            context: args.context.unwrap_or(0).min(20) as usize,
            max: args.max_results.unwrap_or(200) as usize,
        };
        let (matches, files_searched, truncated) = grep::search(&regex, &files, &opts);
        Ok(GrepResult {
            matches,
            files_searched,
            truncated,
        })
    }

    /// Arguments of `search_glob`.
    #[derive(Debug, Deserialize)]
    pub struct GlobArgs {
        /// A glob over paths relative to `path`: `**/*.rs`, `src/*.{ts,tsx}`;
        /// a pattern without `/` matches file names at any depth.
        pub pattern: String,
        /// The directory to list (default: the granted directory).
        pub path: Option<String>,
        /// Skip paths matching one of these globs.
        pub exclude: Option<Vec<String>>,
        /// Also list matching directories.
        pub include_dirs: Option<bool>,
        /// Most paths to return (default 1000).
        pub max_results: Option<u32>,
    }

    #[derive(Debug, Serialize)]
    pub struct GlobResult {
        /// Matching paths relative to `path`, sorted.
        pub paths: Vec<String>,
        /// True when more paths matched than `max_results`.
        pub truncated: bool,
    }

    /// List files matching a glob pattern.
    ///
    /// Symlinks are not listed or followed.
    #[tool(
        name = "search_glob",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        specifier = "{path}",
        example(description = "Every Rust source", args = r#"{"pattern": "**/*.rs"}"#)
    )]
    fn glob(ctx: &Context, args: GlobArgs) -> Result<GlobResult, ToolError> {
        let shown = args.path.clone().unwrap_or_else(|| ".".into());
        let root = ctx.resolve(&shown)?;
        let filter = walk::Filter::new(
            std::slice::from_ref(&args.pattern),
            args.exclude.as_deref().unwrap_or_default(),
        )?;
        let found = walk::files(ctx, &root, &filter, args.include_dirs.unwrap_or(false))?;
        let max = args.max_results.unwrap_or(1000) as usize;
        let truncated = found.len() > max;
        Ok(GlobResult {
            paths: found
                .into_iter()
                .take(max)
                .map(|f| f.rel.to_string_lossy().into_owned())
                .collect(),
            truncated,
        })
    }
}
