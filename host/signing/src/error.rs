//! Errors of key and signature files and of verification.

/// A key, signature or trust file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if *line > 0 { format!("line {line}: ") } else { String::new() })]
pub struct FormatError {
    /// 1-based line, or 0 when the problem is not on one line.
    pub line: usize,
    pub message: String,
}

impl FormatError {
    pub(crate) fn new(line: usize, message: String) -> FormatError {
        FormatError { line, message }
    }
}

/// Why a component was refused: each variant names the check that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("digest {digest} is revoked")]
    RevokedDigest { digest: String },
    #[error("unsigned: no signature was found (expected a detached `.sig` file beside it)")]
    Unsigned,
    #[error(
        "tampered: the component or its manifest changed after signing \
         (signed digest {signed}, actual {actual})"
    )]
    DigestMismatch { signed: String, actual: String },
    #[error("signed by unknown key {key_id}: no trusted publisher has it")]
    UnknownKey { key_id: String },
    #[error("signed by revoked key {key_id} (publisher `{publisher}`)")]
    RevokedKey { key_id: String, publisher: String },
    #[error("bad signature: it does not verify under key {key_id} (publisher `{publisher}`)")]
    BadSignature { key_id: String, publisher: String },
}

impl VerifyError {
    /// A short stable name of the failed check, for logs and JSON.
    pub fn check(&self) -> &'static str {
        match self {
            VerifyError::RevokedDigest { .. } => "revoked_digest",
            VerifyError::Unsigned => "unsigned",
            VerifyError::DigestMismatch { .. } => "tampered",
            VerifyError::UnknownKey { .. } => "unknown_key",
            VerifyError::RevokedKey { .. } => "revoked_key",
            VerifyError::BadSignature { .. } => "bad_signature",
        }
    }
}
