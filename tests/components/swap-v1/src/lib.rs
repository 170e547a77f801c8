// Plugin `swap`, whose one tool reports the plugin version that ran it.
// Built twice (swap-v1 and swap-v2 share this file, with different
// package versions) so tests can replace one with the other mid-flight.

#[warden_sdk::plugin(name = "swap")]
mod swap {
    use warden_sdk::prelude::*;

    /// Arguments of `swap_which`.
    #[derive(Deserialize)]
    pub struct Args {
        /// How long to take, in milliseconds (at most 5000).
        pub millis: u64,
    }

    #[derive(Serialize)]
    pub struct Which {
        /// The version that started the call.
        pub started: String,
        /// The version that finished it.
        pub finished: String,
    }

    /// Wait a while and report which version of the plugin ran.
    #[tool(
        name = "swap_which",
        category = "file-system",
        action = "code:read",
        side_effect = false,
        example(description = "A tenth of a second", args = r#"{"millis": 100}"#)
    )]
    fn which(ctx: &Context, args: Args) -> Result<Which, ToolError> {
        let started = env!("CARGO_PKG_VERSION").to_owned();
        // Tells the host (and a test waiting for it) that the call began.
        ctx.progress(0.0, None, Some("started"));
        std::thread::sleep(std::time::Duration::from_millis(args.millis.min(5000)));
        Ok(Which {
            started,
            finished: env!("CARGO_PKG_VERSION").to_owned(),
        })
    }
}
