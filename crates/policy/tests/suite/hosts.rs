//! Host spellings at the decision level: every spelling a client resolves to a denied host is denied.

use policy::{Effect, ReasonCode, UnknownReason};
use serde_json::json;

use crate::common::{decide, fetch, load};

#[test]
fn ideographic_full_stop_does_not_dodge_a_domain_deny() {
    let p = load(
        &json!({"permissions": {"default": "allow", "deny": ["WebFetch(domain:evil.example)"]}}),
    );
    for url in [
        "https://evil\u{3002}example/",
        "https://\u{ff45}\u{ff56}\u{ff49}\u{ff4c}.example/",
        "https://EVIL.example./x",
        "https://evil%2eexample/",
        "https://trusted.example@evil.example/",
        "https://evil.example:443/",
    ] {
        let d = decide(&p, &fetch(url));
        assert_eq!(
            (d.effect, d.reason),
            (Effect::Deny, ReasonCode::DenyRule),
            "{url}"
        );
    }
    assert_eq!(
        decide(&p, &fetch("https://good.example/")).effect,
        Effect::Allow
    );
}

#[test]
fn ipv4_shorthand_does_not_dodge_a_metadata_deny() {
    let p = load(&json!({"policy": {"default": "allow", "rules": [
        {"id": "no-meta", "effect": "deny", "hosts": ["169.254.169.254", "127.0.0.1"]},
    ]}}));
    for url in [
        "http://0xa9.0xfe.0xa9.0xfe/",
        "http://2852039166/",
        "http://0251.0376.0251.0376/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://0x7f.1/",
        "http://127.1:8080/",
    ] {
        assert_eq!(decide(&p, &fetch(url)).effect, Effect::Deny, "{url}");
    }
}

#[test]
fn urls_clients_disagree_on_are_unknown() {
    let p = load(&json!({"permissions": {"default": "allow"}}));
    for url in [
        "http://evil.example\\@good.example/",
        "http:///evil.example/",
        "http://ev\nil.example/",
    ] {
        let d = decide(&p, &fetch(url));
        assert_eq!(
            (d.effect, d.unknown),
            (Effect::Deny, Some(UnknownReason::InvalidUrl)),
            "{url}"
        );
    }
}
