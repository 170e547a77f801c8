//! A plugin's effective network grant, computed when its grants change
//! rather than on every call.
//!
//! The intersection of the operator's grant and the plugin's request is
//! the same for every call under one registration; the memo keeps the
//! last one, keyed by the granted patterns (compared per call: a few
//! small values), so a re-registration with other grants is never served
//! a stale intersection.

use std::sync::{Arc, PoisonError, RwLock};

use warden_api::net::{EffectiveNet, NetPattern};

#[derive(Default)]
pub(crate) struct NetMemo {
    last: RwLock<Option<(Vec<NetPattern>, Arc<EffectiveNet>)>>,
}

impl NetMemo {
    /// The intersection of `granted` and `requested` (the plugin's own,
    /// fixed for its lifetime).
    pub fn get(&self, granted: &[NetPattern], requested: &[NetPattern]) -> Arc<EffectiveNet> {
        if let Some((g, net)) = &*self.last.read().unwrap_or_else(PoisonError::into_inner)
            && g.as_slice() == granted
        {
            return net.clone();
        }
        let net = Arc::new(EffectiveNet::new(granted, requested));
        *self.last.write().unwrap_or_else(PoisonError::into_inner) =
            Some((granted.to_vec(), net.clone()));
        net
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(p: &[&str]) -> Vec<NetPattern> {
        p.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn the_same_grants_share_one_intersection_and_new_grants_get_their_own() {
        let memo = NetMemo::default();
        let requested = patterns(&["example.com:443", "api.example.org:443"]);
        let one = patterns(&["example.com:443"]);
        let first = memo.get(&one, &requested);
        assert!(Arc::ptr_eq(&first, &memo.get(&one, &requested)));
        let other = patterns(&["api.example.org:443"]);
        let second = memo.get(&other, &requested);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(
            second.rules(),
            EffectiveNet::new(&other, &requested).rules()
        );
        assert_eq!(memo.get(&[], &requested).rules(), &[]);
    }
}
