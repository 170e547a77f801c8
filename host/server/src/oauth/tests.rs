use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use warden_mcp::Refusal;

use super::*;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "http://127.0.0.1:1/mcp";

/// A fresh P-256 key: PKCS#8 around a random scalar.
pub(crate) fn es256_key(kid: &str) -> (EncodingKey, Jwk) {
    let mut der = hex_prefix();
    let mut scalar = [0u8; 32];
    getrandom::fill(&mut scalar).unwrap();
    scalar[0] &= 0x7f; // below the group order
    der.extend_from_slice(&scalar);
    let key = EncodingKey::from_ec_der(&der);
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    (key, jwk)
}

fn hex_prefix() -> Vec<u8> {
    let hex = "3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420";
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn claims() -> Value {
    json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "client_id": "chat",
        "scope": "mcp:tools profile", "exp": now() + 600, "team": "blue",
    })
}

fn sign(key: &EncodingKey, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = kid.map(str::to_owned);
    encode(&header, claims, key).unwrap()
}

fn config() -> OAuthConfig {
    OAuthConfig {
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        jwks_url: Some("http://127.0.0.1:9/jwks".into()),
        jwks_file: None,
        required_scopes: vec!["mcp:tools".into()],
        algorithms: vec![JwtAlgorithm::ES256, JwtAlgorithm::RS256],
        leeway_secs: 0,
        keep_claims: vec!["team".into()],
        agents: vec![ClaimRule {
            agent: "reader".into(),
            claim: "sub".into(),
            equals: "alice".into(),
        }],
        agent_claim: Some("client_id".into()),
        operators: vec![OperatorRule {
            claim: "scope".into(),
            equals: "warden:operate".into(),
        }],
    }
}

/// A verifier whose key set is `published` (changeable), counting fetches.
fn verifier(published: Arc<Mutex<Vec<Jwk>>>, fetches: Arc<AtomicUsize>) -> JwtVerifier {
    let config = config();
    let fetch: Fetch = Arc::new(move || {
        fetches.fetch_add(1, Ordering::SeqCst);
        let set = JwkSet {
            keys: published.lock().unwrap().clone(),
        };
        Box::pin(async move { Ok(serde_json::to_vec(&set).unwrap()) })
    });
    let cache = KeyCache::fetched(fetch, base_validation(&config), config.algorithms.clone());
    JwtVerifier::new(
        &config,
        Arc::new(cache),
        vec!["reader".into(), "chat".into()],
    )
}

