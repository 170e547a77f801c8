//! `warden keygen`, `warden sign`, `warden verify`: publisher keys and
//! detached plugin signatures.

use crate::out::out;
use std::path::{Path, PathBuf};

use clap::Args;
use warden_registry::{AdmissionPolicy, RegistryError, read_signature, signature_path};

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

pub fn keygen(args: KeygenArgs) -> anyhow::Result<Outcome> {
    let (key, public) = warden_server::keys::keygen(&args.out)?;
    {
        out!(
            "key {} written: secret {} (keep private), public {}",
            key.public().key_id(),
            args.out.display(),
            public.display()
        );
    }
    Ok(Outcome::Ok)
}

pub fn sign(args: SignArgs) -> anyhow::Result<Outcome> {
    let key = warden_server::keys::read_secret(&args.key)?;
    let signature = warden_registry::sign_file(&args.component, &key)?;
    {
        out!(
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
    match checked {
        Ok(admission) => {
            let signer = admission.signer.map_or_else(
                || "nobody".to_owned(),
                |s| format!("{} (key {})", s.publisher, s.key_id),
            );
            out!(
                "ok: {} ({}) is signed by {signer}",
                args.component.display(),
                admission.digest
            );
            Ok(Outcome::Ok)
        }
        Err(e) => {
            out!("refused: {}", crate::out::causes(&e));
            Ok(Outcome::CallFailed)
        }
    }
}
