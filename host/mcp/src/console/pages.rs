//! The console's pages, rendered on the server. Every value from an
//! agent or a person goes through [`esc`].

use warden_api::ApprovalRequest;

use super::html::esc;
use super::signins::SignIn;

/// A whole page: header with navigation and sign-out, then `body`.
pub(crate) fn layout(title: &str, signin: Option<&SignIn>, body: &str) -> String {
    let header = match signin {
        Some(s) => format!(
            "<header><strong>Warden console</strong>\
             <nav><a href=\"/console\">Approvals</a><a href=\"/console/agents\">Agents</a>\
             <a href=\"/console/audit\">Audit</a><a href=\"/console/plugins\">Plugins</a>\
             <a href=\"/console/toolsmith\">Toolsmith</a></nav>\
             <span class=\"muted\">{actor}</span>\
             <form method=\"post\" action=\"/console/logout\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button class=\"plain\" type=\"submit\">Sign out</button></form></header>",
            actor = esc(&s.actor),
            csrf = esc(&s.csrf),
        ),
        None => "<header><strong>Warden console</strong></header>".to_owned(),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · Warden</title>\
         <link rel=\"stylesheet\" href=\"/console/assets/console.css\"></head>\
         <body>{header}<main>{body}</main>\
         <script src=\"/console/assets/console.js\"></script></body></html>",
        title = esc(title),
    )
}

/// The sign-in form, with `problem` when the last try failed; after it,
/// the person goes to `next` (a console page) or the approvals.
pub(crate) fn signin(problem: Option<&str>, next: Option<&str>) -> String {
    let notice = problem
        .map(|p| format!("<p class=\"notice error\" role=\"alert\">{}</p>", esc(p)))
        .unwrap_or_default();
    let next = next
        .map(|n| format!("<input type=\"hidden\" name=\"next\" value=\"{}\">", esc(n)))
        .unwrap_or_default();
    layout(
        "Sign in",
        None,
        &format!(
            "<form class=\"signin\" method=\"post\" action=\"/console/login\">\
             <h1>Sign in</h1>{notice}{next}\
             <label>Your name (recorded with every answer you give; with an access token, its subject is)\
             <input type=\"text\" name=\"actor\" id=\"actor\" maxlength=\"64\" autocomplete=\"username\"></label>\
             <label>Admin token, or your access token as an operator\
             <input type=\"password\" name=\"token\" id=\"token\" required autocomplete=\"current-password\"></label>\
             <div class=\"buttons\"><button type=\"submit\" id=\"signin\">Sign in</button></div></form>"
        ),
    )
}

/// The pending-approvals page: `notice` after an answer, then the list,
/// with the ask `marked` (the one a link led to) first and marked.
pub(crate) fn approvals(
    signin: &SignIn,
    pending: &[ApprovalRequest],
    notice: Option<(&str, bool)>,
    marked: Option<&str>,
) -> String {
    let notice = notice
        .map(|(text, error)| {
            format!(
                "<p class=\"notice{}\" role=\"status\">{}</p>",
                if error { " error" } else { "" },
                esc(text)
            )
        })
        .unwrap_or_default();
    layout(
        "Approvals",
        Some(signin),
        &format!(
            "<h1>Waiting for a person (<span id=\"pending-count\">{n}</span>)</h1>{notice}{list}",
            n = pending.len(),
            list = list(signin, pending, marked),
        ),
    )
}

/// The list alone: the page's part the script refreshes.
pub(crate) fn pending_list(signin: &SignIn, pending: &[ApprovalRequest]) -> String {
    list(signin, pending, None)
}

fn list(signin: &SignIn, pending: &[ApprovalRequest], marked: Option<&str>) -> String {
    let mut out = String::from("<section id=\"pending\" data-src=\"/console/pending\">");
    out.push_str(&format!(
        "<p class=\"empty muted\"{}>Nothing is waiting.</p>",
        if pending.is_empty() { "" } else { " hidden" }
    ));
    let (first, rest): (Vec<_>, Vec<_>) = pending
        .iter()
        .partition(|asked| Some(asked.id.as_str()) == marked);
    for asked in first {
        out.push_str(&approval(signin, asked, true));
    }
    for asked in rest {
        out.push_str(&approval(signin, asked, false));
    }
    out.push_str("</section>");
    out
}

fn approval(signin: &SignIn, asked: &ApprovalRequest, marked: bool) -> String {
    let arguments = serde_json::to_string_pretty(&asked.arguments)
        .unwrap_or_else(|_| asked.arguments.to_string());
    let id = esc(&asked.id);
    let class = if marked { " class=\"marked\"" } else { "" };
    format!(
        "<article data-id=\"{id}\" id=\"approval-{id}\"{class}>\
         <h2>{call}</h2>\
         <dl><dt>Agent</dt><dd>{agent}</dd><dt>Tool</dt><dd>{tool}</dd>\
         <dt>Why it asks</dt><dd>{reason}</dd><dt>Approval</dt><dd>{id}</dd></dl>\
         <pre>{arguments}</pre>\
         <form class=\"answer\" method=\"post\" action=\"/console/approvals/{id}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <label>Allow\
         <select name=\"scope\"><option value=\"once\">this call only</option>\
         <option value=\"always\">always, with the rule below</option></select></label>\
         <label>Rule (with “always”; a rule broader than the suggested one needs the confirmation and a reason)\
         <input type=\"text\" name=\"rule\" value=\"{rule}\"></label>\
         <label>Reason (shown to the agent on a denial; audited)\
         <input type=\"text\" name=\"reason\" maxlength=\"500\"></label>\
         <label class=\"inline\"><input type=\"checkbox\" name=\"confirm\" value=\"yes\"> I confirm a broader rule</label>\
         <div class=\"buttons\">\
         <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
         <button class=\"deny\" type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></div>\
         </form></article>",
        call = esc(&asked.call),
        agent = esc(&asked.agent),
        tool = esc(&asked.tool),
        reason = esc(&asked.reason),
        arguments = esc(&arguments),
        csrf = esc(&signin.csrf),
        rule = esc(&asked.suggested_rule),
    )
}
