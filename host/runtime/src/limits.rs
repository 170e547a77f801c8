//! Per-call limits on what a guest can consume.
//!
//! Attack: a plugin (buggy or hostile) that loops forever, allocates until
//! the host swaps, or grows tables without bound, starving every other
//! call. Memory and table growth past the call's limit is refused (the
//! guest sees an allocation failure and usually aborts); the deadline is
//! checked on every epoch tick and interrupts the guest wherever it is.

use std::time::Instant;

use wasmtime::{ResourceLimiter, Result};

/// Raised from the epoch callback when the call's deadline has passed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeadlineExceeded;

impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline exceeded")
    }
}

impl std::error::Error for DeadlineExceeded {}

const MAX_TABLE_ELEMENTS: usize = 1 << 20;
const MAX_INSTANCES: usize = 64;

#[derive(Debug)]
pub(crate) struct CallLimiter {
    pub memory_bytes: usize,
    /// Set when the guest asked for more memory than its limit.
    pub memory_hit: bool,
    pub deadline: Instant,
}

impl CallLimiter {
    pub fn new(memory_bytes: u64, deadline: Instant) -> CallLimiter {
        CallLimiter {
            memory_bytes: usize::try_from(memory_bytes).unwrap_or(usize::MAX),
            memory_hit: false,
            deadline,
        }
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        if desired > self.memory_bytes {
            self.memory_hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_INSTANCES
    }
}
