//! The example of docs/plugin-authoring.md, kept compiling and tested.

#[warden_sdk::plugin(name = "hello", filesystem = "read")]
mod hello {
    use warden_sdk::prelude::*;

    /// Arguments of `hello_count_lines`.
    #[derive(Deserialize)]
    pub struct Args {
        /// The file to count; relative paths resolve against the granted directory.
        pub path: String,
        /// Count only lines containing this text.
        pub containing: Option<String>,
    }

    #[derive(Serialize)]
    pub struct Counted {
        pub path: String,
        pub lines: u64,
    }

    /// Count the lines of a text file.
    ///
    /// The first line of this comment is the tool's one-line summary; the
    /// whole comment is its description.
    #[tool(
        name = "hello_count_lines",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        specifier = "{path}",
        example(
            description = "Count TODOs",
            args = r#"{"path": "src/main.rs", "containing": "TODO"}"#
        )
    )]
    fn count_lines(ctx: &Context, args: Args) -> Result<Counted, ToolError> {
        let path = ctx.resolve(&args.path)?;
        let text = std::fs::read_to_string(&path).map_err(|e| ToolError::io(&args.path, &e))?;
        let lines = text
            .lines()
            .filter(|l| args.containing.as_deref().is_none_or(|c| l.contains(c)))
            .count() as u64;
        Ok(Counted {
            path: args.path,
            lines,
        })
    }
}
