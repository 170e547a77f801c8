//! The validation gate's calls: every acceptance case, the witness (the
//! recorded request the tool exists for), the host's negative cases and
//! the scorecard of the tools already live, each run
//! through the gate's real call path with the candidate in a shadow
//! table that only validation sees; and every agent's listing, which the
//! candidate may change by itself alone.
//!
//! Attack: a tool that goes live without doing what its cases say, that
//! lets bad arguments through, whose arrival breaks a live generated
//! tool, or that hides another tool from an agent or brings one along.
//! Any failed case, negative case let through, scorecard regression or
//! listing change beyond the candidate fails the validation; nothing is
//! listed.

use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use warden_api::{CallContext, CallHooks, CallRequest, Envelope, ErrorType};
use warden_gate::{Gate, Registration};
use warden_toolsmith::{Blueprint, Case, Observed, judge, negative_cases};

/// One call of the validation, as the report keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// `case`, `witness`, `negative`, `scorecard` or `listing`.
    pub kind: &'static str,
    pub tool: String,
    pub name: String,
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub micros: u64,
}

/// What the validation found: every call, and whether all passed.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub passed: bool,
    pub checked: Vec<Checked>,
    pub micros: u64,
}

impl Report {
    /// The first failure, in words.
    pub fn failure(&self) -> Option<String> {
        self.checked.iter().find(|c| !c.passed).map(|c| {
            let what = match c.kind {
                "negative" => "the host's negative case",
                "witness" => "the witness (the recorded request, as the author rendered it)",
                "listing" => "the listing check",
                "scorecard" => "the scorecard: live tool's case",
                _ => "case",
            };
            format!(
                "{what} `{}` of `{}` failed: {}",
                c.name,
                c.tool,
                c.detail.as_deref().unwrap_or("")
            )
        })
    }
}

/// Runs the validation of `candidate` (the tool `name` of `blueprint`
/// `id`), with `live` the generated tools now active and their
/// blueprints (the active version of `name` among them, if any). A candidate the table refuses (a name taken) is `Err`.
pub async fn validate(
    gate: &Gate,
    candidate: &Registration,
    id: u64,
    name: &str,
    blueprint: &Blueprint,
    live: &[(String, Blueprint)],
) -> Result<Report, String> {
    let started = Instant::now();
    let why = format!("validation of toolsmith blueprint {id}, approved by an operator");
    let caller = Caller {
        gate,
        candidate,
        id,
        why: &why,
    };
    let mut checked = Vec::new();
    for case in &blueprint.cases {
        checked.push(
            caller
                .case("case", name, case, &blueprint.output_schema)
                .await?,
        );
    }
    // The recorded request the tool exists for must succeed.
    if let Some(witness) = blueprint.witness_case() {
        checked.push(
            caller
                .case("witness", name, &witness, &blueprint.output_schema)
                .await?,
        );
    }
    let mut negatives = Vec::new();
    for case in &blueprint.cases {
        if matches!(case.expect, warden_toolsmith::Expect::Ok(_)) {
            for n in negative_cases(&blueprint.input_schema, &case.args) {
                if !negatives
                    .iter()
                    .any(|(_, a): &(String, Value)| *a == n.args)
                {
                    negatives.push((format!("{} ({})", n.name, case.name), n.args));
                }
            }
        }
    }
    for (label, args) in negatives {
        checked.push(caller.negative(name, label, args).await?);
    }
    // The live tools' cases; for the active version of this very tool,
    // its cases run against the candidate (a new version must pass what
    // the old one passed).
    for (tool, other) in live {
        for case in &other.cases {
            checked.push(
                caller
                    .case("scorecard", tool, case, &other.output_schema)
                    .await?,
            );
        }
    }
    // Every agent's `tools/list` changes by the candidate alone: it hides
    // nothing and brings nothing else along.
    let started_listing = Instant::now();
    for change in gate.shadow_listings(candidate).map_err(|e| e.to_string())? {
        let stray: Vec<&String> = change.gained.iter().filter(|g| *g != name).collect();
        let passed = change.lost.is_empty() && stray.is_empty();
        checked.push(Checked {
            kind: "listing",
            tool: name.to_owned(),
            name: format!("tools/list of {}", change.agent),
            passed,
            detail: (!passed).then(|| format!("gains {stray:?} and loses {:?}", change.lost)),
            micros: elapsed_micros(started_listing),
        });
    }
    Ok(Report {
        passed: checked.iter().all(|c| c.passed),
        checked,
        micros: elapsed_micros(started),
    })
}

fn elapsed_micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

struct Caller<'a> {
    gate: &'a Gate,
    candidate: &'a Registration,
    id: u64,
    why: &'a str,
}

impl Caller<'_> {
    async fn call(&self, tool: &str, label: &str, args: Value) -> Result<Envelope, String> {
        let request = CallRequest {
            tool: tool.to_owned(),
            args,
            context: CallContext {
                agent: "toolsmith".into(),
                session: format!("toolsmith-validation-{}", self.id),
                task: None,
                request_id: format!("validate-{}-{label}", self.id),
                principal: None,
            },
        };
        self.gate
            .shadow_call(
                self.candidate.clone(),
                request,
                CallHooks::default(),
                self.why,
            )
            .await
            .map_err(|e| e.to_string())
    }

    async fn case(
        &self,
        kind: &'static str,
        tool: &str,
        case: &Case,
        output_schema: &Value,
    ) -> Result<Checked, String> {
        let started = Instant::now();
        let answer = self.call(tool, &case.name, case.args.clone()).await?;
        let verdict = match &answer {
            Envelope::Ok { data } => judge(case, Observed::Ok(data), output_schema),
            Envelope::Error { message, .. } => judge(case, Observed::Error(message), output_schema),
            Envelope::Forwarded { .. } => Err("the tool forwarded a result".into()),
        };
        Ok(Checked {
            kind,
            tool: tool.to_owned(),
            name: case.name.clone(),
            passed: verdict.is_ok(),
            detail: verdict.err(),
            micros: elapsed_micros(started),
        })
    }

    /// Arguments the input schema rejects: the gate must refuse them
    /// before the tool runs.
    async fn negative(&self, tool: &str, label: String, args: Value) -> Result<Checked, String> {
        let started = Instant::now();
        let answer = self.call(tool, &label, args).await?;
        let detail = match &answer {
            Envelope::Error {
                error_type: ErrorType::ArgumentValidationError,
                ..
            } => None,
            other => Some(format!(
                "arguments the input schema rejects were not refused before the tool ran: {}",
                other.to_json()
            )),
        };
        Ok(Checked {
            kind: "negative",
            tool: tool.to_owned(),
            name: label,
            passed: detail.is_none(),
            detail,
            micros: elapsed_micros(started),
        })
    }
}
