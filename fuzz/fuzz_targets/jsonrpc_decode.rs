//! Fuzzes the JSON-RPC decoder with arbitrary bytes: it never panics, a message it accepts is within the limits,
//! and re-encoding an accepted message decodes to the same message.

#![no_main]

use jsonrpc::{decode, encode_line, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits { max_message_bytes: 64 * 1024, max_depth: 32 };
    let Ok(message) = decode(data, &limits) else { return };
    assert!(data.len() <= limits.max_message_bytes);
    let line = encode_line(&message.to_value(), usize::MAX).expect("an accepted message encodes");
    let again = decode(&line[..line.len() - 1], &Limits { max_message_bytes: usize::MAX, max_depth: 64 });
    assert_eq!(again.as_ref().ok(), Some(&message), "round trip changed the message");
});
