//! Which process holds a bridged call: the request state a client retries with is a sealed token naming the
//! process that parked the call and the address other replicas reach it at, so a replica that receives a retry
//! it does not hold can send it on to the one that does (the HTTP front end forwards it).
//!
//! The token is `store::TokenKey`'s (purpose "request state", under the state root's key, which every replica of
//! a team shares): a client cannot make one, change the address in one, or present another state root's. So the
//! only addresses a replica ever forwards to are those a replica of its own team wrote; a forged, changed or
//! foreign state names nothing and is refused here as unknown, as it always was. The token expires with the
//! bridge's wait. Without a state root the key is this process's alone, and its states open nowhere else.
//!
//! This decides nothing about the retry itself: the holder checks it against what the state is bound to.

use rand::TryRng;
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::Duration;
use store::{Timestamp, TokenKey};

/// The purpose request states are sealed for: no other token opens as one.
pub(crate) const TOKEN_PURPOSE: &str = "request state";

/// Where a retry's bridged call is waiting, as the receiving process sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// This process: it answers the retry (and refuses it when the call is not, or no longer, here).
    Here,
    /// Another replica, reachable at this `host:port` (from the sealed state, never from the request).
    At(String),
    /// Another process that gave no address (it serves no HTTP, or listens on an unspecified address with no
    /// `http.advertise`): the retry cannot reach its call.
    Unreachable,
}

/// This process's side of request states: the key, its own random instance id, and its address once the HTTP
/// front end knows it.
pub(crate) struct Seal {
    key: Option<TokenKey>,
    instance: String,
    address: OnceLock<String>,
}

impl Seal {
    /// The seal of the state root at `root` (this process's own key without one). A key that cannot be made
    /// leaves the seal without one: then no state is minted and no call is bridged.
    pub(crate) fn new(root: Option<&std::path::Path>) -> Self {
        let key = match root {
            Some(root) => TokenKey::for_state_root(root, TOKEN_PURPOSE),
            None => TokenKey::ephemeral(TOKEN_PURPOSE),
        };
        let key = key
            .inspect_err(|e| tracing::warn!("cannot make request states: {e}"))
            .ok();
        let mut bytes = [0u8; 16];
        // Without randomness the instance is empty, which no sealed state names (see `mint`).
        let instance = match rand::rngs::SysRng.try_fill_bytes(&mut bytes) {
            Ok(()) => hex::encode(bytes),
            Err(_) => String::new(),
        };
        Self {
            key,
            instance,
            address: OnceLock::new(),
        }
    }

    /// Records the `host:port` other replicas reach this process at; the first one given stays.
    pub(crate) fn advertise(&self, address: String) {
        let _ = self.address.set(address);
    }

    /// A fresh request state naming this process, valid for `ttl`; `None` when none can be made.
    pub(crate) fn mint(&self, ttl: Duration) -> Option<String> {
        let key = self.key.as_ref()?;
        if self.instance.is_empty() {
            return None;
        }
        let mut nonce = [0u8; 16];
        rand::rngs::SysRng.try_fill_bytes(&mut nonce).ok()?;
        let mut payload = self.naming();
        payload["n"] = Value::String(hex::encode(nonce));
        let expires = Timestamp::now().plus_millis(i64::try_from(ttl.as_millis()).ok()?);
        let token = key.seal(payload.to_string().as_bytes(), expires).ok()?;
        Some(format!("{}{token}", super::STATE_PREFIX))
    }

    /// Where the call `state` names waits, when this process does not hold it. A state that does not open
    /// (forged, changed, foreign, expired) or names this process or its address is `Here`, refused by the
    /// bridge as unknown.
    pub(crate) fn holder(&self, state: &str, now: Timestamp) -> Holder {
        let opened = self
            .key
            .as_ref()
            .zip(state.strip_prefix(super::STATE_PREFIX))
            .and_then(|(key, token)| key.open(token, now))
            .and_then(|p| serde_json::from_slice::<Value>(&p).ok());
        let Some(named) = opened else {
            return Holder::Here;
        };
        self.locate(&named)
    }

