//! `warden keygen`, `warden sign`, `warden verify`: publisher keys and
//! detached plugin signatures.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use warden_registry::{AdmissionPolicy, RegistryError, read_signature, signature_path};
use warden_signing::SecretKey;

use warden_server::{Config, SignersConfig};

use super::setup::SignersArg;
use crate::Outcome;

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The secret key file to write (mode 0600); the public key goes to
    /// KEYFILE.pub. Neither may exist yet.
    #[arg(long, value_name = "KEYFILE")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The component to sign; the signature is written to COMPONENT.sig.
    pub component: PathBuf,
    /// The secret key file (from `warden keygen`).
    #[arg(long, value_name = "KEYFILE", env = "WARDEN_SIGNING_KEY")]
    pub key: PathBuf,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The component; its signature is read from COMPONENT.sig.
    pub component: PathBuf,
    /// Without --signers: the `[signers]` of --config (or ./warden.toml).
    #[command(flatten)]
    pub signers: SignersArg,
    #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
    pub config: Option<PathBuf>,
}

/// The public key file beside a secret key file.
pub fn public_path(secret: &Path) -> PathBuf {
    let mut name = secret.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Creates `path` with `text`, failing if it exists; owner-only when
/// `private`.
fn create_new(path: &Path, text: &str, private: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 });
    let mut file = options.open(path).with_context(|| {
        format!(
            "creating {} (an existing key is never overwritten)",
            path.display()
        )
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

pub fn keygen(args: KeygenArgs) -> anyhow::Result<Outcome> {
    let public = public_path(&args.out);
    for path in [&args.out, &public] {
        if path.exists() {
            anyhow::bail!("{} exists; refusing to overwrite a key", path.display());
        }
    }
    let key = SecretKey::generate()?;
    create_new(&args.out, &key.to_text(), true)?;
    create_new(&public, &key.public().to_text(), false)?;
    #[expect(clippy::print_stdout, reason = "the command's output")]
    {
        println!(
            "key {} written: secret {} (keep private), public {}",
            key.public().key_id(),
            args.out.display(),
            public.display()
        );
    }
    Ok(Outcome::Ok)
}

/// Reads a secret key file, refusing one that others can read.
pub fn read_secret(path: &Path) -> anyhow::Result<SecretKey> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "{} is readable by other users; `chmod 600` it first",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    SecretKey::from_text(&text)
        .with_context(|| format!("{} is not a warden secret key", path.display()))
}

pub fn sign(args: SignArgs) -> anyhow::Result<Outcome> {
    let key = read_secret(&args.key)?;
    let signature = warden_registry::sign_file(&args.component, &key)?;
    #[expect(clippy::print_stdout, reason = "the command's output")]
    {
        println!(
            "signed {} ({}) with key {}: {}",
            args.component.display(),
            signature.digest,
            signature.key_id,
            signature_path(&args.component).display()
        );
    }
    Ok(Outcome::Ok)
}

pub fn verify(args: VerifyArgs) -> anyhow::Result<Outcome> {
    let signers = match (args.signers.file()?, &args.config) {
        (Some(file), _) => SignersConfig::load(&file)?,
        (None, Some(config)) => Config::load(config)?.signers,
        (None, None) if Path::new("warden.toml").is_file() => {
            Config::load(Path::new("warden.toml"))?.signers
        }
        (None, None) => anyhow::bail!(
            "no signers: pass --signers FILE (a signers file or a publisher's .pub key) or \
             --config FILE (or run where warden.toml is)"
        ),
    };
    let policy = AdmissionPolicy {
        // `verify` reports whether the component is signed, so the
        // insecure flag never turns "unsigned" into success here.
        insecure_allow_unsigned: false,
        ..signers.admission()?
    };
    let checked = std::fs::read(&args.component)
        .map_err(|source| RegistryError::Read {
            path: args.component.clone(),
            source,
        })
        .and_then(|bytes| {
            let sig = read_signature(&args.component)?;
            policy.admit(&args.component, &bytes, sig.as_ref())
        });
    #[expect(clippy::print_stdout, reason = "the command's output")]
    match checked {
        Ok(admission) => {
            let signer = admission.signer.map_or_else(
                || "nobody".to_owned(),
                |s| format!("{} (key {})", s.publisher, s.key_id),
            );
            println!(
                "ok: {} ({}) is signed by {signer}",
                args.component.display(),
                admission.digest
            );
            Ok(Outcome::Ok)
        }
        Err(e) => {
            println!("refused: {e}");
            Ok(Outcome::CallFailed)
        }
    }
}
