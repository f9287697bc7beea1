use proptest::prelude::*;

use super::*;

const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn key(dir: &tempfile::TempDir, purpose: &str) -> TokenKey {
    TokenKey::for_state_root(dir.path(), purpose).unwrap()
}

/// A token of `k` for `payload` expiring a minute after `NOW`, as bytes.
fn sealed(k: &TokenKey, payload: &[u8]) -> Vec<u8> {
    hex::decode(k.seal(payload, NOW.plus_millis(60_000)).unwrap()).unwrap()
}

fn opens(k: &TokenKey, bytes: &[u8]) -> bool {
    k.open(&hex::encode(bytes), NOW).is_some()
}

#[test]
fn a_token_opens_with_the_same_state_roots_key_until_it_expires() {
    let dir = tempfile::tempdir().unwrap();
    let token = key(&dir, "task")
        .seal(b"server/up-1", NOW.plus_millis(1000))
        .unwrap();
    // Another process of the same state root derives the same key.
    let other = key(&dir, "task");
    assert_eq!(
        other.open(&token, NOW).as_deref(),
        Some(&b"server/up-1"[..])
    );
    assert_eq!(
        other.open(&token, NOW.plus_millis(999)).as_deref(),
        Some(&b"server/up-1"[..])
    );
    assert_eq!(
        other.open(&token, NOW.plus_millis(1000)),
        None,
        "at its expiry"
    );
    assert_eq!(
        other.open(&token, NOW.plus_millis(10_000_000)),
        None,
        "long after"
    );
}

#[test]
fn a_token_is_nonce_expiry_ciphertext_and_tag() {
    let k = TokenKey::ephemeral("task").unwrap();
    let bytes = sealed(&k, b"payload");
    assert_eq!(bytes.len(), 12 + 8 + b"payload".len() + 16);
    assert_eq!(
        bytes[NONCE_BYTES..NONCE_BYTES + EXPIRY_BYTES],
        NOW.plus_millis(60_000).as_millis().to_be_bytes()
    );
}

#[test]
fn a_token_does_not_show_what_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(&dir, "task");
    let secret = b"upstream-task-id-visible";
    let a = k.seal(secret, NOW.plus_millis(1000)).unwrap();
    let b = k.seal(secret, NOW.plus_millis(1000)).unwrap();
    assert_ne!(a, b, "a fresh nonce each time");
    assert_ne!(a[..2 * NONCE_BYTES], b[..2 * NONCE_BYTES]);
    let bytes = hex::decode(&a).unwrap();
    assert!(!bytes.windows(secret.len()).any(|w| w == secret));
}

#[test]
fn a_token_with_changed_ciphertext_does_not_open() {
    let k = TokenKey::ephemeral("task").unwrap();
    let mut bytes = sealed(&k, b"server/up-1");
    assert!(opens(&k, &bytes));
    bytes[NONCE_BYTES + EXPIRY_BYTES] ^= 1;
    assert!(!opens(&k, &bytes));
}

#[test]
fn a_token_with_a_changed_tag_does_not_open() {
    let k = TokenKey::ephemeral("task").unwrap();
    let mut bytes = sealed(&k, b"server/up-1");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x80;
    assert!(!opens(&k, &bytes));
    bytes[last] ^= 0x80;
    // A tag cut short is no shorter tag: it does not open either.
    assert!(!opens(&k, &bytes[..bytes.len() - 1]));
}

#[test]
fn a_token_with_a_changed_nonce_does_not_open() {
    let k = TokenKey::ephemeral("task").unwrap();
    let mut bytes = sealed(&k, b"server/up-1");
    bytes[0] ^= 1;
    assert!(!opens(&k, &bytes));
    bytes[0] ^= 1;
    // Another token's nonce in place of this one's.
    let other = sealed(&k, b"server/up-1");
    bytes[..NONCE_BYTES].copy_from_slice(&other[..NONCE_BYTES]);
    assert!(!opens(&k, &bytes));
}

