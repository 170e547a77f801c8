//! Loading an authenticated compile cache entry on Linux without holding
//! it in fresh process memory.
//!
//! Attack: an entry checked and then changed on disk before its code is
//! mapped (a time-of-check to time-of-use race by anyone who can write
//! the cache file), so the host would execute bytes nobody checked.
//! The entry is copied once, in the kernel, into an anonymous memory
//! file (memfd) that is then sealed against every write, growth and
//! shrinking; only then does the MAC read it, through a read-only
//! mapping. What wasmtime maps is that file, so the code that runs is
//! exactly the bytes whose tag was checked, and nobody, this process
//! included, can change them.
//!
//! Why not read it into memory as elsewhere: a compiled plugin is
//! megabytes, and both that buffer and wasmtime's copy of it are fresh
//! pages, each taking a page fault on first touch. Mapping the sealed
//! file costs a copy into the page cache and nothing per page the code
//! never touches (on a 2-core VM, a start loading the four bundled
//! plugins from the cache went from about 88 to 74 ms of CPU). The copy
//! is `sendfile`, not reads and writes through a buffer: no copy into
//! the buffer (about 0.7 of 28 ms of CPU in that start, measured later).

use std::fs::File;
use std::os::fd::AsRawFd as _;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::{Read, in_memory};

/// Where wasmtime opens the sealed copy by name.
const FDS: &str = "/proc/self/fd";

/// The most one `sendfile` is asked to copy (it may copy less).
const SEND: usize = 1 << 30;

/// Copies the rest of `file` (the compiled bytes after the tag) into a
/// sealed memfd, has `mac` read the sealed copy, checks `tag`, and
/// deserialises the sealed copy. Where memfds are unavailable (a seccomp filter, no
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
    // (the MAC read them after it was sealed), and its seals forbid any
    // later write, growth or shrinking by anyone; the tag is under the
    // host's cache key, so this host produced these bytes with
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
    let copy = File::from(memfd);
    let mut len = 0u64;
    loop {
        // In the kernel, page cache to memfd: no pass through a buffer.
        match rustix::fs::sendfile(&copy, &*file, None, SEND) {
            Ok(0) => break,
            Ok(n) => len += n as u64,
            Err(rustix::io::Errno::INTR) => {}
            // Nothing consumed yet: the caller reads the entry instead.
            Err(e) if len == 0 => return Err(Copy::Memfd(e.into())),
            Err(e) => return Err(Copy::Read(e.into())),
        }
    }
    rustix::fs::fcntl_add_seals(
        &copy,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )
    .map_err(|e| Copy::Read(e.into()))?;
    // Only now, sealed, are the bytes read for the MAC: what it checks
    // is what will be mapped.
    mac_sealed(&copy, len, mac).map_err(Copy::Read)?;
    Ok(Sealed { file: copy, len })
}

/// Feeds the sealed `memfd`'s `len` bytes to `mac`, read through a
/// read-only mapping (no copy out of the memfd's pages).
fn mac_sealed(memfd: &File, len: u64, mac: &mut warden_signing::BulkMac) -> std::io::Result<()> {
    let Ok(size) = usize::try_from(len) else {
        return Err(std::io::Error::other(
            "cache entry larger than the address space",
        ));
    };
    if size == 0 {
        return Ok(());
    }
    // SAFETY: a fresh read-only shared mapping of a memfd sealed against
    // writes, growth and shrinking: its bytes cannot change, nor its
    // length fall below `size`, while the slice is alive; it is unmapped
    // right after.
    #[expect(
        unsafe_code,
        reason = "reading a sealed memfd through a read-only mapping"
    )]
    unsafe {
        let at = rustix::mm::mmap(
            std::ptr::null_mut(),
            size,
            ProtFlags::READ,
            MapFlags::SHARED | MapFlags::POPULATE,
            memfd,
            0,
        )?;
        mac.update(std::slice::from_raw_parts(at.cast::<u8>(), size));
        rustix::mm::munmap(at, size)?;
    }
    Ok(())
}
