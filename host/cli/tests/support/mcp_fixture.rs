//! The setup the official-SDK clients (`tests/mcp/client.py`,
//! `tests/mcp-ts/client.mjs`) drive `warden serve` against: a workspace
//! with `hello.txt`, the fs and probe plugins, agents `alice` (standard,
//! asks answered by her client) and `bob` (level `reader`), and a bearer
//! token for each. Included by each driver with `#[path]`.

use std::path::PathBuf;

pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// Writes `ws/hello.txt` and three configs: `warden.toml`,
    /// `operator.toml` (the same with `[serve] elicitation = false`) and
    /// `disclosure.toml` (the same with progressive disclosure on).
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("hello.txt"), "hello from the workspace\n").unwrap();
        let config = |serve_extra: &str| {
            format!(
                r#"
workspace = "/workspace"

[[plugins]]
path = "{fs}"
grant-fs = ["{ws}:/workspace:rw"]

[[plugins]]
path = "{probe}"
grant-fs = ["{ws}:/workspace:rw"]

[levels.reader]
categories = ["file-system"]
file-scope = "project-directory"
network = "none"
terminal = "none"
git = "local-only"
code-execution = "containerized"

[agents.alice]
level = "standard"
approvals = "client"
rules = {{ allow = ["probe_run"] }}

[agents.bob]
level = "reader"

[serve]
approval-timeout-secs = 60
{serve_extra}

[[serve.tokens]]
agent = "alice"
token = "alice-token-0123456789"

[[serve.tokens]]
agent = "bob"
token = "bob-token-0123456789ab"

[signers]
publishers = [{{ name = "warden-tests", key = "{key}" }}]
"#,
                key = warden_test_artifacts::public_key_file().display(),
                fs = warden_test_artifacts::FS,
                probe = warden_test_artifacts::PROBE,
                ws = ws.display(),
            )
        };
        let base = config("");
        std::fs::write(dir.path().join("warden.toml"), &base).unwrap();
        std::fs::write(
            dir.path().join("operator.toml"),
            config("elicitation = false"),
        )
        .unwrap();
        let disclosure = format!("{base}\n[serve.disclosure]\nmode = \"on\"\n");
        std::fs::write(dir.path().join("disclosure.toml"), disclosure).unwrap();
        Fixture { dir }
    }

    /// A file or directory in the fixture (`warden.toml`, `ws`, `state`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}
