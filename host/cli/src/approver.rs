//! Approvals at the terminal: when stdin is a terminal, an ask becomes a
//! prompt on stderr (allow once / always allow / deny); otherwise nobody
//! can be asked and the ask is denied with a message saying what rule
//! would allow the call.

use std::io::{BufRead, IsTerminal, Write};

use warden_api::BoxFuture;
use warden_gate::{ApprovalAnswer, ApprovalRequest, Approver, NoApprover};

#[derive(Debug)]
pub enum Terminal {
    Interactive,
    Nobody(NoApprover),
}

impl Terminal {
    pub fn for_stdin() -> Terminal {
        if std::io::stdin().is_terminal() {
            Terminal::Interactive
        } else {
            Terminal::Nobody(NoApprover)
        }
    }
}

fn prompt(request: &ApprovalRequest) -> ApprovalAnswer {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "\nwarden: agent `{}` wants to run {}\n  arguments: {}\n  why this asks: {}\n  [y] allow once   [a] always allow (rule: {})   [n] deny",
        request.agent, request.call, request.arguments, request.reason, request.suggested_rule
    );
    let _ = write!(err, "> ");
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return ApprovalAnswer::Deny {
            reason: "could not read an answer".into(),
        };
    }
    match line.trim() {
        "y" | "yes" => ApprovalAnswer::AllowOnce,
        "a" | "always" => ApprovalAnswer::AlwaysAllow {
            rule: request.suggested_rule.clone(),
            // The person at the terminal running `warden call` is the
            // operator of this host.
            by: warden_api::Answerer::Operator(warden_api::Attribution {
                actor: std::env::var("USER").unwrap_or_else(|_| "terminal".into()),
                confirm: true,
                reason: None,
            }),
        },
        _ => ApprovalAnswer::Deny {
            reason: "denied at the terminal".into(),
        },
    }
}

impl Approver for Terminal {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        match self {
            Terminal::Nobody(n) => n.ask(request),
            Terminal::Interactive => Box::pin(async move {
                tokio::task::spawn_blocking(move || prompt(&request))
                    .await
                    .unwrap_or(ApprovalAnswer::Deny {
                        reason: "the prompt failed".into(),
                    })
            }),
        }
    }
}
