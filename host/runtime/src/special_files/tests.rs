use super::*;

fn dir(path: &Path, perms: FsPerms) -> Dir {
    Dir::new(File::open(path).unwrap(), perms, OpenMode::READ, true)
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

/// The open itself refuses a FIFO without blocking, whatever the lookup
/// before it saw: the race where a regular file is swapped for a FIFO
/// after the lookup ends here (a blocking open would hang this test).
#[test]
fn the_open_refuses_a_fifo_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    mkfifo(&tmp.path().join("pipe"));
    let d = dir(tmp.path(), FsPerms::ReadWrite);
    let read = Request::new(
        &d,
        PathFlags::empty(),
        OpenFlags::empty(),
        DescriptorFlags::READ,
    )
    .unwrap();
    assert!(matches!(
        read.open(&d, "pipe", None),
        Ok(Opened::Special("FIFO"))
    ));
    // Write-only: with no reader a non-blocking open fails at once.
    let write = Request::new(
        &d,
        PathFlags::empty(),
        OpenFlags::empty(),
        DescriptorFlags::WRITE,
    )
    .unwrap();
    assert!(!matches!(
        write.open(&d, "pipe", None),
        Ok(Opened::File(..) | Opened::Dir(..))
    ));
}

#[test]
fn regular_files_open_blocking_and_directories_open_as_directories() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "x").unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    let d = dir(tmp.path(), FsPerms::ReadWrite);
    let read = Request::new(
        &d,
        PathFlags::empty(),
        OpenFlags::empty(),
        DescriptorFlags::READ,
    )
    .unwrap();
    let Ok(Opened::File(file, mode)) = read.open(&d, "a.txt", None) else {
        panic!("a regular file opens as a file");
    };
    assert_eq!(mode, OpenMode::READ);
    let flags = rustix::fs::fcntl_getfl(&file).unwrap();
    assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
    assert!(matches!(read.open(&d, "sub", None), Ok(Opened::Dir(..))));
    let as_dir = Request::new(
        &d,
        PathFlags::empty(),
        OpenFlags::DIRECTORY,
        DescriptorFlags::READ,
    )
    .unwrap();
    assert!(matches!(
        as_dir.open(&d, "a.txt", None),
        Err(ErrorCode::NotDirectory)
    ));
}

#[test]
fn sandboxing_and_permissions_hold_as_in_wasmtime_wasi() {
    let tmp = tempfile::tempdir().unwrap();
    let inner = tmp.path().join("ws");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(tmp.path().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink("../secret", inner.join("link")).unwrap();
    let d = dir(&inner, FsPerms::ReadOnly);
    let read = Request::new(
        &d,
        PathFlags::SYMLINK_FOLLOW,
        OpenFlags::empty(),
        DescriptorFlags::READ,
    )
    .unwrap();
    assert!(read.open(&d, "../secret", None).is_err());
    assert!(read.open(&d, "link", None).is_err());
    assert!(read.open(&d, "/etc/passwd", None).is_err());
    assert!(matches!(
        Request::new(
            &d,
            PathFlags::empty(),
            OpenFlags::CREATE,
            DescriptorFlags::WRITE
        ),
        Err(ErrorCode::NotPermitted)
    ));
    assert!(matches!(
        Request::new(
            &d,
            PathFlags::empty(),
            OpenFlags::DIRECTORY | OpenFlags::TRUNCATE,
            DescriptorFlags::READ
        ),
        Err(ErrorCode::Invalid)
    ));
}
