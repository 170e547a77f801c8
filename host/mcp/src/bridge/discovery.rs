//! Listing an upstream's tools with our own page loop: a hostile or broken
//! upstream that hands out cursors forever, floods the list or lists one
//! name twice gets its listing refused (and nothing published from it),
//! never an endless loop or a half-published set. rmcp's own
//! `list_all_tools` follows cursors without a cap, so it is not used.

use std::collections::BTreeSet;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool};
use rmcp::service::{Peer, PeerRequestOptions};

use super::settings::BridgeSettings;

/// Lists every tool of `peer`, within the settings' caps; each page is
/// bounded by `timeout`. The error says which cap was hit.
pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    settings: &BridgeSettings,
    timeout: Duration,
) -> Result<Vec<Tool>, String> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut names = BTreeSet::new();
    let mut cursor: Option<String> = None;
    for page in 1..=settings.max_pages {
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
            PaginatedRequestParams::default().with_cursor(cursor),
        ));
        let response = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
            .map_err(|e| format!("tools/list page {page}: {e}"))?
            .await_response()
            .await
            .map_err(|e| format!("tools/list page {page}: {e}"))?;
        let ServerResult::ListToolsResult(result) = response else {
            return Err(format!("tools/list page {page}: not a tools/list result"));
        };
        for tool in result.tools {
            if !names.insert(tool.name.to_string()) {
                return Err(format!(
                    "the listing names `{}` twice; a listing with duplicate names is refused whole",
                    tool.name
                ));
            }
            tools.push(tool);
            if tools.len() > settings.max_tools {
                return Err(format!(
                    "the listing has more than max-tools ({}) tools",
                    settings.max_tools
                ));
            }
        }
        cursor = result.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err(format!(
        "the listing goes on past {} pages (max-pages); refused",
        settings.max_pages
    ))
}
