//! `wasi:filesystem` opens of files that can block, refused.
//!
//! Attack: a guest opening a FIFO in its workspace (or a symlink to one,
//! or a device). `open` blocks until a writer comes, inside a host call
//! on the call's thread: no epoch interrupt reaches it and the host's
//! timeout cannot run, so the call hangs past its deadline and holds a
//! thread of the host; two such calls stall a 2-core host, admin API
//! included. A variant races: a regular file at lookup time, swapped for
//! a FIFO by another writer in the same directory before the open.
//!
//! This shadows the standard `open-at` with one that cannot block:
//! 1. the target is looked up with the same sandboxed resolution
//!    (`stat-at`, which does not block on a FIFO), and anything but a
//!    regular file, a directory or a link is refused without opening it
//!    (opening some devices has effects of its own);
//! 2. the open itself is non-blocking (`O_NONBLOCK`, which makes opening
//!    a FIFO return at once), through `cap-primitives`' sandboxed
//!    resolution as in the standard implementation, and the opened file
//!    is checked again (`fstat`): whatever was swapped in between, only a
//!    regular file or a directory is handed to the guest, with
//!    `O_NONBLOCK` cleared again.
//!
//! The same open checks the call's denied and protected paths on the
//! file it reaches ([`crate::open_checks`]).
//!
//! Refusals are `access` with a reason in the call's denial log. The
//! flags, permission checks and descriptors mirror wasmtime-wasi's own
//! `open-at`.

use std::fs::File;
use std::io;
use std::path::Path;

use cap_primitives::fs::{FollowSymlinks, OpenOptions, OpenOptionsExt as _};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView as _;
use wasmtime_wasi::filesystem::{Descriptor as FsDescriptor, Dir, File as WasiFile};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::{FsPerms, OpenMode};

use crate::fs_entries::Entry;
use crate::open_checks::{Intent, OpenCheck};
use crate::state::HostState;

/// The `wasi:filesystem/types` instance the standard bindings register.
const TYPES: &str = "wasi:filesystem/types@0.2.12";

type OpenArgs = (
    Resource<Descriptor>,
    PathFlags,
    String,
    OpenFlags,
    DescriptorFlags,
);

/// Replaces the standard `[method]descriptor.open-at` in `linker` (added
/// before).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = linker.instance(TYPES).and_then(|mut types| {
        types.func_wrap_async(
            "[method]descriptor.open-at",
            |mut store, (fd, path_flags, path, oflags, flags): OpenArgs| {
                Box::new(async move {
                    let state = store.data_mut();
                    let probe = Resource::<Descriptor>::new_borrow(fd.rep());
                    let mut fs = state.filesystem();
                    if let Ok(stat) =
                        HostDescriptor::stat_at(&mut fs, probe, path_flags, path.clone()).await
                        && let Some(kind) = blocking_kind(stat.type_)
                    {
                        state.denials.record(refusal(&path, kind));
                        return Ok((Err(ErrorCode::Access),));
                    }
                    let on_call_thread = state.fs_on_call_thread;
                    let check = state.open_check.clone();
                    let fs = state.filesystem();
                    let dir = match fs.table.get(&fd)? {
                        FsDescriptor::Dir(dir) => dir.clone(),
                        FsDescriptor::File(_) => return Ok((Err(ErrorCode::NotDirectory),)),
                    };
                    let request = match Request::new(&dir, path_flags, oflags, flags) {
                        Ok(request) => request,
                        Err(code) => return Ok((Err(code),)),
                    };
                    let opened = if on_call_thread {
                        request.open(&dir, &path, check.as_ref())
                    } else {
                        let (d, p) = (dir.clone(), path.clone());
                        tokio::task::spawn_blocking(move || request.open(&d, &p, check.as_ref()))
                            .await?
                    };
                    let descriptor = match opened {
                        Ok(Opened::Dir(file, mode)) => {
                            FsDescriptor::Dir(Dir::new(file, dir.perms, mode, on_call_thread))
                        }
                        Ok(Opened::File(file, mode)) => {
                            FsDescriptor::File(WasiFile::new(file, dir.perms, mode, on_call_thread))
                        }
                        Ok(Opened::Special(kind)) => {
                            state.denials.record(refusal(&path, kind));
                            return Ok((Err(ErrorCode::Access),));
                        }
                        Ok(Opened::Refused(why)) => {
                            state
                                .denials
                                .record(format!("opening `{path}` refused: {why}"));
                            return Ok((Err(ErrorCode::Access),));
                        }
                        Err(code) => return Ok((Err(code),)),
                    };
                    Ok((Ok(state.filesystem().table.push(descriptor)?),))
                })
            },
        )
    });
    linker.allow_shadowing(false);
    added
}

