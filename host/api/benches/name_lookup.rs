//! What checking a guest's name lookup against its grant costs, as p50 and
//! p99 per lookup (the containment target: at most 10 µs), for a granted
//! name, a name below a granted domain and a refused name, with a grant of
//! 20 patterns.
//!
//! cargo bench -p warden-api --bench name_lookup

#![allow(clippy::unwrap_used, reason = "benchmarks fail loudly")]
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::hint::black_box;
use std::time::Instant;

use warden_api::net::{EffectiveNet, NetPattern};

fn main() {
    let mut granted: Vec<NetPattern> = (0..18)
        .map(|i| format!("host-{i}.example.net:443").parse().unwrap())
        .collect();
    granted.push("*.example.org".parse().unwrap());
    granted.push("api.example.com:443".parse().unwrap());
    let requested = vec![NetPattern::AllowAll];
    let net = EffectiveNet::new(&granted, &requested);
    for name in [
        "api.example.com",
        "a.b.example.org",
        "exfil-secret-4242.attacker.example",
    ] {
        let mut samples = Vec::with_capacity(20_000);
        for _ in 0..20_000 {
            let t = Instant::now();
            let _ = black_box(net.check_name_lookup(black_box(name)));
            samples.push(t.elapsed());
        }
        samples.sort();
        let at = |p: f64| {
            let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
            samples[i].as_secs_f64() * 1e6
        };
        println!(
            "name lookup check `{name}`: p50 {:.2} us, p99 {:.2} us",
            at(0.5),
            at(0.99)
        );
    }
}
