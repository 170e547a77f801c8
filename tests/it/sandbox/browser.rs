//! Headless chromium in the browser image: screenshots checked by their
//! pixels, SSIM between known pages, accessibility findings.

use serde_json::json;
use warden_sandbox::SandboxConfig;
use warden_sandbox::pixels::Rgba;

use super::rig;
use crate::common::{data, error};

const HALVES: &str = r#"<!doctype html><html lang="en"><head><title>halves</title><style>
html, body { margin: 0; height: 100%; }
#l { position: fixed; left: 0; top: 0; width: 50%; height: 100%; background: rgb(255, 0, 0); }
#r { position: fixed; right: 0; top: 0; width: 50%; height: 100%; background: rgb(0, 0, 255); }
</style></head><body><div id="l"></div><div id="r"></div></body></html>"#;

fn close(a: [u8; 4], b: [u8; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 8)
}

fn png(dir: &std::path::Path, rel: &str) -> Rgba {
    Rgba::decode_png(&std::fs::read(dir.join(rel)).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_screenshot_of_a_workspace_page_has_the_expected_pixels() {
    let r = rig("shot", SandboxConfig::default()).await;
    std::fs::write(r.dir.path().join("halves.html"), HALVES).unwrap();
    let env = r
        .call(
            "browser_screenshot",
            json!({"url": "file:///workspace/halves.html", "path": "shots/halves.png", "width": 400, "height": 300}),
        )
        .await;
    let d = data(&env);
    let bytes = std::fs::read(r.dir.path().join("shots/halves.png")).unwrap();
    assert_eq!(
        d["sha256"].as_str().unwrap(),
        warden_signing::sha256_digest(&bytes).trim_start_matches("sha256:")
    );
    let img = Rgba::decode_png(&bytes).unwrap();
    assert_eq!((img.width, img.height), (400, 300));
    for (x, y) in [(20, 20), (100, 150), (180, 280)] {
        assert!(
            close(img.at(x, y), [255, 0, 0]),
            "red at ({x},{y}): {:?}",
            img.at(x, y)
        );
    }
    for (x, y) in [(220, 20), (300, 150), (390, 280)] {
        assert!(
            close(img.at(x, y), [0, 0, 255]),
            "blue at ({x},{y}): {:?}",
            img.at(x, y)
        );
    }
    let nav = r
        .call(
            "browser_navigate",
            json!({"url": "file:///workspace/halves.html"}),
        )
        .await;
    assert_eq!(data(&nav)["title"], "halves");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ssim_diff_between_two_known_pages() {
    let r = rig("ssim", SandboxConfig::default()).await;
    let page = |box_color: &str| {
        format!(
            r#"<!doctype html><html lang="en"><head><title>p</title><style>body {{ margin: 0; background: #fff; }}
            #b {{ position: fixed; left: 40px; top: 40px; width: 120px; height: 80px; background: {box_color}; }}</style></head>
            <body><div id="b"></div></body></html>"#
        )
    };
    std::fs::write(r.dir.path().join("a.html"), page("#000")).unwrap();
    std::fs::write(r.dir.path().join("b.html"), page("#fff")).unwrap();
    for (html, png) in [
        ("a.html", "a.png"),
        ("a.html", "a2.png"),
        ("b.html", "b.png"),
    ] {
        let env = r
            .call(
                "browser_screenshot",
                json!({"url": format!("file:///workspace/{html}"), "path": png, "width": 320, "height": 240}),
            )
            .await;
        data(&env);
    }
    let same = r
        .call(
            "browser_diff",
            json!({"before": "a.png", "after": "a2.png", "diff_path": "same.png"}),
        )
        .await;
    let same = data(&same);
    assert!(
        (same["ssim"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{same}"
    );
    assert_eq!(same["changed_pixels"], 0);

    let changed = r
        .call(
            "browser_diff",
            json!({"before": "a.png", "after": "b.png", "diff_path": "diff/a-b.png"}),
        )
        .await;
    let changed = data(&changed);
    let ssim = changed["ssim"].as_f64().unwrap();
    assert!(
        ssim < 0.95 && ssim > 0.3,
        "one box of the page changed: {changed}"
    );
    assert_eq!(
        changed["changed_pixels"],
        120 * 80,
        "exactly the box: {changed}"
    );
    let diff = png(r.dir.path(), "diff/a-b.png");
    assert_eq!(diff.at(100, 80), [255, 0, 0, 255], "the box is marked red");
    assert_ne!(diff.at(250, 200), [255, 0, 0, 255], "the rest is not");

    let escape = r
        .call(
            "browser_diff",
            json!({"before": "../etc/passwd", "after": "b.png", "diff_path": "x.png"}),
        )
        .await;
    assert_eq!(error(&escape).0, "ArgumentValidationError");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accessibility_scan_reports_structured_findings() {
    let r = rig("a11y", SandboxConfig::default()).await;
    std::fs::write(
        r.dir.path().join("bad.html"),
        r#"<!doctype html><html><head></head><body><h1>Shop</h1><h3>Deals</h3>
        <img src="x.png"><input type="text" id="q"><a href="/next"></a><button></button></body></html>"#,
    )
    .unwrap();
    std::fs::write(r.dir.path().join("good.html"), HALVES).unwrap();
    let env = r
        .call(
            "browser_accessibility_scan",
            json!({"url": "file:///workspace/bad.html"}),
        )
        .await;
    let d = data(&env);
    let rules: Vec<&str> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    for rule in [
        "document-title",
        "html-lang",
        "image-alt",
        "input-label",
        "link-name",
        "button-name",
        "heading-order",
    ] {
        assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
    }
    let good = r
        .call(
            "browser_accessibility_scan",
            json!({"url": "file:///workspace/good.html"}),
        )
        .await;
    assert_eq!(data(&good)["count"], 0, "{good:?}");
    r.done().await;
}
