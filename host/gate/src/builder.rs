//! Assembling a gate: its backends, agents, approver, limits and the
//! optional durable hooks, capability requests and progressive trust.

use std::sync::{Arc, RwLock};

use warden_api::{Approver, Backend, CallLimits, Grants, Journal};
use warden_policy::{AgentPolicy, GrantBounds};

use crate::agents::{Agents, PolicyEnv};
use crate::approval::NoApprover;
use crate::durable::{Clock, GrantStore, SystemClock};
use crate::gate::{Durable, Gate, Inner, file_tools};
use crate::sessions::Sessions;
use crate::table::{Registration, Table};
use crate::{GateError, TrustKeeper};

/// Registers backends and policies, then builds a [`Gate`].
pub struct GateBuilder {
    tools: Table,
    agents: Vec<AgentPolicy>,
    env: PolicyEnv,
    approver: Arc<dyn Approver>,
    limits: CallLimits,
    durable: Durable,
    capability: Option<GrantBounds>,
    toolsmith: Option<Arc<dyn warden_api::BlueprintDesk>>,
    trust: Option<Arc<TrustKeeper>>,
}

impl std::fmt::Debug for GateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateBuilder")
            .field("tools", &self.tools.tools.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl GateBuilder {
    /// Defaults: no tools, no agents (every call is denied until agents are
    /// added), nobody to approve asks ([`NoApprover`]), workspace
    /// `/workspace`, [`CallLimits::DEFAULT`], no journal, no grants, the
    /// system clock, no capability requests, no progressive trust.
    pub fn new() -> GateBuilder {
        GateBuilder {
            tools: Table::default(),
            agents: Vec::new(),
            env: PolicyEnv {
                workspace: "/workspace".into(),
                project: "/workspace".into(),
                home: "/home/agent".into(),
            },
            approver: Arc::new(NoApprover),
            limits: CallLimits::DEFAULT,
            durable: Durable {
                journal: None,
                grants: None,
                gaps: None,
                clock: Arc::new(SystemClock),
                fingerprint_key: None,
            },
            capability: None,
            toolsmith: None,
            trust: None,
        }
    }

    /// Where decisions, outcomes and "always allow" rules are written.
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> GateBuilder {
        self.durable.journal = Some(journal);
        self
    }

    /// Where requests for tools nobody offers are reported: a call to an
    /// unknown tool, `request_capability` for one.
    pub fn gaps(mut self, gaps: Arc<dyn warden_api::GapLog>) -> GateBuilder {
        self.durable.gaps = Some(gaps);
        self
    }

    /// Where capability grants are kept; decisions consult them.
    pub fn grants(mut self, grants: Arc<dyn GrantStore>) -> GateBuilder {
        self.durable.grants = Some(grants);
        self
    }

    /// The clock grants are judged by. Default: the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> GateBuilder {
        self.durable.clock = clock;
        self
    }

    /// A secret that keys argument fingerprints, so they stay the same
    /// across restarts (durable approvals need that). Default: a random
    /// key per process.
    pub fn fingerprint_key(mut self, key: [u8; 32]) -> GateBuilder {
        self.durable.fingerprint_key = Some(key);
        self
    }

    /// Offers `request_capability` within `bounds`: grants go to the
    /// [grant store](GateBuilder::grants), asks to this gate's approver.
    pub fn capability_requests(mut self, bounds: GrantBounds) -> GateBuilder {
        self.capability = Some(bounds);
        self
    }

    /// Offers `toolsmith_propose`: blueprints agents propose go to
    /// `desk`, where they wait for a person.
    pub fn toolsmith(mut self, desk: Arc<dyn warden_api::BlueprintDesk>) -> GateBuilder {
        self.toolsmith = Some(desk);
        self
    }

    /// Progressive trust: `keeper`'s levels drive each agent's category
    /// gate, and call outcomes feed it.
    pub fn trust(mut self, keeper: Arc<TrustKeeper>) -> GateBuilder {
        self.trust = Some(keeper);
        self
    }

    /// Registers every tool of `backend`, whose calls hold `grants`, under
    /// the owner `source`. Nothing is registered if any tool clashes with
    /// one already present or has an unusable schema.
    pub fn backend(
        self,
        source: &str,
        backend: Arc<dyn Backend>,
        grants: Grants,
    ) -> Result<GateBuilder, GateError> {
        self.register(Registration {
            owner: source.to_owned(),
            source: source.to_owned(),
            backend,
            grants,
            ceiling: None,
            generated: false,
        })
    }

    /// Registers a backend under its owner key (a plugin's name), which a
    /// later [`Gate::replace`] names. Two registrations of one owner are
    /// an error naming both (two plugins of the same name).
    pub fn register(mut self, registration: Registration) -> Result<GateBuilder, GateError> {
        let owner = registration.owner.clone();
        if let Some(first) = self.tools.tools.values().find(|e| e.owner == owner) {
            return Err(GateError::DuplicateOwner {
                owner,
                first: first.source.clone(),
                second: registration.source,
            });
        }
        self.tools = self.tools.replace(&owner, Some(registration))?.0;
        Ok(self)
    }

    /// Adds an agent's policy (replacing one with the same id).
    pub fn agent(mut self, policy: AgentPolicy) -> GateBuilder {
        self.agents.retain(|a| a.id != policy.id);
        self.agents.push(policy);
        self
    }

    /// Where agents' paths resolve.
    pub fn env(mut self, env: PolicyEnv) -> GateBuilder {
        self.env = env;
        self
    }

    pub fn approver(mut self, approver: Arc<dyn Approver>) -> GateBuilder {
        self.approver = approver;
        self
    }

    pub fn limits(mut self, limits: CallLimits) -> GateBuilder {
        self.limits = limits;
        self
    }

    pub fn build(self) -> Gate {
        let agents = Agents::new(self.agents, self.env);
        agents.deny_file_paths(&file_tools(&self.tools));
        if let Some(keeper) = &self.trust {
            for agent in agents.ids() {
                match keeper.levels(&agent) {
                    Ok(levels) => agents.set_trust(&agent, levels),
                    Err(e) => {
                        tracing::error!(%agent, error = %e, "the agent's trust could not be read; its configured level applies");
                    }
                }
            }
        }
        Gate {
            inner: Arc::new(Inner {
                tools: RwLock::new(Arc::new(self.tools)),
                agents,
                approver: self.approver,
                limits: self.limits,
                fingerprint_key: std::collections::hash_map::RandomState::new(),
                durable: self.durable,
                capability: self.capability,
                toolsmith: self.toolsmith,
                trust: self.trust,
                sessions: Sessions::default(),
            }),
        }
    }
}

impl Default for GateBuilder {
    fn default() -> Self {
        GateBuilder::new()
    }
}