    /// This process's instance id and address, as a sealed token names its minting process (`"i"`, `"a"`).
    pub(crate) fn naming(&self) -> Value {
        json!({"i": self.instance, "a": self.address.get()})
    }

    /// Where the process a genuine sealed payload names (`naming`'s keys) is, seen from this one. A payload
    /// naming no process (minted before tokens named one) is `Here`.
    pub(crate) fn locate(&self, named: &Value) -> Holder {
        let address = named.get("a").and_then(Value::as_str);
        let Some(instance) = named.get("i").and_then(Value::as_str) else {
            return Holder::Here;
        };
        // A restarted process at the same address lost what it held: refused here, not sent on in a loop.
        if instance == self.instance || address == self.address.get().map(String::as_str) {
            return Holder::Here;
        }
        match address {
            Some(a) => Holder::At(a.to_owned()),
            None => Holder::Unreachable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(60);

    fn seal_at(root: &std::path::Path, address: Option<&str>) -> Seal {
        let seal = Seal::new(Some(root));
        if let Some(a) = address {
            seal.advertise(a.to_owned());
        }
        seal
    }

    #[test]
    fn a_state_minted_by_another_replica_names_its_address() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (
            seal_at(root.path(), Some("10.0.0.11:8080")),
            seal_at(root.path(), Some("10.0.0.12:8080")),
        );
        let state = a.mint(TTL).unwrap();
        assert!(state.starts_with(super::super::STATE_PREFIX));
        assert_eq!(a.holder(&state, Timestamp::now()), Holder::Here);
        assert_eq!(
            b.holder(&state, Timestamp::now()),
            Holder::At("10.0.0.11:8080".to_owned())
        );
        let silent = seal_at(root.path(), None).mint(TTL).unwrap();
        assert_eq!(b.holder(&silent, Timestamp::now()), Holder::Unreachable);
        // A replica restarted at the same address holds nothing of its earlier life: the retry ends there.
        let restarted = seal_at(root.path(), Some("10.0.0.11:8080"));
        assert_eq!(restarted.holder(&state, Timestamp::now()), Holder::Here);
    }

    #[test]
    fn forged_request_state_cannot_name_an_address_to_forward_to() {
        let root = tempfile::tempdir().unwrap();
        let ours = seal_at(root.path(), Some("10.0.0.12:8080"));
        // Minted under another state root's key: it names an address, but not one this team wrote.
        let elsewhere = tempfile::tempdir().unwrap();
        let foreign = seal_at(elsewhere.path(), Some("203.0.113.9:80"))
            .mint(TTL)
            .unwrap();
        assert_eq!(ours.holder(&foreign, Timestamp::now()), Holder::Here);
        // One of ours with a byte changed.
        let genuine = seal_at(root.path(), Some("10.0.0.11:8080"))
            .mint(TTL)
            .unwrap();
        let mut changed = genuine.clone().into_bytes();
        let at = changed.len() - 10;
        changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
        let changed = String::from_utf8(changed).unwrap();
        assert_eq!(ours.holder(&changed, Timestamp::now()), Holder::Here);
        // Plain text naming an address, and a task id's token (another purpose) are no request states.
        let plain = format!("{}203.0.113.9:80", super::super::STATE_PREFIX);
        assert_eq!(ours.holder(&plain, Timestamp::now()), Holder::Here);
        let task_key = TokenKey::for_state_root(root.path(), "task id").unwrap();
        let payload = json!({"i": "x", "a": "203.0.113.9:80"}).to_string();
        let other_purpose = format!(
            "{}{}",
            super::super::STATE_PREFIX,
            task_key
                .seal(payload.as_bytes(), Timestamp::now().plus_millis(60_000))
                .unwrap()
        );
        assert_eq!(ours.holder(&other_purpose, Timestamp::now()), Holder::Here);
    }

    #[test]
    fn an_expired_request_state_names_no_holder() {
        let root = tempfile::tempdir().unwrap();
        let a = seal_at(root.path(), Some("10.0.0.11:8080"));
        let b = seal_at(root.path(), Some("10.0.0.12:8080"));
        let state = a.mint(TTL).unwrap();
        let later = Timestamp::now().plus_millis(61_000);
        assert_eq!(b.holder(&state, later), Holder::Here);
    }
}
