//! Admitting and loading as two steps: a component that passed admission
//! is known by its signed manifest (its name and tools) before any of it is
//! compiled, so a host can publish its tools at once and load the code
//! behind them after; and loading, which is CPU work, runs on the blocking
//! pool at most as many at once as there are cores, in the order given, so
//! the first plugins named are the first ready, except that a plugin a
//! call is waiting for starts next ([`LoadOrder::first`]).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use warden_api::Manifest;
use warden_runtime::{Runtime, RuntimeError};

use crate::memo::{AdmissionMemo, Identity, Known};
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
    code: Code,
    signature: Option<String>,
}

/// A component's bytes as admitted.
#[derive(Debug, Clone)]
pub(crate) enum Code {
    /// Read and hashed by this admission.
    Held(Vec<u8>),
    /// Admitted from the memo ([`crate::memo`]) without reading them: its
    /// manifest section alone is known, and the bytes are read (and must
    /// have the admitted digest) only when something needs them.
    OnDisk { section: Vec<u8> },
}

impl Code {
    /// The bytes of the component at `path`, admitted with `digest`.
    pub(crate) fn bytes(&self, path: &Path, digest: &str) -> Result<Cow<'_, [u8]>, RegistryError> {
        match self {
            Code::Held(bytes) => Ok(Cow::Borrowed(bytes)),
            Code::OnDisk { .. } => read_checked(path, digest).map(Cow::Owned),
        }
    }
}

