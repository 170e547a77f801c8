//! The host key's hot operations: signing a 32-byte hash (the audit
//! chain signs one per commit) and verifying one (`warden audit verify`
//! checks every signature in the chain); and tagging a compiled plugin
//! of the compile cache's size (read back and checked on every start),
//! with the keyed BLAKE3 the cache uses beside HMAC-SHA256.
//!
//! `cargo bench -p warden-signing --bench sign`

#![allow(clippy::expect_used, reason = "a benchmark fails loudly")]

use warden_signing::{BulkMac, HmacSha256, SecretKey, sha256};

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

/// The size of the bundled fs plugin's compiled form.
const COMPILED: usize = 3 << 20;

#[divan::bench(sample_count = 30, sample_size = 1)]
fn cache_tag_blake3(bencher: divan::Bencher) {
    let bytes = vec![0x5au8; COMPILED];
    bencher.bench_local(|| {
        let mut mac = BulkMac::new(&[7; 32]);
        mac.update(divan::black_box(&bytes));
        mac.finalize()
    });
}

#[divan::bench(sample_count = 30, sample_size = 1)]
fn cache_tag_hmac_sha256(bencher: divan::Bencher) {
    let bytes = vec![0x5au8; COMPILED];
    bencher.bench_local(|| {
        let mut mac = HmacSha256::new(&[7; 32]);
        mac.update(divan::black_box(&bytes));
        mac.finalize()
    });
}
