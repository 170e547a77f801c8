//! A generated tool's source as an author writes it: what the sampling
//! author shows a model, and what the builder's tests and benchmark build.

/// The smallest useful generated tool, `gen_text_count` (capability
/// `text:count`): an SDK plugin whose one tool has the derived name.
pub const EXAMPLE_LIB_RS: &str = r#"#[warden_sdk::plugin(name = "gen_text")]
mod tool {
    use warden_sdk::prelude::*;

    #[derive(Deserialize)]
    pub struct Args {
        /// The text to count the words of.
        pub text: String,
    }

    #[derive(Serialize)]
    pub struct Count {
        pub words: u64,
    }

    /// Count the words of a text.
    #[tool(name = "gen_text_count", category = "analytics", action = "code:read", side_effect = false)]
    fn count(args: Args) -> Result<Count, ToolError> {
        Ok(Count { words: args.text.split_whitespace().count() as u64 })
    }
}
"#;
