//! Sealed tokens: a small record the client carries and hands back instead of a row a process keeps, so any
//! process that holds the state root's key can take it back — the seam that lets a second replica resolve what
//! the first one handed out.
//!
//! A token is encrypted (the client learns nothing of what it names) and authenticated (the client cannot make
//! or change one), bound to a purpose (a task id never opens as anything else) and to an expiry it cannot move.
//! Construction: ChaCha20-Poly1305 (RFC 8439, `ring`'s AEAD), under a 256-bit key derived per purpose from the
//! state root's key (HMAC-SHA256 of a label naming the purpose), with the purpose and the expiry as associated
//! data; a token is nonce ‖ expiry ‖ ciphertext ‖ tag, in hex. Nothing is decrypted before the tag verifies, and
//! every refusal looks the same. What the payload means, and who may present it, is the caller's (the gateway
//! binds a task token to its owner).
//!
//! The nonce is 96 random bits, fresh per token. A repeated nonce under one key would show the XOR of two payloads
//! and let tags be forged, so the bound that matters is the number of tokens one key seals: the chance of any
//! repeat among n tokens is about n² / 2⁹⁷, under 2⁻³² up to 2³² tokens (NIST SP 800-38D's limit for random
//! nonces). A state root mints a task id per task an upstream creates; at a thousand a second for a hundred years
//! it would mint about 2⁴², a chance near 2⁻¹³ of one repeat in that century. A key is per purpose, so tokens of
//! other purposes do not count against it.

use std::path::Path;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

use crate::error::{Error, Result};
use crate::seal::SealKey;
use crate::time::Timestamp;

const NONCE_BYTES: usize = NONCE_LEN;
const EXPIRY_BYTES: usize = 8;
/// Poly1305's tag: 128 bits is beyond forging by guessing.
const TAG_BYTES: usize = 16;
const KEY_BYTES: usize = 32;
/// Longest payload sealed or opened, so a token stays a short string and a presented one is cheap to refuse.
pub const MAX_TOKEN_PAYLOAD: usize = 2048;

/// The key of one purpose's tokens.
#[derive(Clone)]
pub struct TokenKey {
    purpose: String,
    key: LessSafeKey,
}

impl std::fmt::Debug for TokenKey {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenKey({:?})", self.purpose)
    }
}

impl TokenKey {
    /// The key of `purpose` under the state root's approval key (created on first use): every process of this
    /// state root seals and opens the same tokens.
    pub fn for_state_root(state_root: &Path, purpose: &str) -> Result<Self> {
        let key = SealKey::load_or_create(state_root)?;
        // A label of its own (v2): no key of the earlier construction is ever this one.
        let bytes = key.derive(&format!(
            "toolgate token key v2 chacha20-poly1305: {purpose}"
        ));
        Self::new(purpose, &bytes)
    }

    /// A key of this process alone (no state root): its tokens open nowhere else, and not after a restart.
    pub fn ephemeral(purpose: &str) -> Result<Self> {
        let mut bytes = [0u8; KEY_BYTES];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| Error::Rng)?;
        Self::new(purpose, &bytes)
    }

    fn new(purpose: &str, bytes: &[u8; KEY_BYTES]) -> Result<Self> {
        // Fails only for a key of the wrong length, which the type rules out.
        let key = UnboundKey::new(&CHACHA20_POLY1305, bytes)
            .map_err(|_| Error::Corrupt("token key".to_owned()))?;
        Ok(Self {
            purpose: purpose.to_owned(),
            key: LessSafeKey::new(key),
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
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| Error::Rng)?;
        let expiry = expires_at.as_millis().to_be_bytes();
        let mut out = Vec::with_capacity(NONCE_BYTES + EXPIRY_BYTES + payload.len() + TAG_BYTES);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&expiry);
        let mut body = payload.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(self.associated_data(&expiry)),
                &mut body,
            )
            // Fails only for a payload beyond ChaCha20's 256 GiB, which the ceiling above rules out.
            .map_err(|_| Error::Corrupt("token payload".to_owned()))?;
        out.extend_from_slice(&body);
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
        let (nonce, rest) = bytes.split_at(NONCE_BYTES);
        let (expiry, sealed) = rest.split_at(EXPIRY_BYTES);
        let expiry: [u8; EXPIRY_BYTES] = expiry.try_into().ok()?;
        let mut sealed = sealed.to_vec();
        let payload = self
            .key
            .open_in_place(
                Nonce::try_assume_unique_for_key(nonce).ok()?,
                Aad::from(self.associated_data(&expiry)),
                &mut sealed,
            )
            .ok()?;
        // The expiry is authenticated by now: a moved one failed the tag above.
        if now.as_millis() >= i64::from_be_bytes(expiry) {
            return None;
        }
        Some(payload.to_vec())
    }

    /// What the tag covers besides the ciphertext: the purpose, length-prefixed so no purpose and expiry can pass
    /// for another pair, and the expiry.
    fn associated_data(&self, expiry: &[u8; EXPIRY_BYTES]) -> Vec<u8> {
        let mut aad = Vec::with_capacity(8 + self.purpose.len() + EXPIRY_BYTES);
        aad.extend_from_slice(&(self.purpose.len() as u64).to_be_bytes());
        aad.extend_from_slice(self.purpose.as_bytes());
        aad.extend_from_slice(expiry);
        aad
    }
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
