//! The host's state is the host's, through the real `warden` binary: no
//! directory grant reaches the state directory, whatever its source; the
//! compile cache is authenticated; the state files are owner-only; a
//! `warden.toml` found by chance cannot widen trust; `warden call` is in
//! the signed audit chain.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `warden ARGS` in `cwd`, with no state directory from the environment
/// unless `envs` names one, trusting the test key.
fn warden_in(cwd: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .current_dir(cwd)
        .env_remove("WARDEN_STATE_DIR")
        .env_remove("WARDEN_CONFIG")
        .env_remove("XDG_STATE_HOME")
        .env("HOME", cwd.join("home"))
        .env("WARDEN_SIGNERS", warden_test_artifacts::signers_file())
        .env("WARDEN_LOG", "warn")
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdin(Stdio::null())
        .output()
        .expect("warden runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `fs_read` of `hello.txt` through `--grant-fs GRANT`.
fn read_args(grant: &str) -> Vec<String> {
    [
        "call",
        "fs_read",
        "--plugin",
        warden_test_artifacts::FS,
        "--args",
        r#"{"path":"hello.txt"}"#,
        "--grant-fs",
        grant,
    ]
    .map(str::to_owned)
    .to_vec()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn canonical(p: &Path) -> String {
    p.canonicalize().unwrap().display().to_string()
}

/// Asserts a refusal at load (exit 2) that names both paths.
fn assert_refused(out: &Output, grant: &Path, state: &Path, source: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{source}: {err}");
    assert!(
        err.contains(source),
        "names where the grant came from: {err}"
    );
    assert!(err.contains(&canonical(grant)), "names the grant: {err}");
    assert!(
        err.contains(&canonical(state)),
        "names the state directory: {err}"
    );
    assert!(err.contains("state directory"), "{err}");
}

#[test]
fn a_grant_over_or_inside_the_state_directory_is_refused_for_every_source() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let state = root.join("state");
    std::fs::create_dir_all(state.join("cache")).unwrap();
    std::fs::write(root.join("hello.txt"), "hi\n").unwrap();
    let inside = state.join("cache");

    for grant in [&root, &inside] {
        // --grant-fs on `warden call`.
        let out = warden_in(
            &root,
            &args(&read_args(&format!("{}:/workspace:rw", grant.display()))),
            &[("WARDEN_STATE_DIR", &state)],
        );
        assert_refused(&out, grant, &state, "--grant-fs");

        // [[plugins]] grant-fs, [sandbox] grant-fs: through `warden call`.
        for (table, source) in [
            (
                format!(
                    "[[plugins]]\npath = \"{}\"\ngrant-fs = [\"{}:/workspace:ro\"]\n",
                    warden_test_artifacts::FS,
                    grant.display()
                ),
                "plugins[0]",
            ),
            (
                format!(
                    "[[plugins]]\npath = \"{}\"\n\n[sandbox]\ngrant-fs = [\"{}:/workspace:ro\"]\n",
                    warden_test_artifacts::FS,
                    grant.display()
                ),
                "sandbox",
            ),
        ] {
            let config = root.join("call.toml");
            std::fs::write(
                &config,
                format!("state-dir = \"{}\"\n\n{table}", state.display()),
            )
            .unwrap();
            let out = warden_in(
                &root,
                &["call", "fs_read", "--config", config.to_str().unwrap()],
                &[],
            );
            assert_refused(&out, grant, &state, source);
        }

        // [plugin-grants] (installed and watched plugins): through `warden serve`.
        let config = root.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "[plugin-grants.\"*\"]\ngrant-fs = [\"{}:/workspace:rw\"]\n",
                grant.display()
            ),
        )
        .unwrap();
        let out = warden_in(
            &root,
            &[
                "serve",
                "--stdio",
                "--config",
                config.to_str().unwrap(),
                "--state-dir",
                state.to_str().unwrap(),
            ],
            &[],
        );
        assert_refused(&out, grant, &state, "plugin-grants.*");
    }

    // A state directory that does not exist yet is protected too.
    let later = root.join("not-yet").join("state");
    let out = warden_in(
        &root,
        &args(&read_args(&root.display().to_string())),
        &[("WARDEN_STATE_DIR", &later)],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&later.display().to_string()),
        "{}",
        stderr(&out)
    );
}

