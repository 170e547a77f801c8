//! Tokens verified a moment ago: a client sends the same access token
//! with every request of its session, and verifying its signature again
//! each time costs more than the call it carries. A verified token is
//! remembered for at most [`SEEN_TTL`], never past its `exp`, and only
//! while the key set it was checked against is unchanged (a rotated-out
//! key stops its tokens at the next refresh).
//!
//! Attacks it stops: a stale or altered token riding on the cache — the
//! cache is keyed by the token's exact text and holds successes only, so
//! anything not byte-for-byte equal to a verified token is checked in
//! full, and an expired one is not served; memory growth from many
//! distinct tokens — the map is bounded ([`SEEN_MAX`]) and emptied when
//! full.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use warden_mcp::Verified;

/// The longest a verified token is taken on trust.
pub const SEEN_TTL: Duration = Duration::from_secs(60);
/// The most tokens remembered.
pub const SEEN_MAX: usize = 4096;

struct Entry {
    verified: Verified,
    exp: u64,
    at: Instant,
    generation: u64,
}

#[derive(Default)]
pub struct Seen {
    map: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen").finish_non_exhaustive()
    }
}

impl Seen {
    /// The earlier result for exactly this token, if still good.
    pub fn get(&self, token: &str, now_secs: u64, generation: u64) -> Option<Verified> {
        let map = self.map.lock().ok()?;
        let entry = map.get(token)?;
        (entry.generation == generation && now_secs < entry.exp && entry.at.elapsed() < SEEN_TTL)
            .then(|| entry.verified.clone())
    }

    pub fn put(&self, token: &str, verified: &Verified, exp: u64, generation: u64) {
        let Ok(mut map) = self.map.lock() else {
            return;
        };
        if map.len() >= SEEN_MAX {
            map.clear();
        }
        map.insert(
            token.to_owned(),
            Entry {
                verified: verified.clone(),
                exp,
                at: Instant::now(),
                generation,
            },
        );
    }
}
