//! `wasi:filesystem` opens of files that can block, refused.
//!
//! Attack: a guest opening a FIFO in its workspace (or a symlink to one,
//! or a device). `open` blocks until a writer comes, inside a host call
//! on the call's thread: no epoch interrupt reaches it and the host's
//! timeout cannot run, so the call hangs past its deadline and holds a
//! thread of the host; two such calls stall a 2-core host, admin API
//! included. This shadows the standard `open-at`: the target is looked up
//! first with the same sandboxed resolution (`stat-at`, which does not
//! block on a FIFO), and anything but a regular file, a directory or a
//! link (a FIFO, character or block device, socket) is refused with `access` and a reason in the call's denial log. Regular
//! files and directories open as before, on the call's thread, at no
//! extra cost beyond that lookup.
//!
//! What this does not cover: a file swapped for a FIFO between the lookup
//! and the open by a writer racing in the same directory (another tool
//! sharing the workspace).

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView as _;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

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
                        state.denials.record(format!(
                            "opening `{path}` refused: it is a {kind}, which can block a call past \
                             its deadline; tools get regular files and directories only"
                        ));
                        return Ok((Err(ErrorCode::Access),));
                    }
                    let mut fs = state.filesystem();
                    match HostDescriptor::open_at(&mut fs, fd, path_flags, path, oflags, flags)
                        .await
                    {
                        Ok(opened) => Ok((Ok(opened),)),
                        Err(e) => Ok((Err(e.downcast()?),)),
                    }
                })
            },
        )
    });
    linker.allow_shadowing(false);
    added
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