fn refusal(path: &str, kind: &str) -> String {
    format!(
        "opening `{path}` refused: it is a {kind}, which can block a call past its deadline; \
         tools get regular files and directories only"
    )
}

/// What kind of file `t` is, if opening it can block.
fn blocking_kind(t: DescriptorType) -> Option<&'static str> {
    match t {
        DescriptorType::Fifo => Some("FIFO"),
        DescriptorType::CharacterDevice => Some("character device"),
        DescriptorType::BlockDevice => Some("block device"),
        DescriptorType::Socket => Some("socket"),
        // WASI reports a FIFO as unknown: anything that is not a regular
        // file, a directory or a link is refused.
        DescriptorType::Unknown => Some("special file (a FIFO, device or socket)"),
        DescriptorType::Directory | DescriptorType::RegularFile | DescriptorType::SymbolicLink => {
            None
        }
    }
}

/// A checked open: the flags it asks for and the mode the descriptor
/// records.
struct Request {
    mode: OpenMode,
    create: Create,
    truncate: bool,
    follow: FollowSymlinks,
    must_be_dir: bool,
    nonblocking: i32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Create {
    No,
    IfMissing,
    New,
}

enum Opened {
    Dir(File, OpenMode),
    File(File, OpenMode),
    /// Something else was there at open time (a FIFO, device, socket).
    Special(&'static str),
    /// A denied or protected path (see [`crate::open_checks`]), and why.
    Refused(String),
}

impl Request {
    /// The open asked for with these flags under `dir`, refused as
    /// wasmtime-wasi refuses them (write access under a read-only grant,
    /// sync flags, a directory open that creates or truncates).
    fn new(
        dir: &Dir,
        path_flags: PathFlags,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> Result<Request, ErrorCode> {
        let mut mode = OpenMode::empty();
        let mut create = Create::No;
        if oflags.contains(OpenFlags::CREATE) {
            create = if oflags.contains(OpenFlags::EXCLUSIVE) {
                Create::New
            } else {
                Create::IfMissing
            };
            mode |= OpenMode::WRITE;
        }
        let truncate = oflags.contains(OpenFlags::TRUNCATE);
        if truncate || flags.contains(DescriptorFlags::WRITE) {
            mode |= OpenMode::WRITE;
        }
        // As wasmtime-wasi: without the write flag, open for reading so
        // the OS allows it; the permissions refuse other uses later.
        if flags.contains(DescriptorFlags::READ) || !flags.contains(DescriptorFlags::WRITE) {
            mode |= OpenMode::READ;
        }
        let follow = if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
            FollowSymlinks::Yes
        } else {
            FollowSymlinks::No
        };
        if flags.intersects(
            DescriptorFlags::FILE_INTEGRITY_SYNC
                | DescriptorFlags::DATA_INTEGRITY_SYNC
                | DescriptorFlags::REQUESTED_WRITE_SYNC,
        ) {
            return Err(ErrorCode::Unsupported);
        }
        let must_be_dir = oflags.contains(OpenFlags::DIRECTORY);
        if must_be_dir
            && oflags.intersects(OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE)
        {
            return Err(ErrorCode::Invalid);
        }
        if matches!(dir.perms, FsPerms::ReadOnly) && mode.contains(OpenMode::WRITE) {
            return Err(ErrorCode::NotPermitted);
        }
        // Opening a FIFO without O_NONBLOCK waits for the other end.
        let nonblocking = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits())
            .map_err(|_| ErrorCode::Unsupported)?;
        Ok(Request {
            mode,
            create,
            truncate,
            follow,
            must_be_dir,
            nonblocking,
        })
    }

