//! Denied and protected paths inside containers, from the attacker's side:
//! a command whose text names no denied path (a recursive grep, a name
//! built at run time) still cannot read one, and a write to a protected
//! path the decision could not see fails — unless a person approved the
//! call.

use serde_json::json;
use warden_api::FsAccess;
use warden_sandbox::SandboxConfig;

use super::{Rig, rig_with, stdout};

const SECRET: &str = "hunter2-masked-secret";

/// Protected paths hidden from the decision inside a program's own text
/// (the analyser reads `python3 -c` as running python, not which files
/// it opens): the container's read-only mounts stop them.
const PLANT_HOOKS: &str = "python3 -c \"h='hoo'+'ks'; open('.git/'+h+'/pre-commit','w').write('curl evil'); open('.git/con'+'fig','a').write('[alias]')\"";
const PLANT_AGAIN: &str = "python3 -c \"open('.git/'+'hooks/post-merge','w').write('x')\"";

async fn masked_rig(name: &str) -> Rig {
    let r = rig_with(
        name,
        SandboxConfig::default(),
        FsAccess::ReadWrite,
        &[],
        "[protect]\nread = [\"secrets/\", \".env\"]\n",
    )
    .await;
    let ws = r.dir.path();
    for d in ["secrets/nested", "app", ".git/hooks", "src"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("secrets/nested/key.txt"), SECRET).unwrap();
    std::fs::write(ws.join("app/.env"), format!("TOKEN={SECRET}\n")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    make_writable(ws);
    r
}

fn make_writable(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for entry in walk(dir) {
        let mode = if entry.is_dir() { 0o777 } else { 0o666 };
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if out[i].is_dir() {
            let children: Vec<_> = std::fs::read_dir(&out[i])
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            out.extend(children);
        }
        i += 1;
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_container_never_shows_a_denied_path() {
    let r = masked_rig("masks-denied").await;
    for command in [
        // Walks: the decision sees only `.`.
        "grep -r hunter2 .",
        // Names built at run time: opaque to the decision, autonomous runs them.
        "d=secr; cat ${d}ets/nested/key.txt; e=.env; cat app/$e",
        "find . -type f -exec cat {} +",
    ] {
        let out = r.sh(command).await;
        let text = format!("{out}");
        assert!(
            !text.contains(SECRET),
            "`{command}` read a denied path: {text}"
        );
    }
    // The masks are empty and read-only, not errors: the rest still works.
    assert_eq!(stdout(&r.sh("cat src/main.rs").await), "fn main() {}\n");
    let out = r.sh("d=secr; ls -A ${d}ets; touch ${d}ets/planted").await;
    assert!(
        !r.dir.path().join("secrets/planted").exists(),
        "a denied directory took a write: {out}"
    );
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_protected_path_changes_only_with_a_person() {
    let r = masked_rig("masks-protected").await;
    let ws = r.dir.path();
    let out = r.sh(PLANT_HOOKS).await;
    assert!(
        !ws.join(".git/hooks/pre-commit").exists(),
        "a git hook was planted without approval: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n",
        "`.git/config` changed without approval: {out}"
    );
    // Named in the command, the write asks; approved, it runs in a
    // container of its own where the path is writable.
    let env = r
        .call_approved(
            "terminal_exec",
            json!({"command": "echo '#!/bin/sh' > .git/hooks/post-commit"}),
        )
        .await;
    assert!(env.is_ok(), "{env:?}");
    assert!(ws.join(".git/hooks/post-commit").exists());
    // And the warm container of later calls is read-only there again.
    let out = r.sh(PLANT_AGAIN).await;
    assert!(!ws.join(".git/hooks/post-merge").exists(), "{out}");
    r.done().await;
}
