//! Per-call limits on what a guest can consume.
//!
//! Attack: a plugin (buggy or hostile) that loops forever, allocates until
//! the host swaps, or grows tables without bound, starving every other
//! call — or spreads its allocation over several linear memories and
//! tables (a component may hold several core instances), each under the
//! limit, together a multiple of it. One budget covers every memory and
//! table of the call: growth that would take the sum past the call's
//! limit is refused (the guest sees an allocation failure and usually
//! aborts); the deadline is checked on every epoch tick and interrupts
//! the guest wherever it is.

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
/// What one table element counts against the budget (a reference).
const TABLE_ELEMENT_BYTES: usize = 8;
const MAX_INSTANCES: usize = 64;

#[derive(Debug)]
pub(crate) struct CallLimiter {
    pub memory_bytes: usize,
    /// Bytes held by all of the call's memories and tables together.
    pub used_bytes: usize,
    /// Set when the guest asked for more memory than its limit.
    pub memory_hit: bool,
    pub deadline: Instant,
}

impl CallLimiter {
    pub fn new(memory_bytes: u64, deadline: Instant) -> CallLimiter {
        CallLimiter {
            memory_bytes: usize::try_from(memory_bytes).unwrap_or(usize::MAX),
            used_bytes: 0,
            memory_hit: false,
            deadline,
        }
    }
}

impl CallLimiter {
    /// Takes `desired - current` more bytes from the call's one budget, if
    /// the sum of everything the call holds stays within it.
    fn grow(&mut self, current: usize, desired: usize) -> bool {
        let more = desired.saturating_sub(current);
        match self.used_bytes.checked_add(more) {
            Some(total) if total <= self.memory_bytes => {
                self.used_bytes = total;
                true
            }
            _ => false,
        }
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        let ok = self.grow(current, desired);
        if !ok {
            self.memory_hit = true;
        }
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS
            && self.grow(
                current.saturating_mul(TABLE_ELEMENT_BYTES),
                desired.saturating_mul(TABLE_ELEMENT_BYTES),
            ))
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

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn limiter() -> CallLimiter {
        CallLimiter::new(64 << 20, Instant::now())
    }

    #[test]
    fn several_memories_share_one_budget() {
        let mut l = limiter();
        // Two memories of 40 MiB each: the second would make 80 of 64.
        assert!(l.memory_growing(0, 40 * MIB, None).unwrap());
        assert!(!l.memory_growing(0, 40 * MIB, None).unwrap());
        assert!(l.memory_hit);
        // Growing the first within what is left is fine.
        assert!(l.memory_growing(40 * MIB, 60 * MIB, None).unwrap());
        assert!(!l.memory_growing(60 * MIB, 65 * MIB, None).unwrap());
    }

    #[test]
    fn tables_count_against_the_same_budget() {
        let mut l = limiter();
        assert!(l.memory_growing(0, 60 * MIB, None).unwrap());
        // 1 Mi elements of 8 bytes: 8 MiB, past what the memory left.
        assert!(!l.table_growing(0, 1 << 20, None).unwrap());
        assert!(l.table_growing(0, 1000, None).unwrap());
    }
}
