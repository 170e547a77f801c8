//! A bridged server's stdin and stdout as two FIFOs Warden owns, so its
//! messages go straight between Warden and the server's process instead
//! of through the engine's attach stream (Warden to the engine, the
//! engine to its shim, the shim to the process, and back: three copies
//! and three wake-ups each way, most of a containerised call's cost).
//!
//! Attack: another local user or process, or another server, reading or
//! injecting a session's messages. The FIFOs live in a directory of
//! their own inside a fresh private directory (mode 0700, Warden's), so
//! nobody on the host but Warden (and root) reaches them; that one inner
//! directory is bind-mounted read-only into this server's container
//! only, where it can open them (mode 0666, the container's user is not
//! Warden's) but create nothing. The server can only talk to itself
//! through them, which it can do anyway.
//!
//! The server's process is started by `/bin/sh` from the image, given
//! the argv as positional parameters (never as shell text), which opens
//! the FIFOs onto its stdin and stdout and `exec`s the server.
//!
//! A session's directory goes with the session. The name of each carries
//! its host process (pid and start time), so the directories a killed
//! host left are found and removed by the next host's reconciliation
//! ([`remove_orphans`]), as its containers are.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, FileType, Mode, OFlags, mknodat};
use tokio::net::unix::pipe;

use crate::SandboxError;
use crate::spec::HostIdentity;

/// What every session directory's name starts with.
const PREFIX: &str = "warden-stdio-";

/// Where the FIFOs appear inside the container.
pub const MOUNT: &str = "/run/warden-stdio";

/// The shell text that connects the FIFOs and runs the server: the argv
/// comes as `"$@"`, so no part of it is ever read as shell.
const CONNECT: &str = "exec \"$@\" </run/warden-stdio/in >/run/warden-stdio/out";

/// One session's FIFOs; the directory goes when this is dropped.
#[derive(Debug)]
pub struct Pipes {
    _private: tempfile::TempDir,
    dir: PathBuf,
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Docker {
        operation: "connect a bridged server's stdio".into(),
        reason: format!("{what} {}: {e}", path.display()),
    }
}

impl Pipes {
    /// Makes the private directory (named for `host`), the shared one
    /// inside it, and the two FIFOs.
    pub fn new(host: &HostIdentity) -> Result<Pipes, SandboxError> {
        let private = tempfile::Builder::new()
            .prefix(&owner_prefix(host))
            .tempdir()
            .map_err(|e| io_err("creating", &std::env::temp_dir(), e))?;
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io_err("restricting", private.path(), e))?;
        let dir = private.path().join("io");
        std::fs::create_dir(&dir).map_err(|e| io_err("creating", &dir, e))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711))
            .map_err(|e| io_err("opening", &dir, e))?;
        for name in ["in", "out"] {
            let path = dir.join(name);
            mknodat(CWD, &path, FileType::Fifo, Mode::from_raw_mode(0o600), 0)
                .map_err(|e| io_err("making the FIFO", &path, e))?;
            // Set after the umask had its say.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))
                .map_err(|e| io_err("opening", &path, e))?;
        }
        Ok(Pipes {
            _private: private,
            dir,
        })
    }

    /// The directory to mount at [`MOUNT`].
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The stdout FIFO, for [`end_output`].
    pub fn out(&self) -> PathBuf {
        self.dir.join("out")
    }

    /// Warden's ends, opened before the server starts (so its opens do
    /// not wait): stdin for writing (held read-write, so it opens with
    /// no reader yet and the server sees end of input only once Warden
    /// closes it), stdout for reading (it ends once every writer is gone,
    /// not before the first came).
    pub fn open(&self) -> Result<(pipe::Sender, pipe::Receiver), SandboxError> {
        let input = self.dir.join("in");
        let stdin = pipe::OpenOptions::new()
            .read_write(true)
            .open_sender(&input)
            .map_err(|e| io_err("opening", &input, e))?;
        let output = self.out();
        let stdout = pipe::OpenOptions::new()
            .open_receiver(&output)
            .map_err(|e| io_err("opening", &output, e))?;
        Ok((stdin, stdout))
    }
}

/// Tells the reader of stdout FIFO `out` that no writer will come any
/// more (the container is gone, perhaps before its server opened
/// stdout): a writer that comes and goes, after which the reader sees end
/// of file once it drained what is buffered. Nothing happens when the
/// session's directory is gone already.
pub fn end_output(out: &Path) {
    use std::os::unix::fs::OpenOptionsExt as _;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open(out);
}

/// How a session directory's name starts: the prefix, then its host's
/// pid and start time.
fn owner_prefix(host: &HostIdentity) -> String {
    format!("{PREFIX}{}-{}-", host.pid, host.start)
}

/// The host (pid, start time) a session directory's `name` carries, if
/// it is one ([`owner_prefix`]).
fn owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(PREFIX)?.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    Some((pid, start))
}

