//! What validating an OAuth access token costs once the issuer's key set
//! is cached: the whole check `[serve.oauth]` runs on every HTTP request
//! that carries a JWT (header, key lookup, signature, iss/aud/exp/nbf,
//! scopes, principal and agent mapping), as p50/p99 in microseconds, for
//! ES256 (P-256, made per run) and RS256 (a fixed 2048-bit test key):
//! `first` is a token's first request (the full check), `again` a later
//! request with the same token (remembered for up to a minute while the
//! key set stands), `unknown` a token of an unknown key (everything but
//! the signature: the fixed cost around it).
//!
//! cargo bench -p warden-server --bench oauth [-- SAMPLES]

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmarks fail loudly"
)]
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;
use warden_server::oauth::{
    ClaimRule, JwtAlgorithm, JwtVerifier, KeyCache, Keys, OAuthConfig, base_validation,
};

/// A 2048-bit RSA key for this benchmark only (PKCS#1 DER, base64): it
/// signs nothing but the tokens below.
const RSA_TEST_KEY: &str = "MIIEpAIBAAKCAQEAt1l7KtHiWVdkZB/SgSXH0wiyIote1lnBZDSRHZ6gwKORECQaEiQr5A8XjeMar2Vc65gTf8q/Ra0q5RFM7hCxwhtRK7twu/rPGhy6Oc0m1FJWZ7+vvZ/HobSGmLT/CpmMd6w/BYM+xLEM7xt9RgoyDOqjX4rjD8bPXv7SOLco7xTWjqSmGt4VI7ZsKZj1di5zu6V31k0CvMsRtJYMZ9Sq1qt9xVjekMUfWUZecyIKgwuNJetzCDTwkaAgZCG7OGWPVdCfs6qsU2/eCqswx7CtTisG5fhmC3wctl2QfBwntLWWKq9z2FWmeCsWoZp+Bk1UcxokcJbqepy0f8b97B7HzwIDAQABAoIBAB49YuQQE836bPNakER+r7Nttrud0vl1ekEFrn19ITREhfNskOQ3FQobNx5Ou6L8C9RLk8O688sRIYcAUHjfRgImsT+OPayzVB8RZ+GKpYHVRqz734dd5/YSqTRcfcgIxTMjtI07NUoJjYGOPh4kJlcdB+8FICgE+UTIsHFsPBMaS3HfEsdRxsWHDEt+Br9xc7ImYTPrAsbALFucQHalx0aGeEbALXXAku5I5RWQc5gwF7/SMyxqHvsPhwUG+Bzd0nnWY4uHUez7aeZxYKOthWTOiFJmkepS/fzPsA88KCFK3Vj3Qc8MDDvg30xlgyUqGzkSXrIgHhNeqeE89/kcxaECgYEA/DpHrBiyxqNJEC2AvjuvPXMdtXo9h85UjQvY66Bblq0hFIW07dkfY729yFowtcjFgidAA0eFMLbXmZrQttQxTR8OSCkIQ+9FxtdLOyRSDwivlRp/IhojuZG2jEu6vmdwecmW+zwSO8+oB46K3Dq7IxdbXdV/h8VXJ+AJXQDbsn8CgYEAuhd7recPwpHQw9+ebVXS0CrgTiKlPbzes4762MI1mt6WQf/BBOvkt0zoKoOUM6xg5u0Y7Xnvf0+/Ex/botdPTDFi1tI15piRqdTehlJ8LJSiwcDjt6Q1ci/o9KFlMS8SsjtUOyq/3oWfebeM+nnCvFr5KYuzgWom/beeJci8orECgYEA+dN8BDDeerNm/fgkCciyNUpdRdBTO72Zr67pZ9GIhkDrgBlDcUbauX9JiDYVAylewCDCXb0sZmjkOgfG7SBVyM6W5dCGmEtaMK40nNrH0I5I44XAIPYFJpv2VRX5XPi1xltvCV+hq85t3zZHwgUGMKbE37dFPySuxBc7Dvx3n18CgYAoTzXnMYnkZ5mFFEdI/7IujVsREcghW2wSEQKdOVRLO7Poj/HLkx1z5yDTNLVBjDFhVDJ2HleWiDundNsqpuDybDAwwFAUpy/GTen1xqBHN9sZhSLOgK9jEKWxd9Rnlv7BxMA2IMh29xLYVr4e84kPK9WU/kHf4pKXmtKS9KyHwQKBgQCrxUqp+6mWyHK6eT1Yz14rh1pqojSZ7ZKIwNSlPKho38AzAadPri9Q2c26/DGaIB2FG0RYhljA+LYnqarf0YX3/r36ILpV47vsVhuXIleNxdrkhEyIlYFyErOg1oQbkyUAFlr2GQCpJwOkDEKo+Qqu8YGLgVB+B9HHkajbi+dQww==";

