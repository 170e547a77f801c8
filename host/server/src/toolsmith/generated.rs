//! A generated tool as the gate serves it: the component's code under
//! the host's facts, grants and limits, and the signed statement that
//! lets it be loaded again.
//!
//! Attack: a generated tool that is more than the person approved — one
//! that declares itself read-only while its grants write, describes
//! other arguments than the blueprint's, runs longer or larger than
//! `[toolsmith.sandbox]` allows, or is swapped for other bytes in the
//! store between runs. The spec the gate decides on is the host's
//! (derived category, action type and side effect; the blueprint's
//! schemas), every call runs under the configured limits, and a
//! component loads only when its bytes, blueprint and digests match a
//! statement signed with the toolsmith key.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use warden_api::{
    Backend, BackendCall, BoxFuture, CallLimits, Envelope, FsAccess, FsGrant, Grants, ToolSpec,
};
use warden_signing::{PublicKey, SecretKey};
use warden_toolsmith::{Blueprint, Derived, FsMode, Network, ToolLimits};

/// The statement the toolsmith key signs for a validated tool: every
/// digest that made it what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    pub kind: String,
    pub blueprint_id: u64,
    pub name: String,
    pub component_sha256: String,
    pub manifest_sha256: String,
    pub blueprint_sha256: String,
    /// `lib.rs`'s digest, or the prebuilt component's.
    pub source_sha256: String,
    pub lock_sha256: String,
    pub builder_sha256: String,
    pub grants_sha256: String,
    pub report_sha256: String,
    /// The digest of the approval's binding (who approved is on the
    /// audit chain, under the same blueprint id).
    pub approval_sha256: String,
}

/// The statement's kind (its format).
pub const STATEMENT_KIND: &str = "warden-toolsmith-statement/1";

/// What is kept with a built blueprint (`artifact` in the store).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Artifact {
    pub component_sha256: String,
    pub statement: Statement,
    /// Hex of the ed25519 signature over the statement's JSON.
    pub signature: String,
    /// The toolsmith key that signed it.
    pub key_id: String,
    pub report: serde_json::Value,
}

impl Statement {
    fn message(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Signs the statement with the toolsmith key.
    pub fn sign(self, key: &SecretKey, report: serde_json::Value) -> Artifact {
        let signature = key.sign(&self.message());
        Artifact {
            component_sha256: self.component_sha256.clone(),
            key_id: key.public().key_id().as_str().to_owned(),
            signature: hex(&signature),
            statement: self,
            report,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 64]> {
    if text.len() != 128 {
        return None;
    }
    let mut out = [0u8; 64];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl Artifact {
    /// Reads a stored artifact.
    pub fn parse(text: &str) -> Result<Artifact, String> {
        serde_json::from_str(text).map_err(|e| format!("its stored artifact does not parse: {e}"))
    }

    /// Checks the artifact against `component` (the stored bytes), the
    /// blueprint `id` with digest `blueprint_sha256`, and the toolsmith
    /// key `public`. Any mismatch is an error naming it.
    pub fn verify(
        &self,
        id: u64,
        blueprint_sha256: &str,
        component: &[u8],
        public: &PublicKey,
    ) -> Result<(), String> {
        let s = &self.statement;
        if s.kind != STATEMENT_KIND {
            return Err(format!("its statement is of kind `{}`", s.kind));
        }
        let signature = unhex(&self.signature).ok_or("its signature is not 64 bytes of hex")?;
        if !public.verify(&s.message(), &signature) {
            return Err(format!(
                "its statement's signature does not verify with the toolsmith key {}",
                public.key_id().as_str()
            ));
        }
        if s.blueprint_id != id || s.blueprint_sha256 != blueprint_sha256 {
            return Err("its statement is for another blueprint".into());
        }
        let digest = warden_signing::sha256_digest(component);
        if digest != s.component_sha256 || digest != self.component_sha256 {
            return Err(format!(
                "the stored component's digest is {digest}, the signed statement's {}",
                s.component_sha256
            ));
        }
        Ok(())
    }
}

/// `[toolsmith.sandbox]` as the gate's grants: directories (relative
/// paths from the host's working directory, seen by the tool at the same
/// path) and hosts.
pub fn grants(derived: &Derived) -> Result<Grants, String> {
    let sandbox = &derived.grants;
    let mut fs = Vec::new();
    for g in &sandbox.fs {
        let host_path = PathBuf::from(&g.path)
            .canonicalize()
            .map_err(|e| format!("`[toolsmith.sandbox]` directory `{}`: {e}", g.path))?;
        if !host_path.is_dir() {
            return Err(format!(
                "`[toolsmith.sandbox]` directory `{}` is not a directory",
                g.path
            ));
        }
        fs.push(FsGrant {
            guest_path: host_path.to_string_lossy().into_owned(),
            host_path,
            access: match g.mode {
                FsMode::Ro => FsAccess::Read,
                FsMode::Rw => FsAccess::ReadWrite,
            },
        });
    }
    let net = match &sandbox.network {
        Network::None => Vec::new(),
        Network::Allow(hosts) => hosts
            .iter()
            .map(|h| {
                h.parse()
                    .map_err(|e| format!("`[toolsmith.sandbox]` host `{h}`: {e}"))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(Grants {
        fs,
        net,
        env: Vec::new(),
    })
}

/// A generated tool: the component's code under the host's spec and
/// limits.
pub struct Generated {
    inner: Arc<dyn Backend>,
    spec: ToolSpec,
    limits: ToolLimits,
}

impl std::fmt::Debug for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generated")
            .field("tool", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl Generated {
    /// `inner` (a loaded component with exactly the derived tool) under
    /// what the host derived and the blueprint's schemas.
    pub fn new(
        inner: Arc<dyn Backend>,
        derived: &Derived,
        blueprint: &Blueprint,
    ) -> Result<Generated, String> {
        let mut spec = inner
            .tools()
            .into_iter()
            .find(|t| t.name.as_str() == derived.name)
            .ok_or_else(|| format!("the component has no tool `{}`", derived.name))?;
        spec.category = derived
            .category
            .parse()
            .map_err(|_| format!("category `{}` is unknown", derived.category))?;
        spec.action_type = derived
            .action_type
            .parse()
            .map_err(|_| format!("action type `{}` is unknown", derived.action_type))?;
        spec.side_effect = derived.side_effect;
        spec.summary = blueprint.title.clone();
        spec.description = blueprint.description.clone();
        spec.params_schema = blueprint.input_schema.clone();
        spec.result_schema = blueprint.output_schema.clone();
        spec.specifier_template = None;
        spec.check()
            .map_err(|e| format!("the tool's spec under the host's facts: {e}"))?;
        Ok(Generated {
            inner,
            spec,
            limits: derived.grants.limits,
        })
    }

    fn limits(&self, call: CallLimits) -> CallLimits {
        CallLimits {
            deadline: call
                .deadline
                .min(Duration::from_millis(self.limits.deadline_ms)),
            memory_bytes: call.memory_bytes.min(self.limits.memory_bytes),
            output_bytes: call.output_bytes.min(self.limits.output_bytes),
            log_bytes: call.log_bytes,
            fuel: Some(call.fuel.unwrap_or(u64::MAX).min(self.limits.fuel)),
        }
    }
}

impl Backend for Generated {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![self.spec.clone()]
    }

    fn isolation(&self) -> warden_api::Isolation {
        self.inner.isolation()
    }

    fn invoke<'a>(&'a self, mut call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        call.limits = self.limits(call.limits);
        call.tool = &self.spec;
        self.inner.invoke(call)
    }
}
