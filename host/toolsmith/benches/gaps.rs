//! The signature of an unknown tool's name: derived on every unfulfilled
//! request, before the gap is recorded.

#![allow(clippy::unwrap_used, reason = "benches fail loudly")]

use warden_toolsmith::CapabilitySig;

fn main() {
    divan::main();
}

#[divan::bench]
fn signature_of_a_tool_name() -> CapabilitySig {
    CapabilitySig::of_tool(divan::black_box("Weather.Forecast_Daily")).unwrap()
}