const P256_PKCS8_PREFIX: &str =
    "3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420";

fn es256_key() -> EncodingKey {
    let mut der: Vec<u8> = (0..P256_PKCS8_PREFIX.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&P256_PKCS8_PREFIX[i..i + 2], 16).unwrap())
        .collect();
    let mut scalar = [0u8; 32];
    getrandom::fill(&mut scalar).unwrap();
    scalar[0] &= 0x7f;
    der.extend_from_slice(&scalar);
    EncodingKey::from_ec_der(&der)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn config() -> OAuthConfig {
    OAuthConfig {
        issuer: "https://issuer.bench".into(),
        audience: "https://warden.bench/mcp".into(),
        jwks_url: None,
        jwks_file: Some("unused.json".into()),
        required_scopes: vec!["mcp:tools".into()],
        algorithms: vec![JwtAlgorithm::RS256, JwtAlgorithm::ES256],
        leeway_secs: 30,
        keep_claims: vec!["email".into()],
        agents: vec![ClaimRule {
            agent: "assistant".into(),
            claim: "client_id".into(),
            equals: "chat".into(),
        }],
        agent_claim: None,
        operators: Vec::new(),
    }
}

fn main() {
    let samples: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let config = config();
    let rsa = EncodingKey::from_rsa_der(
        &base64::engine::general_purpose::STANDARD
            .decode(RSA_TEST_KEY)
            .unwrap(),
    );
    let ec = es256_key();
    let jwk = |key: &EncodingKey, alg: Algorithm, kid: &str| {
        let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
        jwk.common.key_id = Some(kid.into());
        jwk
    };
    let set = JwkSet {
        keys: vec![
            jwk(&rsa, Algorithm::RS256, "rsa"),
            jwk(&ec, Algorithm::ES256, "ec"),
        ],
    };
    let base = base_validation(&config);
    let keys = Keys::parse(
        &serde_json::to_vec(&set).unwrap(),
        &base,
        &config.algorithms,
    )
    .unwrap();
    let cache = KeyCache::fixed(keys, base, config.algorithms.clone());
    let verifier = JwtVerifier::new(&config, Arc::new(cache), vec!["assistant".into()]);
    let now = jsonwebtoken::get_current_timestamp();
    let claims = json!({
        "iss": config.issuer, "aud": config.audience, "sub": "user-1", "client_id": "chat",
        "scope": "openid mcp:tools", "exp": now + 3600, "iat": now, "email": "u@example.com",
    });
    let token = |alg: Algorithm, kid: &str, key: &EncodingKey| {
        let mut header = Header::new(alg);
        header.kid = Some(kid.into());
        encode(&header, &claims, key).unwrap()
    };
    let es = token(Algorithm::ES256, "ec", &ec);
    let rs = token(Algorithm::RS256, "rsa", &rsa);
    let unknown = token(Algorithm::ES256, "absent", &ec);
    let cases: [(&str, &str, bool, bool); 5] = [
        ("ES256 first", &es, true, true),
        ("RS256 first", &rs, true, true),
        ("ES256 again", &es, false, true),
        ("RS256 again", &rs, false, true),
        ("unknown", &unknown, true, false),
    ];
    for (label, token, full, valid) in cases {
        let run = || async {
            if full {
                verifier.check_fully(token).await.map(|(v, _)| v)
            } else {
                verifier.check(token).await
            }
        };
        // Warm up, and check the case does what it says.
        for _ in 0..100 {
            let ok = rt.block_on(run()).is_ok();
            assert_eq!(ok, valid, "{label}");
        }
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples {
            let start = Instant::now();
            let result = rt.block_on(run());
            times.push(start.elapsed());
            black_box(result.is_ok());
        }
        times.sort();
        println!(
            "{label:<12} p50 {:>7.2} us   p99 {:>7.2} us   ({} samples)",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            samples
        );
    }
}
