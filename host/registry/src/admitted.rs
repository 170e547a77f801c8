//! Admitting and loading as two steps: a component that passed admission
//! is known by its signed manifest (its name and tools) before any of it is
//! compiled, so a host can publish its tools at once and load the code
//! behind them after; and loading, which is CPU work, runs on the blocking
//! pool at most as many at once as there are cores, in the order given, so
//! the first plugins named are the first ready.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use warden_api::Manifest;
use warden_runtime::{Runtime, RuntimeError};

use crate::registry::Candidate;
use crate::{Admission, AdmissionPolicy, RegistryError, read_signature};

/// A component that passed admission and is not loaded yet.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub path: PathBuf,
    pub admission: Admission,
    /// The manifest the signature covers: what loading then checks the
    /// code against.
    pub manifest: Manifest,
    bytes: Vec<u8>,
    signature: Option<String>,
}

impl Admitted {
    /// Reads a component file and its signature and admits them under
    /// `policy`; nothing of the component runs.
    pub fn read(policy: &AdmissionPolicy, path: &Path) -> Result<Admitted, RegistryError> {
        let (bytes, admission) = policy.admit_file(path)?;
        let signature = read_signature(path)?.map(|s| s.to_text());
        let section = warden_runtime::manifest_section(&bytes).map_err(|reason| {
            RegistryError::NotAPlugin {
                path: path.to_path_buf(),
                reason,
            }
        })?;
        let manifest = Manifest::from_json(section).map_err(|e| RegistryError::Load {
            path: path.to_path_buf(),
            source: RuntimeError::Manifest {
                path: path.to_path_buf(),
                reason: e.to_string(),
            },
        })?;
        Ok(Admitted {
            path: path.to_path_buf(),
            admission,
            manifest,
            bytes,
            signature,
        })
    }

    pub fn name(&self) -> &str {
        &self.manifest.plugin.name
    }

    /// Loads the component (compiling it, or from the compile cache) from
    /// exactly the bytes that were admitted.
    pub async fn load(self, runtime: &Runtime) -> Result<Candidate, RegistryError> {
        let plugin = runtime
            .load_admitted(&self.path, &self.bytes, &self.admission.digest)
            .await
            .map_err(|source| RegistryError::Load {
                path: self.path.clone(),
                source,
            })?;
        Ok(Candidate {
            path: self.path,
            plugin,
            admission: self.admission,
            bytes: self.bytes,
            signature: self.signature,
        })
    }
}

/// [`Admitted::read`] for each of `paths`, on the blocking pool (hashing
/// and signature checks); the results come in the order of `paths`.
pub async fn admit_files(
    policy: &AdmissionPolicy,
    paths: Vec<PathBuf>,
) -> Vec<Result<Admitted, RegistryError>> {
    let policy = policy.clone();
    let items = paths.into_iter().map(|p| (p.clone(), p)).collect();
    in_order(items, move |path| Admitted::read(&policy, &path), |_, _| {}).await
}

/// [`Admitted::load`] for each of `admitted`; `done(i, result)` is told
/// as each one ends, and the results come in the order given.
pub async fn load_admitted(
    runtime: &Runtime,
    admitted: Vec<Admitted>,
    done: impl FnMut(usize, &Result<Candidate, RegistryError>),
) -> Vec<Result<Candidate, RegistryError>> {
    let runtime = runtime.clone();
    in_order(
        admitted.into_iter().map(|a| (a.path.clone(), a)).collect(),
        move |a| tokio::runtime::Handle::current().block_on(a.load(&runtime)),
        done,
    )
    .await
}

/// Runs `work` on each item on the blocking pool (the protocol and the
/// admin API keep their worker threads meanwhile), at most as many at once
/// as there are cores, starting them in the order given; `done` is told of
/// each result as it comes. Each item comes with the file it is about,
/// which a failure that is not `work`'s own names.
pub(crate) async fn in_order<T, R>(
    items: Vec<(PathBuf, T)>,
    work: impl Fn(T) -> Result<R, RegistryError> + Send + Sync + 'static,
    mut done: impl FnMut(usize, &Result<R, RegistryError>),
) -> Vec<Result<R, RegistryError>>
where
    T: Send + 'static,
    R: Send + 'static,
{
    let count = items.len();
    let workers = std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .min(count);
    let paths: Vec<PathBuf> = items.iter().map(|(p, _)| p.clone()).collect();
    let queue = Arc::new(Mutex::new(
        items
            .into_iter()
            .map(|(_, item)| item)
            .enumerate()
            .collect::<VecDeque<_>>(),
    ));
    let work = Arc::new(work);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..workers {
        let (queue, work, tx) = (queue.clone(), work.clone(), tx.clone());
        tokio::spawn(async move {
            loop {
                let next = queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front();
                let Some((i, item)) = next else { break };
                let work = work.clone();
                let result = tokio::task::spawn_blocking(move || work(item))
                    .await
                    .map_err(|e| e.to_string());
                if tx.send((i, result)).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut out: Vec<Option<Result<R, RegistryError>>> = (0..count).map(|_| None).collect();
    let stopped = |path: &PathBuf, reason: &str| RegistryError::Store {
        path: path.clone(),
        message: format!("loading stopped before it finished: {reason}"),
    };
    while let Some((i, result)) = rx.recv().await {
        let (Some(slot), Some(path)) = (out.get_mut(i), paths.get(i)) else {
            continue;
        };
        let result = result.unwrap_or_else(|reason| Err(stopped(path, &reason)));
        done(i, &result);
        *slot = Some(result);
    }
    out.into_iter()
        .zip(&paths)
        .map(|(r, path)| r.unwrap_or_else(|| Err(stopped(path, "its worker ended first"))))
        .collect()
}
