//! clone and fetch against dumb-HTTP git servers on the bridge gateway,
//! reachable from a container only through the vetted, pinned address and
//! the egress fence.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use serde_json::json;
use warden_api::FsAccess;
use warden_sandbox::spec::AGENT_LABEL;
use warden_sandbox::stdio_server::spec::ROLE_LABEL;
use warden_sandbox::{ExecRequest, GitSettings, SandboxConfig, SandboxTools};

use super::fixture::{self, Serve, Server, Stub};
use crate::common::{data, error};
use crate::sandbox::{Rig, rig_of};

pub(super) const NAME: &str = "git.test";

pub(super) async fn gateway() -> IpAddr {
    let probe = crate::sandbox::rig("git-gw", SandboxConfig::default()).await;
    let ip = probe.sandbox.0.docker().bridge_gateway().await.unwrap();
    probe.done().await;
    ip
}

/// A rig whose git remotes resolve through `names` only; `git.test` is
/// allowlisted and plain http accepted (the fixtures serve no TLS).
pub(super) async fn rig(name: &str, names: &[(&str, IpAddr)], quota_mb: u64) -> Rig {
    let git = GitSettings {
        allow_hosts: vec![NAME.to_owned()],
        insecure_http: true,
        quota_mb,
        ..GitSettings::default()
    };
    rig_git(name, names, git).await
}

async fn rig_git(name: &str, names: &[(&str, IpAddr)], git: GitSettings) -> Rig {
    let config = SandboxConfig {
        git,
        ..SandboxConfig::default()
    };
    let mut map = BTreeMap::new();
    for (n, ip) in names {
        map.insert((*n).to_owned(), vec![*ip]);
    }
    let tools = SandboxTools::new(config)
        .unwrap()
        .with_git_resolver(Arc::new(Stub(map)));
    rig_of(name, tools, FsAccess::ReadWrite, &[], "autonomous", "").await
}

