//! `wasi:filesystem` changes of directory entries, checked on the entry
//! the OS would change.
//!
//! Attack: reaching a protected or denied file by its entry rather than
//! by opening it, through a name the decision never judged: deleting or
//! renaming `g/config` where `g` is a symlink to `.git`, dropping a hook
//! into `.git/hooks` through a symlinked directory, or hard-linking a
//! denied file to a harmless name (then reading the harmless name). The
//! text names nothing protected; the directory the OS resolves does.
//!
//! Each entry point that creates, removes, renames, links or retimes an
//! entry (`create-directory-at`, `unlink-file-at`, `remove-directory-at`,
//! `rename-at`, `link-at`, `symlink-at`, `set-times-at`) shadows the
//! standard one when the call has a guard: the entry's parent directory
//! is opened with the same sandboxed resolution the operation uses
//! (following links, as it would), the entry's path in the guest's
//! namespace is judged on that opened directory ([`OpenCheck::entry`]),
//! and the standard operation then runs on the opened parent and the
//! final name alone, which it does not follow: a link swapped after the
//! check changes nothing. Without a guard the standard operation runs
//! as it is.

use std::fs::File;
use std::io;
use std::path::Path;

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView as _;
use wasmtime_wasi::filesystem::{Descriptor as FsDescriptor, Dir};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Descriptor, DescriptorType, ErrorCode, HostDescriptor, NewTimestamp, PathFlags,
};

use crate::state::HostState;

/// The `wasi:filesystem/types` instance the standard bindings register.
const TYPES: &str = "wasi:filesystem/types@0.2.12";

/// A path split at its final entry: `parent/name` plus any trailing `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry<'p> {
    pub parent: &'p str,
    pub name: &'p str,
    pub tail: &'p str,
}

impl<'p> Entry<'p> {
    pub fn split(path: &'p str) -> Entry<'p> {
        let trimmed = path.trim_end_matches('/');
        let tail = &path[trimmed.len()..];
        match trimmed.rfind('/') {
            // `/x`: the root is the parent (the sandbox refuses it).
            Some(0) => Entry {
                parent: "/",
                name: &trimmed[1..],
                tail,
            },
            Some(i) => Entry {
                parent: &trimmed[..i],
                name: &trimmed[i + 1..],
                tail,
            },
            None => Entry {
                parent: "",
                name: trimmed,
                tail,
            },
        }
    }

    /// No entry the OS changes: `.`, `..` or nothing (the root).
    pub fn is_dot(&self) -> bool {
        matches!(self.name, "" | "." | "..")
    }

    /// `.`, `..`, nothing, or a name ending in `/`: never a new file.
    pub fn is_special(&self) -> bool {
        self.is_dot() || !self.tail.is_empty()
    }

    /// The parent directory, opened beneath `dir` as the OS resolves it;
    /// `None` when it is `dir` itself.
    pub fn open_parent(&self, dir: &File) -> io::Result<Option<File>> {
        if self.parent.is_empty() {
            return Ok(None);
        }
        cap_primitives::fs::open_dir(dir, Path::new(self.parent)).map(Some)
    }
}

/// The directory an operation runs in and the name it is given there.
struct Target {
    /// The original descriptor, or the parent opened for the check.
    at: u32,
    /// The parent, pushed for the operation's time: deleted afterwards.
    pushed: Option<Resource<Descriptor>>,
    name: String,
}

impl Target {
    fn at(&self) -> Resource<Descriptor> {
        Resource::new_borrow(self.at)
    }

