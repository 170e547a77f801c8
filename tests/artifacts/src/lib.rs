//! Paths of the guest components the tests use, built by `build.rs` from
//! `tests/components` and `plugins` for wasm32-wasip2.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));
