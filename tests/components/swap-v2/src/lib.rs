//! Version 2 of plugin `swap`: the same source as swap-v1.

include!("../../swap-v1/src/lib.rs");