#[test]
fn warden_call_keeps_its_state_out_of_the_working_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let cwd = cwd.path().canonicalize().unwrap();
    std::fs::write(cwd.join("hello.txt"), "hi there\n").unwrap();
    let grant = format!("{}:/workspace:ro", cwd.display());

    let home = tempfile::tempdir().unwrap();
    let home = home.path();

    // The README's call: granting the working directory works...
    let out = warden_in(&cwd, &args(&read_args(&grant)), &[("HOME", home)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["data"]["content"], "hi there\n");
    // ...because the state went to the per-user directory, not ./.warden.
    assert!(!cwd.join(".warden").exists());
    let user_state = home.join(".local/state/warden");
    assert!(user_state.join("warden.db").is_file());
    assert!(user_state.join("host.key").is_file());

    // XDG_STATE_HOME wins over HOME.
    let xdg = home.join("xdg");
    let out = warden_in(
        &cwd,
        &args(&read_args(&grant)),
        &[("HOME", home), ("XDG_STATE_HOME", &xdg)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(xdg.join("warden/warden.db").is_file());

    // Naming ./.warden as the state while granting the working directory
    // is exactly what is refused.
    let out = warden_in(
        &cwd,
        &args(&read_args(&grant)),
        &[("HOME", home), ("WARDEN_STATE_DIR", Path::new(".warden"))],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("contains the state directory"),
        "{}",
        stderr(&out)
    );
}

fn cache_entries(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect()
}

#[test]
fn a_flipped_byte_in_a_cached_artifact_is_recompiled_not_loaded() {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.txt"), "hi\n").unwrap();
    let state = root.path().join("state");
    let call = read_args(&format!("{}:/workspace:ro", ws.display()));
    let env = [("WARDEN_STATE_DIR", state.as_path())];

    let out = warden_in(root.path(), &args(&call), &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let entries = cache_entries(&state);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let good = std::fs::read(entry).unwrap();

    // Flip one byte of the compiled code (past the tag).
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x01;
    std::fs::write(entry, &bad).unwrap();

    let out = warden_in(root.path(), &args(&call), &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.contains("failed authentication") && log.contains(&entry.display().to_string()),
        "the event is logged with the file: {log}"
    );
    // Recompiled and written again, with a valid tag: the tampered bytes
    // are gone and the next call loads quietly from the cache.
    assert_eq!(std::fs::read(entry).unwrap(), good);
    let out = warden_in(root.path(), &args(&call), &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("failed authentication"),
        "{}",
        stderr(&out)
    );

    // An entry from another host (another key) is not loaded either.
    let other = root.path().join("other-state");
    std::fs::create_dir_all(other.join("cache")).unwrap();
    std::fs::copy(entry, other.join("cache").join(entry.file_name().unwrap())).unwrap();
    let out = warden_in(root.path(), &args(&call), &[("WARDEN_STATE_DIR", &other)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failed authentication"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn state_files_are_owner_only_even_when_they_existed_wider() {
    let root = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(root.path(), "");
    let ws = root.path().join("ws");
    let call = [
        "call",
        "fs_read",
        "--config",
        config.to_str().unwrap(),
        "--agent",
        "alice",
        "--args",
        r#"{"path":"hello.txt"}"#,
    ];
    // A first run makes everything; then an older warden, a restore or a
    // umask of 000 leaves it all wide open.
    let out = warden_in(root.path(), &call, &[("WARDEN_STATE_DIR", &state)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let db = state.join("warden.db");
    let wal = state.join("warden.db-wal");
    let shm = state.join("warden.db-shm");
    std::fs::write(&wal, b"").unwrap();
    std::fs::write(&shm, b"").unwrap();
    let cached = cache_entries(&state);
    assert!(!cached.is_empty());
    for file in [&db, &wal, &shm, &state.join("host.key")]
        .into_iter()
        .chain(&cached)
    {
        set_mode(file, 0o666);
    }
    for dir in [&state, &state.join("cache")] {
        set_mode(dir, 0o777);
    }
    assert!(ws.is_dir());

    let server = support::Server::start(&config, &state);
    let socket = state.join("admin.sock");
    let started = Instant::now();
    while !socket.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the admin socket appears"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for (path, want) in [
        (state.clone(), 0o700),
        (state.join("cache"), 0o700),
        (state.join("host.key"), 0o600),
        (db.clone(), 0o600),
        (wal.clone(), 0o600),
        (shm.clone(), 0o600),
        (socket.clone(), 0o600),
    ]
    .into_iter()
    .chain(cached.iter().map(|c| (c.clone(), 0o600)))
    {
        assert_eq!(mode(&path), want, "{}", path.display());
    }
    // Binding left no staging directory behind.
    let leftovers: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".admin"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    server.kill();

    // A state directory made from scratch is owner-only from the start.
    let fresh = root.path().join("fresh");
    let out = warden_in(root.path(), &call, &[("WARDEN_STATE_DIR", &fresh)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (path, want) in [
        (fresh.clone(), 0o700),
        (fresh.join("cache"), 0o700),
        (fresh.join("host.key"), 0o600),
        (fresh.join("warden.db"), 0o600),
    ] {
        assert_eq!(mode(&path), want, "{}", path.display());
    }
}

/// `warden serve --stdio` in `cwd` with stdin closed: it loads its
/// configuration, serves, and the session ends at once.
fn serve_in(cwd: &Path, extra: &[&str]) -> Output {
    let mut argv = vec!["serve", "--stdio"];
    argv.extend_from_slice(extra);
    warden_in(cwd, &argv, &[("WARDEN_STATE_DIR", &cwd.join("state"))])
}

#[test]
fn a_found_warden_toml_may_not_widen_trust() {
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let fs_plugin = format!("[[plugins]]\npath = \"{}\"\n", warden_test_artifacts::FS);
    let cases = [
        (
            format!(
                "{fs_plugin}\n[signers]\npublishers = [{{ name = \"someone\", key = \"{}\" }}]\n",
                warden_test_artifacts::public_key_file().display()
            ),
            "trusts publisher `someone`",
        ),
        (
            format!("{fs_plugin}\n[signers]\ninsecure-allow-unsigned = true\n"),
            "insecure-allow-unsigned",
        ),
        (
            format!(
                "[[plugins]]\npath = \"{}\"\ngrant-fs = [\"{}:/workspace:rw\"]\n",
                warden_test_artifacts::FS,
                outside.display()
            ),
            "outside",
        ),
        (
            format!(
                "[plugin-grants.\"*\"]\ngrant-fs = [\"{}\"]\n",
                outside.display()
            ),
            "outside",
        ),
    ];
    for (text, what) in cases {
        let cwd = tempfile::tempdir().unwrap();
        let cwd = cwd.path().canonicalize().unwrap();
        std::fs::write(cwd.join("warden.toml"), &text).unwrap();

        let out = serve_in(&cwd, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
        assert!(err.contains(what), "says what it found ({what}): {err}");
        assert!(err.contains("--config"), "says how to use it: {err}");

        // Named explicitly, the same file is used: the server gets as far
        // as serving (the closed stdin then ends the session).
        let out = serve_in(&cwd, &["--config", "warden.toml"]);
        assert_served(&out, &text);
        let out = Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["serve", "--stdio"])
            .current_dir(&cwd)
            .env("WARDEN_CONFIG", cwd.join("warden.toml"))
            .env("WARDEN_STATE_DIR", cwd.join("state"))
            .env("WARDEN_SIGNERS", warden_test_artifacts::signers_file())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_served(&out, &text);
    }

    // A found file that grants only inside its own directory and trusts
    // nobody new is used as before.
    let cwd = tempfile::tempdir().unwrap();
    let cwd = cwd.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join("ws")).unwrap();
    std::fs::write(
        cwd.join("warden.toml"),
        format!(
            "[[plugins]]\npath = \"{}\"\ngrant-fs = [\"ws:/workspace:rw\"]\n",
            warden_test_artifacts::FS
        ),
    )
    .unwrap();
    let out = serve_in(&cwd, &[]);
    assert_served(&out, "a harmless found warden.toml");
}

/// The server loaded its configuration and started serving stdio.
fn assert_served(out: &Output, what: &str) {
    let err = stderr(out);
    assert!(!err.contains("widens trust"), "{what}\n{err}");
    assert!(err.contains("the stdio session"), "{what}\n{err}");
}

fn audit(state: &Path, what: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", what])
        .args(if what == "export" {
            &["--json"][..]
        } else {
            &[][..]
        })
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap()
}

#[test]
fn warden_call_is_in_the_signed_audit_chain_beside_served_calls() {
    let root = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(root.path(), "");
    let call = |tool: &str, args: &str| {
        warden_in(
            root.path(),
            &[
                "call",
                tool,
                "--config",
                config.to_str().unwrap(),
                "--agent",
                "alice",
                "--args",
                args,
            ],
            &[("WARDEN_STATE_DIR", &state)],
        )
    };
    // Allowed and run; then a write that asks, denied without a terminal.
    let out = call("fs_read", r#"{"path":"hello.txt"}"#);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = call("fs_write", r#"{"path":"x.txt","content":"x"}"#);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    // A served call in between, then one more call.
    let mut server = support::Server::start(&config, &state);
    let result = server.tool(1, "fs_read", serde_json::json!({"path": "hello.txt"}));
    assert!(support::text(&result).contains("hello"), "{result}");
    // Stopped cleanly: the served call's outcome, which does not hold up
    // its answer, is committed on the way out.
    let status = server.close(std::time::Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let out = call("fs_read", r#"{"path":"hello.txt"}"#);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let verify = audit(&state, "verify");
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let export = audit(&state, "export");
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let records: Value = serde_json::from_slice(&export.stdout).unwrap();
    let records = records.as_array().unwrap();
    let text = serde_json::to_string(records).unwrap();
    let sessions = |prefix: &str| text.matches(&format!("\"session\":\"{prefix}")).count();
    assert!(
        sessions("cli-") >= 3,
        "the calls' decisions are audited: {text}"
    );
    assert!(
        text.contains("fs_write"),
        "the denied write is audited: {text}"
    );
    assert!(
        records.len() >= 7,
        "decisions and outcomes of 4 calls: {text}"
    );
}