#[test]
fn a_token_with_a_moved_expiry_does_not_open() {
    let k = TokenKey::ephemeral("task").unwrap();
    let expired = hex::decode(k.seal(b"server/up-1", NOW).unwrap()).unwrap();
    assert!(!opens(&k, &expired), "expired as sealed");
    // Moving the expiry forward revives nothing.
    let mut moved = expired.clone();
    let later = NOW.plus_millis(10_000_000).as_millis().to_be_bytes();
    moved[NONCE_BYTES..NONCE_BYTES + EXPIRY_BYTES].copy_from_slice(&later);
    assert!(!opens(&k, &moved));
    // Nor does moving a live token's expiry back and forth by one millisecond.
    let mut live = sealed(&k, b"server/up-1");
    live[NONCE_BYTES + EXPIRY_BYTES - 1] ^= 1;
    assert!(!opens(&k, &live));
}

#[test]
fn a_token_of_another_purpose_does_not_open_even_under_the_same_key_bytes() {
    // Purposes get keys of their own; the purpose is also in what the tag covers, so even one key's bytes under
    // two purposes keep their tokens apart.
    let bytes = [7u8; KEY_BYTES];
    let task = TokenKey::new("task id", &bytes).unwrap();
    let state = TokenKey::new("request state", &bytes).unwrap();
    let token = sealed(&task, b"server/up-1");
    assert!(opens(&task, &token));
    assert!(!opens(&state, &token));
    let dir = tempfile::tempdir().unwrap();
    let token = key(&dir, "task id").seal(b"p", NOW.plus_millis(1)).unwrap();
    assert_eq!(key(&dir, "request state").open(&token, NOW), None);
}

#[test]
fn a_token_of_another_state_roots_key_does_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let token = key(&dir, "task")
        .seal(b"p", NOW.plus_millis(60_000))
        .unwrap();
    assert_eq!(key(&elsewhere, "task").open(&token, NOW), None);
    assert_eq!(TokenKey::ephemeral("task").unwrap().open(&token, NOW), None);
    let mine = TokenKey::ephemeral("task").unwrap();
    let token = mine.seal(b"p", NOW.plus_millis(60_000)).unwrap();
    assert_eq!(key(&dir, "task").open(&token, NOW), None);
}

#[test]
fn junk_does_not_open() {
    let k = TokenKey::ephemeral("task").unwrap();
    for junk in [
        "",
        "zz",
        "00",
        &"0".repeat(72),
        &"0".repeat(200),
        &"a".repeat(100_000),
    ] {
        assert_eq!(k.open(junk, NOW), None);
    }
}

#[test]
fn an_oversized_payload_is_not_sealed() {
    let k = TokenKey::ephemeral("task").unwrap();
    assert!(k.seal(&[0; MAX_TOKEN_PAYLOAD + 1], NOW).is_err());
    let token = k.seal(&[7; MAX_TOKEN_PAYLOAD], NOW.plus_millis(1)).unwrap();
    assert_eq!(k.open(&token, NOW).unwrap().len(), MAX_TOKEN_PAYLOAD);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any payload opens as itself; the empty one too.
    #[test]
    fn any_payload_round_trips(payload in proptest::collection::vec(any::<u8>(), 0..=MAX_TOKEN_PAYLOAD)) {
        let k = TokenKey::ephemeral("task").unwrap();
        let token = k.seal(&payload, NOW.plus_millis(1)).unwrap();
        prop_assert_eq!(k.open(&token, NOW), Some(payload));
    }

    /// Whatever byte of a token changes, and however, it no longer opens.
    #[test]
    fn a_token_changed_in_any_byte_does_not_open(
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let k = TokenKey::ephemeral("task").unwrap();
        let mut bytes = sealed(&k, &payload);
        let i = at.index(bytes.len());
        bytes[i] ^= flip;
        prop_assert!(!opens(&k, &bytes), "byte {} of {} changed", i, bytes.len());
    }
}
