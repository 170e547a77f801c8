use std::fs::File;
use std::sync::Arc;

use warden_api::{Effects, FsAccess, FsGrant, Grants, PathGuard, RequestedCapabilities};

use super::{Intent, OpenCheck};

#[derive(Debug)]
struct Guard {
    approved: bool,
}

impl PathGuard for Guard {
    fn denied(&self, path: &str) -> Option<String> {
        path.starts_with("/ws/secrets")
            .then(|| format!("{path} denied"))
    }
    fn protected(&self, path: &str) -> Option<String> {
        path.starts_with("/ws/.git")
            .then(|| format!("{path} protected"))
    }
    fn effects(&self) -> Effects {
        if self.approved {
            Effects::Approved
        } else {
            Effects::Unattended
        }
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    check: OpenCheck,
    approved: OpenCheck,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("secrets/key"), "k").unwrap();
    std::fs::write(dir.path().join(".git/config"), "c").unwrap();
    std::fs::write(dir.path().join("notes"), "n").unwrap();
    let grants = Grants {
        fs: vec![FsGrant {
            host_path: dir.path().to_path_buf(),
            guest_path: "/ws".into(),
            access: FsAccess::ReadWrite,
        }],
        ..Default::default()
    };
    let requested = RequestedCapabilities {
        filesystem: FsAccess::ReadWrite,
        ..Default::default()
    };
    let check = |approved| {
        let guard: Arc<dyn PathGuard> = Arc::new(Guard { approved });
        OpenCheck::new(guard, &grants, &requested)
    };
    Fixture {
        check: check(false),
        approved: check(true),
        dir,
    }
}

fn opened(check: &OpenCheck, file: &File, intent: Intent) -> Option<String> {
    check.opened(file, &file.metadata().unwrap(), intent)
}

#[test]
fn the_file_opened_is_judged_by_its_guest_path() {
    let f = fixture();
    let key = File::open(f.dir.path().join("secrets/key")).unwrap();
    let why = opened(&f.check, &key, Intent::Read).unwrap();
    assert!(why.contains("/ws/secrets/key denied"), "{why}");
    // Approval does not lift a denial.
    assert!(opened(&f.approved, &key, Intent::Read).is_some());
    let config = File::open(f.dir.path().join(".git/config")).unwrap();
    assert_eq!(opened(&f.check, &config, Intent::Read), None);
    let why = opened(&f.check, &config, Intent::Change).unwrap();
    assert!(why.contains("/ws/.git/config protected"), "{why}");
    assert_eq!(opened(&f.approved, &config, Intent::Change), None);
    let notes = File::open(f.dir.path().join("notes")).unwrap();
    assert_eq!(opened(&f.check, &notes, Intent::Change), None);
}

#[test]
fn a_link_is_judged_by_its_target() {
    let f = fixture();
    std::os::unix::fs::symlink("secrets", f.dir.path().join("s")).unwrap();
    let secrets = File::open(f.dir.path().join("s")).unwrap();
    assert!(opened(&f.check, &secrets, Intent::Read).is_some());
    std::fs::hard_link(f.dir.path().join("notes"), f.dir.path().join("n2")).unwrap();
    let n2 = File::open(f.dir.path().join("n2")).unwrap();
    let why = opened(&f.check, &n2, Intent::Read).unwrap();
    assert!(why.contains("`/ws/n2` has 2 names"), "{why}");
}

#[test]
fn an_entry_is_judged_in_the_directory_the_os_resolved() {
    let f = fixture();
    std::os::unix::fs::symlink(".git", f.dir.path().join("g")).unwrap();
    let g = File::open(f.dir.path().join("g")).unwrap();
    let why = f.check.entry(&g, "hooks").unwrap();
    assert!(why.contains("/ws/.git/hooks protected"), "{why}");
    assert_eq!(f.approved.entry(&g, "hooks"), None);
    let root = File::open(f.dir.path()).unwrap();
    assert_eq!(f.check.entry(&root, "new"), None);
    assert!(f.approved.entry(&root, "secrets").is_some());
}

#[test]
fn a_file_outside_every_grant_is_refused() {
    let f = fixture();
    let other = tempfile::NamedTempFile::new().unwrap();
    let why = opened(&f.check, other.as_file(), Intent::Read).unwrap();
    assert!(why.contains("under no granted directory"), "{why}");
}
