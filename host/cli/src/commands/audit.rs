//! `warden audit tail|verify|export`: read and check the signed audit
//! chain in a state directory (the server may be running).

use crate::out::out;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use crate::Outcome;

#[derive(Debug, Args)]
pub struct StateDir {
    /// The state directory holding warden.db and host.key.
    #[arg(
        long,
        value_name = "DIR",
        env = "WARDEN_STATE_DIR",
        default_value = ".warden"
    )]
    pub state_dir: PathBuf,
    /// The PostgreSQL database of `[state] url`, when the state is kept
    /// there (the host key stays in the state directory).
    #[arg(long, value_name = "URL", env = "WARDEN_STATE_URL")]
    pub state_url: Option<String>,
}

impl StateDir {
    /// Opens the state this names.
    pub fn open(&self) -> anyhow::Result<std::sync::Arc<dyn warden_store::Store>> {
        let state = warden_server::StateConfig {
            url: self.state_url.clone(),
            ..Default::default()
        };
        Ok(warden_server::state::open(&self.state_dir, &state)?)
    }
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the last records, one JSON object a line.
    Tail {
        /// How many records.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: u64,
        /// Keep printing records as they are appended.
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        state: StateDir,
    },
    /// Check every hash, link, tag and signature; name the first bad record.
    /// On a database replicas share, every other chain (against its
    /// registered public key) and the anchors between chains too.
    Verify {
        /// Verify with this public key alone (a file as `warden keygen`
        /// writes, or the `public-key` a verify printed) instead of the
        /// state directory's host key: tags cannot be checked, so the
        /// chain must end on a signed checkpoint.
        #[arg(long, value_name = "FILE")]
        public_key: Option<PathBuf>,
        /// The deployment's audit root public key (the `.pub` file of the
        /// key in `[state] audit-root-key`): every chain in the shared
        /// database, this host's too, must carry its endorsement.
        #[arg(long, value_name = "FILE")]
        audit_root: Option<PathBuf>,
        #[command(flatten)]
        state: StateDir,
    },
    /// Print the whole chain.
    Export {
        /// As one JSON array (the only format).
        #[arg(long, required = true)]
        json: bool,
        #[command(flatten)]
        state: StateDir,
    },
}

pub fn run(command: AuditCommand) -> anyhow::Result<Outcome> {
    match command {
        AuditCommand::Tail {
            lines,
            follow,
            state,
        } => {
            let store = state.open()?;
            let mut last = 0;
            for record in store.tail(lines)? {
                last = record.seq;
                out!("{}", serde_json::to_string(&record)?);
            }
            if !follow {
                return Ok(Outcome::Ok);
            }
            loop {
                std::thread::sleep(Duration::from_millis(200));
                for record in store.records_after(last, 1000)? {
                    last = record.seq;
                    out!("{}", serde_json::to_string(&record)?);
                }
            }
        }
        AuditCommand::Verify {
            public_key,
            audit_root,
            state,
        } => {
            let store = state.open()?;
            let root = audit_root.map(|path| read_public_key(&path)).transpose()?;
            let (verdict, key) = match public_key {
                Some(path) => {
                    let key = read_public_key(&path)?;
                    (store.verify(&key)?, key)
                }
                None => {
                    let secret = warden_server::state::key(&state.state_dir)?;
                    (store.verify_with_host_key(&secret)?, secret.public())
                }
            };
            // Replicas on one database: every other chain, and every
            // anchor of one chain's head in another.
            let others = store.verify_others(root.as_ref())?;
            let chains: Vec<_> = others
                .chains
                .iter()
                .map(|c| match &c.verdict {
                    Ok(v) => serde_json::json!({
                        "chain": c.chain, "ok": true, "records": v.records,
                        "signed-through": v.signed_through, "head": v.head,
                    }),
                    Err(b) => serde_json::json!({
                        "chain": c.chain, "ok": false, "break": b, "message": b.to_string(),
                    }),
                })
                .collect();
            let broken_anchors: Vec<_> = others
                .broken_anchors
                .iter()
                .map(|b| serde_json::json!({"break": b, "message": b.to_string()}))
                .collect();
            let mut problems: Vec<String> = others
                .chains
                .iter()
                .filter_map(|c| {
                    c.verdict
                        .as_ref()
                        .err()
                        .map(|b| format!("chain {}: {b}", c.chain))
                })
                .chain(others.broken_anchors.iter().map(ToString::to_string))
                .chain(others.unendorsed.iter().map(ToString::to_string))
                .collect();
            let mut report = match &verdict {
                Ok(verified) => serde_json::json!({
                    "ok": true,
                    "records": verified.records,
                    "tags": verified.tags,
                    "signatures": verified.signatures,
                    "signed-through": verified.signed_through,
                    "head": verified.head,
                    "key-id": key.key_id().as_str(),
                    "public-key": key.to_text(),
                }),
                Err(broken) => {
                    problems.insert(0, broken.to_string());
                    serde_json::json!({ "ok": false, "break": broken, "message": broken.to_string() })
                }
            };
            if root.is_some() {
                let unendorsed: Vec<_> = others
                    .unendorsed
                    .iter()
                    .map(|u| serde_json::json!({"break": u, "message": u.to_string()}))
                    .collect();
                report["endorsed-chains"] = serde_json::json!(others.endorsed);
                report["unendorsed-chains"] = serde_json::json!(unendorsed);
                report["ok"] = serde_json::json!(problems.is_empty());
            }
            if !chains.is_empty() || others.anchors > 0 {
                report["other-chains"] = serde_json::json!(chains);
                report["anchors"] = serde_json::json!(others.anchors);
                report["broken-anchors"] = serde_json::json!(broken_anchors);
                report["ok"] = serde_json::json!(problems.is_empty());
            }
            out!("{report}");
            if problems.is_empty() {
                return Ok(Outcome::Ok);
            }
            #[expect(clippy::print_stderr, reason = "the verdict for people")]
            for problem in &problems {
                eprintln!("audit chain broken: {problem}");
            }
            Ok(Outcome::CallFailed)
        }
        AuditCommand::Export { json: _, state } => {
            let store = state.open()?;
            let records = store.records_after(0, u64::MAX)?;
            out!("{}", serde_json::to_string_pretty(&records)?);
            Ok(Outcome::Ok)
        }
    }
}

/// A public key file (as `warden keygen` writes one, or the `public-key`
/// a verify printed).
fn read_public_key(path: &std::path::Path) -> anyhow::Result<warden_signing::PublicKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the public key {}", path.display()))?;
    warden_signing::PublicKey::from_text(&text)
        .with_context(|| format!("{}: not a public key", path.display()))
}
