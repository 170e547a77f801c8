//! `warden serve --stdio`: one MCP session on standard input and output,
//! acting as one agent. Nothing else may write to stdout (logs go to
//! stderr). [`serve_stream`] serves the same over any byte stream.

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{McpError, Server};

/// Serves until the client closes the stream.
pub async fn serve_stdio(server: Server, agent: String) -> Result<(), McpError> {
    serve_stream(
        server,
        agent,
        tokio::io::join(tokio::io::stdin(), tokio::io::stdout()),
    )
    .await
}

/// One MCP session (newline-delimited JSON-RPC) over `io`, as `agent`,
/// until the peer closes it.
pub async fn serve_stream<S>(server: Server, agent: String, io: S) -> Result<(), McpError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let mut session = server.session(Some(agent));
    // The session's end is awaited here, so the caller sees its tasks
    // ended when this returns (not left to the handler's drop).
    session.end_on_drop = false;
    let id = session.id().to_owned();
    let served = async {
        let running = session
            .serve(io)
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Session(e.to_string()))
    }
    .await;
    server.end_session(&id).await;
    served.map(drop)
}
