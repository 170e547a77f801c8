use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Per-call resource limits. Hitting one is an error result naming it; the
/// host and other calls carry on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CallLimits {
    /// Wall-clock deadline of the whole call.
    #[serde(with = "millis")]
    pub deadline: Duration,
    /// Linear memory the guest may grow to, in bytes.
    pub memory_bytes: u64,
    /// Largest result (JSON text) a call may return, in bytes.
    pub output_bytes: u64,
    /// Guest stdout/stderr kept for the logs, per stream, in bytes.
    pub log_bytes: u64,
    /// Fuel a call may burn (about one unit per wasm instruction), on a
    /// runtime that meters fuel; `None`: not metered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
}

impl CallLimits {
    /// Defaults: 30 s deadline, 256 MiB memory, 4 MiB output, 64 KiB of
    /// captured stdout/stderr per stream.
    pub const DEFAULT: CallLimits = CallLimits {
        deadline: Duration::from_secs(30),
        memory_bytes: 256 << 20,
        output_bytes: 4 << 20,
        log_bytes: 64 << 10,
        fuel: None,
    };
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits::DEFAULT
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