/// A served bare repository made from `files` (in `root`, under `name.git`).
pub(super) fn served(root: &std::path::Path, name: &str, files: &[(&str, &str)]) {
    let src = root.join(format!("{name}-src"));
    fixture::repo(&src, files);
    fixture::bare(&src, &root.join(format!("{name}.git")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clone_reaches_the_server_only_through_the_pin() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    served(site.path(), "app", &[("README.md", "served\n")]);
    let server = Server::start(gw, Serve::Files(site.path().to_owned()));
    let url = format!("http://{NAME}:{}/app.git", server.addr.port());

    // `git.test` resolves nowhere but in Warden's resolver; the container
    // has no DNS at all. The clone works only through the pin.
    let r = rig("git-pin", &[(NAME, gw)], 64).await;
    let c = r
        .call("git_clone", json!({"url": url, "dest": "app"}))
        .await;
    let d = data(&c);
    assert_eq!(d["addresses"], json!([gw.to_string()]), "{c:?}");
    assert_eq!(
        std::fs::read_to_string(r.dir.path().join("app/README.md")).unwrap(),
        "served\n"
    );
    assert!(server.hits() > 0);
    assert!(
        r.containers_in_use().await.is_empty(),
        "the clone's own container is gone"
    );

    // The clone passes the config check, and its remote is vetted again
    // for a fetch.
    let s = r.call("git_status", json!({"repo": "app"})).await;
    assert_eq!(data(&s)["clean"], true, "{s:?}");
    let before = server.hits();
    let f = r
        .call("git_fetch", json!({"repo": "app", "remote": "origin"}))
        .await;
    assert_eq!(data(&f)["url"], url.as_str(), "{f:?}");
    assert!(server.hits() > before);

    // A rewritten remote is refused by the config check before anything
    // connects.
    let other = Server::start(gw, Serve::Files(site.path().to_owned()));
    fixture::git(
        &r.dir.path().join("app"),
        &[
            "config",
            "-f",
            ".git/config",
            &format!("url.http://{NAME}:{}/.insteadOf", other.addr.port()),
            &format!("http://{NAME}:{}/", server.addr.port()),
        ],
    );
    let e = r
        .call("git_fetch", json!({"repo": "app", "remote": "origin"}))
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "repo_config_refused", "{msg}");
    assert!(msg.contains("insteadof"), "{msg}");
    assert_eq!(other.hits(), 0);
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn internal_addresses_are_refused_before_anything_connects() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    served(site.path(), "app", &[("a", "a\n")]);
    let server = Server::start(gw, Serve::Files(site.path().to_owned()));
    let port = server.addr.port();
    let r = rig(
        "git-ssrf",
        &[
            ("internal.test", gw),
            ("meta.test", "169.254.169.254".parse().unwrap()),
        ],
        64,
    )
    .await;
    for (url, code, words) in [
        // Not allowlisted: the bridge gateway is a private address.
        (
            format!("http://internal.test:{port}/app.git"),
            "address_refused",
            "private address",
        ),
        (
            format!("http://{gw}:{port}/app.git"),
            "address_refused",
            "private address",
        ),
        (
            format!("http://meta.test:{port}/app.git"),
            "address_refused",
            "never",
        ),
        (
            format!("http://unknown.test:{port}/app.git"),
            "dns_failed",
            "unknown.test",
        ),
        (
            format!("file://{}/app.git", site.path().display()),
            "url_refused",
            "file",
        ),
        (
            "ext::sh -c touch% /workspace/MARKER".to_owned(),
            "url_refused",
            "ext",
        ),
        (
            "https://-oProxyCommand=x/y".to_owned(),
            "url_refused",
            "-oProxyCommand",
        ),
    ] {
        let e = r.call("git_clone", json!({"url": url, "dest": "x"})).await;
        let (_, got, msg) = error(&e);
        assert_eq!(got, code, "{url}: {msg}");
        assert!(msg.contains(words), "{url}: {msg}");
    }
    for dest in ["app/.git", "a/.GIT/hooks", "../x", "/workspace/x"] {
        let url = format!("http://{NAME}:{port}/app.git");
        let e = r.call("git_clone", json!({"url": url, "dest": dest})).await;
        assert_eq!(error(&e).1, "invalid_argument", "{dest}: {e:?}");
    }
    assert_eq!(server.hits(), 0, "nothing connected");
    assert!(r.containers().await.is_empty(), "no container was made");
    assert!(!r.dir.path().join("x").exists());
    r.done().await;
}

/// The container a clone gets ready for the next network operation is on
/// the bridge but reaches nothing until a call's vetted address is added
/// to its fence; it serves that one call and is gone.
#[tokio::test(flavor = "multi_thread")]
async fn a_standby_reaches_nothing_before_its_call_and_serves_one_call() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    served(site.path(), "app", &[("a", "a\n")]);
    let first = Server::start(gw, Serve::Files(site.path().to_owned()));
    let second = Server::start(gw, Serve::Files(site.path().to_owned()));
    let r = rig("git-standby", &[(NAME, gw)], 64).await;
    let url = |s: &Server| format!("http://{NAME}:{}/app.git", s.addr.port());
    data(
        &r.call("git_clone", json!({"url": url(&first), "dest": "one"}))
            .await,
    );
    assert!(r.containers_in_use().await.is_empty());
    let standby = r.sandbox.0.standby_ids().await;
    assert_eq!(standby.len(), 2, "a standby and its fence holder");
    let main = r
        .sandbox
        .0
        .docker()
        .list_managed(&[(AGENT_LABEL, r.agent.as_str())])
        .await
        .unwrap()
        .into_iter()
        .find(|c| standby.contains(&c.id) && !c.labels.contains_key(ROLE_LABEL))
        .unwrap()
        .id;

    // What an agent's command in the standby could reach: nothing, not
    // even the server the last clone used.
    let before = first.hits();
    let probe = ExecRequest {
        argv: [
            "git",
            "ls-remote",
            &format!("http://{gw}:{}/app.git", first.addr.port()),
        ]
        .map(String::from)
        .to_vec(),
        max_bytes: 1 << 16,
        ..ExecRequest::default()
    };
    let out = r.sandbox.0.docker().exec(&main, &probe).await.unwrap();
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(first.hits(), before, "the fence held with no grants");

    // The next clone runs there, reaching its own server.
    data(
        &r.call("git_clone", json!({"url": url(&second), "dest": "two"}))
            .await,
    );
    assert!(second.hits() > 0);
    assert!(r.dir.path().join("two/a").exists());
    let left = r.containers_in_use().await;
    assert!(left.is_empty(), "{left:?}");
    let now = r.containers().await;
    assert!(
        standby.iter().all(|id| !now.contains(id)),
        "the standby served one call and is gone"
    );
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn redirects_and_submodules_reach_no_second_server() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    served(site.path(), "app", &[("a", "a\n")]);
    let second = Server::start(gw, Serve::Files(site.path().to_owned()));
    let redirect = Server::start(
        gw,
        Serve::Redirect(format!("http://{NAME}:{}", second.addr.port())),
    );
    let r = rig("git-redirect", &[(NAME, gw)], 64).await;
    let url = format!("http://{NAME}:{}/app.git", redirect.addr.port());
    let e = r.call("git_clone", json!({"url": url, "dest": "r"})).await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "git_failed", "{msg}");
    assert!(redirect.hits() > 0);
    assert_eq!(second.hits(), 0, "the redirect was not followed");
    assert!(!r.dir.path().join("r").exists());

    // A repository whose submodule lives on the second server.
    let sub = site.path().join("sub-src");
    fixture::repo(&sub, &[("s", "s\n")]);
    let top = site.path().join("top-src");
    fixture::repo(&top, &[("t", "t\n")]);
    fixture::git(
        &top,
        &["submodule", "add", "-q", sub.to_str().unwrap(), "sub"],
    );
    fixture::git(
        &top,
        &[
            "config",
            "-f",
            ".gitmodules",
            "submodule.sub.url",
            &format!("http://{NAME}:{}/sub.git", second.addr.port()),
        ],
    );
    fixture::git(&top, &["commit", "-q", "-am", "submodule"]);
    fixture::bare(&top, &site.path().join("top.git"));
    let first = Server::start(gw, Serve::Files(site.path().to_owned()));
    let url = format!("http://{NAME}:{}/top.git", first.addr.port());
    let c = r
        .call("git_clone", json!({"url": url, "dest": "top"}))
        .await;
    data(&c);
    assert!(r.dir.path().join("top/t").exists());
    assert!(
        !r.dir.path().join("top/sub/s").exists(),
        "the submodule was not fetched"
    );
    assert_eq!(second.hits(), 0);
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clone_past_the_quota_stops_and_leaves_nothing() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    // 3 MiB that do not compress.
    let mut noise = Vec::with_capacity(3 << 20);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while noise.len() < 3 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    let src = site.path().join("big-src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("noise.bin"), &noise).unwrap();
    fixture::git(&src, &["init", "-q"]);
    fixture::git(&src, &["add", "-A"]);
    fixture::git(&src, &["commit", "-q", "-m", "big"]);
    fixture::bare(&src, &site.path().join("big.git"));
    let server = Server::start(gw, Serve::Files(site.path().to_owned()));
    let r = rig("git-quota", &[(NAME, gw)], 2).await;
    let url = format!("http://{NAME}:{}/big.git", server.addr.port());
    let e = r
        .call("git_clone", json!({"url": url, "dest": "big"}))
        .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "quota_exceeded"),
        "{msg}"
    );
    assert!(
        !r.dir.path().join("big").exists(),
        "nothing reached the workspace"
    );
    assert!(
        r.containers_in_use().await.is_empty(),
        "the clone's container is gone"
    );
    r.done().await;
}

