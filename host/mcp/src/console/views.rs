//! The console's pages beyond approvals: agents with their grants
//! (revocable), the audit trail with its chain's state, plugins and
//! bridged servers, and the toolsmith's blueprints. Every value goes
//! through [`esc`].

use serde_json::Value;
use warden_api::{AgentSummary, AuditEntry, AuditQuery, ChainSummary, GrantSummary};

use super::html::esc;
use super::pages::layout;
use super::signins::SignIn;

/// `ms` since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn when(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A duration in words: `2 h 5 min`, `40 s`.
fn left(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

fn notice(text: Option<(&str, bool)>) -> String {
    text.map(|(t, error)| {
        format!(
            "<p class=\"notice{}\" role=\"status\">{}</p>",
            if error { " error" } else { "" },
            esc(t)
        )
    })
    .unwrap_or_default()
}

pub(crate) fn agents(
    signin: &SignIn,
    agents: &[AgentSummary],
    grants: &[GrantSummary],
    now_ms: u64,
    message: Option<(&str, bool)>,
) -> String {
    let mut body = format!("<h1>Agents</h1>{}", notice(message));
    for agent in agents {
        body.push_str(&format!(
            "<article data-agent=\"{name}\"><h2>{name}</h2><dl><dt>Level</dt><dd>{level}</dd><dt>Mode</dt><dd>{mode}</dd>",
            name = esc(&agent.name),
            level = esc(agent.level.as_deref().unwrap_or("none (rules only)")),
            mode = esc(&agent.mode),
        ));
        if let Some(trust) = &agent.trust {
            body.push_str(&format!(
                "<dt>Trust</dt><dd><pre>{}</pre></dd>",
                esc(&pretty(trust))
            ));
        }
        if !agent.trust_history.is_empty() {
            body.push_str("<dt>Trust history</dt><dd><ol class=\"history\">");
            for change in &agent.trust_history {
                let by = change
                    .by
                    .as_deref()
                    .map(|by| format!(" (by {})", esc(by)))
                    .unwrap_or_default();
                body.push_str(&format!(
                    "<li><time>{when}</time> {from} → {to}: {reason}{by}</li>",
                    when = esc(&when(change.at_ms)),
                    from = esc(&change.from),
                    to = esc(&change.to),
                    reason = esc(&change.reason),
                ));
            }
            body.push_str("</ol></dd>");
        }
        body.push_str("</dl>");
        let mine: Vec<&GrantSummary> = grants.iter().filter(|g| g.agent == agent.name).collect();
        if mine.is_empty() {
            body.push_str("<p class=\"muted\">No grants in force.</p>");
        }
        for g in mine {
            body.push_str(&grant(signin, g, now_ms));
        }
        body.push_str("</article>");
    }
    layout("Agents", Some(signin), &body)
}

fn grant(signin: &SignIn, g: &GrantSummary, now_ms: u64) -> String {
    let id = esc(&g.id);
    format!(
        "<section class=\"grant\" data-grant=\"{id}\"><h3>{capability}</h3><dl>\
         <dt>Grant</dt><dd>{id}</dd><dt>Limited to</dt><dd>{boundary}</dd><dt>Goal</dt><dd>{goal}</dd>\
         <dt>Session</dt><dd>{session}</dd><dt>Issued by</dt><dd>{issuer}</dd>\
         <dt>Time left</dt><dd>{left} (until {until})</dd></dl>\
         <form class=\"answer\" method=\"post\" action=\"/console/grants/{id}/revoke\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <label>Reason (audited)<input type=\"text\" name=\"reason\" maxlength=\"500\" required></label>\
         <label class=\"inline\"><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> I confirm: revoke this grant</label>\
         <div class=\"buttons\"><button class=\"deny\" type=\"submit\">Revoke</button></div></form></section>",
        capability = esc(&g.capability),
        boundary = esc(if g.boundary.is_empty() {
            "nothing narrower"
        } else {
            &g.boundary
        }),
        goal = esc(&g.goal),
        session = esc(g.session.as_deref().unwrap_or("any")),
        issuer = esc(&g.issuer),
        left = left(g.valid_to_ms.saturating_sub(now_ms)),
        until = when(g.valid_to_ms),
        csrf = esc(&signin.csrf),
    )
}

pub(crate) fn audit(
    signin: &SignIn,
    query: &AuditQuery,
    chain: &ChainSummary,
    entries: &[AuditEntry],
) -> String {
    let value = |v: &Option<String>| esc(v.as_deref().unwrap_or(""));
    let verified = match &chain.verified {
        None => "<a href=\"/console/audit?verify=1\">Verify the whole chain</a>".to_owned(),
        Some(Ok(what)) => format!("<span id=\"chain-ok\">Verified: {}</span>", esc(what)),
        Some(Err(broken)) => format!(
            "<span id=\"chain-broken\" class=\"error\">Broken: {}</span>",
            esc(broken)
        ),
    };
    let mut body = format!(
        "<h1>Decisions and audit</h1>\
         <dl><dt>Records</dt><dd>{records}</dd><dt>Head</dt><dd><code id=\"chain-head\">{head}</code></dd>\
         <dt>Chain</dt><dd>{verified}</dd></dl>\
         <form class=\"filters\" method=\"get\" action=\"/console/audit\">\
         <label>Agent<input type=\"text\" name=\"agent\" value=\"{agent}\"></label>\
         <label>Tool<input type=\"text\" name=\"tool\" value=\"{tool}\"></label>\
         <label>Decision<select name=\"decision\">{options}</select></label>\
         <div class=\"buttons\"><button type=\"submit\">Filter</button></div></form>\
         <table id=\"audit\"><thead><tr><th>#</th><th>When</th><th>Kind</th><th>Agent</th><th>What</th></tr></thead><tbody>",
        records = chain.records,
        head = esc(&chain.head),
        agent = value(&query.agent),
        tool = value(&query.tool),
        options = ["", "allow", "ask", "deny"]
            .iter()
            .map(|d| format!(
                "<option value=\"{d}\"{}>{}</option>",
                if query.decision.as_deref() == Some(d)
                    || (d.is_empty() && query.decision.is_none())
                {
                    " selected"
                } else {
                    ""
                },
                if d.is_empty() { "any" } else { d }
            ))
            .collect::<String>(),
    );
    for e in entries {
        let field = |name: &str| e.event.get(name).and_then(Value::as_str).unwrap_or("");
        let what = match e.kind.as_str() {
            "decision" => format!(
                "{} → {} ({})",
                field("call"),
                field("decision"),
                field("reason")
            ),
            "outcome" => format!(
                "{} {}",
                field("tool"),
                if e.event.get("ok").and_then(Value::as_bool) == Some(true) {
                    "ran"
                } else {
                    "failed"
                }
            ),
            _ => compact(&e.event),
        };
        body.push_str(&format!(
            "<tr data-seq=\"{seq}\"><td>{seq}</td><td>{when}</td><td>{kind}</td><td>{agent}</td><td>{what}</td></tr>",
            seq = e.seq,
            when = when(e.at_ms),
            kind = esc(&e.kind),
            agent = esc(field("agent")),
            what = esc(&what),
        ));
    }
    body.push_str("</tbody></table>");
    if entries.is_empty() {
        body.push_str("<p class=\"muted\">No records match.</p>");
    }
    layout("Audit", Some(signin), &body)
}

/// Installed plugins (each removable), the loaded ones, an install form,
/// and the bridged servers (each with its pins to approve).
pub(crate) fn plugins(
    signin: &SignIn,
    plugins: &Value,
    bridges: Option<&Value>,
    message: Option<(&str, bool)>,
) -> String {
    let csrf = esc(&signin.csrf);
    let mut body = format!("<h1>Plugins</h1>{}", notice(message));
    let loaded: Vec<&str> = plugins
        .get("loaded")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    body.push_str(&format!(
        "<p>Loaded: <span id=\"loaded\">{}</span></p>",
        esc(&loaded.join(", "))
    ));
    let installed = plugins
        .get("installed")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for p in &installed {
        let field = |name: &str| p.get(name).and_then(Value::as_str).unwrap_or("");
        let tools: Vec<&str> = p
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let name = esc(field("name"));
        body.push_str(&format!(
            "<article data-plugin=\"{name}\"><h2>{name} {version}</h2><dl>\
             <dt>Signed by</dt><dd>{signer}</dd><dt>Digest</dt><dd><code>{digest}</code></dd>\
             <dt>Tools</dt><dd>{tools}</dd></dl>\
             <form class=\"answer\" method=\"post\" action=\"/console/plugins/{name}/remove\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <label>Reason (audited)<input type=\"text\" name=\"reason\" maxlength=\"500\" required></label>\
             <label class=\"inline\"><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> I confirm: remove this plugin</label>\
             <div class=\"buttons\"><button class=\"deny\" type=\"submit\">Remove</button></div></form></article>",
            version = esc(field("version")),
            signer = esc(&match (p.get("publisher").and_then(Value::as_str), p.get("key_id").and_then(Value::as_str)) {
                (Some(who), Some(key)) => format!("{who} (key {key})"),
                (Some(who), None) => who.to_owned(),
                _ => "nobody (admitted unsigned)".to_owned(),
            }),
            digest = esc(field("digest")),
            tools = esc(&tools.join(", ")),
        ));
    }
    if installed.is_empty() {
        body.push_str("<p class=\"muted\">No plugins were installed at run time (the configuration's load at start).</p>");
    }
    body.push_str(&format!(
        "<form class=\"answer\" method=\"post\" action=\"/console/plugins/install\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <label>Install a signed component (a path on the server's machine)\
         <input type=\"text\" name=\"path\" required></label>\
         <div class=\"buttons\"><button type=\"submit\">Install</button></div></form>"
    ));
    body.push_str("<h1>Bridged MCP servers</h1>");
    let servers = bridges
        .and_then(|b| b.get("bridges"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if servers.is_empty() {
        body.push_str("<p class=\"muted\">No bridged servers are configured.</p>");
    }
    for server in &servers {
        let name = esc(server.get("name").and_then(Value::as_str).unwrap_or(""));
        body.push_str(&format!(
            "<article data-bridge=\"{name}\"><h2>{name}</h2><pre>{status}</pre>\
             <form class=\"answer\" method=\"post\" action=\"/console/bridges/{name}/approve\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <label>Reason (audited)<input type=\"text\" name=\"reason\" maxlength=\"500\" required></label>\
             <label class=\"inline\"><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> I confirm: pin every tool as it is listed now</label>\
             <div class=\"buttons\"><button type=\"submit\">Approve its tools</button></div></form></article>",
            status = esc(&pretty(server)),
        ));
    }
    layout("Plugins", Some(signin), &body)
}

/// The toolsmith's blueprints, each with approve and reject forms.
pub(crate) fn toolsmith(
    signin: &SignIn,
    blueprints: &Value,
    message: Option<(&str, bool)>,
) -> String {
    let mut body = format!("<h1>Toolsmith blueprints</h1>{}", notice(message));
    let list = blueprints
        .get("blueprints")
        .and_then(Value::as_array)
        .or_else(|| blueprints.as_array());
    let Some(list) = list.filter(|l| !l.is_empty()) else {
        body.push_str("<p class=\"muted\">No blueprints.</p>");
        return layout("Toolsmith", Some(signin), &body);
    };
    for bp in list {
        let id = bp.get("id").map(|v| v.to_string()).unwrap_or_default();
        let id = esc(id.trim_matches('"'));
        let state = bp.get("state").and_then(Value::as_str).unwrap_or("");
        let seen = esc(bp
            .get("blueprint_sha256")
            .and_then(Value::as_str)
            .unwrap_or(""));
        body.push_str(&format!(
            "<article data-blueprint=\"{id}\"><h2>Blueprint {id} ({state})</h2><pre>{text}</pre>",
            state = esc(state),
            text = esc(&pretty(bp)),
        ));
        if state == "pending" {
            for (action, class) in [("approve", ""), ("reject", " class=\"deny\"")] {
                body.push_str(&format!(
                    "<form class=\"answer\" method=\"post\" action=\"/console/toolsmith/{id}/{action}\">\
                     <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                     <input type=\"hidden\" name=\"seen\" value=\"{seen}\">\
                     <label>Reason (audited)<input type=\"text\" name=\"reason\" maxlength=\"500\" required></label>\
                     <label class=\"inline\"><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> I confirm</label>\
                     <div class=\"buttons\"><button{class} type=\"submit\">{label}</button></div></form>",
                    csrf = esc(&signin.csrf),
                    label = if action == "approve" { "Approve creating this tool" } else { "Reject" },
                ));
            }
        }
        body.push_str("</article>");
    }
    layout("Toolsmith", Some(signin), &body)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

fn compact(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(when(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(when(1_795_000_000_000), "2026-11-18 11:06:40 UTC");
        assert_eq!(when(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(left(42_000), "42 s");
        assert_eq!(left(125_000), "2 min 5 s");
        assert_eq!(left(7_500_000), "2 h 5 min");
    }
}
