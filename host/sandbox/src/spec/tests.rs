use std::collections::BTreeMap;
use std::path::PathBuf;

use warden_api::{FsAccess, FsGrant, Grants};

use super::*;

fn host() -> HostIdentity {
    HostIdentity {
        id: "h1".into(),
        pid: 42,
        start: 7,
    }
}

fn owner() -> OwnerLabels {
    OwnerLabels {
        agent: "alice".into(),
        task: Some("t1".into()),
        strategy: Strategy::PerAgent,
    }
}

fn spec_for(grants: &Grants) -> Result<ContainerSpec, SandboxError> {
    let resolved = BTreeMap::from([
        ("db.internal".to_owned(), vec!["10.0.0.5".parse().unwrap()]),
        (
            "api.example".to_owned(),
            vec!["93.184.216.34".parse().unwrap()],
        ),
    ]);
    let h = host();
    let o = owner();
    let input = SpecInput {
        kind: ImageKind::Base,
        host: &h,
        owner: &o,
        resolved: &resolved,
        masks: &crate::masks::Masks::default(),
    };
    container_spec(&input, grants, &SandboxConfig::default())
}

fn net(patterns: &[&str]) -> Grants {
    Grants {
        net: patterns.iter().map(|p| p.parse().unwrap()).collect(),
        ..Grants::default()
    }
}

#[test]
fn no_grants_means_no_network_no_mounts_and_every_hardening() {
    let s = spec_for(&Grants::default()).unwrap();
    assert_eq!(s.network, Network::None);
    assert!(s.mounts.is_empty());
    assert_eq!(s.user, "1000:1000");
    assert!(s.drop_all_capabilities && s.no_new_privileges && s.read_only_rootfs);
    assert_eq!(s.memory_bytes, 512 << 20);
    assert_eq!(s.nano_cpus, 1_000_000_000);
    assert_eq!(s.pids_limit, 128);
    assert_eq!(s.tmpfs[0].0, "/tmp");
    assert!(s.tmpfs[0].1.contains("size=67108864"));
    assert_eq!(s.working_dir, "/tmp");
}

#[test]
fn labels_name_the_manager_host_and_owner() {
    let s = spec_for(&Grants::default()).unwrap();
    assert_eq!(s.labels[MANAGED_LABEL], "true");
    assert_eq!(s.labels[HOST_ID_LABEL], "h1");
    assert_eq!(s.labels[HOST_PID_LABEL], "42");
    assert_eq!(s.labels[HOST_START_LABEL], "7");
    assert_eq!(s.labels[AGENT_LABEL], "alice");
    assert_eq!(s.labels[TASK_LABEL], "t1");
    assert_eq!(s.labels[STRATEGY_LABEL], "per-agent");
    assert_eq!(s.labels[IMAGE_LABEL], "base");
}

#[test]
fn workspace_is_read_only_unless_granted_read_write() {
    let grant = |access| Grants {
        fs: vec![FsGrant {
            host_path: PathBuf::from("/srv/ws"),
            guest_path: "/workspace".into(),
            access,
        }],
        ..Grants::default()
    };
    let ro = spec_for(&grant(FsAccess::Read)).unwrap();
    assert!(ro.mounts[0].read_only);
    assert_eq!(ro.working_dir, "/workspace");
    let rw = spec_for(&grant(FsAccess::ReadWrite)).unwrap();
    assert!(!rw.mounts[0].read_only);
    assert!(spec_for(&grant(FsAccess::None)).unwrap().mounts.is_empty());
}

#[test]
fn relative_or_dotdot_guest_paths_are_refused() {
    let g = Grants {
        fs: vec![FsGrant {
            host_path: PathBuf::from("/srv/ws"),
            guest_path: "/workspace/../etc".into(),
            access: FsAccess::Read,
        }],
        ..Grants::default()
    };
    assert!(spec_for(&g).is_err());
}

#[test]
fn net_grants_become_an_allowlist_of_address_port_pairs() {
    let s = spec_for(&net(&["172.17.0.1:8080", "10.1.0.0/16", "api.example:443"])).unwrap();
    let Network::Allowlist(rules) = &s.network else {
        panic!("expected an allowlist, got {:?}", s.network);
    };
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[0].net.to_string(), "172.17.0.1/32");
    assert_eq!(rules[0].port, Some(8080));
    assert_eq!(rules[1].net.to_string(), "10.1.0.0/16");
    assert_eq!(rules[1].port, None);
    assert_eq!(rules[2].net.to_string(), "93.184.216.34/32");
    assert_eq!(
        s.extra_hosts,
        [("api.example".into(), "93.184.216.34".parse().unwrap())]
    );
}

#[test]
fn a_name_is_no_way_to_a_non_public_address() {
    // Changed with the containment issue: a name resolving to a private
    // address used to be admitted; only an IP or CIDR grant reaches one.
    let err = spec_for(&net(&["db.internal:5432"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("10.0.0.5") && err.contains("private"), "{err}");
    assert!(spec_for(&net(&["10.0.0.5:5432"])).is_ok());
}

#[test]
fn unresolved_names_and_wildcards_are_errors_not_allow() {
    assert!(spec_for(&net(&["other.internal:80"])).is_err());
    assert!(spec_for(&net(&["*.example.com"])).is_err());
}

#[test]
fn allow_all_reaches_public_addresses_and_named_ones() {
    assert_eq!(
        spec_for(&net(&["insecure:allow-all"])).unwrap().network,
        Network::Public(Vec::new())
    );
    let s = spec_for(&net(&[
        "insecure:allow-all",
        "10.0.0.5:5432",
        "db.internal:5432",
    ]))
    .unwrap();
    let Network::Public(rules) = &s.network else {
        panic!("expected public-only, got {:?}", s.network);
    };
    assert_eq!(rules.len(), 1, "only the address grant: {rules:?}");
    assert_eq!(rules[0].net.to_string(), "10.0.0.5/32");
}

#[test]
fn https_grant_means_port_443() {
    let s = spec_for(&net(&["https://172.17.0.1"])).unwrap();
    let Network::Allowlist(rules) = &s.network else {
        panic!("expected an allowlist");
    };
    assert_eq!(rules[0].port, Some(443));
}