/// Smart HTTP (`git http-backend`): clone, commit, push; a force push
/// asks even for this autonomous agent, and runs only once allowed.
#[tokio::test(flavor = "multi_thread")]
async fn a_push_reaches_the_vetted_remote_and_a_force_push_asks() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    served(site.path(), "app", &[("a.txt", "a\n")]);
    let bare = site.path().join("app.git");
    fixture::git(&bare, &["config", "http.receivepack", "true"]);
    let server = Server::start(gw, Serve::Smart(site.path().to_owned()));
    let r = rig("git-push", &[(NAME, gw)], 64).await;
    let url = format!("http://{NAME}:{}/app.git", server.addr.port());
    data(
        &r.call("git_clone", json!({"url": url, "dest": "app"}))
            .await,
    );

    std::fs::write(r.dir.path().join("app/a.txt"), "b\n").unwrap();
    let c = r
        .call(
            "git_commit",
            json!({"repo": "app", "branch": "main", "message": "Second"}),
        )
        .await;
    let second = data(&c)["commit"]["hash"].as_str().unwrap().to_owned();
    let p = r
        .call(
            "git_push",
            json!({"repo": "app", "remote": "origin", "branch": "main"}),
        )
        .await;
    assert_eq!(data(&p)["url"], url.as_str(), "{p:?}");
    assert_eq!(fixture::git(&bare, &["rev-parse", "main"]).trim(), second);

    // Rewrite history: a plain push is refused by the server, a force
    // push asks a person, in autonomous mode too.
    data(
        &r.call(
            "git_reset",
            json!({"repo": "app", "mode": "hard", "rev": "HEAD~1"}),
        )
        .await,
    );
    std::fs::write(r.dir.path().join("app/a.txt"), "c\n").unwrap();
    let c = r
        .call(
            "git_commit",
            json!({"repo": "app", "branch": "main", "message": "Other"}),
        )
        .await;
    let other = data(&c)["commit"]["hash"].as_str().unwrap().to_owned();
    let e = r
        .call(
            "git_push",
            json!({"repo": "app", "remote": "origin", "branch": "main"}),
        )
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "git_failed", "{msg}");
    let force = json!({"repo": "app", "remote": "origin", "branch": "main", "force": true});
    let e = r.call("git_push", force.clone()).await;
    let (ty, _, msg) = error(&e);
    assert_eq!(ty, "PermissionDenied", "{msg}");
    assert!(msg.contains("force push"), "{msg}");
    assert_eq!(fixture::git(&bare, &["rev-parse", "main"]).trim(), second);
    data(&r.call_approved("git_push", force).await);
    assert_eq!(fixture::git(&bare, &["rev-parse", "main"]).trim(), other);
    r.done().await;
}