/// The file at `path`, if it still has plugin `digest`.
fn read_checked(path: &Path, digest: &str) -> Result<Vec<u8>, RegistryError> {
    let bytes = std::fs::read(path).map_err(|source| RegistryError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let now = crate::digest_of(path, &bytes)?;
    if now != digest {
        return Err(RegistryError::store(
            path,
            format!(
                "changed on disk since it was admitted as {digest} (it is now {now}); load it again to admit it"
            ),
        ));
    }
    Ok(bytes)
}

impl Admitted {
    /// Reads a component file and its signature and admits them under
    /// `policy`; nothing of the component runs.
    pub fn read(policy: &AdmissionPolicy, path: &Path) -> Result<Admitted, RegistryError> {
        Admitted::read_with(policy, path, None)
    }

    /// [`Admitted::read`], taking the digest and manifest from `memo`
    /// when the file is unchanged since a full admission there, and
    /// remembering a full admission in it.
    pub fn read_with(
        policy: &AdmissionPolicy,
        path: &Path,
        memo: Option<&AdmissionMemo>,
    ) -> Result<Admitted, RegistryError> {
        use std::io::Read as _;
        let unreadable = |source| RegistryError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(unreadable)?;
        let before = Identity::of(&file.metadata().map_err(unreadable)?);
        let signature = read_signature(path)?;
        if let Some(known) = memo.and_then(|m| m.recall(path, &before)) {
            let manifest = parse_manifest(path, &known.section)?;
            let admission = policy.admit_digest(path, known.digest, signature.as_ref(), || {
                manifest.plugin.name.clone()
            })?;
            return Ok(Admitted {
                path: path.to_path_buf(),
                admission,
                manifest,
                code: Code::OnDisk {
                    section: known.section,
                },
                signature: signature.map(|s| s.to_text()),
            });
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(unreadable)?;
        let admission = policy.admit(path, &bytes, signature.as_ref())?;
        let section = warden_runtime::manifest_section(&bytes).map_err(|reason| {
            RegistryError::NotAPlugin {
                path: path.to_path_buf(),
                reason,
            }
        })?;
        let manifest = parse_manifest(path, section)?;
        if let Some(memo) = memo
            && let Ok(meta) = file.metadata()
            && Identity::of(&meta) == before
        {
            let known = Known {
                digest: admission.digest.clone(),
                section: section.to_vec(),
            };
            memo.remember(path, &before, &known, SystemTime::now());
        }
        Ok(Admitted {
            path: path.to_path_buf(),
            admission,
            manifest,
            code: Code::Held(bytes),
            signature: signature.map(|s| s.to_text()),
        })
    }

    pub fn name(&self) -> &str {
        &self.manifest.plugin.name
    }

    /// Whether this admission read and hashed the component (false: it
    /// came from the memo).
    pub fn hashed(&self) -> bool {
        matches!(self.code, Code::Held(_))
    }

    /// Loads the component (compiling it, or from the compile cache) from
    /// exactly the bytes that were admitted.
    pub async fn load(self, runtime: &Runtime) -> Result<Candidate, RegistryError> {
        let loaded = match &self.code {
            Code::Held(bytes) => {
                runtime
                    .load_admitted(&self.path, bytes, &self.admission.digest)
                    .await
            }
            Code::OnDisk { section } => {
                let (path, digest) = (&self.path, &self.admission.digest);
                runtime
                    .load_known(path, section, digest, || {
                        read_checked(path, digest).map_err(|e| RuntimeError::Changed {
                            path: path.clone(),
                            reason: e.to_string(),
                        })
                    })
                    .await
            }
        };
        let plugin = loaded.map_err(|source| RegistryError::Load {
            path: self.path.clone(),
            source,
        })?;
        Ok(Candidate {
            path: self.path,
            plugin,
            admission: self.admission,
            code: self.code,
            signature: self.signature,
        })
    }
}

fn parse_manifest(path: &Path, section: &[u8]) -> Result<Manifest, RegistryError> {
    Manifest::from_json(section).map_err(|e| RegistryError::Load {
        path: path.to_path_buf(),
        source: RuntimeError::Manifest {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    })
}

/// [`Admitted::read`] for each of `paths`, on the blocking pool (hashing
/// and signature checks); the results come in the order of `paths`.
pub async fn admit_files(
    policy: &AdmissionPolicy,
    paths: Vec<PathBuf>,
    memo: Option<Arc<AdmissionMemo>>,
) -> Vec<Result<Admitted, RegistryError>> {
    let policy = policy.clone();
    let items = paths.into_iter().map(|p| (p.clone(), p)).collect();
    in_order(
        items,
        move |path| Admitted::read_with(&policy, &path, memo.as_deref()),
        |_, _| {},
    )
    .await
}

/// Which of a run's queued items starts next: in the order given, unless
/// one is moved to the front. Cheap to clone; clones share the queue.
#[derive(Debug, Clone)]
pub struct LoadOrder(Arc<Mutex<VecDeque<usize>>>);

impl LoadOrder {
    /// Items `0..count`, in that order.
    pub fn new(count: usize) -> LoadOrder {
        LoadOrder(Arc::new(Mutex::new((0..count).collect())))
    }

    /// Item `i` starts next, unless it already started; false then.
    pub fn first(&self, i: usize) -> bool {
        let mut queue = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = queue.iter().position(|&q| q == i) else {
            return false;
        };
        queue.remove(at);
        queue.push_front(i);
        true
    }

    fn next(&self) -> Option<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

/// [`Admitted::load`] for each of `admitted`, started in `order` (made for
/// as many items); `done(i, result)` is told as each one ends, and the
/// results come in the order given.
pub async fn load_admitted(
    runtime: &Runtime,
    admitted: Vec<Admitted>,
    order: LoadOrder,
    done: impl FnMut(usize, &Result<Candidate, RegistryError>),
) -> Vec<Result<Candidate, RegistryError>> {
    let runtime = runtime.clone();
    run(
        admitted.into_iter().map(|a| (a.path.clone(), a)).collect(),
        order,
        move |a| tokio::runtime::Handle::current().block_on(a.load(&runtime)),
        done,
    )
    .await
}

/// [`run`] in the order given.
pub(crate) async fn in_order<T, R>(
    items: Vec<(PathBuf, T)>,
    work: impl Fn(T) -> Result<R, RegistryError> + Send + Sync + 'static,
    done: impl FnMut(usize, &Result<R, RegistryError>),
) -> Vec<Result<R, RegistryError>>
where
    T: Send + 'static,
    R: Send + 'static,
{
    let order = LoadOrder::new(items.len());
    run(items, order, work, done).await
}

/// Runs `work` on each item on the blocking pool (the protocol and the
/// admin API keep their worker threads meanwhile), at most as many at once
/// as there are cores, starting them in `order`; `done` is told of each
/// result as it comes. Each item comes with the file it is about, which a
/// failure that is not `work`'s own names.
///
/// The workers are blocking-pool threads that take item after item
/// themselves: they start at once and never wait for a runtime thread
/// between items (on a single-threaded runtime, that thread is busy with
/// the rest of a host's start while its plugins load).
async fn run<T, R>(
    items: Vec<(PathBuf, T)>,
    order: LoadOrder,
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
    let (paths, items): (Vec<PathBuf>, Vec<Option<T>>) =
        items.into_iter().map(|(p, item)| (p, Some(item))).unzip();
    let items = Arc::new(Mutex::new(items));
    let work = Arc::new(work);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..workers {
        let (order, items, work, tx) = (order.clone(), items.clone(), work.clone(), tx.clone());
        tokio::task::spawn_blocking(move || {
            while let Some(i) = order.next() {
                let item = items
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_mut(i)
                    .and_then(Option::take);
                let Some(item) = item else { continue };
                // A panic fails its own item, not the worker's others.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)))
                    .map_err(|panic| panic_message(panic.as_ref()));
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

/// What a caught panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .map_or_else(|| "it panicked".to_owned(), |m| format!("it panicked: {m}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    /// The starts of a run of `count` items in `order`, and its results.
    /// The first item each worker runs waits until every worker has
    /// started one, so the first starts recorded are the first taken.
    async fn starts(count: usize, order: LoadOrder, workers: usize) -> (Vec<usize>, Vec<usize>) {
        let started = Arc::new(Mutex::new(Vec::new()));
        let seen = started.clone();
        let all_busy = std::sync::Barrier::new(workers);
        let arrivals = std::sync::atomic::AtomicUsize::new(0);
        let items = (0..count)
            .map(|i| (PathBuf::from(format!("p{i}")), i))
            .collect();
        let results = run(
            items,
            order,
            move |i| {
                seen.lock().unwrap().push(i);
                if arrivals.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < workers {
                    all_busy.wait();
                }
                Ok(i * 10)
            },
            |_, _| {},
        )
        .await;
        let results = results.into_iter().map(Result::unwrap).collect();
        let started = started.lock().unwrap().clone();
        (started, results)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn items_start_in_order_unless_one_is_moved_first_and_results_keep_theirs() {
        let workers = std::thread::available_parallelism()
            .map_or(2, std::num::NonZeroUsize::get)
            .min(6);
        let (started, results) = starts(6, LoadOrder::new(6), workers).await;
        assert_eq!(results, vec![0, 10, 20, 30, 40, 50]);
        let mut first: Vec<usize> = started[..workers].to_vec();
        first.sort_unstable();
        assert_eq!(first, (0..workers).collect::<Vec<_>>(), "{started:?}");

        let order = LoadOrder::new(6);
        assert!(order.first(5));
        let (started, results) = starts(6, order.clone(), workers).await;
        assert_eq!(results, vec![0, 10, 20, 30, 40, 50]);
        assert!(started[..workers].contains(&5), "moved first: {started:?}");
        assert!(!order.first(5), "an item that started cannot be moved");
    }
}
