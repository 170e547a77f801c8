//! Loading an authenticated compile cache entry on Linux without holding
//! it in fresh process memory.
//!
//! Attack: an entry checked and then changed on disk before its code is
//! mapped (a time-of-check to time-of-use race by anyone who can write
//! the cache file), so the host would execute bytes nobody checked.
//! The entry is copied once, through a small buffer that the MAC reads
//! as it goes, into an anonymous memory file (memfd) that is then
//! sealed against every write, growth and shrinking. What wasmtime maps
//! is that file, so the code that runs is exactly the bytes whose tag
//! was checked, and nobody, this process included, can change them.
//!
//! Why not read it into memory as elsewhere: a compiled plugin is
//! megabytes, and both that buffer and wasmtime's copy of it are fresh
//! pages, each taking a page fault on first touch. Mapping the sealed
//! file costs a copy into the page cache and nothing per page the code
//! never touches (on a 2-core VM, a start loading the four bundled
//! plugins from the cache went from about 88 to 74 ms of CPU).

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;

use rustix::fs::{MemfdFlags, SealFlags};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::{Read, in_memory};

/// Where wasmtime opens the sealed copy by name.
const FDS: &str = "/proc/self/fd";

/// The copy's buffer: large enough that the copy is a few hundred system
/// calls, small enough to be memory the allocator already touched.
const CHUNK: usize = 64 << 10;

/// Copies the rest of `file` (the compiled bytes after the tag) into a
/// sealed memfd while `mac` reads it, checks `tag`, and deserialises
/// the sealed copy. Where memfds are unavailable (a seccomp filter, no
/// `/proc`), the bytes are read into memory and checked there instead.
pub(super) fn load(
    engine: &Engine,
    file: &mut File,
    mut mac: warden_signing::BulkMac,
    tag: &[u8],
) -> Read {
    if !std::path::Path::new(FDS).is_dir() {
        return in_memory(engine, file, mac, tag);
    }
    let sealed = match copy_sealed(file, &mut mac) {
        Ok(sealed) => sealed,
        Err(Copy::Read(e)) => return Read::Unreadable(e),
        Err(Copy::Memfd(e)) => {
            tracing::debug!(error = %e, "no sealed memory file; reading the cache entry into memory");
            return in_memory(engine, file, mac, tag);
        }
    };
    if sealed.len == 0 || !mac.verify(tag) {
        return Read::Forged;
    }
    let path = format!("{FDS}/{}", sealed.file.as_raw_fd());
    // SAFETY: the memfd holds exactly the bytes the tag was checked over
    // (they were written from the buffer the MAC read), and its seals
    // forbid any later write, growth or shrinking by anyone; the tag is
    // under the host's cache key, so this host produced these bytes with
    // `Component::serialize` on an engine with the same compatibility
    // fingerprint (it is in the name the tag covers).
    #[expect(
        unsafe_code,
        reason = "deserialising our own authenticated, sealed compile cache entry"
    )]
    let loaded = unsafe { Component::deserialize_file(engine, &path) };
    loaded.map_or_else(Read::Unusable, Read::Loaded)
}

struct Sealed {
    file: File,
    len: u64,
}

enum Copy {
    /// Reading the entry failed.
    Read(std::io::Error),
    /// No memfd could be made or sealed; nothing was consumed from the
    /// entry yet.
    Memfd(std::io::Error),
}

fn copy_sealed(file: &mut File, mac: &mut warden_signing::BulkMac) -> Result<Sealed, Copy> {
    let memfd = rustix::fs::memfd_create(
        "warden-compiled-plugin",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(|e| Copy::Memfd(e.into()))?;
    let mut copy = File::from(memfd);
    let mut buf = vec![0u8; CHUNK];
    let mut len = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Copy::Read(e)),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        mac.update(chunk);
        copy.write_all(chunk).map_err(Copy::Read)?;
        len += n as u64;
    }
    rustix::fs::fcntl_add_seals(
        &copy,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )
    .map_err(|e| Copy::Read(e.into()))?;
    Ok(Sealed { file: copy, len })
}
