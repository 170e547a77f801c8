//! `vcs_url_table`: every row goes through `parse_git_url` and `vet` with
//! a stub resolver that answers the row's addresses, in order, for any
//! name. The policy allowlists `git.internal` only.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use crate::{GitNetPolicy, Resolve, Vetted, parse_git_url, parse_git_url_with, vet};

/// Polls a future that the stub resolver makes ready at once.
pub(crate) fn ready<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Answers `addrs` for every name, and records the names it was asked.
pub(crate) struct Stub {
    pub addrs: Vec<IpAddr>,
    pub asked: Mutex<Vec<(String, u16)>>,
}

impl Stub {
    pub fn new(addrs: &[&str]) -> Stub {
        Stub {
            addrs: addrs.iter().map(|a| a.parse().unwrap()).collect(),
            asked: Mutex::new(Vec::new()),
        }
    }
}

impl Resolve for Stub {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> warden_api::BoxFuture<'a, Result<Vec<IpAddr>, std::io::Error>> {
        self.asked.lock().unwrap().push((host.to_owned(), port));
        let addrs = self.addrs.clone();
        Box::pin(async move { Ok(addrs) })
    }
}

enum Want {
    /// The canonical rendering and the vetted addresses, in order.
    Ok(&'static str, &'static [&'static str]),
    /// A fragment of the parse or vet error message.
    Err(&'static str),
}
use Want::{Err as E, Ok as O};

const PUBLIC: &[&str] = &["140.82.121.4"];

#[rustfmt::skip]
const TABLE: &[(&str, &[&str], Want)] = &[
    // Schemes.
    ("https://github.com/owner/repo.git", PUBLIC, O("https://github.com/owner/repo.git", PUBLIC)),
    ("HTTPS://GitHub.COM/owner/repo.git", PUBLIC, O("https://github.com/owner/repo.git", PUBLIC)),
    ("http://github.com/o/r.git", PUBLIC, E("`http` scheme is plain text")),
    ("git://github.com/o/r.git", PUBLIC, E("`git` scheme is unauthenticated")),
    ("file:///etc/passwd", PUBLIC, E("`file` scheme reads the host's own files")),
    ("file://localhost/srv/repo.git", PUBLIC, E("`file` scheme")),
    ("FILE:///srv/repo.git", PUBLIC, E("`file` scheme")),
    ("ftp://example.com/r.git", PUBLIC, E("`ftp` scheme is not a transport")),
    ("git+ssh://example.com/r.git", PUBLIC, E("deprecated alias")),
    ("ssh+git://example.com/r.git", PUBLIC, E("deprecated alias")),
    ("ext::sh -c touch% /tmp/pwned", PUBLIC, E("`ext::` runs a remote helper")),
    ("ext::ssh -oProxyCommand=x %S", PUBLIC, E("`ext::` runs a remote helper")),
    ("fd::17", PUBLIC, E("`fd::` runs a remote helper")),
    ("EXT::sh", PUBLIC, E("`EXT::` runs a remote helper")),
    ("/srv/repo.git", PUBLIC, E("a local path")),
    ("./repo", PUBLIC, E("a local path")),
    ("../repo:x", PUBLIC, E("a local path")),
    ("repo", PUBLIC, E("a local path")),
    ("", PUBLIC, E("it is empty")),
    // scp-like and ssh://.
    ("git@github.com:owner/repo.git", PUBLIC, O("git@github.com:owner/repo.git", PUBLIC)),
    ("github.com:owner/repo.git", PUBLIC, O("github.com:owner/repo.git", PUBLIC)),
    ("git@github.com:/srv/repo.git", PUBLIC, O("git@github.com:/srv/repo.git", PUBLIC)),
    ("git@github.com:~alice/repo.git", PUBLIC, O("git@github.com:~alice/repo.git", PUBLIC)),
    ("ssh://git@github.com/owner/repo.git", PUBLIC, O("ssh://git@github.com/owner/repo.git", PUBLIC)),
    ("SSH://git@GitHub.com/owner/repo.git", PUBLIC, O("ssh://git@github.com/owner/repo.git", PUBLIC)),
    ("ssh://github.com/~/repo.git", PUBLIC, O("ssh://github.com/~/repo.git", PUBLIC)),
    ("git@[2606:50c0:8000::153]:o/r.git", &[], O("git@[2606:50c0:8000::153]:o/r.git", &["2606:50c0:8000::153"])),
    ("[2606:50c0:8000::153]:o/r.git", &[], O("[2606:50c0:8000::153]:o/r.git", &["2606:50c0:8000::153"])),
    ("[git@github.com:2222]:o/r.git", PUBLIC, E("not an IPv6 address")),
    ("git@github.com", PUBLIC, E("a local path")),
    ("ssh://git@github.com", PUBLIC, E("names no repository")),
    // Ports.
    ("https://example.com:8443/r.git", PUBLIC, O("https://example.com:8443/r.git", PUBLIC)),
    ("https://example.com:443/r.git", PUBLIC, O("https://example.com/r.git", PUBLIC)),
    ("ssh://git@example.com:2222/r.git", PUBLIC, O("ssh://git@example.com:2222/r.git", PUBLIC)),
    ("ssh://git@example.com:22/r.git", PUBLIC, O("ssh://git@example.com/r.git", PUBLIC)),
    ("https://example.com:0/r.git", PUBLIC, E("port `0`")),
    ("https://example.com:65536/r.git", PUBLIC, E("port `65536`")),
    ("https://example.com:/r.git", PUBLIC, E("port `` is empty")),
    ("https://example.com:+443/r.git", PUBLIC, E("port `+443`")),
    ("https://example.com:44x/r.git", PUBLIC, E("port `44x`")),
    // IDNA and case.
    ("https://bücher.example/r.git", PUBLIC, O("https://xn--bcher-kva.example/r.git", PUBLIC)),
    ("https://BÜCHER.example/r.git", PUBLIC, O("https://xn--bcher-kva.example/r.git", PUBLIC)),
    ("https://xn--bcher-kva.example/r.git", PUBLIC, O("https://xn--bcher-kva.example/r.git", PUBLIC)),
    ("https://ｇｉｔｈｕｂ.com/r.git", PUBLIC, O("https://github.com/r.git", PUBLIC)),
    ("https://127。0。0。1/r.git", &[], E("loopback address 127.0.0.1 for 127.0.0.1")),
    ("https://exa mple.com/r.git", PUBLIC, E("whitespace")),
    ("https://ex*ample.com/r.git", PUBLIC, E("host `ex*ample.com`")),
    // Trailing dot.
    ("https://github.com./o/r.git", PUBLIC, O("https://github.com/o/r.git", PUBLIC)),
    ("https://github.com../o/r.git", PUBLIC, E("empty label")),
    ("https://localhost./r.git", &["127.0.0.1"], E("loopback address 127.0.0.1 for localhost")),
    // Numeric IPv4 spellings (curl connects to 127.0.0.1 for each, spec T12).
    ("https://127.0.0.1/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://0x7f.1/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://2130706433/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://017700000001/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://127.1/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://0177.0.0.1/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://0x7f000001/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://127.0.0.1./r.git", &[], E("loopback address 127.0.0.1")),
    ("git@0x7f.1:r.git", &[], E("loopback address 127.0.0.1")),
    ("ssh://2130706433/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://0/r.git", &[], E("unspecified address 0.0.0.0")),
    ("https://10.1.2.3/r.git", &[], E("private address 10.1.2.3 for 10.1.2.3")),
    ("https://1.2.3.999/r.git", &[], E("host `1.2.3.999`")),
    ("https://1.2.3.4.5/r.git", &[], E("host `1.2.3.4.5`")),
    ("https://8.8.8.8/r.git", &[], O("https://8.8.8.8/r.git", &["8.8.8.8"])),
    ("https://0x08.0x08.0x08.0x08/r.git", &[], O("https://8.8.8.8/r.git", &["8.8.8.8"])),
    // IPv6 and IPv4 embedded in it.
    ("https://[::ffff:127.0.0.1]/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://[::ffff:7f00:1]/r.git", &[], E("loopback address 127.0.0.1")),
    ("https://[::1]/r.git", &[], E("loopback address ::1")),
    ("https://[64:ff9b::7f00:1]/r.git", &[], E("loopback address 64:ff9b::7f00:1")),
    ("https://[2002:7f00:1::]/r.git", &[], E("loopback address 2002:7f00:1::")),
    ("https://[::127.0.0.1]/r.git", &[], E("loopback address ::7f00:1")),
    ("https://[::ffff:a9fe:a9fe]/r.git", &[], E("cloud metadata address 169.254.169.254")),
    ("https://[fe80::1%25eth0]/r.git", &[], E("zone id")),
    ("git@[fe80::1%eth0]:r.git", &[], E("percent-encoding")),
    ("https://[fe80::1]/r.git", &[], E("link-local address fe80::1")),
    ("https://[fd00::1]/r.git", &[], E("unique-local address fd00::1")),
    ("https://[fd00:ec2::254]/r.git", &[], E("cloud metadata address fd00:ec2::254")),
    ("https://[2606:4700::1111]/r.git", &[], O("https://[2606:4700::1111]/r.git", &["2606:4700::1111"])),
    ("https://[2606:4700::1111]:8443/r.git", &[], O("https://[2606:4700::1111]:8443/r.git", &["2606:4700::1111"])),
    ("https://::1/r.git", &[], E("host")),
    ("https://[::1/r.git", &[], E("unclosed")),
    // Userinfo.
    ("https://user:pass@github.com/o/r.git", PUBLIC, E("a password in the URL")),
    ("https://user@github.com/o/r.git", PUBLIC, E("credentials in an https URL")),
    ("https://github.com@evil.example/o/r.git", PUBLIC, E("credentials in an https URL")),
    ("ssh://git:pw@github.com/o/r.git", PUBLIC, E("a password in the URL")),
    ("ssh://git:@github.com/o/r.git", PUBLIC, E("a password in the URL")),
    ("ssh://a@b@github.com/o/r.git", PUBLIC, E("the user `a@b`")),
    ("ssh://@github.com/o/r.git", PUBLIC, E("the user `` is empty")),
    ("ssh://gi$t@github.com/o/r.git", PUBLIC, E("the user `gi$t`")),
    // Option injection (CVE-2017-1000117 and relatives).
    ("ssh://-oProxyCommand=calc/r.git", PUBLIC, E("host `-oProxyCommand=calc` starts with `-`")),
    ("-oProxyCommand=calc:r.git", PUBLIC, E("host `-oProxyCommand=calc` starts with `-`")),
    ("ssh://-oProxyCommand=calc@github.com/r.git", PUBLIC, E("user `-oProxyCommand=calc` starts with `-`")),
    ("-oProxyCommand=calc@github.com:r.git", PUBLIC, E("user `-oProxyCommand=calc` starts with `-`")),
    ("git@github.com:-oProxyCommand=calc", PUBLIC, E("path `-oProxyCommand=calc` starts with `-`")),
    ("git@-oProxyCommand=calc:r.git", PUBLIC, E("host `-oProxyCommand=calc` starts with `-`")),
    ("https://-oproxy.example/r.git", PUBLIC, E("host `-oproxy.example` starts with `-`")),
    ("https://a.-b.example/r.git", PUBLIC, E("host `a.-b.example` starts with `-`")),
    ("ssh://%2doProxyCommand=calc/r.git", PUBLIC, E("percent-encoding")),
    ("https://%31%32%37.0.0.1/r.git", PUBLIC, E("percent-encoded host")),
    // Control characters and parser confusion.
    ("https://github.com/o/r.git\n", PUBLIC, E("control character")),
    ("https://github.com\t/o/r.git", PUBLIC, E("control character")),
    ("https://github.com/o/r.git\u{85}", PUBLIC, E("control character")),
    ("https://github.com\u{0}/o/r.git", PUBLIC, E("control character")),
    ("https://github.com\\@evil.example/o/r.git", PUBLIC, E("backslash")),
    ("https://github.com\u{3000}/o/r.git", PUBLIC, E("whitespace")),
    // Paths.
    ("https://github.com", PUBLIC, E("names no repository")),
    ("https://github.com/", PUBLIC, E("names no repository")),
    ("https://github.com/o/r.git?x=1", PUBLIC, E("query or fragment")),
    ("https://github.com/o/r.git#main", PUBLIC, E("query or fragment")),
    ("https://github.com/o/r%zz", PUBLIC, E("not a `%XX` escape")),
    ("https://github.com/o/r%20x.git", PUBLIC, O("https://github.com/o/r%20x.git", PUBLIC)),
    ("https://github.com/o/[r].git", PUBLIC, E("outside URL path characters")),
    ("git@github.com:o/r\"x", PUBLIC, E("outside URL path characters")),
    // Metadata and other special ranges.
    ("https://169.254.169.254/latest/meta-data", &[], E("cloud metadata address 169.254.169.254")),
    ("https://metadata.google.internal/r.git", &["169.254.169.254"], E("cloud metadata address 169.254.169.254 for metadata.google.internal")),
    ("https://100.64.0.1/r.git", &[], E("shared (CGNAT) address 100.64.0.1")),
    ("https://192.168.1.1/r.git", &[], E("private address 192.168.1.1")),
    ("https://172.16.0.1/r.git", &[], E("private address 172.16.0.1")),
    ("https://198.18.0.1/r.git", &[], E("reserved address 198.18.0.1")),
    ("https://192.0.2.1/r.git", &[], E("documentation address 192.0.2.1")),
    ("https://224.0.0.1/r.git", &[], E("multicast address 224.0.0.1")),
    ("https://255.255.255.255/r.git", &[], E("broadcast address 255.255.255.255")),
    // Resolver answers: refused whole, order kept, allowlisted host.
    ("https://evil.example/r.git", &["10.1.2.3"], E("private address 10.1.2.3 for evil.example")),
    ("https://rebind.example/r.git", &["93.184.216.34", "127.0.0.1"], E("loopback address 127.0.0.1 for rebind.example")),
    ("https://mapped.example/r.git", &["::ffff:10.0.0.1"], E("private address 10.0.0.1 for mapped.example")),
    ("https://git.internal/r.git", &["10.1.2.3"], O("https://git.internal/r.git", &["10.1.2.3"])),
    ("https://GIT.Internal./r.git", &["10.1.2.3"], O("https://git.internal/r.git", &["10.1.2.3"])),
    ("git@git.internal:team/r.git", &["127.0.0.1"], O("git@git.internal:team/r.git", &["127.0.0.1"])),
    ("https://git.internal/r.git", &["198.51.100.7", "127.0.0.1"], O("https://git.internal/r.git", &["198.51.100.7", "127.0.0.1"])),
    ("https://git.internal/r.git", &["127.0.0.1", "198.51.100.7"], O("https://git.internal/r.git", &["127.0.0.1", "198.51.100.7"])),
    ("https://git.internal/r.git", &["10.0.0.1", "169.254.169.254"], E("cloud metadata address 169.254.169.254 for git.internal is never a git server")),
    ("https://git.internal/r.git", &["0.0.0.0"], E("unspecified address 0.0.0.0")),
    ("https://git.internal.evil.example/r.git", &["10.1.2.3"], E("private address 10.1.2.3")),
    ("https://cdn.example/r.git", &["151.101.1.1", "151.101.65.1", "2a04:4e42::1"], O("https://cdn.example/r.git", &["151.101.1.1", "151.101.65.1", "2a04:4e42::1"])),
    ("https://dup.example/r.git", &["1.1.1.1", "1.1.1.1", "8.8.8.8"], O("https://dup.example/r.git", &["1.1.1.1", "8.8.8.8"])),
    ("https://v6.example/r.git", &["::ffff:1.1.1.1"], O("https://v6.example/r.git", &["1.1.1.1"])),
    ("https://none.example/r.git", &[], E("none.example resolved to no address")),
];

fn policy() -> GitNetPolicy {
    GitNetPolicy::new().allow_host("git.internal").unwrap()
}

fn run(input: &str, answers: &[&str]) -> Result<Vetted, String> {
    let url = parse_git_url(input).map_err(|e| e.to_string())?;
    let stub = Stub::new(answers);
    ready(vet(&url, &policy(), &stub)).map_err(|e| e.to_string())
}

#[test]
fn vcs_url_table() {
    assert!(TABLE.len() >= 80, "{} rows", TABLE.len());
    let mut failures = Vec::new();
    for (input, answers, want) in TABLE {
        let got = run(input, answers);
        let ok = match (want, &got) {
            (Want::Ok(url, addrs), Ok(v)) => {
                let got_addrs: Vec<String> = v.addrs().iter().map(|a| a.to_string()).collect();
                v.url().to_string() == *url && got_addrs == *addrs
            }
            (Want::Err(fragment), Err(msg)) => msg.contains(fragment),
            _ => false,
        };
        if !ok {
            let got = got.map(|v| format!("{} {:?}", v.url(), v.addrs()));
            failures.push(format!("{input:?}: got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_canonical_name_is_what_gets_resolved() {
    let stub = Stub::new(PUBLIC);
    let url = parse_git_url("https://BÜCHER.example.:8443/r.git").unwrap();
    ready(vet(&url, &policy(), &stub)).unwrap();
    assert_eq!(
        *stub.asked.lock().unwrap(),
        vec![("xn--bcher-kva.example".to_owned(), 8443)]
    );
    let literal = parse_git_url("https://0x08.0x08.0x08.0x08/r.git").unwrap();
    let stub = Stub::new(&["10.0.0.1"]);
    ready(vet(&literal, &policy(), &stub)).unwrap();
    assert!(
        stub.asked.lock().unwrap().is_empty(),
        "an IP literal is never resolved"
    );
}

#[test]
fn plain_http_only_when_the_policy_allows_it() {
    let open = GitNetPolicy::new().allow_insecure_http(true);
    let url = parse_git_url_with("http://example.com/r.git", &open).unwrap();
    assert_eq!(url.to_string(), "http://example.com/r.git");
    assert_eq!(url.port(), 80);
    let stub = Stub::new(PUBLIC);
    assert!(ready(vet(&url, &open, &stub)).is_ok());
    // A URL parsed under a lenient policy is still refused by a strict one.
    let err = ready(vet(&url, &GitNetPolicy::new(), &stub)).unwrap_err();
    assert!(err.to_string().contains("plain http"), "{err}");
    assert!(parse_git_url("http://example.com/r.git").is_err());
}

#[test]
fn default_ports_and_parts() {
    let https = parse_git_url("https://github.com/o/r.git").unwrap();
    assert_eq!(
        (https.port(), https.user(), https.path()),
        (443, None, "/o/r.git")
    );
    let scp = parse_git_url("git@github.com:o/r.git").unwrap();
    assert_eq!(
        (scp.port(), scp.user(), scp.path()),
        (22, Some("git"), "o/r.git")
    );
    assert!(scp.is_scp_like());
    assert_eq!(scp.specifier(), "github.com/o/r.git");
}

#[test]
fn errors_never_echo_a_password() {
    for url in [
        "https://user:hunter2@github.com/o/r.git",
        "ssh://git:hunter2@github.com/o/r.git",
    ] {
        let msg = parse_git_url(url).unwrap_err().to_string();
        assert!(!msg.contains("hunter2"), "{msg}");
    }
}

#[test]
fn allowlist_entries_are_canonicalised_and_checked() {
    let p = GitNetPolicy::new().allow_host("Git.Internal.").unwrap();
    assert!(p.allows_host(parse_git_url("https://git.internal/r").unwrap().host()));
    assert!(GitNetPolicy::new().allow_host("-evil").is_err());
    assert!(GitNetPolicy::new().allow_host("a b").is_err());
}

#[test]
fn oversized_urls_are_refused() {
    let long = format!("https://github.com/{}", "a".repeat(3000));
    assert!(
        parse_git_url(&long)
            .unwrap_err()
            .to_string()
            .contains("longer than")
    );
}

#[test]
fn at_most_sixteen_answers_are_pinned_but_all_are_checked() {
    let url = parse_git_url("https://many.example/r.git").unwrap();
    let mut answers: Vec<String> = (1..=20).map(|i| format!("1.1.1.{i}")).collect();
    let refs: Vec<&str> = answers.iter().map(String::as_str).collect();
    let v = ready(vet(&url, &policy(), &Stub::new(&refs))).unwrap();
    assert_eq!(v.addrs().len(), crate::MAX_PINNED_ADDRS);
    assert_eq!(v.addrs()[0].to_string(), "1.1.1.1");
    answers.push("127.0.0.1".to_owned());
    let refs: Vec<&str> = answers.iter().map(String::as_str).collect();
    let err = ready(vet(&url, &policy(), &Stub::new(&refs))).unwrap_err();
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
}
