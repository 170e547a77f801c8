//! Warden's file tools. Every path goes through the call's directory
//! grants: WASI refuses anything outside them, so these tools need no
//! containment logic of their own and cannot be talked out of it.

mod edit;
mod walk;

#[warden_sdk::plugin(name = "fs", filesystem = "read-write")]
mod fs {
    use std::io::Write;

    use warden_sdk::prelude::*;

    use crate::{edit, walk};

    /// Arguments of `fs_read`.
    #[derive(Debug, Deserialize)]
    pub struct ReadArgs {
        /// The file to read; relative paths resolve against the granted directory.
        pub path: String,
        /// First line to return, counting from 0.
        pub offset: Option<u64>,
        /// Most lines to return.
        pub limit: Option<u64>,
    }

    #[derive(Debug, Serialize)]
    pub struct ReadResult {
        pub path: String,
        /// The selected lines, joined with their original line endings.
        pub content: String,
        /// Index of the first returned line.
        pub offset: u64,
        /// How many lines `content` holds.
        pub lines: u64,
        /// How many lines the file has.
        pub total_lines: u64,
        /// True when lines after the selection were left out.
        pub truncated: bool,
    }

    /// Read a UTF-8 text file, optionally a window of its lines.
    ///
    /// Use `offset` and `limit` to page through large files. Binary files
    /// are refused with the code `not_text`.
    #[tool(
        name = "fs_read",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        specifier = "{path}",
        example(
            description = "Read the first 40 lines of the README",
            args = r#"{"path": "README.md", "limit": 40}"#
        )
    )]
    fn read(ctx: &Context, args: ReadArgs) -> Result<ReadResult, ToolError> {
        let path = ctx.resolve(&args.path)?;
        let bytes = std::fs::read(&path).map_err(|e| ToolError::io(&args.path, &e))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::invalid_argument(format!("{}: not UTF-8 text", args.path))
                .with_code("not_text")
        })?;
        // The window is one slice of the text, found in one pass over its
        // lines, and the whole file is the text itself, not a copy.
        let first = args.offset.unwrap_or(0);
        let past = args.limit.map(|limit| first.saturating_add(limit));
        let (mut from, mut to) = (text.len(), text.len());
        let (mut total, mut at) = (0u64, 0usize);
        for line in text.split_inclusive('\n') {
            if total == first {
                from = at;
            }
            if past == Some(total) {
                to = at;
            }
            total += 1;
            at += line.len();
        }
        let offset = first.min(total);
        let end = match args.limit {
            Some(limit) => offset.saturating_add(limit).min(total),
            None => total,
        };
        let content = if from == 0 && to == text.len() {
            text
        } else {
            text.get(from..to).unwrap_or_default().to_owned()
        };
        Ok(ReadResult {
            path: args.path,
            content,
            offset,
            lines: end - offset,
            total_lines: total,
            truncated: end < total,
        })
    }

    /// Arguments of `fs_write`.
    #[derive(Debug, Deserialize)]
    pub struct WriteArgs {
        /// The file to write; it is created or replaced.
        pub path: String,
        /// The whole new content.
        pub content: String,
        /// Create missing parent directories.
        #[serde(default)]
        pub create_dirs: bool,
    }

    #[derive(Debug, Serialize)]
    pub struct WriteResult {
        pub path: String,
        pub bytes_written: u64,
        /// True when the file did not exist before.
        pub created: bool,
    }

    /// Create or replace a file with the given content.
    #[tool(
        name = "fs_write",
        category = "file-system",
        action = "code:write",
        side_effect = true,
        specifier = "{path}",
        example(
            description = "Write a note",
            args = r#"{"path": "notes/todo.md", "content": "- ship it\n", "create_dirs": true}"#
        )
    )]
    fn write(ctx: &Context, args: WriteArgs) -> Result<WriteResult, ToolError> {
        let path = ctx.resolve(&args.path)?;
        if args.create_dirs
            && let Some(parent) = path.parent()
        {
            std::fs::create_dir_all(parent).map_err(|e| ToolError::io(&args.path, &e))?;
        }
        let created = std::fs::symlink_metadata(&path).is_err();
        let mut file = std::fs::File::create(&path).map_err(|e| ToolError::io(&args.path, &e))?;
        file.write_all(args.content.as_bytes())
            .map_err(|e| ToolError::io(&args.path, &e))?;
        Ok(WriteResult {
            path: args.path,
            bytes_written: args.content.len() as u64,
            created,
        })
    }

    /// Arguments of `fs_edit`.
    #[derive(Debug, Deserialize)]
    pub struct EditArgs {
        /// The file to edit.
        pub path: String,
        /// The exact text to replace; it must occur exactly once.
        pub old: String,
        /// The replacement.
        pub new: String,
    }

    #[derive(Debug, Serialize)]
    pub struct EditResult {
        pub path: String,
        /// Line (from 1) where the replaced text started.
        pub line: u64,
    }

    /// Replace one exact occurrence of a text in a file.
    ///
    /// The `old` text must occur exactly once: include enough surrounding
    /// lines to make it unique. No match fails with `edit_no_match`, several
    /// with `edit_ambiguous` (the message lists the lines).
    #[tool(
        name = "fs_edit",
        category = "file-system",
        action = "code:write",
        side_effect = true,
        specifier = "{path}"
    )]
    fn edit(ctx: &Context, args: EditArgs) -> Result<EditResult, ToolError> {
        let path = ctx.resolve(&args.path)?;
        let text = std::fs::read_to_string(&path).map_err(|e| ToolError::io(&args.path, &e))?;
        let (updated, line) =
            edit::replace_once(&text, &args.old, &args.new).map_err(|e| ToolError {
                message: format!("{}: {}", args.path, e.message),
                ..e
            })?;
        std::fs::write(&path, updated).map_err(|e| ToolError::io(&args.path, &e))?;
        Ok(EditResult {
            path: args.path,
            line,
        })
    }

    /// Arguments of `fs_list`.
    #[derive(Debug, Deserialize)]
    pub struct ListArgs {
        /// The directory to list.
        pub path: String,
        /// Descend into subdirectories (symlinks are listed, never followed).
        #[serde(default)]
        pub recursive: bool,
        /// Only entries whose path relative to `path` matches this glob, e.g. `**/*.rs`.
        pub glob: Option<String>,
        /// Most entries to return (default 1000).
        pub max_entries: Option<u32>,
    }

    #[derive(Debug, Serialize)]
    pub struct Entry {
        /// Relative to the listed directory.
        pub path: String,
        pub kind: EntryKind,
        /// Size in bytes (files only).
        pub size: Option<u64>,
    }

    #[derive(Debug, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum EntryKind {
        File,
        Dir,
        Symlink,
        Other,
    }

    #[derive(Debug, Serialize)]
    pub struct ListResult {
        pub path: String,
        /// Sorted by path.
        pub entries: Vec<Entry>,
        /// True when `max_entries` cut the listing short.
        pub truncated: bool,
    }

    /// List a directory, optionally recursively and filtered by a glob.
    #[tool(
        name = "fs_list",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        specifier = "{path}",
        example(
            description = "All Rust files under src",
            args = r#"{"path": "src", "recursive": true, "glob": "**/*.rs"}"#
        )
    )]
    fn list(ctx: &Context, args: ListArgs) -> Result<ListResult, ToolError> {
        let root = ctx.resolve(&args.path)?;
        let max = args.max_entries.unwrap_or(1000) as usize;
        let (entries, truncated) = walk::list(
            ctx,
            &root,
            &args.path,
            args.recursive,
            args.glob.as_deref(),
            max,
        )?;
        Ok(ListResult {
            path: args.path,
            entries,
            truncated,
        })
    }

    /// Arguments of `fs_delete`.
    #[derive(Debug, Deserialize)]
    pub struct DeleteArgs {
        /// The file or directory to delete.
        pub path: String,
        /// Required to delete a non-empty directory and everything in it.
        #[serde(default)]
        pub recursive: bool,
    }

    #[derive(Debug, Serialize)]
    pub struct DeleteResult {
        pub path: String,
        pub kind: EntryKind,
    }

    /// Delete a file, a symlink, or (with `recursive`) a directory tree.
    #[tool(
        name = "fs_delete",
        category = "file-system",
        action = "code:delete",
        side_effect = true,
        specifier = "{path}"
    )]
    fn delete(ctx: &Context, args: DeleteArgs) -> Result<DeleteResult, ToolError> {
        let path = ctx.resolve(&args.path)?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| ToolError::io(&args.path, &e))?;
        let kind = walk::kind(&meta);
        let done = match kind {
            EntryKind::Dir if args.recursive => std::fs::remove_dir_all(&path),
            EntryKind::Dir => {
                let mut entries =
                    std::fs::read_dir(&path).map_err(|e| ToolError::io(&args.path, &e))?;
                if entries.next().is_some() {
                    return Err(ToolError::conflict(format!(
                        "{}: directory not empty; pass \"recursive\": true to delete it and its contents",
                        args.path
                    ))
                    .with_code("directory_not_empty"));
                }
                std::fs::remove_dir(&path)
            }
            _ => std::fs::remove_file(&path),
        };
        done.map_err(|e| ToolError::io(&args.path, &e))?;
        Ok(DeleteResult {
            path: args.path,
            kind,
        })
    }
}
