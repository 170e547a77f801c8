//! A test OAuth issuer: ES256 keys made per run, its JWK set served over
//! loopback HTTP, access tokens minted on demand. Included with `#[path]`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::Value;

/// PKCS#8 for a P-256 private key, up to the 32 bytes of the scalar.
const P256_PKCS8_PREFIX: &str =
    "3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420";

/// A fresh P-256 key and its public JWK named `kid`.
pub fn es256_key(kid: &str) -> (EncodingKey, Jwk) {
    let mut der: Vec<u8> = (0..P256_PKCS8_PREFIX.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&P256_PKCS8_PREFIX[i..i + 2], 16).unwrap())
        .collect();
    let mut scalar = [0u8; 32];
    getrandom::fill(&mut scalar).unwrap();
    scalar[0] &= 0x7f; // below the group order
    der.extend_from_slice(&scalar);
    let key = EncodingKey::from_ec_der(&der);
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    (key, jwk)
}

/// Signs `claims` with `key`, naming `kid`.
pub fn sign(key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    encode(&header, claims, key).unwrap()
}

pub struct Issuer {
    /// The issuer identifier (`iss`).
    pub url: String,
    pub jwks_url: String,
    key: EncodingKey,
    /// How many times the key set was fetched.
    pub fetches: Arc<Mutex<usize>>,
}

impl Issuer {
    /// Serves a key set with one fresh key (`k1`) on a loopback port, from
    /// a thread that lives as long as the test process.
    pub fn start() -> Issuer {
        let (key, jwk) = es256_key("k1");
        let body = serde_json::to_vec(&JwkSet { keys: vec![jwk] }).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fetches = Arc::new(Mutex::new(0));
        let counted = fetches.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                *counted.lock().unwrap() += 1;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        Issuer {
            url: format!("http://{addr}"),
            jwks_url: format!("http://{addr}/jwks.json"),
            key,
            fetches,
        }
    }

    /// A token signed with the published key.
    pub fn token(&self, claims: &Value) -> String {
        sign(&self.key, "k1", claims)
    }
}
