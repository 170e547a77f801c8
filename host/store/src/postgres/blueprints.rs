//! The toolsmith's blueprints in PostgreSQL (the meaning: `blueprints.rs`).

use std::sync::Arc;

use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{Inner, audit};
use crate::StoreError;
use crate::blueprints::{
    BlueprintMove, BlueprintState, NewBlueprint, StoredBlueprint, blueprint_columns, checked_move,
    moved_event, proposed_event,
};
use crate::chain::Entry;
use crate::db::ms;

fn row(r: &PgRow) -> Result<StoredBlueprint, sqlx::Error> {
    Ok(StoredBlueprint {
        id: r.try_get::<i64, _>(0)? as u64,
        name: r.try_get(1)?,
        capability: r.try_get(2)?,
        state: r.try_get(3)?,
        author: r.try_get(4)?,
        blueprint: r.try_get(5)?,
        blueprint_sha256: r.try_get(6)?,
        derived: r.try_get(7)?,
        approval: r.try_get(8)?,
        actor: r.try_get(9)?,
        reason: r.try_get(10)?,
        created_ms: r.try_get::<i64, _>(11)? as u64,
        updated_ms: r.try_get::<i64, _>(12)? as u64,
        expires_ms: r.try_get::<i64, _>(13)? as u64,
        artifact: r.try_get(14)?,
    })
}

async fn read_one<'e, E>(
    executor: E,
    id: u64,
    what: &'static str,
) -> Result<Option<StoredBlueprint>, StoreError>
where
    E: sqlx::PgExecutor<'e>,
{
    sqlx::query(concat!(
        "SELECT ",
        blueprint_columns!(),
        " FROM blueprints WHERE id = $1"
    ))
    .bind(ms(id))
    .fetch_optional(executor)
    .await
    .and_then(|r| r.as_ref().map(row).transpose())
    .map_err(StoreError::pg(what))
}

pub(crate) async fn add(inner: Arc<Inner>, b: NewBlueprint) -> Result<StoredBlueprint, StoreError> {
    let what = "storing a blueprint";
    let mut tx = inner.pool.begin().await.map_err(StoreError::pg(what))?;
    let id: i64 = sqlx::query(
        "INSERT INTO blueprints (name, capability, state, author, blueprint, blueprint_sha256, \
         derived, actor, created_ms, updated_ms, expires_ms) \
         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $3, $7, $7, $8) RETURNING id",
    )
    .bind(&b.name)
    .bind(&b.capability)
    .bind(&b.author)
    .bind(&b.blueprint)
    .bind(&b.blueprint_sha256)
    .bind(&b.derived)
    .bind(ms(b.at_ms))
    .bind(ms(b.expires_ms))
    .fetch_one(&mut *tx)
    .await
    .and_then(|r| r.try_get(0))
    .map_err(StoreError::pg(what))?;
    let id = id as u64;
    audit::append_in(
        &mut tx,
        &inner,
        &[Entry::new(&proposed_event(id, &b), b.at_ms)?],
    )
    .await?;
    let stored = read_one(&mut *tx, id, what)
        .await?
        .ok_or(StoreError::NoSuchBlueprint(id))?;
    tx.commit().await.map_err(StoreError::pg(what))?;
    Ok(stored)
}

pub(crate) async fn list(inner: Arc<Inner>) -> Result<Vec<StoredBlueprint>, StoreError> {
    let what = "reading the blueprints";
    let rows = sqlx::query(concat!(
        "SELECT ",
        blueprint_columns!(),
        " FROM blueprints ORDER BY id DESC"
    ))
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg(what))?;
    rows.iter()
        .map(row)
        .collect::<Result<Vec<_>, _>>()
        .map_err(StoreError::pg(what))
}

