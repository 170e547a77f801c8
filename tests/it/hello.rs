//! The example plugin of docs/plugin-authoring.md behaves as the page says.

use serde_json::json;
use warden_api::{FsAccess, Grants};

use crate::common::{self, data, error};

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_example_works_as_documented() {
    let hello = common::load(&common::runtime(), warden_test_artifacts::HELLO).await;
    let m = hello.manifest();
    assert_eq!(m.capabilities.filesystem, FsAccess::Read);
    let tool = &m.tools[0];
    assert_eq!(tool.summary, "Count the lines of a text file.");
    assert_eq!(
        tool.examples[0].args,
        json!({"path": "src/main.rs", "containing": "TODO"})
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "fn a() {}\n// x\nfn b() {}\n",
    )
    .unwrap();
    let ro = common::grant(dir.path(), FsAccess::Read);
    let args = json!({"path": "src/lib.rs", "containing": "fn "});
    let e = common::call(
        &hello,
        "hello_count_lines",
        args.clone(),
        &ro,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e), &json!({"path": "src/lib.rs", "lines": 2}));

    let e = common::call(
        &hello,
        "hello_count_lines",
        args,
        &Grants::default(),
        common::limits(),
    )
    .await;
    assert_eq!(
        error(&e).1,
        "outside_grant",
        "with no grant there is nothing to resolve against"
    );
    let e = common::call(
        &hello,
        "hello_count_lines",
        json!({"path": "/workspace/src/lib.rs"}),
        &Grants::default(),
        common::limits(),
    )
    .await;
    assert_eq!(error(&e).1, "outside_grant");
}
