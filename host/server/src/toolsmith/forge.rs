//! From an approved blueprint to a live tool: build, validate, sign,
//! activate; and a running host's generated tools kept equal to what
//! the store says is active.
//!
//! Attack: a tool going live other than through a person's approval and
//! a passed validation, or staying live after it was retired. Only an
//! `approved` blueprint whose approval still holds is built (the move to
//! `building` is a compare-and-set, so two replicas never build it
//! twice); a failed build or validation ends `failed` with its reason
//! and nothing listed; activation is one store transaction, and the
//! live tools are always made from the store's `active` rows, each
//! loaded only when its signed statement verifies with the toolsmith
//! key. After a crash, the same reconciliation makes "active" and "live"
//! equal again, and a build the crash interrupted ends `failed`.
//!
//! Attack (availability): one host failing another's work. Hosts that
//! share a store (replicas, several stdio servers on one state
//! directory) each build what they claimed; a host building or
//! validating says so every [`HEARTBEAT`], and any host fails a
//! blueprint as interrupted only once nobody has said so for [`LEASE`],
//! never because it itself restarted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio_util::sync::CancellationToken;
use warden_api::BoxFuture;
use warden_gate::{Gate, Registration};
use warden_signing::SecretKey;
use warden_store::{BlueprintArtifact, StoredBlueprint};
use warden_toolsmith::{Blueprint, Body, Derived, State};

use super::generated::{Artifact, Generated, STATEMENT_KIND, Statement, grants};
use super::validate::validate;
use super::{LazyRuntime, Toolsmith, check_component};
use crate::ServerError;

/// Compiles a blueprint's `lib.rs` into a component.
pub trait ComponentBuilder: Send + Sync {
    fn build<'a>(&'a self, lib_rs: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>>;
}

/// The builder container in the local Docker engine
/// (`warden_sandbox::builder`), its image made first when missing.
#[derive(Debug)]
pub struct DockerBuilder {
    pub options: warden_sandbox::builder::ImageOptions,
    pub limits: warden_sandbox::builder::BuildLimits,
}

impl DockerBuilder {
    /// The builder for a host whose scratch space is `work_dir`: the
    /// image is made from this build's own source tree when it is
    /// present (a checkout), else it must already exist (`warden sandbox
    /// build-images` in a checkout).
    pub fn local(image_prefix: &str, work_dir: &Path) -> DockerBuilder {
        let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
            || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
            PathBuf::from,
        );
        DockerBuilder {
            options: warden_sandbox::builder::ImageOptions {
                prefix: image_prefix.to_owned(),
                work_dir: work_dir.to_path_buf(),
                source_root: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
                cargo_home,
            },
            limits: warden_sandbox::builder::BuildLimits::default(),
        }
    }
}

impl DockerBuilder {
    /// The builder image, made first when missing; its reference.
    pub async fn ensure_image(&self, docker: &warden_sandbox::Docker) -> Result<String, String> {
        warden_sandbox::builder::ensure_image(docker, &super::builder_recipe(), &self.options)
            .await
            .map_err(|e| format!("the builder image: {e}"))
    }
}

impl ComponentBuilder for DockerBuilder {
    fn build<'a>(&'a self, lib_rs: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let docker = warden_sandbox::Docker::connect()
                .await
                .map_err(|e| format!("the builder needs Docker: {e}"))?;
            let recipe = super::builder_recipe();
            let image = self.ensure_image(&docker).await?;
            let built =
                warden_sandbox::builder::build(&docker, &image, &recipe, &self.limits, lib_rs)
                    .await
                    .map_err(|e| format!("the build failed: {e}"))?;
            Ok(built.wasm)
        })
    }
}

/// The toolsmith key of a host (created owner-only when missing).
pub fn toolsmith_key(state_dir: &Path, config: &crate::Config) -> Result<SecretKey, ServerError> {
    let path = config
        .toolsmith
        .key
        .clone()
        .unwrap_or_else(|| state_dir.join("toolsmith.key"));
    Ok(warden_store::host_key(&path)?)
}