/// ssh is pinned too: `git.test` resolves nowhere in the container, and
/// ssh still reaches the vetted address (`HostName=<ip>`), where host-key
/// checking against Warden's known_hosts stops it (the fixture has no
/// key). Without a configured known_hosts nothing connects.
#[tokio::test(flavor = "multi_thread")]
async fn ssh_reaches_only_the_pinned_address() {
    let gw = gateway().await;
    let ssh = fixture::SshBanner::start(gw);
    let url = format!("ssh://git@{NAME}:{}/app.git", ssh.addr.port());
    let r = rig("git-ssh-off", &[(NAME, gw)], 64).await;
    let e = r
        .call("git_clone", json!({"url": url, "dest": "app"}))
        .await;
    assert_eq!(error(&e).1, "ssh_not_configured", "{e:?}");
    assert!(ssh.seen.lock().unwrap().is_empty());
    r.done().await;

    let keys = tempfile::tempdir().unwrap();
    let known = keys.path().join("known_hosts");
    std::fs::write(&known, "").unwrap();
    fixture::share(keys.path());
    let git = GitSettings {
        allow_hosts: vec![NAME.to_owned()],
        known_hosts: Some(known),
        ..GitSettings::default()
    };
    let r = rig_git("git-ssh", &[(NAME, gw)], git).await;
    let e = r
        .call("git_clone", json!({"url": url, "dest": "app"}))
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "git_failed", "{msg}");
    let seen = ssh.seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|l| l.starts_with("SSH-2.0-OpenSSH")),
        "ssh connected to the vetted address: {seen:?} ({msg})"
    );
    assert!(!r.dir.path().join("app").exists());
    r.done().await;
}

/// A server that never answers: the clone's deadline removes its
/// container and nothing reaches the workspace.
#[tokio::test(flavor = "multi_thread")]
async fn a_clone_past_its_deadline_is_killed_and_leaves_nothing() {
    let gw = gateway().await;
    let server = Server::start(gw, Serve::Hang);
    let r = rig("git-deadline", &[(NAME, gw)], 64).await;
    let url = format!("http://{NAME}:{}/app.git", server.addr.port());
    let started = std::time::Instant::now();
    let e = r
        .call(
            "git_clone",
            json!({"url": url, "dest": "app", "timeout_secs": 3}),
        )
        .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "timeout"),
        "{msg}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(server.hits() > 0);
    assert!(!r.dir.path().join("app").exists());
    assert!(
        r.containers_in_use().await.is_empty(),
        "the clone's container is gone"
    );
    r.done().await;
}
