use std::net::{IpAddr, SocketAddr};

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn pat(s: &str) -> NetPattern {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn pats(list: &[&str]) -> Vec<NetPattern> {
    list.iter().map(|s| pat(s)).collect()
}

#[test]
fn ipv4_spellings_are_the_addresses_they_reach() {
    for (text, want) in [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("169.254.43518", "169.254.169.254"),
        ("10.0.0.010", "10.0.0.8"),
    ] {
        assert_eq!(Host::parse(text).unwrap(), Host::Ip(ip(want)), "{text}");
    }
}

#[test]
fn hosts_ending_in_a_number_are_never_names() {
    for text in [
        "1.2.3.4.5",
        "256.0.0.1",
        "09.0.0.1",
        "1.2.3.0x100",
        "4294967296",
        "1..2",
    ] {
        assert!(Host::parse(text).is_err(), "{text} must be refused");
    }
    assert_eq!(
        Host::parse("1.2.3.example").unwrap(),
        Host::Name("1.2.3.example".into())
    );
    assert_eq!(
        Host::parse("API.Example.COM.").unwrap(),
        Host::Name("api.example.com".into())
    );
}

#[test]
fn ipv6_forms_fold_to_what_they_carry() {
    assert_eq!(
        Host::parse("[::ffff:127.0.0.1]").unwrap(),
        Host::Ip(ip("127.0.0.1"))
    );
    assert_eq!(Host::parse("[::1]").unwrap(), Host::Ip(ip("::1")));
    assert!(Host::parse("[::1").is_err());
    assert!(Host::parse("exa mple.com").is_err());
    assert!(Host::parse("ex%61mple.com").is_err());
    assert!(Host::parse("bücher.de").is_err());
}

#[test]
fn non_public_addresses_are_classified() {
    use AddressClass as C;
    for (text, class) in [
        ("127.0.0.1", C::Loopback),
        ("127.255.0.9", C::Loopback),
        ("::1", C::Loopback),
        ("10.1.2.3", C::Private),
        ("172.16.0.1", C::Private),
        ("172.31.255.255", C::Private),
        ("192.168.1.1", C::Private),
        ("169.254.1.1", C::LinkLocal),
        ("169.254.169.254", C::CloudMetadata),
        ("fd00:ec2::254", C::CloudMetadata),
        ("fe80::1", C::LinkLocal),
        ("fc00::1", C::UniqueLocal),
        ("fd12:3456::1", C::UniqueLocal),
        ("100.64.0.1", C::SharedCgnat),
        ("100.127.255.254", C::SharedCgnat),
        ("224.0.0.1", C::Multicast),
        ("ff02::1", C::Multicast),
        ("0.0.0.0", C::Unspecified),
        ("::", C::Unspecified),
        ("255.255.255.255", C::Broadcast),
        ("192.0.2.1", C::Documentation),
        ("198.51.100.1", C::Documentation),
        ("203.0.113.1", C::Documentation),
        ("2001:db8::1", C::Documentation),
        ("240.0.0.1", C::Reserved),
        ("::ffff:127.0.0.1", C::Loopback),
        ("::ffff:169.254.169.254", C::CloudMetadata),
        ("::127.0.0.1", C::Loopback),
        ("64:ff9b::7f00:1", C::Loopback),
        ("64:ff9b::a00:1", C::Private),
        ("64:ff9b:1::a9fe:a9fe", C::CloudMetadata),
        ("2002:7f00:1::1", C::Loopback),
        ("2002:c0a8:101::1", C::Private),
    ] {
        assert_eq!(classify(ip(text)), Some(class), "{text}");
    }
    for public in [
        "8.8.8.8",
        "1.1.1.1",
        "172.32.0.1",
        "100.128.0.1",
        "2606:4700::1111",
        "2001:4860:4860::8888",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert_eq!(classify(ip(public)), None, "{public}");
    }
}

#[test]
fn patterns_parse_and_print() {
    for (text, shown) in [
        ("api.example.com", "api.example.com"),
        ("API.example.com:443", "api.example.com:443"),
        ("*.example.com", "*.example.com"),
        ("https://api.example.com", "https://api.example.com:443"),
        ("http://api.example.com:8080", "http://api.example.com:8080"),
        ("127.0.0.1:8080", "127.0.0.1:8080"),
        ("2130706433:80", "127.0.0.1:80"),
        ("[::1]:443", "[::1]:443"),
        ("::1", "[::1]"),
        ("10.1.2.3/16", "10.1.0.0/16"),
        ("fd00::/8", "fd00::/8"),
        ("10.0.0.0/8:443", "10.0.0.0/8:443"),
        ("insecure:allow-all", "insecure:allow-all"),
    ] {
        let p = pat(text);
        assert_eq!(p.to_string(), shown, "{text}");
        assert_eq!(pat(shown), p, "{shown} must round-trip");
    }
    for bad in [
        "*",
        "all",
        "insecure:everything",
        "*.com",
        "api.*.com",
        "ftp://example.com",
        "example.com:0",
        "example.com:99999",
        "example.com:",
        "user@example.com",
        "https://example.com/path",
        "0.0.0.0/0",
        "10.0.0.0/33",
        "",
    ] {
        assert!(
            bad.parse::<NetPattern>().is_err(),
            "{bad:?} must be refused"
        );
    }
}

#[test]
fn subdomain_patterns_match_any_depth_but_not_the_apex() {
    let p = pat("*.example.com");
    let name = |n: &str| Host::Name(n.into());
    assert!(p.matches(None, &name("a.example.com"), 443));
    assert!(p.matches(None, &name("a.b.c.example.com"), 1));
    assert!(!p.matches(None, &name("example.com"), 443));
    assert!(!p.matches(None, &name("badexample.com"), 443));
    assert!(!p.matches(None, &name("example.com.evil.net"), 443));
}

#[test]
fn scheme_patterns_are_http_only_and_pin_the_port() {
    let p = pat("https://api.example.com");
    let h = Host::Name("api.example.com".into());
    assert!(p.matches(Some(Scheme::Https), &h, 443));
    assert!(!p.matches(Some(Scheme::Http), &h, 443));
    assert!(!p.matches(Some(Scheme::Https), &h, 8443));
    assert!(!p.matches(None, &h, 443), "a raw socket is not HTTPS");
}

#[test]
fn meet_and_cover() {
    assert_eq!(
        pat("insecure:allow-all").meet(&pat("a.example.com:443")),
        Some(pat("a.example.com:443"))
    );
    assert_eq!(
        pat("*.example.com").meet(&pat("a.example.com")),
        Some(pat("a.example.com"))
    );
    assert_eq!(
        pat("*.example.com").meet(&pat("*.a.example.com")),
        Some(pat("*.a.example.com"))
    );
    assert_eq!(pat("example.com:80").meet(&pat("example.com:443")), None);
    assert_eq!(
        pat("10.0.0.0/8").meet(&pat("10.1.2.3")),
        Some(pat("10.1.2.3"))
    );
    assert_eq!(pat("example.com").meet(&pat("93.184.216.34")), None);
    assert!(pat("*.example.com").covers(&pat("https://a.example.com")));
    assert!(!pat("a.example.com:443").covers(&pat("a.example.com")));
}

fn target(url: &str) -> Target {
    Target::from_url(url)
        .unwrap_or_else(|e| panic!("{url}: {e}"))
        .0
}

#[test]
fn urls_that_confuse_parsers_are_refused() {
    for bad in [
        "http://user@evil.example/",
        "http://granted.example\\@evil.example/",
        "http://evil.example\\x/",
        "http://exa mple.com/",
        "http://example.com/a b",
        "http://example.com/\t",
        "http://example.com\n/",
        "http://ex%61mple.com/",
        "http://example.com:/",
        "http://example.com:http/",
        "http://::1/",
        "ftp://example.com/",
        "example.com/path",
    ] {
        assert!(Target::from_url(bad).is_err(), "{bad:?} must be refused");
    }
    let (t, path) = Target::from_url("HTTP://Example.com:8080?q=1#frag").unwrap();
    assert_eq!(t.to_string(), "http://example.com:8080");
    assert_eq!(path, "/?q=1");
    assert_eq!(target("https://[::1]/x").port, 443);
    assert_eq!(target("http://0x7f.1:9/").host, Host::Ip(ip("127.0.0.1")));
}

#[test]
fn http_requests_need_a_rule_and_a_public_address() {
    let net = EffectiveNet::new(
        &pats(&["api.example.com:443", "*.cdn.example"]),
        &pats(&[ALLOW_ALL]),
    );
    let api = target("https://api.example.com/");
    assert!(net.check_target(&api).is_ok());
    assert!(net.check_address(&api, ip("93.184.216.34")).is_ok());
    let refused = net.check_address(&api, ip("127.0.0.1")).unwrap_err();
    assert!(refused.reason.contains("loopback"), "{refused}");
    assert!(refused.reason.contains("api.example.com"), "{refused}");
    assert!(net.check_address(&api, ip("::ffff:10.0.0.1")).is_err());

    let other = target("https://evil.example/");
    let refused = net.check_target(&other).unwrap_err();
    assert!(refused.reason.contains("`evil.example`"), "{refused}");
    assert!(
        refused.reason.contains("--grant-net evil.example:443"),
        "{refused}"
    );
    assert!(net.check_target(&target("http://x.cdn.example/")).is_ok());
    assert!(net.check_target(&target("http://cdn.example/")).is_err());
}

#[test]
fn only_an_operator_address_grant_unlocks_a_non_public_address() {
    let loopback = target("http://127.0.0.1:8080/");
    // The plugin asks for loopback; the operator grants every host.
    let net = EffectiveNet::new(&pats(&[ALLOW_ALL]), &pats(&["127.0.0.1"]));
    assert!(net.check_target(&loopback).is_ok());
    assert!(net.check_address(&loopback, ip("127.0.0.1")).is_err());
    // The operator names the address.
    let net = EffectiveNet::new(&pats(&["127.0.0.1:8080"]), &pats(&[ALLOW_ALL]));
    assert!(net.check_address(&loopback, ip("127.0.0.1")).is_ok());
    assert!(net.check_target(&target("http://127.0.0.1:8081/")).is_err());
    // A name that resolves to loopback, with and without the address grant.
    let local = target("http://localhost:8080/");
    let by_name = EffectiveNet::new(&pats(&["localhost:8080"]), &pats(&[ALLOW_ALL]));
    assert!(by_name.check_target(&local).is_ok());
    assert!(by_name.check_address(&local, ip("127.0.0.1")).is_err());
    let both = EffectiveNet::new(&pats(&["localhost:8080", "127.0.0.1"]), &pats(&[ALLOW_ALL]));
    assert!(both.check_address(&local, ip("127.0.0.1")).is_ok());
}

#[test]
fn the_plugin_request_narrows_the_grant() {
    let net = EffectiveNet::new(&pats(&[ALLOW_ALL]), &pats(&["api.example.com"]));
    assert!(
        net.check_target(&target("https://api.example.com/"))
            .is_ok()
    );
    let refused = net
        .check_target(&target("https://other.example/"))
        .unwrap_err();
    assert!(refused.reason.contains("does not request"), "{refused}");
    assert!(EffectiveNet::new(&pats(&[ALLOW_ALL]), &[]).is_empty());
}

#[test]
fn sockets_admit_granted_address_port_pairs_only() {
    let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
    let net = EffectiveNet::new(
        &pats(&[
            "127.0.0.1:7000",
            "db.example.com:5432",
            "https://api.example.com",
        ]),
        &pats(&[ALLOW_ALL]),
    );
    assert!(net.allows_sockets());
    assert_eq!(net.check_socket(sa("127.0.0.1:7000")), SocketVerdict::Admit);
    assert_eq!(
        net.check_socket(sa("[::ffff:127.0.0.1]:7000")),
        SocketVerdict::Admit
    );
    assert!(matches!(
        net.check_socket(sa("127.0.0.1:7001")),
        SocketVerdict::Refuse(_)
    ));
    assert!(matches!(
        net.check_socket(sa("10.0.0.1:5432")),
        SocketVerdict::Refuse(_)
    ));
    assert_eq!(
        net.check_socket(sa("93.184.216.34:5432")),
        SocketVerdict::IfResolvesFrom(vec!["db.example.com".into()])
    );
    assert!(
        matches!(
            net.check_socket(sa("93.184.216.34:443")),
            SocketVerdict::Refuse(_)
        ),
        "an HTTPS-only grant admits no raw socket"
    );
    let http_only = EffectiveNet::new(&pats(&["https://api.example.com"]), &pats(&[ALLOW_ALL]));
    assert!(!http_only.allows_sockets());
    assert!(!http_only.needs_name_lookup());
    assert!(net.needs_name_lookup());
}
