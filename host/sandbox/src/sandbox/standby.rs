//! Standby containers for calls that need a fenced container of their own
//! (a git clone, fetch or push).
//!
//! Attack: a network operation reaching more than the addresses vetted for
//! it — through a container that had network before its fence was in
//! place, one whose fence a previous call widened, or one where a previous
//! call left a process or a file behind. Such a call runs in a container
//! of its own whose egress reaches only its vetted `ip:port` set. Making
//! that container at call time (create, start, a firewall container) cost
//! about half a second, so one is made ahead for the next call with the
//! same container spec: on the bridge, but with the default-drop fence
//! and no grants installed (by a holder container in its network
//! namespace holding only CAP_NET_ADMIN) before it is ever handed out,
//! its only process the idle init. At use the holder inserts exactly the
//! call's grants, the command runs, and the container and its holder are
//! removed: each standby serves one call, so no call sees another's rules,
//! processes or scratch files.

use std::sync::Arc;

use tokio::sync::{Mutex, OwnedMutexGuard};

use warden_api::{Grants, PathGuard};

use super::{DockerSandbox, RunRequest};
use crate::SandboxError;
use crate::docker::ExecOutput;
use crate::images::ImageKind;
use crate::lifecycle::Placement;
use crate::spec::{ContainerSpec, Network};

/// How many container specs keep a standby; the oldest goes first.
const KEEP: usize = 4;

/// A fenced container and the holder of its fence.
#[derive(Debug)]
pub(super) struct Fenced {
    id: String,
    holder: String,
}

type Ready = Arc<Mutex<Option<Fenced>>>;

/// The standbys, one per container spec (with no grants), each filled by
/// the task making it; a caller waits for one being made.
#[derive(Debug, Default)]
pub(super) struct Standbys {
    ready: std::sync::Mutex<Vec<(ContainerSpec, Ready)>>,
    /// Removals and standbys in progress, for [`DockerSandbox::settle`].
    work: std::sync::Mutex<tokio::task::JoinSet<()>>,
}

impl Standbys {
    fn ready(&self) -> std::sync::MutexGuard<'_, Vec<(ContainerSpec, Ready)>> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut work = self.work.lock().unwrap_or_else(|e| e.into_inner());
        while work.try_join_next().is_some() {}
        work.spawn(task);
    }

    /// The standby made for `spec`, waiting for one being made.
    async fn take(&self, spec: &ContainerSpec) -> Option<Fenced> {
        let ready = {
            let mut list = self.ready();
            let at = list.iter().position(|(s, _)| s == spec)?;
            list.remove(at).1
        };
        ready.lock().await.take()
    }

    /// A slot for a standby of `spec`, locked for its maker; the slots it
    /// pushed out (one already kept for `spec`, and the oldest past
    /// [`KEEP`]), whose containers the caller removes.
    async fn reserve(&self, spec: ContainerSpec) -> (OwnedMutexGuard<Option<Fenced>>, Vec<Ready>) {
        let slot: Ready = Arc::new(Mutex::new(None));
        // Locked before anyone else can see it.
        let guard = Arc::clone(&slot).lock_owned().await;
        let mut list = self.ready();
        let mut evicted = Vec::new();
        if let Some(at) = list.iter().position(|(s, _)| *s == spec) {
            evicted.push(list.remove(at).1);
        }
        list.push((spec, slot));
        let over = list.len().saturating_sub(KEEP);
        evicted.extend(list.drain(..over).map(|(_, r)| r));
        (guard, evicted)
    }

    fn drain(&self) -> Vec<Ready> {
        self.ready().drain(..).map(|(_, r)| r).collect()
    }
}

/// What a fenced container is made from: the spec is computed from it
/// at call time, and again for the standby after the call (the call may
/// have changed the workspace, and with it the masked paths).
#[derive(Clone)]
pub(super) struct Recipe {
    pub kind: ImageKind,
    pub placement: Placement,
    pub grants: Grants,
    pub paths: Option<Arc<dyn PathGuard>>,
    pub scratch_mb: Option<u64>,
}

impl DockerSandbox {
    async fn spec_of(&self, recipe: &Recipe) -> Result<ContainerSpec, SandboxError> {
        self.spec(
            recipe.kind,
            &recipe.placement,
            &recipe.grants,
            recipe.paths.as_ref(),
            recipe.scratch_mb,
        )
        .await
    }

