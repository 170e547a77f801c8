//! The Docker engine, through bollard. The only file that names a bollard
//! type: the rest of the crate speaks [`ContainerSpec`], [`ExecRequest`]
//! and [`ExecOutput`]. Longer than the crate's other files on purpose:
//! keeping every bollard type here means a bollard upgrade touches one file.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bollard::container::LogOutput;
use bollard::exec::{StartExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, ExecConfig, HostConfig, HostConfigLogConfig};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CommitContainerOptionsBuilder,
    ContainerArchiveInfoOptionsBuilder, CreateImageOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, StopContainerOptionsBuilder,
    TagImageOptionsBuilder, UploadToContainerOptionsBuilder,
};
use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;

use crate::SandboxError;
use crate::spec::{ContainerSpec, MANAGED_LABEL, Network};

/// A connection to the Docker engine. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Docker {
    docker: bollard::Docker,
}

/// One command to run in a container.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// `uid:gid`; the container's user when `None`.
    pub user: Option<String>,
    pub working_dir: Option<String>,
    /// Bytes written to the command's stdin, which is then closed.
    pub stdin: Option<Vec<u8>>,
    /// Stop reading (and report a timeout) at this instant.
    pub deadline: Option<Instant>,
    /// Bytes kept per stream; the rest is counted, not kept.
    pub max_bytes: usize,
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes the command wrote per stream, kept or not.
    pub stdout_total: u64,
    pub stderr_total: u64,
    /// `None` when the command was still running (a timeout).
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl ExecOutput {
    pub fn truncated(&self) -> bool {
        self.stdout_total > self.stdout.len() as u64 || self.stderr_total > self.stderr.len() as u64
    }
}

/// One chunk a container's main process wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Stdout(bytes::Bytes),
    Stderr(bytes::Bytes),
}

/// The frames of a container's stdout and stderr, in order.
pub type Frames = Pin<Box<dyn Stream<Item = Result<Frame, SandboxError>> + Send>>;

/// A managed container found on the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedContainer {
    pub id: String,
    pub labels: BTreeMap<String, String>,
}

/// A bridged server's image missing from the engine, or `operation`'s
/// other failure.
fn server_image_err<'a>(
    image: &'a str,
    operation: &'a str,
) -> impl FnOnce(bollard::errors::Error) -> SandboxError + 'a {
    move |e| {
        if is_not_found(&e) {
            SandboxError::ServerImageMissing {
                image: image.to_owned(),
            }
        } else {
            docker_err(operation)(e)
        }
    }
}

fn docker_err(operation: &str) -> impl FnOnce(bollard::errors::Error) -> SandboxError + '_ {
    move |e| SandboxError::Docker {
        operation: operation.to_owned(),
        reason: e.to_string(),
    }
}

fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

impl Docker {
    /// Connects to the local engine (DOCKER_HOST or the default socket)
    /// and agrees on an API version with it.
    pub async fn connect() -> Result<Docker, SandboxError> {
        let unavailable = |e: bollard::errors::Error| SandboxError::DockerUnavailable {
            reason: e.to_string(),
        };
        let docker = bollard::Docker::connect_with_local_defaults().map_err(unavailable)?;
        let docker = tokio::time::timeout(Duration::from_secs(10), docker.negotiate_version())
            .await
            .map_err(|_| SandboxError::DockerUnavailable {
                reason: "the engine did not answer within 10 s".into(),
            })?
            .map_err(unavailable)?;
        docker.ping().await.map_err(unavailable)?;
        Ok(Docker { docker })
    }

