//! The bridges of a running server: each lists its server's tools at
//! start (in the background; serving never waits for an upstream),
//! publishes what its pins approve into the gate in one step, lists again
//! when the server says its tools changed (debounced, at most once a
//! second), and ends idle sessions. Operators approve, revoke and restart
//! through [`BridgeAdmin`].
//!
//! A publish swaps the bridge's whole registration in the gate and tells
//! clients once, and only when the visible set (names and definition
//! digests) changed: no notice for a no-op re-list.
//!
//! With a store other replicas share, an operator may approve or revoke
//! through any of them: each replica judges its last listing against the
//! pins again every [`PINS_EVERY`], so an approval or a revocation made
//! elsewhere applies here within that time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_api::{AdminError, Attribution, BoxFuture, BridgeAdmin};
use warden_gate::{Gate, Registration};
use warden_mcp::bridge::{Bridge, Listed};
use warden_policy::Verdict;
use warden_store::{DefinitionPin, Store};

use super::plan::Planned;

/// How long a burst of change notices is gathered before one re-list.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// The least time between two re-lists of one server.
const MIN_RELIST: Duration = Duration::from_secs(1);
/// How often idle sessions are looked for (more often when the idle
/// limit is shorter: at least twice per limit).
const REAP_EVERY: Duration = Duration::from_secs(15);
/// How long to wait before listing again after a failed listing.
const RETRY_LISTING: Duration = Duration::from_secs(5);
/// How often a replica of a shared store reads the pins again.
pub const PINS_EVERY: Duration = Duration::from_millis(500);

struct Entry {
    bridge: Bridge,
    ceiling: Option<Verdict>,
    /// Whether the gate has a registration of this bridge yet.
    registered: std::sync::atomic::AtomicBool,
    /// One publish of this bridge at a time.
    publishing: tokio::sync::Mutex<()>,
}

/// The bridges of a running server.
pub struct LiveBridges {
    gate: Gate,
    server: warden_mcp::Server,
    store: Arc<dyn Store>,
    bridges: BTreeMap<String, Arc<Entry>>,
    /// The host's first plugin load: bridged tools are published after
    /// it, so a configured plugin always keeps its names.
    startup: warden_mcp::Startup,
}

