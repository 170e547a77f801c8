//! Instances made ahead on a single-threaded host (`warden serve
//! --stdio`): each serves one call, from the component's initial image,
//! with that call's grants and limits and nothing of the store it was
//! made in, whatever the call before it had.

use std::time::Duration;

use serde_json::json;
use warden_api::{CallLimits, FsAccess, Grants};
use warden_runtime::Plugin;

use crate::common::{self, data, error};

/// Waits (letting the runtime's one thread run the retiring task) until
/// `plugin` has a spare instance; fails after 10 s.
async fn spare(plugin: &Plugin) {
    for _ in 0..1000 {
        if plugin.spare_ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no spare instance was made after a call on a single-threaded runtime");
}

async fn noop(plugin: &Plugin, limits: CallLimits) -> warden_api::Envelope {
    run(
        plugin,
        json!({"action": "noop"}),
        &Grants::default(),
        limits,
    )
    .await
}

async fn run(
    plugin: &Plugin,
    args: serde_json::Value,
    grants: &Grants,
    limits: CallLimits,
) -> warden_api::Envelope {
    common::call(plugin, "probe_run", args, grants, limits).await
}

#[tokio::test]
async fn each_spare_serves_one_call_from_the_initial_image() {
    let probe = common::probe().await;
    for i in 0..6 {
        let args = json!({"action": "count", "remember": format!("call-{i}")});
        let e = run(&probe, args, &Grants::default(), common::limits()).await;
        assert_eq!(
            data(&e)["detail"],
            "calls=1 before=\"\"",
            "state leaked into call {i}"
        );
        assert!(
            !probe.spare_ready(),
            "the spare was not used, or served two calls"
        );
        spare(&probe).await;
    }
}

#[tokio::test]
async fn a_call_on_a_spare_sees_its_own_grants_and_nothing_else() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    std::fs::write(a.path().join("a.txt"), "a").unwrap();
    std::fs::write(b.path().join("b.txt"), "b").unwrap();
    let probe = common::probe().await;
    let list = || json!({"action": "list", "path": "/workspace"});

    let e = run(
        &probe,
        list(),
        &common::grant(a.path(), FsAccess::ReadWrite),
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["detail"], "a.txt");
    spare(&probe).await;

    let e = run(
        &probe,
        list(),
        &common::grant(b.path(), FsAccess::Read),
        common::limits(),
    )
    .await;
    assert_eq!(
        data(&e)["detail"],
        "b.txt",
        "the call before's directory leaked"
    );
    spare(&probe).await;

    // Read-only means read-only on a spare too.
    let write = json!({"action": "write", "path": "/workspace/new.txt", "content": "x"});
    let e = run(
        &probe,
        write,
        &common::grant(b.path(), FsAccess::Read),
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["ok"], false, "{e:?}");
    assert!(!b.path().join("new.txt").exists());
    spare(&probe).await;

    let e = run(&probe, list(), &Grants::default(), common::limits()).await;
    assert_eq!(data(&e)["ok"], false, "no grant, yet a directory: {e:?}");
}

#[tokio::test]
async fn a_call_on_a_spare_keeps_its_own_deadline_and_memory_limit() {
    let probe = common::probe().await;
    let tiny = CallLimits {
        memory_bytes: 64 << 10,
        ..common::limits()
    };
    // What a call whose limit is below the component's initial memory
    // gets from a fresh instance ...
    let fresh = noop(&probe, tiny).await;
    assert_eq!(error(&fresh).1, "memory_limit", "{fresh:?}");
    let e = noop(&probe, common::limits()).await;
    assert_eq!(data(&e)["ok"], true);
    spare(&probe).await;
    // ... it gets from a spare made under the largest limit too.
    let e = noop(&probe, tiny).await;
    assert_eq!(error(&e).1, "memory_limit", "{e:?}");
    spare(&probe).await;

    let short = CallLimits {
        deadline: Duration::from_millis(300),
        ..common::limits()
    };
    let e = run(
        &probe,
        json!({"action": "spin", "ms": 60_000}),
        &Grants::default(),
        short,
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "deadline_exceeded"),
        "{msg}"
    );
    spare(&probe).await;

    let small = CallLimits {
        memory_bytes: 32 << 20,
        ..common::limits()
    };
    let e = run(
        &probe,
        json!({"action": "alloc", "bytes": 200_000_000u64}),
        &Grants::default(),
        small,
    )
    .await;
    assert_eq!(error(&e).1, "memory_limit", "{e:?}");
    assert!(error(&e).2.contains("32 MiB"), "{e:?}");
    spare(&probe).await;
    let e = run(
        &probe,
        json!({"action": "alloc", "bytes": 4_000_000}),
        &Grants::default(),
        small,
    )
    .await;
    assert_eq!(data(&e)["detail"], "4000000");
}

/// A multi-threaded host releases a call's store on the spot and makes
/// no spares.
#[tokio::test(flavor = "multi_thread")]
async fn a_multi_threaded_host_makes_no_spares() {
    let probe = common::probe().await;
    let e = noop(&probe, common::limits()).await;
    assert_eq!(data(&e)["ok"], true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!probe.spare_ready());
}

/// Spares never hold the slots calls run in: with one slot, a spare made
/// for one plugin must not leave another plugin's call waiting for ever,
/// nor a second call of the same plugin while the first holds its spare.
#[tokio::test]
async fn spares_never_keep_a_call_from_its_slot() {
    let mut config = warden_runtime::RuntimeConfig::new(Some(common::cache_dir()))
        .with_cache_key(common::cache_key());
    config.max_concurrent_calls = 1;
    let runtime = warden_runtime::Runtime::new(config).unwrap();
    let probe = common::load(&runtime, warden_test_artifacts::PROBE).await;
    let fs = common::load(&runtime, warden_test_artifacts::FS).await;
    let e = noop(&probe, common::limits()).await;
    assert_eq!(data(&e)["ok"], true);
    spare(&probe).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "x").unwrap();
    let grants = common::grant(dir.path(), FsAccess::Read);
    let read = common::call(
        &fs,
        "fs_read",
        json!({"path": "/workspace/f.txt"}),
        &grants,
        common::limits(),
    );
    let e = tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("a call waited for a slot another plugin's spare held");
    assert_eq!(data(&e)["content"], "x");
    spare(&fs).await;
    // Two calls of one plugin at once: one takes the spare, the other
    // waits for the one slot and runs after it.
    let (a, b) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(
            noop(&probe, common::limits()),
            noop(&probe, common::limits())
        )
    })
    .await
    .expect("concurrent calls waited for ever");
    assert_eq!(data(&a)["ok"], true);
    assert_eq!(data(&b)["ok"], true);
}