    pub async fn image_exists(&self, image: &str) -> Result<bool, SandboxError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(docker_err("inspect an image")(e)),
        }
    }

    /// The argv image `image` runs by default: its entrypoint, then its
    /// command. A missing image is [`SandboxError::ServerImageMissing`].
    pub async fn image_argv(&self, image: &str) -> Result<Vec<String>, SandboxError> {
        let inspected = self
            .docker
            .inspect_image(image)
            .await
            .map_err(server_image_err(image, "inspect an image"))?;
        let config = inspected.config.unwrap_or_default();
        Ok(config
            .entrypoint
            .into_iter()
            .flatten()
            .chain(config.cmd.into_iter().flatten())
            .collect())
    }

    /// Imports a root filesystem tarball as an untagged image; returns its id.
    pub async fn import_rootfs<S>(&self, tar: S) -> Result<String, SandboxError>
    where
        S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
    {
        let options = CreateImageOptionsBuilder::new().from_src("-").build();
        let mut stream =
            self.docker
                .create_image(Some(options), Some(bollard::body_try_stream(tar)), None);
        let mut id = None;
        while let Some(info) = stream.next().await {
            let info = info.map_err(docker_err("import an image"))?;
            if let Some(status) = info.status.filter(|s| s.starts_with("sha256:")) {
                id = Some(status);
            }
        }
        id.ok_or_else(|| SandboxError::Docker {
            operation: "import an image".into(),
            reason: "the engine reported no image id".into(),
        })
    }

    /// Tags image `id` as `repo:tag`.
    pub async fn tag_image(&self, id: &str, reference: &str) -> Result<(), SandboxError> {
        let (repo, tag) = reference.rsplit_once(':').unwrap_or((reference, "latest"));
        let options = TagImageOptionsBuilder::new().repo(repo).tag(tag).build();
        self.docker
            .tag_image(id, Some(options))
            .await
            .map_err(docker_err("tag an image"))
    }

    /// Removes an image this process created (by id).
    pub async fn remove_image(&self, id: &str) -> Result<(), SandboxError> {
        let options = RemoveImageOptionsBuilder::new().force(true).build();
        match self.docker.remove_image(id, Some(options), None).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(docker_err("remove an image")(e)),
        }
    }

    /// Creates a container of `image` that is never started: a place to
    /// upload files into and commit as a new image. Returns its id.
    pub async fn create_stopped(&self, image: &str) -> Result<String, SandboxError> {
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            cmd: Some(vec!["true".into()]),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        match self.docker.create_container(None, body).await {
            Ok(created) => Ok(created.id),
            Err(e) if is_not_found(&e) => Err(SandboxError::ImageMissing {
                image: image.to_owned(),
            }),
            Err(e) => Err(docker_err("create a container")(e)),
        }
    }

    /// Unpacks a tar stream at `/` of a (stopped) container.
    pub async fn upload_tar<S>(&self, id: &str, tar: S) -> Result<(), SandboxError>
    where
        S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
    {
        let options = UploadToContainerOptionsBuilder::new().path("/").build();
        self.docker
            .upload_to_container(id, Some(options), bollard::body_try_stream(tar))
            .await
            .map_err(docker_err("upload files into a container"))
    }

    /// Commits a container's filesystem as image `repo:tag`; returns the
    /// image id.
    pub async fn commit(&self, id: &str, reference: &str) -> Result<String, SandboxError> {
        let (repo, tag) = reference.rsplit_once(':').unwrap_or((reference, "latest"));
        let options = CommitContainerOptionsBuilder::new()
            .container(id)
            .repo(repo)
            .tag(tag)
            .pause(false)
            .build();
        let committed = self
            .docker
            .commit_container(options, bollard::models::ContainerConfig::default())
            .await
            .map_err(docker_err("commit a container"))?;
        Ok(committed.id)
    }

    /// Creates (does not start) a container for `spec`; its id.
    async fn create(&self, spec: &ContainerSpec) -> Result<String, SandboxError> {
        let created = self
            .docker
            .create_container(None, create_body(spec))
            .await
            .map_err(|e| {
                if is_not_found(&e) {
                    SandboxError::ImageMissing {
                        image: spec.image.clone(),
                    }
                } else {
                    docker_err("create a container")(e)
                }
            })?;
        Ok(created.id)
    }

    /// Creates and starts a container for `spec`, installing its egress
    /// firewall before returning. A container that cannot be fully set up
    /// is removed, never returned.
    pub async fn start(&self, spec: &ContainerSpec) -> Result<String, SandboxError> {
        let id = self.create(spec).await?;
        let setup = async {
            self.docker
                .start_container(&id, None)
                .await
                .map_err(docker_err("start a container"))?;
            match &spec.network {
                Network::Allowlist(rules) => {
                    self.firewall(&id, spec, &crate::egress::firewall_script(rules))
                        .await?;
                }
                Network::Public(rules) => {
                    self.firewall(&id, spec, &crate::egress::public_script(rules))
                        .await?;
                }
                Network::None | Network::Joined(_) => {}
            }
            Ok::<(), SandboxError>(())
        };
        if let Err(e) = setup.await {
            let _ = self.remove(&id).await;
            return Err(e);
        }
        Ok(id)
    }

    /// Creates a container for `spec` (an attached one, whose network is
    /// none or another container's), attaches to its stderr before it
    /// runs, then starts it; returns its id and its stderr, which ends
    /// when the container exits. A container that cannot be started is
    /// removed, never returned.
    pub async fn start_attached(
        &self,
        spec: &ContainerSpec,
    ) -> Result<(String, Frames), SandboxError> {
        if matches!(spec.network, Network::Allowlist(_) | Network::Public(_)) || !spec.attached {
            // Its process would run before a firewall could be installed.
            return Err(SandboxError::Grant {
                reason: "an attached container has no network or joins one already filtered".into(),
            });
        }
        let created = self
            .docker
            .create_container(None, create_body(spec))
            .await
            .map_err(server_image_err(&spec.image, "create a container"))?;
        let id = created.id;
        let attached = async {
            self.has_entrypoint(&id, spec).await?;
            let options = AttachContainerOptionsBuilder::new()
                .stream(true)
                .stderr(true)
                .build();
            let attached = self
                .docker
                .attach_container(&id, Some(options))
                .await
                .map_err(docker_err("attach to a container"))?;
            self.docker
                .start_container(&id, None)
                .await
                .map_err(docker_err("start a container"))?;
            let output = attached.output.filter_map(|frame| async move {
                match frame {
                    Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                        Some(Ok(Frame::Stdout(message)))
                    }
                    Ok(LogOutput::StdErr { message }) => Some(Ok(Frame::Stderr(message))),
                    Ok(LogOutput::StdIn { .. }) => None,
                    Err(e) => Some(Err(docker_err("read a container's output")(e))),
                }
            });
            Ok::<Frames, SandboxError>(Box::pin(output))
        }
        .await;
        match attached {
            Ok(attached) => Ok((id, attached)),
            Err(e) => {
                let _ = self.remove(&id).await;
                Err(e)
            }
        }
    }

    /// Fails when created container `id` lacks the program `spec` names
    /// as its entrypoint (an absolute path): a bridged server's image
    /// without `/bin/sh` would otherwise start a container that dies at
    /// once, with only a line on its stderr to say why. An engine that
    /// cannot tell leaves the start to go on.
    async fn has_entrypoint(&self, id: &str, spec: &ContainerSpec) -> Result<(), SandboxError> {
        let Some(program) = spec
            .entrypoint
            .as_ref()
            .and_then(|e| e.first())
            .filter(|p| p.starts_with('/'))
        else {
            return Ok(());
        };
        let options = ContainerArchiveInfoOptionsBuilder::new()
            .path(program)
            .build();
        match self
            .docker
            .get_container_archive_info(id, Some(options))
            .await
        {
            Err(e) if is_not_found(&e) => Err(SandboxError::ImageLacks {
                image: spec.image.clone(),
                path: program.clone(),
                purpose: "to connect a bridged server's stdin and stdout".into(),
            }),
            _ => Ok(()),
        }
    }

    /// Waits up to `limit` for a container's main process to exit;
    /// whether it did.
    pub async fn wait_exit(&self, id: &str, limit: Duration) -> bool {
        let mut wait = self.docker.wait_container(id, None);
        matches!(
            tokio::time::timeout(limit, wait.next()).await,
            Ok(Some(
                Ok(_) | Err(bollard::errors::Error::DockerContainerWaitError { .. })
            ))
        )
    }

    /// Stops a container: SIGTERM to its init (which passes it on), and
    /// SIGKILL after `grace`. A missing or stopped one is fine.
    pub async fn stop(&self, id: &str, grace: Duration) -> Result<(), SandboxError> {
        let secs = i32::try_from(grace.as_secs().max(1)).unwrap_or(i32::MAX);
        let options = StopContainerOptionsBuilder::new().t(secs).build();
        match self.docker.stop_container(id, Some(options)).await {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 304, ..
            }) => Ok(()), // already stopped
            Err(e) => Err(docker_err("stop a container")(e)),
        }
    }

    /// Runs the firewall script in a short-lived container that shares
    /// `target`'s network namespace and holds only CAP_NET_ADMIN.
    async fn firewall(
        &self,
        target: &str,
        spec: &ContainerSpec,
        script: &str,
    ) -> Result<(), SandboxError> {
        let fail = |reason: String| SandboxError::Firewall {
            container: target.to_owned(),
            reason,
        };
        let body = firewall_body(
            target,
            spec,
            "firewall",
            vec!["/bin/sh".into(), "-c".into(), script.to_owned()],
        );
        let id = self
            .docker
            .create_container(None, body)
            .await
            .map_err(|e| fail(e.to_string()))?
            .id;
        let result = async {
            self.docker
                .start_container(&id, None)
                .await
                .map_err(|e| fail(e.to_string()))?;
            let mut wait = self.docker.wait_container(&id, None);
            let code = match wait.next().await {
                Some(Ok(r)) => r.status_code,
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
                Some(Err(e)) => return Err(fail(e.to_string())),
                None => return Err(fail("the engine ended the wait".into())),
            };
            if code != 0 {
                let logs = self.logs(&id).await;
                return Err(fail(format!("exit code {code}: {}", logs.trim())));
            }
            Ok(())
        }
        .await;
        let _ = self.remove(&id).await;
        result
    }

    /// Creates and starts a standby for `spec` (whose network must be an
    /// allowlist without rules): the container, and beside it, sharing its
    /// network namespace, an idle holder with only CAP_NET_ADMIN that
    /// installs the default-drop fence with no grants before this returns
    /// and adds the grants later ([`Docker::fence`]). Returns the
    /// container's id and the holder's. Nothing half set up is returned.
    pub async fn start_standby(
        &self,
        spec: &ContainerSpec,
    ) -> Result<(String, String), SandboxError> {
        if spec.network != Network::Allowlist(Vec::new()) {
            return Err(SandboxError::Grant {
                reason: "a standby starts with an allowlist of no rules".into(),
            });
        }
        let id = self.create(spec).await?;
        let mut holder = None;
        let setup = async {
            self.docker
                .start_container(&id, None)
                .await
                .map_err(docker_err("start a container"))?;
            let body = firewall_body(
                &id,
                spec,
                "fence",
                vec!["/bin/sleep".into(), "2147483647".into()],
            );
            let h = self
                .docker
                .create_container(None, body)
                .await
                .map_err(docker_err("create a fence holder"))?
                .id;
            holder = Some(h.clone());
            self.docker
                .start_container(&h, None)
                .await
                .map_err(docker_err("start a fence holder"))?;
            self.fence_script(&h, &crate::egress::firewall_script(&[]))
                .await?;
            Ok::<String, SandboxError>(h)
        };
        match setup.await {
            Ok(h) => Ok((id, h)),
            Err(e) => {
                if let Some(h) = holder {
                    let _ = self.remove(&h).await;
                }
                let _ = self.remove(&id).await;
                Err(e)
            }
        }
    }

    /// Adds `rules` to the fence `holder` keeps (a standby's, see
    /// [`Docker::start_standby`]).
    pub async fn fence(
        &self,
        holder: &str,
        rules: &[crate::spec::EgressRule],
    ) -> Result<(), SandboxError> {
        self.fence_script(holder, &crate::egress::grant_script(rules))
            .await
    }

    /// Runs a firewall script as root in a fence holder; any failure is
    /// an error.
    async fn fence_script(&self, holder: &str, script: &str) -> Result<(), SandboxError> {
        let req = ExecRequest {
            argv: vec!["/bin/sh".into(), "-c".into(), script.to_owned()],
            user: Some("0:0".into()),
            deadline: Some(Instant::now() + Duration::from_secs(30)),
            max_bytes: 8 << 10,
            ..ExecRequest::default()
        };
        let out = self.exec(holder, &req).await?;
        if out.exit_code == Some(0) {
            return Ok(());
        }
        Err(SandboxError::Firewall {
            container: holder.to_owned(),
            reason: format!(
                "exit code {:?}: {}",
                out.exit_code,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        })
    }

    async fn logs(&self, id: &str) -> String {
        let options = bollard::query_parameters::LogsOptionsBuilder::new()
            .stdout(true)
            .stderr(true)
            .build();
        let chunks: Vec<LogOutput> = self
            .docker
            .logs(id, Some(options))
            .take(200)
            .filter_map(|r| async move { r.ok() })
            .collect()
            .await;
        chunks.iter().map(ToString::to_string).collect()
    }

    /// Runs a command and collects its output within the request's caps.
    pub async fn exec(
        &self,
        container: &str,
        req: &ExecRequest,
    ) -> Result<ExecOutput, SandboxError> {
        let started = Instant::now();
        let config = ExecConfig {
            attach_stdin: Some(req.stdin.is_some()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            cmd: Some(req.argv.clone()),
            env: Some(req.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            user: req.user.clone(),
            working_dir: req.working_dir.clone(),
            privileged: Some(false),
            ..Default::default()
        };
        let exec = self
            .docker
            .create_exec(container, config)
            .await
            .map_err(docker_err("create an exec"))?;
        let started_exec = self
            .docker
            .start_exec(&exec.id, None::<StartExecOptions>)
            .await
            .map_err(docker_err("start an exec"))?;
        let StartExecResults::Attached {
            mut output,
            mut input,
        } = started_exec
        else {
            return Err(SandboxError::Docker {
                operation: "start an exec".into(),
                reason: "the engine detached an attached exec".into(),
            });
        };
        if let Some(data) = &req.stdin {
            input
                .write_all(data)
                .await
                .map_err(|e| SandboxError::io("writing a command's stdin", e))?;
            let _ = input.shutdown().await;
        }
        drop(input);
        let mut out = ExecOutput::default();
        loop {
            let next = match req.deadline {
                Some(at) => match tokio::time::timeout_at(at.into(), output.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        out.timed_out = true;
                        break;
                    }
                },
                None => output.next().await,
            };
            let Some(chunk) = next else { break };
            match chunk.map_err(docker_err("read a command's output"))? {
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    keep(
                        &mut out.stdout,
                        &mut out.stdout_total,
                        &message,
                        req.max_bytes,
                    );
                }
                LogOutput::StdErr { message } => {
                    keep(
                        &mut out.stderr,
                        &mut out.stderr_total,
                        &message,
                        req.max_bytes,
                    );
                }
                LogOutput::StdIn { .. } => {}
            }
        }
        drop(output);
        if !out.timed_out {
            let inspect = self
                .docker
                .inspect_exec(&exec.id)
                .await
                .map_err(docker_err("inspect an exec"))?;
            out.exit_code = inspect.exit_code;
        }
        out.elapsed = started.elapsed();
        Ok(out)
    }

    /// Starts a command in the background of a container and returns at once.
    pub async fn exec_detached(
        &self,
        container: &str,
        argv: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Result<(), SandboxError> {
        let config = ExecConfig {
            cmd: Some(argv),
            env: Some(env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            privileged: Some(false),
            ..Default::default()
        };
        let exec = self
            .docker
            .create_exec(container, config)
            .await
            .map_err(docker_err("create an exec"))?;
        self.docker
            .start_exec(
                &exec.id,
                Some(StartExecOptions {
                    detach: true,
                    ..Default::default()
                }),
            )
            .await
            .map_err(docker_err("start an exec"))?;
        Ok(())
    }

    /// Removes a container (killing it first); a missing one is fine.
    pub async fn remove(&self, id: &str) -> Result<(), SandboxError> {
        let options = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(id, Some(options)).await {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(()), // already being removed
            Err(e) => Err(docker_err("remove a container")(e)),
        }
    }

    /// Managed containers (running or not) carrying every `label=value`.
    pub async fn list_managed(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<ManagedContainer>, SandboxError> {
        let mut wanted = vec![format!("{MANAGED_LABEL}=true")];
        wanted.extend(labels.iter().map(|(k, v)| format!("{k}={v}")));
        let filters = HashMap::from([("label".to_owned(), wanted)]);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(docker_err("list containers"))?;
        Ok(list
            .into_iter()
            .filter_map(|c| {
                Some(ManagedContainer {
                    id: c.id?,
                    labels: c.labels.unwrap_or_default().into_iter().collect(),
                })
            })
            .collect())
    }

    /// The gateway address of Docker's default bridge: where a container
    /// on the bridge reaches the host.
    pub async fn bridge_gateway(&self) -> Result<IpAddr, SandboxError> {
        let net = self
            .docker
            .inspect_network("bridge", None)
            .await
            .map_err(docker_err("inspect the bridge network"))?;
        // Docker omits the gateway when it took the default: the subnet's
        // first address.
        net.ipam
            .and_then(|i| i.config)
            .into_iter()
            .flatten()
            .filter_map(|c| match c.gateway {
                Some(g) => g.parse().ok(),
                None => first_host(c.subnet.as_deref()?),
            })
            .next()
            .ok_or_else(|| SandboxError::Docker {
                operation: "inspect the bridge network".into(),
                reason: "it has no gateway address".into(),
            })
    }
}

fn first_host(subnet: &str) -> Option<IpAddr> {
    let (addr, _) = subnet.split_once('/')?;
    match addr.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some(IpAddr::V4((u32::from(v4) + 1).into())),
        IpAddr::V6(v6) => Some(IpAddr::V6((u128::from(v6) + 1).into())),
    }
}

/// A container in `target`'s network namespace holding only
/// CAP_NET_ADMIN (and NET_RAW, which iptables needs), running `cmd` as
/// root on a read-only root file system, labelled with `role`.
/// It runs only Warden's own scripts, so it keeps the engine's log:
/// a failed firewall's output is read from there for its error.
fn firewall_body(
    target: &str,
    spec: &ContainerSpec,
    role: &str,
    cmd: Vec<String>,
) -> ContainerCreateBody {
    let labels: HashMap<String, String> = spec
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain([("warden.role".to_owned(), role.to_owned())])
        .collect();
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        user: Some("0:0".into()),
        cmd: Some(cmd),
        labels: Some(labels),
        host_config: Some(HostConfig {
            network_mode: Some(format!("container:{target}")),
            cap_drop: Some(vec!["ALL".into()]),
            cap_add: Some(vec!["NET_ADMIN".into(), "NET_RAW".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(true),
            tmpfs: Some(HashMap::from([
                ("/run".to_owned(), "rw,size=1m".to_owned()),
                ("/tmp".to_owned(), "rw,size=1m".to_owned()),
            ])),
            pids_limit: Some(16),
            memory: Some(64 << 20),
            privileged: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn keep(buf: &mut Vec<u8>, total: &mut u64, chunk: &[u8], max: usize) {
    *total += chunk.len() as u64;
    let room = max.saturating_sub(buf.len());
    buf.extend_from_slice(&chunk[..room.min(chunk.len())]);
}

fn create_body(spec: &ContainerSpec) -> ContainerCreateBody {
    let (network_mode, network_disabled) = match &spec.network {
        Network::None => ("none".to_owned(), true),
        Network::Allowlist(_) | Network::Public(_) => ("bridge".to_owned(), false),
        Network::Joined(id) => (format!("container:{id}"), false),
    };
    let binds = spec
        .mounts
        .iter()
        .map(|m| {
            format!(
                "{}:{}:{}",
                m.host.display(),
                m.guest,
                if m.read_only { "ro" } else { "rw" }
            )
        })
        .collect();
    let memory = i64::try_from(spec.memory_bytes).unwrap_or(i64::MAX);
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        user: Some(spec.user.clone()),
        cmd: Some(spec.cmd.clone()),
        entrypoint: spec.entrypoint.clone(),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        working_dir: (!spec.working_dir.is_empty()).then(|| spec.working_dir.clone()),
        labels: Some(spec.labels.clone().into_iter().collect()),
        network_disabled: Some(network_disabled),
        // No stdin from the engine; stderr attached when asked; no
        // terminal (stdout and stderr stay apart).
        open_stdin: Some(false),
        attach_stdin: Some(false),
        attach_stdout: Some(false),
        attach_stderr: Some(spec.attached),
        tty: Some(false),
        host_config: Some(HostConfig {
            network_mode: Some(network_mode),
            extra_hosts: Some(
                spec.extra_hosts
                    .iter()
                    .map(|(n, ip)| format!("{n}:{ip}"))
                    .collect(),
            ),
            binds: Some(binds),
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some(i64::try_from(spec.nano_cpus).unwrap_or(i64::MAX)),
            pids_limit: Some(i64::from(spec.pids_limit)),
            tmpfs: Some(spec.tmpfs.iter().cloned().collect()),
            readonly_rootfs: Some(spec.read_only_rootfs),
            cap_drop: spec.drop_all_capabilities.then(|| vec!["ALL".into()]),
            security_opt: spec
                .no_new_privileges
                .then(|| vec!["no-new-privileges".into()]),
            privileged: Some(false),
            init: Some(true),
            // The engine keeps nothing of what the container writes: its
            // default log driver copies the main process's output into a
            // host file with no size limit (a disk a hostile command
            // fills, secrets kept past redaction). Warden reads that
            // output through exec and attach, within its own caps.
            log_config: Some(HostConfigLogConfig {
                typ: Some("none".into()),
                config: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A reader (a child's stdout) as the chunked byte stream the engine's
/// upload and import calls take, 256 KiB at a time.
pub(crate) fn byte_stream<R>(
    reader: R,
) -> impl Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    use tokio::io::AsyncReadExt;
    futures_util::stream::unfold(reader, |mut r| async move {
        let mut buf = vec![0u8; 256 << 10];
        match r.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(bytes::Bytes::from(buf)), r))
            }
            Err(e) => Some((Err(e), r)),
        }
    })
}