fn refused(result: Result<warden_mcp::Verified, Refusal>) -> String {
    match result {
        Err(Refusal::InvalidToken { description }) => description,
        other => panic!("expected invalid_token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_valid_token_maps_its_principal_and_keeps_claims() {
    let (key, jwk) = es256_key("k1");
    let v = verifier(Arc::new(Mutex::new(vec![jwk])), Arc::default());
    let ok = v.check(&sign(&key, Some("k1"), &claims())).await.unwrap();
    assert_eq!(ok.agent, "reader");
    assert_eq!(ok.principal.subject, "alice");
    assert_eq!(ok.principal.issuer, ISSUER);
    assert_eq!(ok.principal.client_id.as_deref(), Some("chat"));
    assert_eq!(ok.principal.scopes, vec!["mcp:tools", "profile"]);
    assert_eq!(
        ok.principal.claims.get("team").map(String::as_str),
        Some("blue")
    );
    // No rule for bob: his client id names an agent.
    let mut bob = claims();
    bob["sub"] = json!("bob");
    let ok = v.check(&sign(&key, Some("k1"), &bob)).await.unwrap();
    assert_eq!(ok.agent, "chat");
    bob["client_id"] = json!("nobody");
    assert!(matches!(
        v.check(&sign(&key, Some("k1"), &bob)).await,
        Err(Refusal::NoAgent { .. })
    ));
}

#[tokio::test]
async fn wrong_issuer_audience_lifetime_and_scope_are_refused() {
    let (key, jwk) = es256_key("k1");
    let v = verifier(Arc::new(Mutex::new(vec![jwk])), Arc::default());
    let with = |field: &str, value: Value| {
        let mut c = claims();
        c[field] = value;
        sign(&key, Some("k1"), &c)
    };
    assert!(refused(v.check(&with("iss", json!("https://evil.test"))).await).contains("issuer"));
    assert!(refused(v.check(&with("aud", json!("http://other/mcp"))).await).contains("resource"));
    assert!(refused(v.check(&with("exp", json!(now() - 60))).await).contains("expired"));
    assert!(refused(v.check(&with("nbf", json!(now() + 600))).await).contains("not valid yet"));
    // An audience list holding this resource is fine.
    assert!(v.check(&with("aud", json!(["x", AUDIENCE]))).await.is_ok());
    match v.check(&with("scope", json!("profile"))).await {
        Err(Refusal::InsufficientScope { scope, .. }) => assert_eq!(scope, "mcp:tools"),
        other => panic!("expected insufficient_scope, got {other:?}"),
    }
    let mut no_exp = claims();
    no_exp.as_object_mut().unwrap().remove("exp");
    assert!(refused(v.check(&sign(&key, Some("k1"), &no_exp)).await).contains("exp"));
}

#[tokio::test]
async fn alg_none_tampering_and_foreign_keys_are_refused() {
    let (key, jwk) = es256_key("k1");
    let v = verifier(Arc::new(Mutex::new(vec![jwk])), Arc::default());
    let good = sign(&key, Some("k1"), &claims());
    let parts: Vec<&str> = good.split('.').collect();
    // alg: none, no signature.
    let b64 = |v: &Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": "k1"})),
        parts[1]
    );
    assert!(refused(v.check(&none).await).contains("malformed"));
    // HS256 over the same claims: no key of the set verifies HMAC.
    let hs = encode(
        &{
            let mut h = Header::new(Algorithm::HS256);
            h.kid = Some("k1".into());
            h
        },
        &claims(),
        &EncodingKey::from_secret(b"guess"),
    )
    .unwrap();
    assert!(refused(v.check(&hs).await).contains("algorithm"));
    // Claims changed after signing.
    let mut c = claims();
    c["sub"] = json!("mallory");
    let forged = format!("{}.{}.{}", parts[0], b64(&c), parts[2]);
    assert!(refused(v.check(&forged).await).contains("signature"));
    // Signed by a key the issuer never published.
    let (stranger, _) = es256_key("k1");
    assert!(refused(v.check(&sign(&stranger, Some("k1"), &claims())).await).contains("signature"));
    let (other, _) = es256_key("k9");
    assert!(refused(v.check(&sign(&other, Some("k9"), &claims())).await).contains("unknown key"));
}

#[tokio::test]
async fn an_unknown_kid_refreshes_the_key_set_at_most_once_per_interval() {
    let (key1, jwk1) = es256_key("k1");
    let published = Arc::new(Mutex::new(vec![jwk1]));
    let fetches = Arc::new(AtomicUsize::new(0));
    let v = verifier(published.clone(), fetches.clone());
    assert!(v.check(&sign(&key1, Some("k1"), &claims())).await.is_ok());
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    // Cached: no fetch for a known key.
    assert!(v.check(&sign(&key1, Some("k1"), &claims())).await.is_ok());
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    // The issuer rotates in k2; the first token naming it is accepted
    // after a refresh. (The first fetch is older than MIN_REFRESH only in
    // real time, so reset the interval by refreshing explicitly.)
    let (key2, jwk2) = es256_key("k2");
    published.lock().unwrap().push(jwk2);
    v.keys().refresh(std::time::Duration::ZERO).await.unwrap();
    assert!(v.check(&sign(&key2, Some("k2"), &claims())).await.is_ok());
    let before = fetches.load(Ordering::SeqCst);
    // Made-up kids do not make a fetch each: at most one per interval.
    for i in 0..5 {
        let (k, _) = es256_key(&format!("bogus{i}"));
        let _ = v
            .check(&sign(&k, Some(&format!("bogus{i}")), &claims()))
            .await;
    }
    assert!(fetches.load(Ordering::SeqCst) <= before + 1);
}

#[test]
fn a_malformed_section_names_the_key() {
    let agents = ["reader", "chat"];
    let mut c = config();
    c.jwks_file = Some("keys.json".into());
    let e = c.check(&agents).unwrap_err().to_string();
    assert!(
        e.contains("serve.oauth.jwks-url") && e.contains("exactly one"),
        "{e}"
    );
    let mut c = config();
    c.audience = "not a url".into();
    assert!(
        c.check(&agents)
            .unwrap_err()
            .to_string()
            .contains("serve.oauth.audience")
    );
    let mut c = config();
    c.jwks_url = Some("http://issuer.example/jwks".into());
    let e = c.check(&agents).unwrap_err().to_string();
    assert!(
        e.contains("serve.oauth.jwks-url") && e.contains("loopback"),
        "{e}"
    );
    let mut c = config();
    c.agents[0].agent = "ghost".into();
    assert!(
        c.check(&agents)
            .unwrap_err()
            .to_string()
            .contains("serve.oauth.agents[0].agent")
    );
    let mut c = config();
    c.agents.clear();
    c.agent_claim = None;
    assert!(
        c.check(&agents)
            .unwrap_err()
            .to_string()
            .contains("serve.oauth.agents")
    );
    // An unknown algorithm (or HMAC) does not parse.
    let parsed: Result<OAuthConfig, _> = toml::from_str(
        "issuer = 'i'\naudience = 'https://a/mcp'\njwks-url = 'https://i/k'\nalgorithms = ['HS256']\nagent-claim = 'sub'",
    );
    assert!(parsed.unwrap_err().to_string().contains("HS256"));
}

#[tokio::test]
async fn a_verified_token_is_remembered_only_while_its_key_set_stands() {
    let (key1, jwk1) = es256_key("k1");
    let published = Arc::new(Mutex::new(vec![jwk1]));
    let v = verifier(published.clone(), Arc::default());
    let token = sign(&key1, Some("k1"), &claims());
    assert!(v.check(&token).await.is_ok());
    // The issuer drops k1: the remembered result stands until the key set
    // is refreshed, then the token is checked again and refused.
    published.lock().unwrap().clear();
    assert!(v.check(&token).await.is_ok());
    v.keys().refresh(std::time::Duration::ZERO).await.unwrap();
    assert!(refused(v.check(&token).await).contains("unknown key"));
    // A refused token is never remembered as good; an expired one is not
    // served from memory either (exp in the past fails in full).
    let (key2, jwk2) = es256_key("k2");
    published.lock().unwrap().push(jwk2);
    v.keys().refresh(std::time::Duration::ZERO).await.unwrap();
    let mut old = claims();
    old["exp"] = json!(now() - 1);
    let stale = sign(&key2, Some("k2"), &old);
    assert!(refused(v.check(&stale).await).contains("expired"));
    assert!(refused(v.check(&stale).await).contains("expired"));
}

#[tokio::test]
async fn operators_sign_in_with_their_tokens_and_agents_do_not() {
    let (key, jwk) = es256_key("k1");
    let v = verifier(Arc::new(Mutex::new(vec![jwk])), Arc::default());
    let operator = |exp: u64| json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "dana", "scope": "warden:operate", "exp": exp});
    let exp = now() + 600;
    let signed_in = v
        .check_operator(&sign(&key, Some("k1"), &operator(exp)))
        .await
        .unwrap();
    assert_eq!(signed_in.actor, "dana");
    assert_eq!(signed_in.expires_at_s, exp);
    // An agent's valid token is no operator's.
    match v.check_operator(&sign(&key, Some("k1"), &claims())).await {
        Err(Refusal::NotAnOperator { .. }) => {}
        other => panic!("an agent's token signed in: {other:?}"),
    }
    // An operator's token is checked like any other.
    for bad in [
        operator(now() - 60),
        json!({"iss": ISSUER, "aud": "http://other/mcp", "sub": "dana", "scope": "warden:operate", "exp": exp}),
        json!({"iss": "https://evil.test", "aud": AUDIENCE, "sub": "dana", "scope": "warden:operate", "exp": exp}),
        json!({"iss": ISSUER, "aud": AUDIENCE, "scope": "warden:operate", "exp": exp}),
    ] {
        match v.check_operator(&sign(&key, Some("k1"), &bad)).await {
            Err(Refusal::InvalidToken { .. }) => {}
            other => panic!("{bad} signed in: {other:?}"),
        }
    }
}

#[test]
fn an_operator_rule_that_also_names_an_agent_is_refused() {
    let mut shared = config();
    shared.operators = vec![OperatorRule {
        claim: "sub".into(),
        equals: "alice".into(),
    }];
    let err = shared.check(&["reader"]).unwrap_err().to_string();
    assert!(
        err.contains("serve.oauth.operators[0]") && err.contains("reader"),
        "{err}"
    );
}
