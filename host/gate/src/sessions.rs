//! Which tasks ran in which session, so a session's end can end them: a
//! per-task container of a client that went away is removed then, not
//! only after its idle grace period.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    tasks: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl Sessions {
    /// A call of `session` ran under `task`.
    pub fn saw(&self, session: &str, task: Option<&str>) {
        let (false, Some(task)) = (session.is_empty(), task) else {
            return;
        };
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let known = tasks.get(session).is_some_and(|t| t.contains(task));
        if !known {
            tasks
                .entry(session.to_owned())
                .or_default()
                .insert(task.to_owned());
        }
    }

    /// The tasks that ran in `session`, forgotten.
    pub fn end(&self, session: &str) -> BTreeSet<String> {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session)
            .unwrap_or_default()
    }
}