pub(crate) async fn states(inner: Arc<Inner>) -> Result<Vec<BlueprintState>, StoreError> {
    let what = "reading where the blueprints stand";
    let rows = sqlx::query(
        "SELECT id, name, state, author, created_ms, expires_ms, updated_ms \
         FROM blueprints ORDER BY id DESC",
    )
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg(what))?;
    rows.iter()
        .map(|r| {
            Ok(BlueprintState {
                id: r.try_get::<i64, _>(0)? as u64,
                name: r.try_get(1)?,
                state: r.try_get(2)?,
                author: r.try_get(3)?,
                created_ms: r.try_get::<i64, _>(4)? as u64,
                expires_ms: r.try_get::<i64, _>(5)? as u64,
                updated_ms: r.try_get::<i64, _>(6)? as u64,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
        .map_err(StoreError::pg(what))
}

pub(crate) async fn touch(
    inner: Arc<Inner>,
    id: u64,
    state: String,
    at_ms: u64,
) -> Result<bool, StoreError> {
    sqlx::query("UPDATE blueprints SET updated_ms = $3 WHERE id = $1 AND state = $2")
        .bind(ms(id))
        .bind(&state)
        .bind(ms(at_ms))
        .execute(&inner.pool)
        .await
        .map(|done| done.rows_affected() == 1)
        .map_err(StoreError::pg("marking a blueprint as worked on"))
}

pub(crate) async fn one(inner: Arc<Inner>, id: u64) -> Result<Option<StoredBlueprint>, StoreError> {
    read_one(&inner.pool, id, "reading a blueprint").await
}

/// Every move in one transaction: all land or none does.
pub(crate) async fn move_all(
    inner: Arc<Inner>,
    moves: Vec<BlueprintMove>,
) -> Result<Vec<StoredBlueprint>, StoreError> {
    let what = "moving a blueprint";
    let mut tx = inner.pool.begin().await.map_err(StoreError::pg(what))?;
    let mut moved = Vec::with_capacity(moves.len());
    for m in &moves {
        moved.push(move_in(&mut tx, &inner, m, what).await?);
    }
    tx.commit().await.map_err(StoreError::pg(what))?;
    Ok(moved)
}

async fn move_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    inner: &Inner,
    m: &BlueprintMove,
    what: &'static str,
) -> Result<StoredBlueprint, StoreError> {
    let stored = sqlx::query(concat!(
        "SELECT ",
        blueprint_columns!(),
        " FROM blueprints WHERE id = $1 FOR UPDATE"
    ))
    .bind(ms(m.id))
    .fetch_optional(&mut **tx)
    .await
    .and_then(|r| r.as_ref().map(row).transpose())
    .map_err(StoreError::pg(what))?
    .ok_or(StoreError::NoSuchBlueprint(m.id))?;
    let approval = checked_move(&stored, m)?;
    sqlx::query(
        "UPDATE blueprints SET state = $2, approval = $3, actor = $4, reason = $5, \
         updated_ms = $6 WHERE id = $1 AND state = $7",
    )
    .bind(ms(m.id))
    .bind(&m.to)
    .bind(&approval)
    .bind(&m.actor)
    .bind(&m.reason)
    .bind(ms(m.at_ms))
    .bind(&m.from)
    .execute(&mut **tx)
    .await
    .map_err(StoreError::pg(what))?;
    if let Some(a) = &m.artifact {
        sqlx::query("UPDATE blueprints SET artifact = $2, component = $3 WHERE id = $1")
            .bind(ms(m.id))
            .bind(&a.meta)
            .bind(&a.component)
            .execute(&mut **tx)
            .await
            .map_err(StoreError::pg(what))?;
    }
    audit::append_in(tx, inner, &[Entry::new(&moved_event(&stored, m), m.at_ms)?]).await?;
    read_one(&mut **tx, m.id, what)
        .await?
        .ok_or(StoreError::NoSuchBlueprint(m.id))
}

pub(crate) async fn component(inner: Arc<Inner>, id: u64) -> Result<Option<Vec<u8>>, StoreError> {
    sqlx::query("SELECT component FROM blueprints WHERE id = $1")
        .bind(ms(id))
        .fetch_optional(&inner.pool)
        .await
        .and_then(|r| {
            r.map(|r| r.try_get::<Option<Vec<u8>>, _>(0))
                .transpose()
                .map(Option::flatten)
        })
        .map_err(StoreError::pg("reading a built component"))
}