impl std::fmt::Debug for LiveBridges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveBridges")
            .field("bridges", &self.bridges.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The gate owner key of a bridge (apart from plugin names).
pub fn owner(name: &str) -> String {
    format!("bridge:{name}")
}

impl LiveBridges {
    pub fn new(
        planned: Vec<Planned>,
        gate: Gate,
        server: warden_mcp::Server,
        store: Arc<dyn Store>,
        startup: warden_mcp::Startup,
    ) -> LiveBridges {
        let bridges = planned
            .into_iter()
            .map(|p| {
                let name = p.settings.name.clone();
                let entry = Entry {
                    bridge: Bridge::new(p.settings, p.connector, p.stderr),
                    ceiling: p.ceiling,
                    registered: std::sync::atomic::AtomicBool::new(false),
                    publishing: tokio::sync::Mutex::new(()),
                };
                (name, Arc::new(entry))
            })
            .collect();
        LiveBridges {
            gate,
            server,
            store,
            bridges,
            startup,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bridges.is_empty()
    }

    /// Runs every bridge until `shutdown`; then ends their sessions.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tasks = Vec::new();
        for entry in self.bridges.values() {
            tasks.push(tokio::spawn(
                self.clone().follow(entry.clone(), shutdown.clone()),
            ));
        }
        for task in tasks {
            let _ = task.await;
        }
        // Every bridge's sessions end at once: shutdown takes as long as
        // the slowest server, not their sum.
        let mut ending = tokio::task::JoinSet::new();
        for entry in self.bridges.values() {
            let entry = entry.clone();
            ending.spawn(async move { entry.bridge.restart().await });
        }
        while ending.join_next().await.is_some() {}
    }

    /// One bridge's life: list, publish, then re-list on change notices
    /// and reap idle sessions.
    async fn follow(self: Arc<Self>, entry: Arc<Entry>, shutdown: CancellationToken) {
        let changed = entry.bridge.list_changed();
        let mut listed = self.relist(&entry).await;
        let mut last = tokio::time::Instant::now();
        let shared = self.store.shared();
        let mut pins = tokio::time::interval(PINS_EVERY);
        pins.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // When to reap idle sessions (or, after a failed listing, list
        // again): a deadline of its own, which the other branches leave.
        let reap = REAP_EVERY.min(entry.bridge.settings().idle_shutdown / 2);
        let next =
            |listed: bool| tokio::time::Instant::now() + if listed { reap } else { RETRY_LISTING };
        let mut due = next(listed);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = changed.notified() => {
                    tokio::time::sleep(DEBOUNCE).await;
                    let since = last.elapsed();
                    if since < MIN_RELIST {
                        tokio::time::sleep(MIN_RELIST - since).await;
                    }
                    listed = self.relist(&entry).await;
                    last = tokio::time::Instant::now();
                    due = next(listed);
                }
                _ = pins.tick(), if shared => self.publish(&entry).await,
                () = tokio::time::sleep_until(due) => {
                    if listed {
                        entry.bridge.reap_idle().await;
                    } else {
                        listed = self.relist(&entry).await;
                        last = tokio::time::Instant::now();
                    }
                    due = next(listed);
                }
            }
        }
    }

    /// Lists the server's tools and publishes the result; whether the
    /// listing succeeded.
    async fn relist(&self, entry: &Entry) -> bool {
        let listed = entry.bridge.relist().await;
        if let Err(e) = &listed {
            tracing::warn!(bridge = %entry.bridge.name(), error = %e, "a bridged server's tools could not be listed");
        }
        // A failed plugin load stops the host; either way the table is
        // whole (or gone) when this returns.
        let _ = self.startup.listed().await;
        self.publish(entry).await;
        listed.is_ok()
    }

    /// Judges the last listing against the pins in force and, when the
    /// visible set changed, swaps the bridge's tools in the gate and tells
    /// clients.
    async fn publish(&self, entry: &Entry) {
        let _one = entry.publishing.lock().await;
        let name = entry.bridge.name().to_owned();
        let approved = match self.store.definition_pins(Some(&name)) {
            Ok(pins) => pins.into_iter().map(|p| (p.tool, p.digest)).collect(),
            Err(e) => {
                tracing::error!(bridge = %name, error = %e, "the definition pins could not be read; nothing is published");
                BTreeMap::new()
            }
        };
        let me = owner(&name);
        let gate = self.gate.clone();
        let taken = move |advertised: &str| {
            gate.owner_of(advertised).filter(|o| *o != me).map(|o| {
                match o.strip_prefix("bridge:") {
                    Some(bridge) => format!("the bridged server `{bridge}`"),
                    None => format!("the plugin `{o}`"),
                }
            })
        };
        let judged = entry.bridge.judge(&approved, &taken);
        let registered = entry.registered.load(std::sync::atomic::Ordering::SeqCst);
        if registered && !judged.any {
            entry.bridge.set_published();
            return;
        }
        // On a shared store each call checks its pin there too: a
        // revocation through another replica applies at the next call.
        let backend = if self.store.shared() {
            Arc::new(super::pinned::Pinned {
                inner: entry.bridge.backend(),
                store: self.store.clone(),
                bridge: name.clone(),
                catalog: entry.bridge.catalog(),
            })
        } else {
            entry.bridge.backend()
        };
        let registration = Registration {
            owner: owner(&name),
            source: format!("bridged MCP server `{name}`"),
            backend,
            grants: warden_api::Grants::default(),
            ceiling: entry.ceiling,
            generated: false,
        };
        match self.gate.replace(vec![(owner(&name), Some(registration))]) {
            Ok(change) => {
                entry
                    .registered
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                entry.bridge.set_published();
                if judged.visible {
                    tracing::info!(bridge = %name, added = ?change.added, removed = ?change.removed, "bridged tools published");
                    self.server.tools_changed().await;
                }
            }
            Err(e) => {
                tracing::error!(bridge = %name, error = %e, "bridged tools were not published");
            }
        }
    }

    fn entry(&self, name: &str) -> Result<&Arc<Entry>, AdminError> {
        self.bridges.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.bridges.keys().map(String::as_str).collect();
            AdminError::Refused(if known.is_empty() {
                format!("no bridge is named `{name}`: this server bridges no MCP server")
            } else {
                format!(
                    "no bridge is named `{name}`; the bridges are: {}",
                    known.join(", ")
                )
            })
        })
    }
}

