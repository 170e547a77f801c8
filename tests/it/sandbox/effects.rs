//! What a call may change where it runs, whatever its text looked like.
//!
//! The attacker's side: a line the analyser reads as read-only but that
//! bash makes write (`test -v 'a[$(touch x)]'` evaluates the subscript,
//! and with it the command substitution). A call allowed only because it
//! reads runs in the agent's reader, where every granted directory is
//! read-only and there is no network, so what the reading missed fails.

use std::sync::atomic::Ordering;

use warden_api::{Effects, Envelope, FsAccess, Grants};

use super::security::{connect_cmd, server};
use super::{rig, rig_in_mode, stdout, ws_grant};

const TRY_TO_WRITE: &str = "\
touch /workspace/new.txt; echo rc=$?
echo more >> /workspace/kept.txt; echo rc=$?
mkdir /workspace/dir; echo rc=$?
mv /workspace/kept.txt /workspace/moved.txt; echo rc=$?
rm -f /workspace/kept.txt; echo rc=$?
echo scratch > /tmp/scratch && cat /tmp/scratch";

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_call_runs_where_nothing_granted_can_be_written_or_reached() {
    let r = rig("effects-reader", warden_sandbox::SandboxConfig::default()).await;
    let gateway = r.sandbox.0.docker().bridge_gateway().await.unwrap();
    let ours = server(gateway);
    // Granted read-write and a network address: the writer could do both.
    let grants = Grants {
        fs: vec![ws_grant(r.dir.path(), FsAccess::ReadWrite)],
        net: vec![ours.addr.to_string().parse().unwrap()],
        ..Grants::default()
    };
    let kept = r.dir.path().join("kept.txt");
    std::fs::write(&kept, "as it was\n").unwrap();

    let reader = r.direct(&grants, Effects::ReadOnly, TRY_TO_WRITE).await;
    let text = format!("{}{}", stdout(&reader), reader["stderr"].as_str().unwrap());
    assert!(!text.contains("rc=0"), "no write landed: {text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(
        text.contains("scratch"),
        "a private /tmp is writable: {text}"
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "as it was\n");
    let mut names: Vec<String> = std::fs::read_dir(r.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["kept.txt"], "nothing was created, moved or removed");
    let net = stdout(
        &r.direct(&grants, Effects::ReadOnly, &connect_cmd(&[ours.addr]))
            .await,
    );
    assert!(net.contains("ifaces ['lo']"), "no network: {net}");
    assert_eq!(ours.accepted.load(Ordering::SeqCst), 0, "{net}");

    // The same call allowed as one that writes does write: the reader is
    // what held the line above, not the command.
    let writer = r.direct(&grants, Effects::Unattended, TRY_TO_WRITE).await;
    assert!(stdout(&writer).contains("rc=0"), "{writer}");
    assert!(r.dir.path().join("new.txt").exists());
    assert_ne!(reader["container"], writer["container"]);
    let net = stdout(
        &r.direct(&grants, Effects::Unattended, &connect_cmd(&[ours.addr]))
            .await,
    );
    assert!(net.contains("connected hello from warden"), "{net}");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reader_sees_every_write_of_the_writer_at_once() {
    let r = rig("effects-coherent", warden_sandbox::SandboxConfig::default()).await;
    let grants = Grants {
        fs: vec![ws_grant(r.dir.path(), FsAccess::ReadWrite)],
        ..Grants::default()
    };
    for round in 0..3 {
        let written = r
            .direct(
                &grants,
                Effects::Unattended,
                &format!("echo round-{round} > /workspace/state.txt"),
            )
            .await;
        assert_eq!(written["exit_code"], 0, "{written}");
        let read = r
            .direct(&grants, Effects::ReadOnly, "cat /workspace/state.txt")
            .await;
        assert_eq!(stdout(&read), format!("round-{round}\n"), "{read}");
    }
    r.done().await;
}

/// Lines that only read by their text and write when bash runs them,
/// each with the file it would create.
const WRITES_UNDER_A_READ: &[(&str, &str)] = &[
    ("test -v 'a[$(touch /workspace/x1)]'", "x1"),
    ("[ -v 'a[$(id > /workspace/x2)]' ]", "x2"),
    ("[[ -v a[$(touch /workspace/x3)] ]]", "x3"),
    ("test -v 'a[`touch /workspace/x4`]'", "x4"),
    (
        "[ 'a[$(touch /workspace/x5)]' -eq 1 ] 2>/dev/null; [[ 'a[$(touch /workspace/x5)]' -eq 1 ]]",
        "x5",
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn a_line_that_reads_by_its_text_lands_no_write_in_default_or_plan_mode() {
    for mode in ["default", "plan"] {
        let r = rig_in_mode(&format!("effects-{mode}"), mode, &[], "").await;
        for (line, file) in WRITES_UNDER_A_READ {
            let envelope = r.terminal(line).await;
            assert!(
                !r.dir.path().join(file).exists(),
                "{mode} mode: `{line}` wrote /workspace/{file} without a person ({envelope:?})"
            );
        }
        r.done().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_holds_against_a_command_hidden_in_a_subscript() {
    let rules = "rules = { deny = [\"terminal_exec(rm *)\"] }\n";
    let r = rig_in_mode("effects-deny", "autonomous", &[], rules).await;
    let src = r.dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("main.rs"), "fn main() {}\n").unwrap();
    // Made writable for the sandbox user, so only the reader stops it.
    for p in [&src, &src.join("main.rs")] {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let denied = r.terminal("rm -rf /workspace/src").await;
    assert!(matches!(denied, Envelope::Error { .. }), "{denied:?}");
    for line in [
        "test -v 'a[$(rm -rf /workspace/src)]'",
        "[ -v 'a[$(rm -rf /workspace/src)]' ]",
    ] {
        let envelope = r.terminal(line).await;
        assert!(
            src.join("main.rs").exists(),
            "`{line}` deleted what a deny rule on `rm` protects ({envelope:?})"
        );
    }
    r.done().await;
}