    /// The OS options of this open, creating and truncating as given.
    fn options(&self, create: Create, truncate: bool, follow: FollowSymlinks) -> OpenOptions {
        let mut options = OpenOptions::new();
        options._cap_fs_ext_maybe_dir(true);
        options
            .read(self.mode.contains(OpenMode::READ))
            .write(self.mode.contains(OpenMode::WRITE))
            .truncate(truncate);
        match create {
            Create::No => {}
            Create::IfMissing => {
                options.create(true);
            }
            Create::New => {
                options.create_new(true);
            }
        }
        options._cap_fs_ext_follow(follow);
        options.custom_flags(self.nonblocking);
        options
    }

    /// Opens `path` under `dir` without blocking, and keeps it only if it
    /// is a directory or a regular file that `check` (the call's denied
    /// and protected paths, if any) lets through.
    fn open(&self, dir: &Dir, path: &str, check: Option<&OpenCheck>) -> Result<Opened, ErrorCode> {
        let Some(check) = check else {
            let options = self.options(self.create, self.truncate, self.follow);
            let file = cap_primitives::fs::open(&dir.dir, Path::new(path), &options)?;
            return self.hand_over(file, None);
        };
        if !self.mode.contains(OpenMode::WRITE) {
            let options = self.options(Create::No, false, self.follow);
            let file = cap_primitives::fs::open(&dir.dir, Path::new(path), &options)?;
            return self.hand_over(file, Some((check, Intent::Read)));
        }
        // An open that writes: nothing may land (a truncation, a new
        // file) before the file it reaches is checked. An existing file
        // is opened as it is, checked, then truncated; a missing one is
        // created beneath its checked parent, following no link.
        let options = self.options(Create::No, false, self.follow);
        match cap_primitives::fs::open(&dir.dir, Path::new(path), &options) {
            Ok(file) => {
                if self.create == Create::New {
                    return Err(ErrorCode::Exist);
                }
                let opened = self.hand_over(file, Some((check, Intent::Change)))?;
                if self.truncate
                    && let Opened::File(file, _) = &opened
                {
                    file.set_len(0)?;
                }
                Ok(opened)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.create != Create::No => {
                self.create_beneath(dir, path, check)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Creates `path` in its parent directory (opened as the OS resolves
    /// it), once the new entry's path passed `check`.
    fn create_beneath(
        &self,
        dir: &Dir,
        path: &str,
        check: &OpenCheck,
    ) -> Result<Opened, ErrorCode> {
        let entry = Entry::split(path);
        if entry.is_special() {
            // `.`, `..` or a trailing `/`: never a new regular file.
            return Err(ErrorCode::IsDirectory);
        }
        let parent = entry.open_parent(&dir.dir)?;
        let base = parent.as_ref().unwrap_or(&*dir.dir);
        if let Some(why) = check.entry(base, entry.name) {
            return Ok(Opened::Refused(why));
        }
        let options = self.options(self.create, self.truncate, FollowSymlinks::No);
        let file = cap_primitives::fs::open(base, Path::new(entry.name), &options)?;
        self.hand_over(file, Some((check, Intent::Change)))
    }

    /// `file` as the guest gets it: a directory or a regular file that
    /// passed `check`, with `O_NONBLOCK` cleared again.
    fn hand_over(
        &self,
        file: File,
        check: Option<(&OpenCheck, Intent)>,
    ) -> Result<Opened, ErrorCode> {
        let meta = file.metadata()?;
        let kind = meta.file_type();
        if !kind.is_dir() {
            if self.must_be_dir {
                return Err(ErrorCode::NotDirectory);
            }
            if !kind.is_file() {
                return Ok(Opened::Special(special_kind(&kind)));
            }
        }
        if let Some((check, intent)) = check
            && let Some(why) = check.opened(&file, &meta, intent)
        {
            return Ok(Opened::Refused(why));
        }
        if kind.is_dir() {
            return Ok(Opened::Dir(file, self.mode));
        }
        blocking_again(&file)?;
        Ok(Opened::File(file, self.mode))
    }
}

fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_fifo() {
        "FIFO"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else {
        "special file (a FIFO, device or socket)"
    }
}

/// Clears `O_NONBLOCK` on an opened regular file, so it behaves exactly
/// as the standard open would have left it.
fn blocking_again(file: &File) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    rustix::fs::fcntl_setfl(file, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(test)]
mod tests;