impl BridgeAdmin for LiveBridges {
    fn status(&self, name: Option<String>) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            let entries: Vec<&Arc<Entry>> = match &name {
                Some(name) => vec![self.entry(name)?],
                None => self.bridges.values().collect(),
            };
            let statuses: Vec<Value> = entries
                .iter()
                .map(|e| serde_json::to_value(e.bridge.status()).unwrap_or(Value::Null))
                .collect();
            Ok(json!({ "bridges": statuses }))
        })
    }

    fn approve(
        &self,
        name: String,
        tools: Vec<String>,
        by: Attribution,
    ) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            let entry = self.entry(&name)?;
            let catalog = entry.bridge.catalog();
            if catalog.tools.is_empty() {
                return Err(AdminError::Refused(format!(
                    "`{name}` has listed no tools yet ({}); nothing to approve",
                    entry
                        .bridge
                        .status()
                        .problem
                        .unwrap_or_else(|| "it is still starting".into())
                )));
            }
            let chosen: Vec<&Listed> = if tools.is_empty() {
                catalog.tools.iter().collect()
            } else {
                let mut chosen = Vec::new();
                for wanted in &tools {
                    let tool = catalog.named(wanted).ok_or_else(|| {
                        AdminError::Refused(format!(
                            "`{name}` lists no tool `{wanted}`; `warden bridge status {name}` shows what it lists"
                        ))
                    })?;
                    if !chosen.iter().any(|c: &&Listed| c.upstream == tool.upstream) {
                        chosen.push(tool);
                    }
                }
                chosen
            };
            let pins: Vec<DefinitionPin> = chosen
                .into_iter()
                .map(|tool| DefinitionPin {
                    server: name.clone(),
                    tool: tool.upstream.clone(),
                    digest: tool.digest.clone(),
                    definition: tool.definition.clone(),
                    approved_ms: 0,
                    by: None,
                })
                .collect();
            self.store
                .pin_definitions(&pins, &by)
                .map_err(|e| AdminError::failed("recording the approval", e))?;
            self.publish(entry).await;
            let approved: Vec<Value> = pins
                .iter()
                .map(|p| json!({"tool": p.tool, "digest": p.digest}))
                .collect();
            Ok(json!({ "bridge": name, "approved": approved, "status": entry.bridge.status() }))
        })
    }

    fn revoke(
        &self,
        name: String,
        tools: Vec<String>,
        by: Attribution,
    ) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            let entry = self.entry(&name)?;
            let catalog = entry.bridge.catalog();
            // Advertised names are accepted too; pins are by upstream name.
            let upstream: Vec<String> = tools
                .iter()
                .map(|t| {
                    catalog
                        .named(t)
                        .map_or_else(|| t.clone(), |l| l.upstream.clone())
                })
                .collect();
            let removed = self
                .store
                .unpin_definitions(&name, &upstream, &by)
                .map_err(|e| AdminError::failed("removing the approval", e))?;
            self.publish(entry).await;
            Ok(json!({ "bridge": name, "revoked": removed, "status": entry.bridge.status() }))
        })
    }

    fn restart(&self, name: String) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            let entry = self.entry(&name)?;
            entry.bridge.restart().await;
            self.relist(entry).await;
            Ok(json!({ "bridge": name, "status": entry.bridge.status() }))
        })
    }
}
