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
                        request.open(&dir, &path)
                    } else {
                        let (d, p) = (dir.clone(), path.clone());
                        tokio::task::spawn_blocking(move || request.open(&d, &p)).await?
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

/// A checked open: the OS options and the mode the descriptor records.
struct Request {
    options: OpenOptions,
    mode: OpenMode,
    must_be_dir: bool,
}

enum Opened {
    Dir(File, OpenMode),
    File(File, OpenMode),
    /// Something else was there at open time (a FIFO, device, socket).
    Special(&'static str),
}

impl Request {
    /// The options for an open with these flags under `dir`, refused as
    /// wasmtime-wasi refuses them (write access under a read-only grant,
    /// sync flags, a directory open that creates or truncates).
    fn new(
        dir: &Dir,
        path_flags: PathFlags,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> Result<Request, ErrorCode> {
        let mut options = OpenOptions::new();
        options._cap_fs_ext_maybe_dir(true);
        let mut mode = OpenMode::empty();
        let mut create = false;
        if oflags.contains(OpenFlags::CREATE) {
            if oflags.contains(OpenFlags::EXCLUSIVE) {
                options.create_new(true);
            } else {
                options.create(true);
            }
            create = true;
            options.write(true);
            mode |= OpenMode::WRITE;
        }
        if oflags.contains(OpenFlags::TRUNCATE) {
            options.truncate(true).write(true);
            mode |= OpenMode::WRITE;
        }
        if flags.contains(DescriptorFlags::READ) {
            options.read(true);
            mode |= OpenMode::READ;
        }
        if flags.contains(DescriptorFlags::WRITE) {
            options.write(true);
            mode |= OpenMode::WRITE;
        } else {
            // As wasmtime-wasi: open for reading so the OS allows it; the
            // permissions refuse other uses later.
            options.read(true);
            mode |= OpenMode::READ;
        }
        options._cap_fs_ext_follow(if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
            FollowSymlinks::Yes
        } else {
            FollowSymlinks::No
        });
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
        if matches!(dir.perms, FsPerms::ReadOnly) && (create || mode.contains(OpenMode::WRITE)) {
            return Err(ErrorCode::NotPermitted);
        }
        // Opening a FIFO without O_NONBLOCK waits for the other end.
        let nonblocking = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits())
            .map_err(|_| ErrorCode::Unsupported)?;
        options.custom_flags(nonblocking);
        Ok(Request {
            options,
            mode,
            must_be_dir,
        })
    }

    /// Opens `path` under `dir` without blocking, and keeps it only if it
    /// is a directory or a regular file.
    fn open(&self, dir: &Dir, path: &str) -> Result<Opened, ErrorCode> {
        let file = cap_primitives::fs::open(&dir.dir, Path::new(path), &self.options)
            .map_err(ErrorCode::from)?;
        let kind = file.metadata().map_err(ErrorCode::from)?.file_type();
        if kind.is_dir() {
            return Ok(Opened::Dir(file, self.mode));
        }
        if self.must_be_dir {
            return Err(ErrorCode::NotDirectory);
        }
        if !kind.is_file() {
            return Ok(Opened::Special(special_kind(&kind)));
        }
        blocking_again(&file).map_err(ErrorCode::from)?;
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
