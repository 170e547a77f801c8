//! Anchors between the chains of a shared PostgreSQL database (the
//! meaning, and the attack they stop: `anchors.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use sqlx::Row;
use warden_api::{AuditEvent, ChainHead};
use warden_signing::PublicKey;

use super::{Inner, audit};
use crate::anchors::{AnchorBreak, OtherChain, Others, Unendorsed};
use crate::chain::Entry;
use crate::{StoreError, now_ms};

/// The last record of every chain but this host's, by chain, anchors
/// aside: anchoring a chain's anchor of this one would move both heads
/// on every seal, and idle replicas would append forever.
async fn other_heads(inner: &Inner) -> Result<Vec<ChainHead>, StoreError> {
    let rows = sqlx::query(
        "SELECT c.chain, h.seq, h.hash FROM audit_chains c CROSS JOIN LATERAL \
         (SELECT seq, hash FROM audit a WHERE a.chain = c.chain AND a.kind <> 'chain-heads' \
         ORDER BY seq DESC LIMIT 1) h \
         WHERE c.chain <> $1 ORDER BY c.chain",
    )
    .bind(&inner.chain)
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg("reading the other audit chains' heads"))?;
    rows.iter()
        .map(|r| {
            Ok(ChainHead {
                chain: r.try_get(0)?,
                seq: r.try_get::<i64, _>(1)? as u64,
                hash: r.try_get(2)?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(StoreError::pg("reading the other audit chains' heads"))
}

/// Appends a `chain-heads` record to this host's chain when another
/// chain's head moved since this host last anchored it; returns whether
/// it did.
pub(crate) async fn anchor(inner: &Arc<Inner>) -> Result<bool, StoreError> {
    let heads = other_heads(inner).await?;
    let anchored = |inner: &Inner| {
        inner
            .anchored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    };
    if heads.is_empty() || anchored(inner) == heads {
        return Ok(false);
    }
    let entry = Entry::new(
        &AuditEvent::ChainHeads {
            heads: heads.clone(),
        },
        now_ms(),
    )?;
    audit::append_queued(inner, entry).await?;
    *inner
        .anchored
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = heads;
    Ok(true)
}

/// One anchor as a `chain-heads` record holds it.
struct Anchor {
    seq: u64,
    hash: String,
    anchored_in: String,
    at: u64,
}

/// Registers the audit root's endorsement of this host's key.
pub(crate) async fn endorse(inner: Arc<Inner>, endorsement: String) -> Result<(), StoreError> {
    sqlx::query("UPDATE audit_chains SET endorsement = $2 WHERE chain = $1")
        .bind(&inner.chain)
        .bind(&endorsement)
        .execute(&inner.pool)
        .await
        .map_err(StoreError::pg("registering this host's audit endorsement"))?;
    Ok(())
}

/// Every chain's endorsement (this host's included) checked against the
/// audit root: the endorsed count and the chains that are not.
async fn endorsements(
    inner: &Inner,
    root: &PublicKey,
) -> Result<(u64, Vec<Unendorsed>), StoreError> {
    let read = || StoreError::pg("reading the audit chains' endorsements");
    let rows =
        sqlx::query("SELECT chain, public_key, endorsement FROM audit_chains ORDER BY chain")
            .fetch_all(&inner.pool)
            .await
            .map_err(read())?;
    let (mut endorsed, mut unendorsed) = (0, Vec::new());
    for row in &rows {
        let chain: String = row.try_get(0).map_err(read())?;
        let public_key: String = row.try_get(1).map_err(read())?;
        let endorsement: Option<String> = row.try_get(2).map_err(read())?;
        // The key must be the chain's own (its id names the chain) and
        // the root's signature must cover it.
        let key = PublicKey::from_text(&public_key)
            .ok()
            .filter(|k| k.key_id().as_str() == chain);
        match (endorsement, key) {
            (None, _) => unendorsed.push(Unendorsed::Missing { chain }),
            (Some(text), Some(key)) if warden_signing::audit_key_endorsed(root, &key, &text) => {
                endorsed += 1
            }
            (Some(_), _) => unendorsed.push(Unendorsed::Invalid { chain }),
        }
    }
    Ok((endorsed, unendorsed))
}

/// Walks every chain but this host's against its registered public key,
/// checks every anchor any chain holds and, with the audit `root`, every
/// chain's endorsement.
pub(crate) async fn verify_others(
    inner: Arc<Inner>,
    root: Option<PublicKey>,
) -> Result<Others, StoreError> {
    let read = || StoreError::pg("reading the audit chains");
    let registered =
        sqlx::query("SELECT chain, public_key FROM audit_chains WHERE chain <> $1 ORDER BY chain")
            .bind(&inner.chain)
            .fetch_all(&inner.pool)
            .await
            .map_err(read())?;
    let mut others = Others::default();
    if let Some(root) = &root {
        (others.endorsed, others.unendorsed) = endorsements(&inner, root).await?;
    }
    for row in &registered {
        let chain: String = row.try_get(0).map_err(read())?;
        let public_key: String = row.try_get(1).map_err(read())?;
        let key = PublicKey::from_text(&public_key)
            .ok()
            .filter(|k| k.key_id().as_str() == chain)
            .ok_or_else(|| StoreError::Database {
                location: inner.location.clone(),
                detail: format!(
                    "audit chain {chain} is registered with a public key that is not its own: \
                     the registration was altered"
                ),
            })?;
        let verdict = audit::verify(inner.clone(), key, None).await?;
        others.chains.push(OtherChain {
            chain,
            public_key,
            verdict,
        });
    }

    let mut wanted: BTreeMap<String, Vec<Anchor>> = BTreeMap::new();
    let rows = sqlx::query(
        "SELECT chain, seq, body FROM audit WHERE kind = 'chain-heads' ORDER BY chain, seq",
    )
    .fetch_all(&inner.pool)
    .await
    .map_err(read())?;
    for row in &rows {
        let anchored_in: String = row.try_get(0).map_err(read())?;
        let at = row.try_get::<i64, _>(1).map_err(read())? as u64;
        let body: String = row.try_get(2).map_err(read())?;
        // A body that does not parse fails its own chain's walk.
        let Ok(AuditEvent::ChainHeads { heads }) = serde_json::from_str(&body) else {
            continue;
        };
        for head in heads {
            others.anchors += 1;
            wanted.entry(head.chain).or_default().push(Anchor {
                seq: head.seq,
                hash: head.hash,
                anchored_in: anchored_in.clone(),
                at,
            });
        }
    }
    for (chain, anchors) in wanted {
        let last = audit::last_seq(&inner, &chain).await?;
        let seqs: Vec<i64> = anchors.iter().map(|a| a.seq as i64).collect();
        let found: BTreeMap<u64, String> =
            sqlx::query("SELECT seq, hash FROM audit WHERE chain = $1 AND seq = ANY($2)")
                .bind(&chain)
                .bind(&seqs)
                .fetch_all(&inner.pool)
                .await
                .map_err(read())?
                .iter()
                .map(|r| Ok((r.try_get::<i64, _>(0)? as u64, r.try_get(1)?)))
                .collect::<Result<_, sqlx::Error>>()
                .map_err(read())?;
        for anchor in anchors {
            match found.get(&anchor.seq) {
                Some(hash) if *hash == anchor.hash => {}
                Some(_) => others.broken_anchors.push(AnchorBreak::Rewritten {
                    chain: chain.clone(),
                    seq: anchor.seq,
                    anchored_in: anchor.anchored_in,
                    at: anchor.at,
                }),
                None => others.broken_anchors.push(AnchorBreak::Missing {
                    chain: chain.clone(),
                    seq: anchor.seq,
                    last: (last > 0).then_some(last),
                    anchored_in: anchor.anchored_in,
                    at: anchor.at,
                }),
            }
        }
    }
    Ok(others)
}
