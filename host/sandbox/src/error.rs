use thiserror::Error;

/// What went wrong in the sandbox layer. Every variant names the operation
/// that failed and carries what an operator needs to act on it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SandboxError {
    #[error(
        "no Docker engine answers ({reason}); start one (as root on Debian: `scripts/ensure-docker`) — \
         the terminal, code, browser and desktop tools need it, every other tool keeps working"
    )]
    DockerUnavailable { reason: String },
    #[error("the Docker engine refused to {operation}: {reason}")]
    Docker { operation: String, reason: String },
    #[error("image `{image}` is not built: run `warden sandbox build-images`")]
    ImageMissing { image: String },
    #[error(
        "image `{image}` is not on the Docker engine: build it locally (`docker build`, \
         `docker import`); Warden never pulls images"
    )]
    ServerImageMissing { image: String },
    #[error(
        "image `{image}` has no `{path}`, which Warden runs first in its containers ({purpose}): \
         use an image that has it (a Debian or Alpine base does)"
    )]
    ImageLacks {
        image: String,
        path: String,
        purpose: String,
    },
    #[error("building image `{image}` failed at {step}: {reason}")]
    BuildImage {
        image: String,
        step: String,
        reason: String,
    },
    #[error("reading the apt configuration: {reason}")]
    AptConfig { reason: String },
    #[error("the grants cannot be enforced in a container: {reason}")]
    Grant { reason: String },
    #[error("the egress firewall of container {container} could not be installed: {reason}")]
    Firewall { container: String, reason: String },
    #[error("{operation}: {source}")]
    Io {
        operation: String,
        #[source]
        source: std::io::Error,
    },
    #[error("a built-in tool spec is invalid: {reason}")]
    ToolSpec { reason: String },
    #[error("image: {reason}")]
    Image { reason: String },
    #[error("the sandbox is shutting down")]
    ShuttingDown,
    #[error("`{key}`: {reason}")]
    Config { key: String, reason: String },
    #[error(
        "no Kubernetes API server answers ({reason}); check `[sandbox.kubernetes]` \
         (connection, kubeconfig, context) — the terminal, code, browser and desktop tools \
         need it, every other tool keeps working"
    )]
    KubernetesUnavailable { reason: String },
    #[error("the Kubernetes API refused to {operation}: {reason}")]
    Kubernetes { operation: String, reason: String },
    #[error(
        "the sandbox namespace `{namespace}` is out of quota: {reason}; wait for other \
         sandboxes to end, or raise `[sandbox.kubernetes] quota-pods`, `quota-cpu-millis` \
         or `quota-memory-mb`"
    )]
    QuotaExceeded { namespace: String, reason: String },
    #[error("sandbox pod {pod} did not start: {reason}")]
    PodStart { pod: String, reason: String },
    #[error("`[sandbox.git] {key}`: {reason}")]
    GitConfig { key: &'static str, reason: String },
}

impl SandboxError {
    pub(crate) fn io(operation: impl Into<String>, source: std::io::Error) -> SandboxError {
        SandboxError::Io {
            operation: operation.into(),
            source,
        }
    }
}
