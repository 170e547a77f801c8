//! Writing files so that a reader or a killed writer never sees half of one.

use std::path::{Path, PathBuf};

use crate::RegistryError;

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames
/// it over `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    use std::io::Write as _;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}-{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RegistryError::store(path, e)
    })
}