    fn release(self, state: &mut HostState) -> wasmtime::Result<()> {
        if let Some(pushed) = self.pushed {
            state.filesystem().table.delete(pushed)?;
        }
        Ok(())
    }
}

/// Where the operation on `path` under `fd` runs, once the entry passed
/// the call's check: `Err` with the code the guest gets otherwise.
fn resolve(
    state: &mut HostState,
    fd: &Resource<Descriptor>,
    path: &str,
) -> wasmtime::Result<Result<Target, ErrorCode>> {
    let unchecked = Target {
        at: fd.rep(),
        pushed: None,
        name: path.to_owned(),
    };
    let Some(check) = state.open_check.clone() else {
        return Ok(Ok(unchecked));
    };
    let entry = Entry::split(path);
    if entry.is_dot() {
        // The OS refuses to change these; nothing to check.
        return Ok(Ok(unchecked));
    }
    let on_call_thread = state.fs_on_call_thread;
    let fs = state.filesystem();
    let dir = match fs.table.get(fd)? {
        FsDescriptor::Dir(dir) => dir.clone(),
        FsDescriptor::File(_) => return Ok(Err(ErrorCode::NotDirectory)),
    };
    let parent = match entry.open_parent(&dir.dir) {
        Ok(parent) => parent,
        Err(e) => return Ok(Err(ErrorCode::from(e))),
    };
    if let Some(why) = check.entry(parent.as_ref().unwrap_or(&*dir.dir), entry.name) {
        state
            .denials
            .record(format!("changing `{path}` refused: {why}"));
        return Ok(Err(ErrorCode::Access));
    }
    let name = format!("{}{}", entry.name, entry.tail);
    let Some(parent) = parent else {
        return Ok(Ok(Target { name, ..unchecked }));
    };
    let pushed = state.filesystem().table.push(FsDescriptor::Dir(Dir::new(
        parent,
        dir.perms,
        dir.open_mode,
        on_call_thread,
    )))?;
    Ok(Ok(Target {
        at: pushed.rep(),
        pushed: Some(pushed),
        name,
    }))
}

/// The standard operation's result as the guest gets it.
fn settle<T>(result: FsResult<T>) -> wasmtime::Result<Result<T, ErrorCode>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(e) => Ok(Err(e.downcast()?)),
    }
}

/// The checked target of `$path` under `$fd`, or the refusal handed to
/// the guest (returned from the enclosing function).
macro_rules! checked {
    ($state:expr, $fd:expr, $path:expr) => {
        match resolve($state, &$fd, &$path)? {
            Ok(target) => target,
            Err(code) => return Ok(Err(code)),
        }
    };
}

async fn one_entry(
    state: &mut HostState,
    op: Op,
    fd: Resource<Descriptor>,
    path: String,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let t = checked!(state, fd, path);
    let result = {
        let (mut fs, at, name) = (state.filesystem(), t.at(), t.name.clone());
        match op {
            Op::CreateDirectory => HostDescriptor::create_directory_at(&mut fs, at, name).await,
            Op::UnlinkFile => HostDescriptor::unlink_file_at(&mut fs, at, name).await,
            Op::RemoveDirectory => HostDescriptor::remove_directory_at(&mut fs, at, name).await,
        }
    };
    t.release(state)?;
    settle(result)
}

#[derive(Debug, Clone, Copy)]
enum Op {
    CreateDirectory,
    UnlinkFile,
    RemoveDirectory,
}

async fn symlink_at(
    state: &mut HostState,
    fd: Resource<Descriptor>,
    text: String,
    path: String,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    // The link's text is not judged: opening through it is.
    let t = checked!(state, fd, path);
    let result =
        HostDescriptor::symlink_at(&mut state.filesystem(), t.at(), text, t.name.clone()).await;
    t.release(state)?;
    settle(result)
}

/// The two entries of a rename or link, each resolved and checked; the
/// first is released again when the second fails.
fn both(
    state: &mut HostState,
    (fd, path): (&Resource<Descriptor>, &str),
    (new_fd, new): (&Resource<Descriptor>, &str),
) -> wasmtime::Result<Result<(Target, Target), ErrorCode>> {
    let from = match resolve(state, fd, path)? {
        Ok(from) => from,
        Err(code) => return Ok(Err(code)),
    };
    match resolve(state, new_fd, new)? {
        Ok(to) => Ok(Ok((from, to))),
        Err(code) => {
            from.release(state)?;
            Ok(Err(code))
        }
    }
}

/// Releases both entries of a rename or link, then settles its result.
fn release_both(
    state: &mut HostState,
    from: Target,
    to: Target,
    result: FsResult<()>,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    from.release(state)?;
    to.release(state)?;
    settle(result)
}

