// A tool as the toolsmith would make it for the capability `words:count`:
// plugin `gen_words`, one tool `gen_words_count`, asking to read files.
// Some texts make it misbehave, so a test's blueprint cases can show
// each way a validation fails: "trap" traps, "spin" never returns,
// "negative" answers a count below zero.

#[warden_sdk::plugin(name = "gen_words", filesystem = "read")]
mod tool {
    use warden_sdk::prelude::*;

    /// Arguments of `gen_words_count`.
    #[derive(Deserialize)]
    pub struct Args {
        /// The text to count the words of.
        pub text: String,
    }

    #[derive(Serialize)]
    pub struct Count {
        /// How many words.
        pub words: i64,
    }

    /// Count the words of a text.
    #[tool(
        name = "gen_words_count",
        category = "analytics",
        action = "code:read",
        side_effect = false
    )]
    fn count(args: Args) -> Result<Count, ToolError> {
        match args.text.as_str() {
            "trap" => std::process::abort(),
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "negative" => Ok(Count { words: -1 }),
            text => Ok(Count {
                words: text.split_whitespace().count() as i64,
            }),
        }
    }
}
