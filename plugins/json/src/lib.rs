//! Warden's JSON tool: `json_query` runs a jq filter with jaq (a jq
//! implementation in Rust: jaq-core, jaq-std, jaq-json) over an inline
//! JSON value or a JSON file in a granted directory.

mod jq;

#[warden_sdk::plugin(name = "json", filesystem = "read")]
mod json {
    use warden_sdk::prelude::*;

    use crate::jq;

    /// Arguments of `json_query`.
    #[derive(Debug, Deserialize)]
    pub struct QueryArgs {
        /// The jq filter, e.g. `.items[] | select(.done | not) | .title`.
        pub filter: String,
        /// The input value. Give this or `path`.
        pub input: Option<serde_json::Value>,
        /// A JSON file to read the input from. Give this or `input`.
        pub path: Option<String>,
        /// Most results to return (default 1000).
        pub max_results: Option<u32>,
    }

    #[derive(Debug, Serialize)]
    pub struct QueryResult {
        /// Every value the filter produced, in order.
        pub results: Vec<serde_json::Value>,
        /// True when the filter produced more than `max_results` values.
        pub truncated: bool,
    }

    /// Run a jq filter over JSON.
    ///
    /// The filter language is jq's (paths, pipes, `select`, `map`,
    /// `group_by`, string interpolation, ...), implemented by jaq.
    #[tool(
        name = "json_query",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        specifier = "{path}",
        example(
            description = "Names of the dependencies in package.json",
            args = r#"{"filter": ".dependencies | keys", "path": "package.json"}"#
        )
    )]
    fn query(ctx: &Context, args: QueryArgs) -> Result<QueryResult, ToolError> {
        let text = match (&args.input, &args.path) {
            (Some(value), None) => value.to_string(),
            (None, Some(path)) => {
                let file = ctx.resolve(path)?;
                std::fs::read_to_string(&file).map_err(|e| ToolError::io(path, &e))?
            }
            _ => {
                return Err(ToolError::invalid_argument(
                    "give exactly one of `input` (a JSON value) and `path` (a JSON file)",
                ));
            }
        };
        let max = args.max_results.unwrap_or(1000) as usize;
        let (results, truncated) = jq::run(&args.filter, &text, max)?;
        Ok(QueryResult { results, truncated })
    }
}