type RenameArgs = (Resource<Descriptor>, String, Resource<Descriptor>, String);

async fn rename_at(
    state: &mut HostState,
    (fd, old, new_fd, new): RenameArgs,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let (from, to) = match both(state, (&fd, &old), (&new_fd, &new))? {
        Ok(both) => both,
        Err(code) => return Ok(Err(code)),
    };
    let result = HostDescriptor::rename_at(
        &mut state.filesystem(),
        from.at(),
        from.name.clone(),
        to.at(),
        to.name.clone(),
    )
    .await;
    release_both(state, from, to, result)
}

type LinkArgs = (
    Resource<Descriptor>,
    PathFlags,
    String,
    Resource<Descriptor>,
    String,
);

async fn link_at(
    state: &mut HostState,
    (fd, flags, old, new_fd, new): LinkArgs,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    // A second name of a denied or protected file is refused like the
    // file itself: through it, neither would be recognised.
    let (from, to) = match both(state, (&fd, &old), (&new_fd, &new))? {
        Ok(both) => both,
        Err(code) => return Ok(Err(code)),
    };
    let result = HostDescriptor::link_at(
        &mut state.filesystem(),
        from.at(),
        flags,
        from.name.clone(),
        to.at(),
        to.name.clone(),
    )
    .await;
    release_both(state, from, to, result)
}

type TimesArgs = (
    Resource<Descriptor>,
    PathFlags,
    String,
    NewTimestamp,
    NewTimestamp,
);

async fn set_times_at(
    state: &mut HostState,
    (fd, flags, path, atim, mtim): TimesArgs,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let t = checked!(state, fd, path);
    if state.open_check.is_some() && flags.contains(PathFlags::SYMLINK_FOLLOW) {
        // The entry was checked, not what a link there points to: a call
        // with a guard retimes links' targets by opening them instead.
        let stat = HostDescriptor::stat_at(
            &mut state.filesystem(),
            t.at(),
            PathFlags::empty(),
            t.name.clone(),
        )
        .await;
        if matches!(&stat, Ok(s) if s.type_ == DescriptorType::SymbolicLink) {
            t.release(state)?;
            state.denials.record(format!(
                "changing `{path}` refused: it is a symbolic link, and setting times through a \
                 link is refused to calls with denied or protected paths"
            ));
            return Ok(Err(ErrorCode::Access));
        }
    }
    let result = HostDescriptor::set_times_at(
        &mut state.filesystem(),
        t.at(),
        flags,
        t.name.clone(),
        atim,
        mtim,
    )
    .await;
    t.release(state)?;
    settle(result)
}

/// Replaces the standard entry-changing methods in `linker` (added
/// before).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = add(linker);
    linker.allow_shadowing(false);
    added
}

fn add(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    for (name, op) in [
        (
            "[method]descriptor.create-directory-at",
            Op::CreateDirectory,
        ),
        ("[method]descriptor.unlink-file-at", Op::UnlinkFile),
        (
            "[method]descriptor.remove-directory-at",
            Op::RemoveDirectory,
        ),
    ] {
        types.func_wrap_async(
            name,
            move |mut store, (fd, path): (Resource<Descriptor>, String)| {
                Box::new(async move { Ok((one_entry(store.data_mut(), op, fd, path).await?,)) })
            },
        )?;
    }
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, text, path): (Resource<Descriptor>, String, String)| {
            Box::new(async move { Ok((symlink_at(store.data_mut(), fd, text, path).await?,)) })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store, args: RenameArgs| {
            Box::new(async move { Ok((rename_at(store.data_mut(), args).await?,)) })
        },
    )?;
    types.func_wrap_async("[method]descriptor.link-at", |mut store, args: LinkArgs| {
        Box::new(async move { Ok((link_at(store.data_mut(), args).await?,)) })
    })?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store, args: TimesArgs| {
            Box::new(async move { Ok((set_times_at(store.data_mut(), args).await?,)) })
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
