//! The gate: lookup, validate, dispatch, for single calls and batches.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tracing::Instrument;
use warden_api::{
    Backend, BackendCall, BoxFuture, CallLimits, CallRequest, Envelope, ErrorType, Grants,
    ToolHost, ToolName, ToolSpec,
};

use crate::{ArgsValidator, GateError};

struct Entry {
    spec: ToolSpec,
    validator: ArgsValidator,
    backend: Arc<dyn Backend>,
    /// Who registered it, for conflict messages.
    source: String,
}

/// Registers backends, then builds a [`Gate`].
pub struct GateBuilder {
    tools: BTreeMap<ToolName, Entry>,
    grants: Grants,
    limits: CallLimits,
}

impl std::fmt::Debug for GateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateBuilder")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl GateBuilder {
    /// Defaults: no tools, no grants (calls get no directories), and
    /// [`CallLimits::DEFAULT`].
    pub fn new() -> GateBuilder {
        GateBuilder {
            tools: BTreeMap::new(),
            grants: Grants::default(),
            limits: CallLimits::DEFAULT,
        }
    }

    /// Registers every tool of `backend`. Nothing is registered if any tool
    /// clashes with one already present or has an unusable schema.
    pub fn backend(
        mut self,
        source: &str,
        backend: Arc<dyn Backend>,
    ) -> Result<GateBuilder, GateError> {
        let mut new = Vec::new();
        for spec in backend.tools() {
            if let Some(existing) = self.tools.get(&spec.name) {
                return Err(GateError::DuplicateTool {
                    tool: spec.name.to_string(),
                    first: existing.source.clone(),
                    second: source.to_owned(),
                });
            }
            let validator = ArgsValidator::new(&spec)?;
            new.push(Entry {
                spec,
                validator,
                backend: backend.clone(),
                source: source.to_owned(),
            });
        }
        for entry in new {
            self.tools.insert(entry.spec.name.clone(), entry);
        }
        Ok(self)
    }

    /// The capabilities every call holds.
    pub fn grants(mut self, grants: Grants) -> GateBuilder {
        self.grants = grants;
        self
    }

    pub fn limits(mut self, limits: CallLimits) -> GateBuilder {
        self.limits = limits;
        self
    }

    pub fn build(self) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                tools: self.tools,
                grants: self.grants,
                limits: self.limits,
            }),
        }
    }
}

impl Default for GateBuilder {
    fn default() -> Self {
        GateBuilder::new()
    }
}

/// The one call path. Implements [`ToolHost`]; cheap to clone.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    tools: BTreeMap<ToolName, Entry>,
    grants: Grants,
    limits: CallLimits,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("tools", &self.inner.tools.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub fn builder() -> GateBuilder {
        GateBuilder::new()
    }

    /// The spec of a tool, by (normalised) name.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        let name: ToolName = name.parse().ok()?;
        self.inner.tools.get(&name).map(|e| &e.spec)
    }
}

impl Inner {
    fn span(request: &CallRequest) -> tracing::Span {
        let c = &request.context;
        tracing::info_span!(
            "gate", agent = %c.agent, session = %c.session, task = c.task.as_deref(),
            request_id = %c.request_id, tool = %request.tool
        )
    }

    async fn run(&self, request: CallRequest) -> Envelope {
        let Some(entry) = request
            .tool
            .parse::<ToolName>()
            .ok()
            .and_then(|n| self.tools.get(&n))
        else {
            return Envelope::error(
                ErrorType::UnknownTool,
                "not_found",
                format!(
                    "no tool named `{}` is available; list the tools to see what is",
                    request.tool
                ),
            );
        };
        if let Err(problems) = entry.validator.check(&request.args) {
            tracing::info!(tool = %entry.spec.name, %problems, "arguments rejected");
            return Envelope::error(
                ErrorType::ArgumentValidationError,
                "invalid_argument",
                format!(
                    "arguments of `{}` do not match its schema: {problems}",
                    entry.spec.name
                ),
            );
        }
        let call = BackendCall {
            tool: &entry.spec,
            args: &request.args,
            context: &request.context,
            grants: &self.grants,
            limits: self.limits,
        };
        let envelope = entry.backend.invoke(call).await;
        tracing::info!(tool = %entry.spec.name, ok = envelope.is_ok(), "call done");
        envelope
    }
}

impl ToolHost for Gate {
    fn list_tools(&self, _agent: &str) -> Vec<ToolSpec> {
        // BTreeMap order: sorted by name, deterministic.
        self.inner.tools.values().map(|e| e.spec.clone()).collect()
    }

    fn call(&self, request: CallRequest) -> BoxFuture<'_, Envelope> {
        let span = Inner::span(&request);
        Box::pin(self.inner.run(request).instrument(span))
    }

    /// Each call runs as its own task, so calls use every core and a
    /// panicking call is reported as an error without touching the others.
    fn call_batch(
        &self,
        requests: Vec<CallRequest>,
        max_concurrency: Option<usize>,
    ) -> BoxFuture<'_, Vec<Envelope>> {
        Box::pin(async move {
            let limit = Arc::new(Semaphore::new(
                max_concurrency.unwrap_or(requests.len()).max(1),
            ));
            let handles: Vec<_> = requests
                .into_iter()
                .map(|request| {
                    let inner = self.inner.clone();
                    let limit = limit.clone();
                    let span = Inner::span(&request);
                    tokio::spawn(
                        async move {
                            let Ok(_permit) = limit.acquire().await else {
                                return Envelope::error(
                                    ErrorType::HostError,
                                    "batch_closed",
                                    "the batch was cancelled",
                                );
                            };
                            inner.run(request).await
                        }
                        .instrument(span),
                    )
                })
                .collect();
            let mut results = Vec::with_capacity(handles.len());
            for handle in handles {
                results.push(handle.await.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "a call in a batch panicked");
                    Envelope::error(
                        ErrorType::HostError,
                        "host_panic",
                        format!("the host failed while running this call: {e}"),
                    )
                }));
            }
            results
        })
    }
}
