//! The event log named by `FIXTURE_LOG`: one JSON object a line, appended
//! and flushed as each event happens, so a test reads what the fixture saw
//! even after the fixture crashed or was killed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// Appends events to the file `FIXTURE_LOG` names; does nothing without it.
#[derive(Debug, Default)]
pub struct EventLog {
    file: Option<Mutex<File>>,
}

impl EventLog {
    /// Opens (creating, appending) the file `FIXTURE_LOG` names, if set.
    pub fn from_env() -> std::io::Result<Self> {
        let Some(path) = std::env::var_os("FIXTURE_LOG").filter(|p| !p.is_empty()) else {
            return Ok(Self::default());
        };
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Some(Mutex::new(file)),
        })
    }

    /// Writes `event` as one line. The file is unbuffered and opened for
    /// append, so each line is one `write` and reaches the file at once.
    pub fn write(&self, event: &Value) {
        let Some(file) = &self.file else { return };
        let mut line = event.to_string();
        line.push('\n');
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        // A log that cannot be written is a broken fixture; the tests that
        // read it will say so, the server itself carries on.
        let _ = file.write_all(line.as_bytes());
        let _ = file.flush();
    }
}