    /// Runs `request` in a container of its own fenced to the allowlist
    /// of `recipe`'s spec: a standby when one was made for this spec, else
    /// one made now the same way. The container is removed after this one
    /// use, and a standby for the next call like it is made in the
    /// background.
    pub(super) async fn run_fenced(
        self: &Arc<Self>,
        recipe: Recipe,
        request: &RunRequest<'_>,
    ) -> Result<(ExecOutput, String), SandboxError> {
        let spec = self.spec_of(&recipe).await?;
        let Network::Allowlist(rules) = &spec.network else {
            return Err(SandboxError::Grant {
                reason: "a container of its own is for a call with an egress allowlist".into(),
            });
        };
        let fenced = match self.standbys.take(&unfenced(&spec)).await {
            Some(f) => f,
            None => self.make_standby(&unfenced(&spec)).await?,
        };
        let id = fenced.id.clone();
        let out = async {
            self.docker.fence(&fenced.holder, rules).await?;
            self.exec(&fenced.id, request).await
        }
        .await;
        self.retire(fenced);
        self.replenish(recipe).await;
        Ok((out?.0, id))
    }

    async fn make_standby(&self, spec: &ContainerSpec) -> Result<Fenced, SandboxError> {
        if self.is_closing() {
            return Err(SandboxError::ShuttingDown);
        }
        let (id, holder) = self.docker.start_standby(spec).await?;
        self.owned().extend([id.clone(), holder.clone()]);
        let fenced = Fenced { id, holder };
        if self.is_closing() {
            self.discard(fenced).await;
            return Err(SandboxError::ShuttingDown);
        }
        Ok(fenced)
    }

    /// Makes a standby in the background for the next call made from
    /// `recipe`, as the workspace is after this one.
    async fn replenish(self: &Arc<Self>, recipe: Recipe) {
        if self.is_closing() {
            return;
        }
        let this = Arc::clone(self);
        // The slot is reserved in the task: a spec is computed first.
        self.standbys.spawn(async move {
            let spec = match this.spec_of(&recipe).await {
                Ok(spec) => unfenced(&spec),
                Err(e) => {
                    tracing::warn!(error = %e, "a standby container's spec failed");
                    return;
                }
            };
            let (mut guard, evicted) = this.standbys.reserve(spec.clone()).await;
            match this.make_standby(&spec).await {
                Ok(f) => *guard = Some(f),
                Err(e) => tracing::warn!(error = %e, "making a standby container failed"),
            }
            // A caller waiting for this standby has it before the old
            // ones are removed.
            drop(guard);
            for slot in evicted {
                if let Some(f) = slot.lock().await.take() {
                    this.discard(f).await;
                }
            }
        });
    }

    /// Removes a used container and its fence holder in the background.
    fn retire(self: &Arc<Self>, fenced: Fenced) {
        let this = Arc::clone(self);
        self.standbys
            .spawn(async move { this.discard(fenced).await });
    }

    async fn discard(&self, fenced: Fenced) {
        // The holder first: it shares the container's network namespace.
        self.remove(&fenced.holder).await;
        self.remove(&fenced.id).await;
    }

    /// Removes every standby (at shutdown).
    pub(super) async fn discard_standbys(&self) {
        for slot in self.standbys.drain() {
            if let Some(f) = slot.lock().await.take() {
                self.discard(f).await;
            }
        }
    }

    /// Waits until the containers of finished calls are removed and the
    /// standbys being made are ready.
    pub async fn settle(&self) {
        loop {
            let mut work =
                std::mem::take(&mut *self.standbys.work.lock().unwrap_or_else(|e| e.into_inner()));
            if work.is_empty() {
                return;
            }
            while work.join_next().await.is_some() {}
        }
    }

    /// The containers kept ready for the next network operation (each
    /// standby and its fence holder); nothing has run in them yet.
    pub async fn standby_ids(&self) -> Vec<String> {
        let slots: Vec<Ready> = self
            .standbys
            .ready()
            .iter()
            .map(|(_, r)| r.clone())
            .collect();
        let mut ids = Vec::new();
        for slot in slots {
            if let Some(f) = slot.lock().await.as_ref() {
                ids.extend([f.id.clone(), f.holder.clone()]);
            }
        }
        ids
    }
}

/// `spec` with its allowlist emptied: what a standby is made from, and
/// the key a call finds it under.
fn unfenced(spec: &ContainerSpec) -> ContainerSpec {
    ContainerSpec {
        network: Network::Allowlist(Vec::new()),
        ..spec.clone()
    }
}