/// Checks every built blueprint's signed statement against its stored
/// component: one JSON line per blueprint.
pub fn verify_all(
    toolsmith: &Toolsmith,
    key: &SecretKey,
) -> Result<Vec<serde_json::Value>, ServerError> {
    let mut out = Vec::new();
    for b in toolsmith.store().blueprints()? {
        if b.artifact.is_none() {
            continue;
        }
        let problem = verify_stored(toolsmith, &b, key).err();
        out.push(serde_json::json!({
            "id": b.id, "name": b.name, "state": b.state,
            "verified": problem.is_none(), "problem": problem,
        }));
    }
    Ok(out)
}

/// Whether `b`'s signed statement verifies against its stored component.
pub fn verify_one(
    toolsmith: &Toolsmith,
    b: &StoredBlueprint,
    key: &SecretKey,
) -> Result<(), String> {
    verify_stored(toolsmith, b, key).map(|_| ())
}

/// The stored component of `b`, when its signed statement verifies.
fn verify_stored(
    toolsmith: &Toolsmith,
    b: &StoredBlueprint,
    key: &SecretKey,
) -> Result<(Artifact, Vec<u8>), String> {
    let artifact = Artifact::parse(b.artifact.as_deref().ok_or("it was never built")?)?;
    let bytes = toolsmith
        .store()
        .blueprint_component(b.id)
        .map_err(|e| e.to_string())?
        .ok_or("its component is not in the store")?;
    artifact.verify(b.id, &b.blueprint_sha256, &bytes, &key.public())?;
    Ok((artifact, bytes))
}

/// The toolsmith in a running host.
pub struct Forge {
    toolsmith: Arc<Toolsmith>,
    runtime: LazyRuntime,
    gate: Gate,
    server: warden_mcp::Server,
    key: Arc<SecretKey>,
    builder: Option<Arc<dyn ComponentBuilder>>,
    /// The generated tools in the gate: name to (blueprint id,
    /// component digest). One change at a time; an active blueprint's
    /// component never changes, so its id says whether it is loaded.
    live: tokio::sync::Mutex<BTreeMap<String, (u64, String)>>,
    /// The blueprint this host is building or validating, if any.
    working: std::sync::Mutex<Option<u64>>,
}

impl std::fmt::Debug for Forge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forge").finish_non_exhaustive()
    }
}

/// How often a running host looks for approved blueprints and retired
/// or activated tools (another replica's, an offline command's).
pub const RECONCILE_EVERY: Duration = Duration::from_secs(2);

/// How often a host building or validating a blueprint says in the
/// store that it still does (its `updated_ms`).
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// How long a blueprint may stay `building`, `validating` or `validated`
/// without its host's word before any host fails it as interrupted
/// (that host stopped): ten heartbeats, so that a busy store or clocks
/// of replicas a few seconds apart never fail a build that is going on.
pub const LEASE: Duration = Duration::from_secs(20);

/// What building and validating a blueprint made of it.
enum Made {
    /// Validated, signed, and ready to activate.
    Validated(StoredBlueprint, Registration),
    /// Failed, with the reason kept.
    Failed(StoredBlueprint),
}

impl Forge {
    pub fn new(
        toolsmith: Arc<Toolsmith>,
        runtime: LazyRuntime,
        gate: Gate,
        server: warden_mcp::Server,
        key: Arc<SecretKey>,
        builder: Option<Arc<dyn ComponentBuilder>>,
    ) -> Forge {
        Forge {
            toolsmith,
            runtime,
            gate,
            server,
            key,
            builder,
            live: tokio::sync::Mutex::new(BTreeMap::new()),
            working: std::sync::Mutex::new(None),
        }
    }

