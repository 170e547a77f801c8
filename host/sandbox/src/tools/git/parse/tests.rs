use serde_json::json;

use super::*;

const OID: &str = "6f1c2a9e0d4b8c7a5e3f2d1c0b9a8e7d6c5b4a39";

#[test]
fn status_reads_every_entry_kind_and_the_branch() {
    let out = format!(
        "# branch.oid {OID}\0# branch.head main\0# branch.upstream origin/main\0# branch.ab +2 -1\0\
         1 .M N... 100644 100644 100644 {OID} {OID} src/has space.rs\0\
         2 R. N... 100644 100644 100644 {OID} {OID} R100 new.rs\0old.rs\0\
         u UU N... 100644 100644 100644 100644 {OID} {OID} {OID} conflict.txt\0\
         ? notes.md\0! target/\0"
    );
    let v = status(out.as_bytes()).unwrap();
    assert_eq!(
        v["branch"],
        json!({"oid": OID, "head": "main", "upstream": "origin/main", "ahead": 2, "behind": 1})
    );
    let e = &v["entries"];
    assert_eq!(
        e[0],
        json!({"kind": "changed", "index": ".", "worktree": "M", "path": "src/has space.rs"})
    );
    assert_eq!(
        e[1],
        json!({"kind": "renamed", "index": "R", "worktree": ".", "path": "new.rs", "orig_path": "old.rs", "score": "R100"})
    );
    assert_eq!(e[2]["kind"], "unmerged");
    assert_eq!(e[2]["path"], "conflict.txt");
    assert_eq!(e[3], json!({"kind": "untracked", "path": "notes.md"}));
    assert_eq!(e[4], json!({"kind": "ignored", "path": "target/"}));
    assert_eq!(v["clean"], false);
}

#[test]
fn an_initial_detached_or_clean_status() {
    let v = status(b"# branch.oid (initial)\0# branch.head (detached)\0").unwrap();
    assert_eq!(v["branch"], json!({"oid": null, "head": null}));
    assert_eq!(v["clean"], true);
}

#[test]
fn malformed_status_is_refused_naming_the_record() {
    for bad in [
        &b"1 .M N... 100644\0"[..],
        b"2 R. N... 100644 100644 100644 a b R100 new.rs\0",
        b"z what\0",
        b"# branch.ab 2 1\0",
    ] {
        let e = status(bad).unwrap_err();
        assert!(e.0.contains("git's output"), "{e:?}");
    }
}

#[test]
fn log_records() {
    let out = format!(
        "{OID}\x1f{OID} {OID}\x1fAda\x1fada@example.com\x1f2026-11-27T08:00:00+00:00\x1fMerge x\x1e\n\
         {OID}\x1f\x1fAda\x1fada@example.com\x1f2026-11-26T08:00:00+00:00\x1fFirst\x1e\n"
    );
    let v = log(out.as_bytes()).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["parents"], json!([OID, OID]));
    assert_eq!(v[1]["parents"], json!([]));
    assert_eq!(v[1]["subject"], "First");
    assert_eq!(
        v[1]["author"],
        json!({"name": "Ada", "email": "ada@example.com"})
    );
    assert!(log(b"not a record\x1e").is_err());
    assert_eq!(log(b"").unwrap(), Vec::<Value>::new());
}

#[test]
fn show_splits_record_and_patch() {
    let out =
        format!("{OID}\x1f\x1fA\x1fa@x\x1f2026-01-01T00:00:00Z\x1fS\x1e\ndiff --git a/x b/x\n");
    let v = show(out.as_bytes()).unwrap();
    assert_eq!(v["commit"]["hash"], OID);
    assert_eq!(v["patch"], "diff --git a/x b/x\n");
}

#[test]
fn branch_lines() {
    let out = format!("main\0{OID}\0*\nfeat/x\0{OID}\0 \n");
    let v = branches(out.as_bytes()).unwrap();
    assert_eq!(
        v[0],
        json!({"name": "main", "commit": OID, "current": true})
    );
    assert_eq!(v[1]["current"], false);
    assert!(branches(b"main only\n").is_err());
}
