//! Image builds: a second run of an unchanged recipe does nothing, and a
//! build that fails leaves no tagged image and no build tree behind.

use warden_sandbox::Docker;
use warden_sandbox::images::{BuildOptions, ImageKind, Progress, build_images};

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_recipe_is_not_rebuilt() {
    let docker = Docker::connect().await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let options = BuildOptions {
        prefix: "warden-sandbox".into(),
        work_dir: work.path().to_path_buf(),
        apt_dir: "/etc/apt".into(),
        kinds: vec![ImageKind::Base],
    };
    let mut seen = Vec::new();
    let images = build_images(&docker, &options, &mut |p| seen.push(p.clone()))
        .await
        .unwrap_or_else(|e| panic!("build the images first (`warden sandbox build-images`): {e}"));
    assert_eq!(images, [ImageKind::Base.recipe().tag("warden-sandbox")]);
    assert!(
        matches!(seen.as_slice(), [Progress::Cached { .. }]),
        "the existing image is reused without a step: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_build_leaves_no_tagged_image() {
    let docker = Docker::connect().await.unwrap();
    let work = tempfile::tempdir().unwrap();
    // A mirror that cannot be read: debootstrap fails after the build began.
    let apt = tempfile::tempdir().unwrap();
    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(
        apt.path().join("sources.list"),
        format!(
            "deb file://{}/debian bookworm main\n",
            mirror.path().display()
        ),
    )
    .unwrap();
    let prefix = format!("warden-failtest-{}", std::process::id());
    let options = BuildOptions {
        prefix: prefix.clone(),
        work_dir: work.path().to_path_buf(),
        apt_dir: apt.path().to_path_buf(),
        kinds: vec![ImageKind::Base],
    };
    let mut steps = Vec::new();
    let result = build_images(&docker, &options, &mut |p| {
        if let Progress::Step { what, .. } = p {
            steps.push(what.clone());
        }
    })
    .await;
    let err = result.expect_err("the build cannot succeed").to_string();
    assert!(err.contains("debootstrap"), "{err}");
    assert!(
        steps.iter().any(|s| s.starts_with("debootstrap")),
        "{steps:?}"
    );
    let tag = ImageKind::Base.recipe().tag(&prefix);
    assert!(
        !docker.image_exists(&tag).await.unwrap(),
        "{tag} must not exist"
    );
    let left: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("build-"))
        .collect();
    assert!(left.is_empty(), "the build tree was removed");
}
