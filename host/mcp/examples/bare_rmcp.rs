//! The transport floor: an rmcp server with no tools and no work, served
//! over stdio the way an rmcp server usually is (`#[tokio::main]`, the
//! multi-thread runtime). `warden bench --mcp --floor-server PATH` times
//! its `ping` beside Warden's, so Warden's own overhead above rmcp shows.

use rmcp::ServiceExt;
use rmcp::model::{InitializeResult, ServerCapabilities};

struct Bare;

impl rmcp::ServerHandler for Bare {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = Bare.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
