//! Sealed tokens: a small record the client carries and hands back instead of a row a process keeps, so any
//! process that holds the state root's key can take it back — the seam that lets a second replica resolve what
//! the first one handed out.
//!
//! A token is encrypted (the client learns nothing of what it names) and authenticated (the client cannot make
//! or change one), bound to a purpose (a task id never opens as anything else) and to an expiry it cannot move.
//! Construction: a fresh 128-bit nonce; the payload XORed with an HMAC-SHA256 keystream (HMAC(k_enc, nonce ‖
//! counter) blocks); an HMAC-SHA256 tag with another key over purpose, nonce, expiry and ciphertext, checked in
//! constant time before anything is decrypted. Both keys are derived from the approval key, per purpose. What the
//! payload means, and who may present it, is the caller's (the gateway binds a task token to its owner).

use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use rand::TryRng;
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::seal::SealKey;
use crate::time::Timestamp;

type HmacSha256 = Hmac<Sha256>;

const NONCE_BYTES: usize = 16;
const EXPIRY_BYTES: usize = 8;
/// Tag length kept: 128 bits is beyond forging by guessing.
const TAG_BYTES: usize = 16;
/// Longest payload sealed or opened, so a token stays a short string and a presented one is cheap to refuse.
pub const MAX_TOKEN_PAYLOAD: usize = 2048;

/// The keys of one purpose's tokens.
#[derive(Clone)]
pub struct TokenKey {
    purpose: String,
    enc: [u8; 32],
    mac: [u8; 32],
}

impl std::fmt::Debug for TokenKey {
    /// Never prints the keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenKey({:?})", self.purpose)
    }
}

impl TokenKey {
    /// The key of `purpose` under the state root's approval key (created on first use): every process of this
    /// state root seals and opens the same tokens.
    pub fn for_state_root(state_root: &Path, purpose: &str) -> Result<Self> {
        let key = SealKey::load_or_create(state_root)?;
        Ok(Self {
            purpose: purpose.to_owned(),
            enc: key.derive(&format!("toolgate token encryption v1: {purpose}")),
            mac: key.derive(&format!("toolgate token tag v1: {purpose}")),
        })
    }

    /// A key of this process alone (no state root): its tokens open nowhere else, and not after a restart.
    pub fn ephemeral(purpose: &str) -> Result<Self> {
        let mut keys = [0u8; 64];
        rand::rngs::SysRng
            .try_fill_bytes(&mut keys)
            .map_err(|_| Error::Rng)?;
        let (mut enc, mut mac) = ([0u8; 32], [0u8; 32]);
        enc.copy_from_slice(&keys[..32]);
        mac.copy_from_slice(&keys[32..]);
        Ok(Self {
            purpose: purpose.to_owned(),
            enc,
            mac,
        })
    }

    /// Seals `payload` until `expires_at`, as lowercase hex.
    pub fn seal(&self, payload: &[u8], expires_at: Timestamp) -> Result<String> {
        if payload.len() > MAX_TOKEN_PAYLOAD {
            return Err(Error::Corrupt(format!(
                "token payload of {} bytes",
                payload.len()
            )));
        }
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rngs::SysRng
            .try_fill_bytes(&mut nonce)
            .map_err(|_| Error::Rng)?;
        let expiry = expires_at.as_millis().to_be_bytes();
        let mut body = payload.to_vec();
        self.keystream(&nonce, &mut body);
        let tag = self.tag(&nonce, &expiry, &body);
        let mut out = Vec::with_capacity(NONCE_BYTES + EXPIRY_BYTES + body.len() + TAG_BYTES);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&expiry);
        out.extend_from_slice(&body);
        out.extend_from_slice(&tag[..TAG_BYTES]);
        Ok(hex::encode(out))
    }

    /// The payload of `token` if this key sealed it and it has not expired at `now`; `None` for anything else
    /// (malformed, forged, changed, another purpose's or another state root's, expired), alike.
    pub fn open(&self, token: &str, now: Timestamp) -> Option<Vec<u8>> {
        let max = 2 * (NONCE_BYTES + EXPIRY_BYTES + MAX_TOKEN_PAYLOAD + TAG_BYTES);
        if token.len() > max {
            return None;
        }
        let bytes = hex::decode(token).ok()?;
        if bytes.len() < NONCE_BYTES + EXPIRY_BYTES + TAG_BYTES {
            return None;
        }
        let (head, tag) = bytes.split_at(bytes.len() - TAG_BYTES);
        let (nonce, rest) = head.split_at(NONCE_BYTES);
        let (expiry, body) = rest.split_at(EXPIRY_BYTES);
        self.mac_over(nonce, expiry, body)
            .verify_truncated_left(tag)
            .ok()?;
        let expires = i64::from_be_bytes(expiry.try_into().ok()?);
        if now.as_millis() >= expires {
            return None;
        }
        let mut payload = body.to_vec();
        self.keystream(nonce, &mut payload);
        Some(payload)
    }

    fn keystream(&self, nonce: &[u8], data: &mut [u8]) {
        for (counter, chunk) in data.chunks_mut(32).enumerate() {
            let mut block = hmac(&self.enc);
            block.update(nonce);
            block.update(&(counter as u32).to_be_bytes());
            let pad = block.finalize().into_bytes();
            for (b, p) in chunk.iter_mut().zip(pad.iter()) {
                *b ^= p;
            }
        }
    }

    fn mac_over(&self, nonce: &[u8], expiry: &[u8], body: &[u8]) -> HmacSha256 {
        let mut mac = hmac(&self.mac);
        mac.update(&(self.purpose.len() as u64).to_be_bytes());
        mac.update(self.purpose.as_bytes());
        mac.update(nonce);
        mac.update(expiry);
        mac.update(body);
        mac
    }

    fn tag(&self, nonce: &[u8], expiry: &[u8], body: &[u8]) -> [u8; 32] {
        self.mac_over(nonce, expiry, body)
            .finalize()
            .into_bytes()
            .into()
    }
}

fn hmac(key: &[u8; 32]) -> HmacSha256 {
    // A 32-byte key is zero-padded to the block as HMAC does; the constructor for a full block cannot fail.
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    <HmacSha256 as KeyInit>::new(&block.into())
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
