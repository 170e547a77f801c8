//! `toolsmith_propose`, through the gate: the blueprint goes to the
//! toolsmith's desk and waits there for a person.
//!
//! Attack it stops: an agent creating a tool for itself. Creating a tool
//! is `tool:create`, a circuit breaker: what this call does is only ever
//! keep the proposal as `pending`; the decision is an operator's (`warden
//! toolsmith approve`, the admin API), never an answer on the agent's own
//! connection, an "always allow" rule or a mode. The call needs no
//! approval itself because it changes nothing an agent can use.

use serde_json::json;
use warden_api::{BlueprintDesk, CallRequest, Envelope, ErrorType, HostCode};

/// What the policy knows of `toolsmith_propose`: the host's own, creating
/// tools.
pub(crate) fn facts() -> warden_policy::ToolFacts<'static> {
    warden_policy::ToolFacts {
        name: warden_api::TOOLSMITH_PROPOSE,
        category: "code-execution",
        action_type: warden_policy::TOOL_CREATE,
        side_effect: true,
        isolation: warden_policy::Isolation::Host,
        vcs: None,
    }
}

pub(crate) fn propose(desk: &dyn BlueprintDesk, request: &CallRequest) -> Envelope {
    let c = &request.context;
    let Some(blueprint) = request.args.get("blueprint").filter(|b| b.is_object()) else {
        return Envelope::host(
            ErrorType::ArgumentValidationError,
            HostCode::InvalidArgument,
            "`blueprint` is required: an object with capability, title, description, \
             input_schema, output_schema, body, cases and rationale",
        );
    };
    if request.args.as_object().is_some_and(|a| a.len() > 1) {
        return Envelope::host(
            ErrorType::ArgumentValidationError,
            HostCode::InvalidArgument,
            "`blueprint` is the only argument: the name, category, grants and limits are the host's",
        );
    }
    match desk.propose(&c.agent, &c.session, blueprint.clone()) {
        Ok(p) => {
            tracing::info!(id = p.id, name = %p.name, "a blueprint was proposed");
            Envelope::ok(json!({
                "id": p.id,
                "name": p.name,
                "state": p.state,
                "blueprint_sha256": p.blueprint_sha256,
                "next": format!(
                    "creating a tool (tool:create) always needs an operator's approval: \
                     blueprint {} waits for one (`warden toolsmith show {}`)",
                    p.id, p.id
                ),
            }))
        }
        Err(e) => {
            tracing::info!(error = %e, "a blueprint was refused");
            Envelope::host(
                ErrorType::ArgumentValidationError,
                HostCode::InvalidArgument,
                format!("the blueprint was not kept: {e}"),
            )
        }
    }
}