    fn working(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        self.working
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The host shuts down with a build or validation cut short: it is
    /// failed as interrupted now, not once its lease runs out.
    pub fn abandon(&self) {
        let Some(id) = self.working().take() else {
            return;
        };
        let failed = self.toolsmith.store().blueprint(id).map(|stored| {
            stored.filter(|b| {
                b.state == State::Building.as_str() || b.state == State::Validating.as_str()
            })
        });
        let outcome = match failed {
            Ok(Some(b)) => {
                let reason = format!("interrupted: the host shut down while it was {}", b.state);
                self.step(&b, State::Failed, Some(reason), None).map(drop)
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = outcome {
            tracing::warn!(id, error = %e, "a build cut short by the shutdown was not failed");
        }
    }

    /// A (re)started host: builds and validations whose host stopped
    /// end `failed`; then the live tools are made from the store.
    pub async fn start(&self) -> Result<(), ServerError> {
        self.toolsmith.fail_abandoned(LEASE)?;
        self.reconcile().await?;
        Ok(())
    }

    /// Runs `work` on blueprint `id` while saying, every [`HEARTBEAT`],
    /// that this host still builds or validates it.
    async fn leased<T>(&self, id: u64, work: impl std::future::Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        let mut beat = tokio::time::interval(HEARTBEAT);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is at once; the move that claimed it just wrote.
        beat.tick().await;
        *self.working() = Some(id);
        loop {
            tokio::select! {
                done = &mut work => {
                    *self.working() = None;
                    return done;
                }
                _ = beat.tick() => self.beat(id),
            }
        }
    }

    fn beat(&self, id: u64) {
        let now = self.toolsmith.now_ms();
        let store = self.toolsmith.store();
        let said =
            [State::Building, State::Validating]
                .into_iter()
                .try_fold(false, |said, state| {
                    if said {
                        Ok(true)
                    } else {
                        store.touch_blueprint(id, state.as_str(), now)
                    }
                });
        match said {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                id,
                "a blueprint this host is building moved on elsewhere (failed as interrupted?)"
            ),
            Err(e) => {
                tracing::warn!(id, error = %e, "could not say this host still builds a blueprint")
            }
        }
    }

    /// Until `shutdown`: builds what is approved and keeps the live tools
    /// equal to the store's active ones (at once for an approval or a
    /// retirement made here, else within [`RECONCILE_EVERY`]).
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let changes = self.toolsmith.changes();
        loop {
            if let Err(e) = self.tick().await {
                tracing::warn!(error = %e, "the toolsmith's round failed");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = changes.notified() => {}
                () = tokio::time::sleep(RECONCILE_EVERY) => {}
            }
        }
    }

    /// One round: expiry, builds whose host stopped failed, every
    /// approved blueprint built, reconciliation.
    pub async fn tick(&self) -> Result<(), ServerError> {
        self.toolsmith.expire()?;
        self.toolsmith.fail_abandoned(LEASE)?;
        let approved: Vec<u64> = self
            .toolsmith
            .store()
            .blueprint_states()?
            .iter()
            .filter(|b| b.state == State::Approved.as_str())
            .map(|b| b.id)
            .collect();
        for id in approved {
            if let Err(e) = self.forge(id).await {
                tracing::warn!(id, error = %e, "blueprint not built");
            }
        }
        self.reconcile().await
    }

    /// Builds, validates, signs and activates blueprint `id`. A failure
    /// of the build or the validation is not an error: the blueprint
    /// ends `failed` with the reason, which is returned.
    pub async fn forge(&self, id: u64) -> Result<StoredBlueprint, ServerError> {
        let approved = self.toolsmith.approved_for_build(id)?;
        let (blueprint, derived) = self.toolsmith.read(&approved)?;
        let building = self.step(&approved, State::Building, None, None)?;
        tracing::info!(id, name = %derived.name, "building a generated tool");
        let made = self
            .leased(id, self.make(&approved, &building, &blueprint, &derived))
            .await?;
        match made {
            Made::Validated(validated, candidate) => self.activate(&validated, candidate).await,
            Made::Failed(failed) => Ok(failed),
        }
    }

    /// Builds blueprint `building`, validates, signs and keeps it as
    /// `validated`; or fails it with the reason.
    async fn make(
        &self,
        approved: &StoredBlueprint,
        building: &StoredBlueprint,
        blueprint: &Blueprint,
        derived: &Derived,
    ) -> Result<Made, ServerError> {
        let failed = |from: &StoredBlueprint, reason: String| {
            self.step(from, State::Failed, Some(reason), None)
                .map(Made::Failed)
        };
        let wasm = match self.obtain(blueprint).await {
            Ok(wasm) => wasm,
            Err(reason) => return failed(building, reason),
        };
        let digest = warden_signing::sha256_digest(&wasm);
        let validating = self.step(
            building,
            State::Validating,
            Some(format!("built {digest}")),
            None,
        )?;
        let (report, manifest, candidate) =
            match self.validate(&validating, blueprint, derived, &wasm).await {
                Ok(found) => found,
                Err(reason) => return failed(&validating, reason),
            };
        let artifact = self.sign(approved, blueprint, &wasm, &manifest, report)?;
        let validated = self.step(
            &validating,
            State::Validated,
            Some("every case passed".into()),
            Some(BlueprintArtifact {
                meta: serde_json::to_string(&artifact).unwrap_or_default(),
                component_sha256: digest,
                component: wasm,
            }),
        )?;
        Ok(Made::Validated(validated, candidate))
    }

    fn step(
        &self,
        stored: &StoredBlueprint,
        to: State,
        reason: Option<String>,
        artifact: Option<BlueprintArtifact>,
    ) -> Result<StoredBlueprint, ServerError> {
        if to == State::Failed {
            tracing::warn!(
                id = stored.id,
                reason = reason.as_deref().unwrap_or(""),
                "generated tool failed"
            );
        }
        let step = warden_store::BlueprintMove {
            artifact,
            ..self.toolsmith.transition(stored, to, "host", reason)?
        };
        self.toolsmith
            .apply(&[step])?
            .pop()
            .ok_or(ServerError::Toolsmith {
                id: stored.id,
                message: "the store returned no blueprint".into(),
            })
    }

    /// The component's bytes: built from `lib.rs`, or the prebuilt one
    /// checked against its digest.
    async fn obtain(&self, blueprint: &Blueprint) -> Result<Vec<u8>, String> {
        match &blueprint.body {
            Body::Rust { lib_rs } => match &self.builder {
                Some(builder) => builder.build(lib_rs).await,
                None => Err("this host has no builder (`[sandbox]` and Docker)".into()),
            },
            Body::Component { sha256, base64 } => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(base64)
                    .map_err(|e| format!("the prebuilt component is not base64: {e}"))?;
                let digest = warden_signing::sha256_digest(&bytes);
                if digest != format!("sha256:{sha256}") {
                    return Err(format!(
                        "the prebuilt component's digest is {digest}, not the blueprint's sha256:{sha256}"
                    ));
                }
                Ok(bytes)
            }
        }
    }

