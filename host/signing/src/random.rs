//! Unguessable tokens from the operating system's random source: the
//! console's session ids and CSRF tokens.

use crate::RandomnessError;

/// `bytes` random bytes, hex-encoded (`2 * bytes` characters).
pub fn random_token(bytes: usize) -> Result<String, RandomnessError> {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).map_err(|e| RandomnessError::new(e.to_string()))?;
    Ok(hex::encode(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_of_the_asked_length_and_differ() {
        let a = random_token(32).unwrap();
        let b = random_token(32).unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
