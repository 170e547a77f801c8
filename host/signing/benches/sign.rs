//! The host key's hot operations: signing a 32-byte hash (the audit
//! chain signs one per commit) and verifying one (`warden audit verify`
//! checks every signature in the chain).
//!
//! `cargo bench -p warden-signing --bench sign`

#![allow(clippy::expect_used, reason = "a benchmark fails loudly")]

use warden_signing::{SecretKey, sha256};

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 200, sample_size = 20)]
fn sign(bencher: divan::Bencher) {
    let key = SecretKey::generate().expect("key");
    let hash = sha256(b"an audit record");
    bencher.bench_local(|| key.sign(divan::black_box(&hash)));
}

#[divan::bench(sample_count = 200, sample_size = 20)]
fn verify(bencher: divan::Bencher) {
    let key = SecretKey::generate().expect("key");
    let public = key.public();
    let hash = sha256(b"an audit record");
    let signature = key.sign(&hash);
    bencher.bench_local(|| public.verify(divan::black_box(&hash), &signature));
}