    /// The validation gate: identity and asks, then every case in the
    /// shadow table. `Ok` carries the report.
    async fn validate(
        &self,
        stored: &StoredBlueprint,
        blueprint: &Blueprint,
        derived: &Derived,
        wasm: &[u8],
    ) -> Result<(serde_json::Value, String, Registration), String> {
        let name = derived.name.as_str();
        let taken = |n: &str| self.gate.owner_of(n).is_some_and(|owner| owner != name);
        let plugin = check_component(self.runtime.get().await?, wasm, derived, &taken).await?;
        let manifest = serde_json::to_string(plugin.manifest()).map_err(|e| e.to_string())?;
        let manifest = warden_signing::sha256_digest(manifest.as_bytes());
        let candidate = registration(stored.id, Arc::new(plugin), derived, blueprint)?;
        let mut live = Vec::new();
        for b in self
            .toolsmith
            .blueprints_where(|b| b.state == State::Active.as_str())
            .map_err(|e| e.to_string())?
        {
            let (other, _) = self.toolsmith.read(&b).map_err(|e| e.to_string())?;
            live.push((b.name.clone(), other));
        }
        let report = validate(&self.gate, &candidate, stored.id, name, blueprint, &live).await?;
        if let Some(failure) = report.failure() {
            return Err(failure);
        }
        tracing::info!(
            id = stored.id,
            calls = report.checked.len(),
            micros = report.micros,
            "validated"
        );
        let report = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        Ok((report, manifest, candidate))
    }