/// Removes the session directories in the temporary directory that are
/// this user's and whose host process is gone (`start_of` gives a live
/// process's start time); returns how many.
pub fn remove_orphans(start_of: impl Fn(u32) -> Option<u64>) -> usize {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    let me = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(owner) else {
            continue;
        };
        // A real directory of this user's, never a link to elsewhere.
        let ours = entry
            .path()
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours
            && crate::reconcile::is_gone(pid, start, &start_of)
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// The container's entrypoint: `/bin/sh` connecting the FIFOs, then the
/// server's `argv`.
pub fn entrypoint(argv: &[String]) -> Result<Vec<String>, SandboxError> {
    match argv.first() {
        None => Err(SandboxError::Grant {
            reason: "the server has no command: give `command`, or an image with an entrypoint or command".into(),
        }),
        Some(program) if program.starts_with('-') => Err(SandboxError::Grant {
            reason: format!("the server's program {program:?} starts with '-'"),
        }),
        Some(_) => Ok(["/bin/sh", "-c", CONNECT, "warden-stdio"]
            .into_iter()
            .map(str::to_owned)
            .chain(argv.iter().cloned())
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argv_is_never_shell_text() {
        let argv = vec!["node".to_owned(), "$(rm -rf /); x".to_owned()];
        let e = entrypoint(&argv).unwrap();
        assert_eq!(&e[..4], ["/bin/sh", "-c", CONNECT, "warden-stdio"]);
        assert_eq!(&e[4..], &argv[..], "positional parameters, as given");
        assert!(entrypoint(&[]).is_err());
        assert!(entrypoint(&["-c".to_owned(), "id".to_owned()]).is_err());
    }

    #[test]
    fn only_warden_reaches_the_fifos_on_the_host() {
        let p = Pipes::new(&crate::reconcile::this_host()).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let private = p.dir().parent().unwrap();
        assert_eq!(mode(private), 0o700);
        assert_eq!(mode(p.dir()), 0o711);
        for name in ["in", "out"] {
            let meta = std::fs::metadata(p.dir().join(name)).unwrap();
            use std::os::unix::fs::FileTypeExt as _;
            assert!(meta.file_type().is_fifo());
        }
        let dir = private.to_path_buf();
        drop(p);
        assert!(!dir.exists(), "removed with the session");
    }

    #[tokio::test]
    async fn output_ends_only_once_a_writer_came_and_went() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let p = Pipes::new(&crate::reconcile::this_host()).unwrap();
        let (mut stdin, mut stdout) = p.open().unwrap();
        // No writer yet: the reader waits rather than see end of file.
        let mut buf = [0u8; 8];
        let early =
            tokio::time::timeout(std::time::Duration::from_millis(100), stdout.read(&mut buf))
                .await;
        assert!(early.is_err(), "{early:?}");
        // The server's ends, as the shell opens them.
        let mut server_in = std::fs::File::open(p.dir().join("in")).unwrap();
        let mut server_out = std::fs::OpenOptions::new()
            .write(true)
            .open(p.dir().join("out"))
            .unwrap();
        stdin.write_all(b"ping\n").await.unwrap();
        let mut line = [0u8; 5];
        std::io::Read::read_exact(&mut server_in, &mut line).unwrap();
        assert_eq!(&line, b"ping\n");
        std::io::Write::write_all(&mut server_out, b"pong\n").unwrap();
        let n = stdout.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"pong\n");
        // Closing Warden's stdin is the server's end of input.
        drop(stdin);
        assert_eq!(std::io::Read::read(&mut server_in, &mut buf).unwrap(), 0);
        drop(server_out);
        assert_eq!(stdout.read(&mut buf).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_server_that_never_opened_stdout_ends_it_when_its_container_goes() {
        use tokio::io::AsyncReadExt as _;
        let p = Pipes::new(&crate::reconcile::this_host()).unwrap();
        let (_stdin, mut stdout) = p.open().unwrap();
        end_output(&p.out());
        let mut buf = [0u8; 8];
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), stdout.read(&mut buf))
            .await
            .expect("end of file, not a wait");
        assert_eq!(n.unwrap(), 0);
    }

    #[test]
    fn a_gone_hosts_directories_are_removed_a_live_hosts_kept() {
        let me = crate::reconcile::this_host();
        let live = Pipes::new(&me).unwrap();
        let gone_host = HostIdentity {
            id: "gone".into(),
            pid: me.pid,
            start: me.start + 1,
        };
        let gone = Pipes::new(&gone_host).unwrap();
        let gone_dir = gone.dir().parent().unwrap().to_path_buf();
        // Left behind as a killed host leaves it.
        std::mem::forget(gone);
        let removed = remove_orphans(crate::reconcile::process_start);
        assert!(removed >= 1, "{removed}");
        assert!(!gone_dir.exists(), "the gone host's directory is removed");
        assert!(live.dir().exists(), "this host's is kept");
    }
}
