//! The pure checks in front of every git command: parsing a URL and
//! checking its addresses against the non-public ranges (no DNS: the
//! answers are given), target p50 <= 20 us; and the repository-config
//! allowlist check of a freshly cloned repository's config (files read
//! from a temp dir), target p50 <= 200 us.
//!
//! cargo bench -p warden-vcs --bench vcs

#![allow(clippy::unwrap_used, reason = "benchmarks fail loudly")]

use std::net::IpAddr;

use warden_vcs::{ConfigCheck, GitNetPolicy, parse_git_url, vet_answers};

fn main() {
    divan::main();
}

const URLS: [&str; 5] = [
    "https://github.com/owner/repo.git",
    "git@github.com:owner/repo.git",
    "https://bücher.example/r.git",
    "https://0x7f.1/r.git",
    "https://[::ffff:127.0.0.1]/r.git",
];

#[divan::bench(args = URLS)]
fn parse_and_range_check(b: divan::Bencher, url: &str) {
    let policy = GitNetPolicy::new().allow_host("git.internal").unwrap();
    let answers: Vec<IpAddr> = vec![
        "140.82.121.4".parse().unwrap(),
        "2606:50c0:8000::153".parse().unwrap(),
    ];
    b.bench(|| {
        let parsed = parse_git_url(divan::black_box(url)).unwrap();
        let answers = match parsed.host() {
            warden_api::net::Host::Ip(ip) => vec![*ip],
            warden_api::net::Host::Name(_) => answers.clone(),
        };
        divan::black_box(vet_answers(&parsed, &policy, &answers))
    });
}

const CLONED: &str = "[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
[remote \"origin\"]
\turl = https://github.com/owner/repo.git
\tfetch = +refs/heads/*:refs/remotes/origin/*
[branch \"main\"]
\tremote = origin
\tmerge = refs/heads/main
";

#[divan::bench]
fn repo_config_check(b: divan::Bencher) {
    let ws = tempfile::TempDir::new().unwrap();
    let git = ws.path().join("repo/.git");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(git.join("config"), CLONED).unwrap();
    let check = ConfigCheck::new(ws.path()).unwrap();
    b.bench(|| check.check(divan::black_box(&git)).unwrap());
}
