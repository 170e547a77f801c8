//! Who is signed in to the console: a session id (the cookie's value)
//! to the person's name and the CSRF token their forms carry.
//!
//! Attack it stops: a guessed or stolen-then-expired session. Ids and
//! CSRF tokens are 256 random bits; a sign-in ends after its lifetime or
//! at sign-out; the table is bounded, so a flood of sign-ins (each needs
//! an admin token) cannot exhaust memory.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most this many sign-ins are kept; the oldest goes first.
const MAX_SIGNINS: usize = 256;

/// One signed-in person.
#[derive(Debug, Clone)]
pub(crate) struct SignIn {
    pub actor: String,
    pub csrf: String,
    expires: Instant,
}

#[derive(Debug)]
pub(crate) struct SignIns {
    ttl: Duration,
    table: Mutex<HashMap<String, SignIn>>,
}

impl SignIns {
    pub fn new(ttl: Duration) -> SignIns {
        SignIns {
            ttl,
            table: Mutex::new(HashMap::new()),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SignIn>> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Signs `actor` in: the new session's id, or why there is none.
    /// A sign-in of `actor` for the configured time.
    #[cfg(test)]
    pub fn open(&self, actor: &str) -> Result<(String, SignIn), String> {
        self.open_for(actor, self.ttl)
    }

    /// A sign-in of `actor` for `ttl` (at most the configured time: an
    /// access token's sign-in ends with the token).
    pub fn open_for(&self, actor: &str, ttl: Duration) -> Result<(String, SignIn), String> {
        let token = |what: &str| {
            warden_signing::random_token(32).map_err(|e| format!("no {what} could be made: {e}"))
        };
        let id = token("session id")?;
        let signin = SignIn {
            actor: actor.to_owned(),
            csrf: token("CSRF token")?,
            expires: Instant::now() + ttl.min(self.ttl),
        };
        let mut table = self.lock();
        let now = Instant::now();
        table.retain(|_, s| s.expires > now);
        if table.len() >= MAX_SIGNINS
            && let Some(oldest) = table
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
        {
            table.remove(&oldest);
        }
        table.insert(id.clone(), signin.clone());
        Ok((id, signin))
    }

    /// The live sign-in of session `id`.
    pub fn get(&self, id: &str) -> Option<SignIn> {
        let mut table = self.lock();
        match table.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                table.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn close(&self, id: &str) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_in_lives_until_it_expires_or_closes() {
        let signins = SignIns::new(Duration::from_secs(60));
        let (id, s) = signins.open("dana").unwrap();
        assert_eq!(signins.get(&id).unwrap().actor, "dana");
        assert_eq!(s.csrf.len(), 64);
        assert!(signins.get("not-a-session").is_none());
        signins.close(&id);
        assert!(signins.get(&id).is_none());

        let expired = SignIns::new(Duration::ZERO);
        let (id, _) = expired.open("dana").unwrap();
        assert!(expired.get(&id).is_none());

        // A token's sign-in ends with the token, never after the
        // configured time.
        let (id, _) = signins.open_for("dana", Duration::ZERO).unwrap();
        assert!(signins.get(&id).is_none());
        let (id, s) = signins.open_for("dana", Duration::from_secs(3600)).unwrap();
        assert!(s.expires <= Instant::now() + Duration::from_secs(60));
        assert!(signins.get(&id).is_some());
    }

    #[test]
    fn the_table_is_bounded() {
        let signins = SignIns::new(Duration::from_secs(60));
        let first = signins.open("a").unwrap().0;
        for _ in 0..MAX_SIGNINS {
            signins.open("b").unwrap();
        }
        assert!(signins.lock().len() <= MAX_SIGNINS);
        assert!(signins.get(&first).is_none(), "the oldest went first");
    }
}
