//! Warden's integration tests: one binary, real wasm components built by
//! `warden-test-artifacts`, real files in temporary directories.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail the test loudly"
)]

mod answers;
mod architecture;
mod batch;
mod common;
mod conformance;
mod dns;
mod dynamic_layer;
mod fs;
mod gate_policy;
mod gen_words;
mod grants;
mod hello;
mod http;
mod json;
mod load;
mod mcp;
mod memories;
mod net;
mod policy_cases;
mod probe;
mod protect;
mod protect_open;
mod reload;
mod sandbox;
mod search;
mod served;
mod server;
mod spare;
mod specifiers;
mod store;
mod tool_create;
mod toolsmith_build;
mod vcs_gate;
mod wire;

// The two builds of plugin `swap` are tested together, in `reload`.
use reload as swap_v1;
use reload as swap_v2;

/// Every guest component has a test module named after it; adding a guest
/// without tests fails to compile here.
mod guests {
    macro_rules! has_tests {
        ($name:ident) => {
            #[allow(unused_imports)]
            use crate::$name as _;
        };
    }
    warden_test_artifacts::for_each_guest!(has_tests);
}