    fn sign(
        &self,
        approved: &StoredBlueprint,
        blueprint: &Blueprint,
        wasm: &[u8],
        manifest: &str,
        report: serde_json::Value,
    ) -> Result<Artifact, ServerError> {
        let digest = |bytes: &[u8]| warden_signing::sha256_digest(bytes);
        let source = match &blueprint.body {
            Body::Rust { lib_rs } => digest(lib_rs.as_bytes()),
            Body::Component { sha256, .. } => format!("sha256:{sha256}"),
        };
        let report_text = serde_json::to_string(&report).unwrap_or_default();
        let statement = Statement {
            kind: STATEMENT_KIND.into(),
            blueprint_id: approved.id,
            name: approved.name.clone(),
            component_sha256: digest(wasm),
            manifest_sha256: manifest.to_owned(),
            blueprint_sha256: approved.blueprint_sha256.clone(),
            source_sha256: source,
            lock_sha256: digest(warden_toolsmith::CARGO_LOCK.as_bytes()),
            builder_sha256: super::builder_digest(),
            grants_sha256: self.toolsmith.grants_digest(),
            report_sha256: digest(report_text.as_bytes()),
            approval_sha256: digest(approved.approval.as_deref().unwrap_or("").as_bytes()),
        };
        Ok(statement.sign(&self.key, report))
    }

    /// `validated` goes live: one store transaction (superseding the
    /// active version of the same tool), then the gate swaps in
    /// `candidate` (the registration validation ran, so nothing is loaded
    /// twice) and clients are told.
    async fn activate(
        &self,
        validated: &StoredBlueprint,
        candidate: Registration,
    ) -> Result<StoredBlueprint, ServerError> {
        let started = std::time::Instant::now();
        let mut live = self.live.lock().await;
        let mut steps = vec![self.toolsmith.transition(
            validated,
            State::Active,
            "host",
            Some("validated and signed".into()),
        )?];
        let superseded = self
            .toolsmith
            .blueprints_where(|b| b.name == validated.name && b.state == State::Active.as_str())?;
        for b in &superseded {
            steps.push(self.toolsmith.transition(
                b,
                State::Superseded,
                "host",
                Some(format!("superseded by blueprint {}", validated.id)),
            )?);
        }
        let active = self.toolsmith.apply(&steps)?;
        let digest = validated
            .artifact
            .as_deref()
            .and_then(|a| Artifact::parse(a).ok())
            .map(|a| a.component_sha256)
            .unwrap_or_default();
        match self
            .gate
            .replace(vec![(validated.name.clone(), Some(candidate))])
        {
            Ok(_) => {
                live.insert(validated.name.clone(), (validated.id, digest));
            }
            // Active in the store, not live: said loudly; the next
            // reconciliation tries again (and says why it cannot).
            Err(e) => {
                tracing::error!(tool = %validated.name, error = %e, "an activated tool is not served")
            }
        }
        drop(live);
        self.server.tools_changed().await;
        tracing::info!(
            tool = %validated.name, id = validated.id,
            micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "generated tool activated: store, gate and clients told"
        );
        active.into_iter().next().ok_or(ServerError::Toolsmith {
            id: validated.id,
            message: "the store returned no blueprint".into(),
        })
    }

