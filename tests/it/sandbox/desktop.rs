//! The virtual desktop: launch the GUI program, type into it, and check
//! the result from the program's own state and from screenshots.

use std::time::Duration;

use serde_json::json;
use warden_api::CallContext;
use warden_sandbox::images::ImageKind;
use warden_sandbox::pixels::Rgba;
use warden_sandbox::{RunRequest, Sandbox, SandboxConfig, Strategy};

use super::rig;
use crate::common::{data, error};

fn dark_pixels(img: &Rgba) -> usize {
    img.pixels
        .chunks_exact(4)
        .filter(|p| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]) < 200)
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_desktop_session_types_into_the_gui_program() {
    let r = rig("desktop", SandboxConfig::default()).await;
    let env = r
        .call("desktop_launch", json!({"app": "warden-notepad"}))
        .await;
    assert!(!data(&env)["window"].as_str().unwrap().is_empty());
    data(
        &r.call("desktop_screenshot", json!({"path": "before.png"}))
            .await,
    );
    data(
        &r.call("desktop_type", json!({"text": "hello warden"}))
            .await,
    );
    data(&r.call("desktop_key", json!({"keys": "Return"})).await);
    data(&r.call("desktop_type", json!({"text": "line two"})).await);
    let shot = r
        .call("desktop_screenshot", json!({"path": "after.png"}))
        .await;
    assert_eq!(data(&shot)["sha256"].as_str().unwrap().len(), 64);

    // The program's own state, read in the same warm container.
    let context = CallContext {
        principal: None,
        agent: r.agent.clone(),
        session: "s1".into(),
        task: None,
        request_id: "check".into(),
    };
    let grants = warden_api::Grants::default();
    let state = r
        .sandbox
        .run(RunRequest {
            kind: ImageKind::Desktop,
            context: &context,
            grants: &grants,
            argv: vec!["cat".into(), "/tmp/warden-notepad.state".into()],
            stdin: None,
            working_dir: None,
            timeout: Duration::from_secs(10),
            max_output: None,
            paths: None,
            own_container: false,
            scratch_mb: None,
            read_only: false,
        })
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&state.output.stdout),
        "hello warden\nline two"
    );

    // And the screen: text appeared in the program's window.
    let before =
        Rgba::decode_png(&std::fs::read(r.dir.path().join("before.png")).unwrap()).unwrap();
    let after = Rgba::decode_png(&std::fs::read(r.dir.path().join("after.png")).unwrap()).unwrap();
    assert_eq!((after.width, after.height), (1024, 768));
    assert!(
        dark_pixels(&after) > dark_pixels(&before) + 200,
        "typed text is visible: {} dark pixels before, {} after",
        dark_pixels(&before),
        dark_pixels(&after)
    );
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_container_is_app_not_running_never_an_empty_capture() {
    let config = SandboxConfig {
        strategy: Strategy::PerCall,
        ..SandboxConfig::default()
    };
    let r = rig("desktop-reset", config).await;
    let launched = r
        .call("desktop_launch", json!({"app": "warden-notepad"}))
        .await;
    data(&launched);
    for (tool, args) in [
        ("desktop_type", json!({"text": "lost"})),
        ("desktop_screenshot", json!({"path": "never.png"})),
    ] {
        let env = r.call(tool, args).await;
        let (_, code, message) = error(&env);
        assert_eq!(code, "app_not_running", "{tool}: {message}");
        assert!(message.contains("app not running"));
    }
    assert!(!r.dir.path().join("never.png").exists(), "no empty capture");
    r.done().await;
}
