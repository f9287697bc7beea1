use super::*;

const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn key(dir: &tempfile::TempDir, purpose: &str) -> TokenKey {
    TokenKey::for_state_root(dir.path(), purpose).unwrap()
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
    assert_eq!(other.open(&token, NOW.plus_millis(1000)), None);
}

#[test]
fn a_token_does_not_show_what_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(&dir, "task");
    let secret = b"upstream-task-id-visible";
    let a = k.seal(secret, NOW.plus_millis(1000)).unwrap();
    let b = k.seal(secret, NOW.plus_millis(1000)).unwrap();
    assert_ne!(a, b, "a fresh nonce each time");
    let bytes = hex::decode(&a).unwrap();
    assert!(!bytes.windows(secret.len()).any(|w| w == secret));
}

#[test]
fn a_changed_forged_or_foreign_token_does_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(&dir, "task");
    let token = k.seal(b"payload", NOW.plus_millis(60_000)).unwrap();
    let mut bytes = hex::decode(&token).unwrap();
    for i in [0, NONCE_BYTES, NONCE_BYTES + EXPIRY_BYTES, bytes.len() - 1] {
        bytes[i] ^= 1;
        assert_eq!(k.open(&hex::encode(&bytes), NOW), None, "byte {i} flipped");
        bytes[i] ^= 1;
    }
    // Moving the expiry forward is a change like any other.
    let later = (NOW.plus_millis(10_000_000).as_millis()).to_be_bytes();
    bytes[NONCE_BYTES..NONCE_BYTES + EXPIRY_BYTES].copy_from_slice(&later);
    assert_eq!(k.open(&hex::encode(&bytes), NOW), None);
    assert_eq!(
        key(&dir, "request state").open(&token, NOW),
        None,
        "another purpose"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    assert_eq!(
        key(&elsewhere, "task").open(&token, NOW),
        None,
        "another state root"
    );
    assert_eq!(TokenKey::ephemeral("task").unwrap().open(&token, NOW), None);
    for junk in ["", "zz", "00", &"0".repeat(200), &"a".repeat(100_000)] {
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
