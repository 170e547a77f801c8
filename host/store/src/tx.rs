//! Write transactions through cached statements: `BEGIN IMMEDIATE`,
//! `COMMIT` and `ROLLBACK` are prepared once per connection, not parsed
//! again for every commit as `execute_batch` would.

use rusqlite::Connection;

use crate::StoreError;

fn run(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs `body` in one `IMMEDIATE` transaction on `conn` (the write lock
/// is taken at the start, so the reads in `body` see what it writes
/// after), committed when `body` succeeds and rolled back otherwise.
pub(crate) fn write<T>(
    conn: &Connection,
    operation: &'static str,
    body: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    run(conn, "BEGIN IMMEDIATE").map_err(StoreError::sql(operation))?;
    let committed = body(conn).and_then(|value| {
        run(conn, "COMMIT")
            .map(|()| value)
            .map_err(StoreError::sql(operation))
    });
    if committed.is_err()
        && !conn.is_autocommit()
        && let Err(e) = run(conn, "ROLLBACK")
    {
        tracing::error!(error = %e, operation, "rolling back failed");
    }
    committed
}