    /// Makes the gate's generated tools the store's active ones: loads
    /// what is new (verified), removes what is no longer active, and
    /// tells clients when their lists changed. `Ok(())` also when a tool
    /// could not be loaded (logged: it stays unlisted).
    pub async fn reconcile(&self) -> Result<(), ServerError> {
        let mut live = self.live.lock().await;
        // Where the blueprints stand is all a round reads, unless a tool
        // must be loaded (blueprints carry components: never read whole
        // on a timer).
        let active: Vec<warden_store::BlueprintState> = self
            .toolsmith
            .store()
            .blueprint_states()?
            .into_iter()
            .filter(|b| b.state == State::Active.as_str())
            .collect();
        let mut changed = false;
        let gone: Vec<String> = live
            .keys()
            .filter(|name| !active.iter().any(|b| &b.name == *name))
            .cloned()
            .collect();
        for name in gone {
            match self.gate.replace(vec![(name.clone(), None)]) {
                Ok(_) => {
                    live.remove(&name);
                    changed = true;
                    tracing::info!(tool = %name, "generated tool no longer active: removed");
                }
                Err(e) => {
                    tracing::error!(tool = %name, error = %e, "a retired tool was not removed")
                }
            }
        }
        for head in &active {
            if live.get(&head.name).is_some_and(|(id, _)| *id == head.id) {
                continue;
            }
            let Some(b) = self.toolsmith.store().blueprint(head.id)? else {
                continue;
            };
            let component = b.artifact.as_deref().and_then(|a| Artifact::parse(a).ok());
            let digest = component.map(|a| a.component_sha256).unwrap_or_default();
            match self.load(&b).await {
                Ok(registration) => {
                    match self
                        .gate
                        .replace(vec![(b.name.clone(), Some(registration))])
                    {
                        Ok(_) => {
                            live.insert(b.name.clone(), (b.id, digest));
                            changed = true;
                            tracing::info!(tool = %b.name, id = b.id, "generated tool live");
                        }
                        Err(e) => {
                            tracing::error!(tool = %b.name, id = b.id, error = %e, "an active generated tool is not served")
                        }
                    }
                }
                Err(problem) => {
                    tracing::error!(tool = %b.name, id = b.id, %problem, "an active generated tool is not served")
                }
            }
        }
        drop(live);
        if changed {
            self.server.tools_changed().await;
        }
        Ok(())
    }

    /// An active blueprint's registration, from its stored bytes, only
    /// when its signed statement verifies and its grants are the ones it
    /// was validated with.
    async fn load(&self, b: &StoredBlueprint) -> Result<Registration, String> {
        let (artifact, bytes) = verify_stored(&self.toolsmith, b, &self.key)?;
        let grants_now = self.toolsmith.grants_digest();
        if artifact.statement.grants_sha256 != grants_now {
            return Err(format!(
                "`[toolsmith.sandbox]` changed since it was validated ({} then, {grants_now} now)",
                artifact.statement.grants_sha256
            ));
        }
        let (blueprint, derived) = self.toolsmith.read(b).map_err(|e| e.to_string())?;
        let path = Path::new("toolsmith").join(format!("{}.wasm", b.name));
        let plugin = self
            .runtime
            .get()
            .await?
            .load_bytes(&path, &bytes)
            .await
            .map_err(|e| format!("it does not load: {e}"))?;
        registration(b.id, Arc::new(plugin), &derived, &blueprint)
    }
}

/// The gate's entry for a generated tool.
fn registration(
    id: u64,
    plugin: Arc<warden_runtime::Plugin>,
    derived: &Derived,
    blueprint: &Blueprint,
) -> Result<Registration, String> {
    let backend = Generated::new(plugin, derived, blueprint)?;
    Ok(Registration {
        owner: derived.name.clone(),
        source: format!("generated tool `{}` (blueprint {id})", derived.name),
        backend: Arc::new(backend),
        grants: grants(derived)?,
        ceiling: None,
        generated: true,
    })
}
