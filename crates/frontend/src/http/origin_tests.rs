//! Each test names a DNS-rebinding or header-smuggling attempt the policy must refuse, or a legitimate caller
//! it must let in.

use super::*;
use axum::http::HeaderValue;

fn policy() -> OriginPolicy {
    let hosts = BTreeSet::from(["toolgate.internal:8787".to_owned()]);
    let origins = BTreeSet::from(["http://localhost:6274".to_owned()]);
    OriginPolicy::new("127.0.0.1:8787".parse().unwrap(), &hosts, &origins)
}

fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.append(
            header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value).unwrap(),
        );
    }
    h
}

fn origin(o: &str) -> Result<(), Refused> {
    policy().check(&headers(&[
        ("host", b"127.0.0.1:8787"),
        ("origin", o.as_bytes()),
    ]))
}

fn host(h: &[u8]) -> Result<(), Refused> {
    policy().check(&headers(&[("host", h)]))
}

#[test]
fn loopback_hosts_on_the_listening_port_are_allowed() {
    for h in [
        "127.0.0.1:8787",
        "localhost:8787",
        "LOCALHOST:8787",
        "[::1]:8787",
    ] {
        assert_eq!(host(h.as_bytes()), Ok(()), "{h}");
    }
    assert_eq!(host(b"toolgate.internal:8787"), Ok(()));
}

#[test]
fn loopback_origins_on_the_listening_port_and_listed_origins_are_allowed() {
    for o in [
        "http://localhost:8787",
        "http://127.0.0.1:8787",
        "https://[::1]:8787",
        "http://localhost:6274",
        "HTTP://LOCALHOST:6274",
    ] {
        assert_eq!(origin(o), Ok(()), "{o}");
    }
}

#[test]
fn no_origin_is_allowed() {
    assert_eq!(host(b"localhost:8787"), Ok(()));
}

#[test]
fn origin_null_is_forbidden() {
    assert!(matches!(origin("null"), Err(Refused::Origin(_))));
}

#[test]
fn foreign_origin_is_forbidden() {
    for o in [
        "http://evil.com",
        "https://evil.com:8787",
        "http://evil.com:8787",
    ] {
        assert!(origin(o).is_err(), "{o}");
    }
}

#[test]
fn ipv6_suffix_origin_is_forbidden() {
    assert!(origin("http://[::1].evil.example").is_err());
    assert!(origin("http://[::1].evil.example:8787").is_err());
}

#[test]
fn localhost_suffix_origin_is_forbidden() {
    assert!(origin("http://localhost.evil.example:8787").is_err());
    assert!(origin("http://127.0.0.1.nip.io:8787").is_err());
}

#[test]
fn userinfo_origin_is_forbidden() {
    assert!(origin("http://localhost:8787@evil.com").is_err());
    assert!(origin("http://evil.com@localhost:8787").is_err());
    assert!(host(b"evil.com@localhost:8787").is_err());
}

#[test]
fn origin_with_a_path_or_trailing_slash_is_forbidden() {
    assert!(origin("http://localhost:8787/").is_err());
    assert!(origin("http://localhost:8787/x").is_err());
}

#[test]
fn other_port_origin_is_forbidden() {
    assert!(origin("http://localhost:8788").is_err());
    assert!(origin("http://localhost").is_err());
    assert!(origin("http://localhost:08787").is_err());
}

#[test]
fn other_port_host_is_forbidden() {
    assert!(host(b"localhost:9999").is_err());
    assert!(host(b"localhost").is_err());
    assert!(host(b"localhost:").is_err());
}

#[test]
fn foreign_host_is_forbidden() {
    for h in [
        "evil.com:8787",
        "localhost.evil.example:8787",
        "[::1].evil.example:8787",
        "127.1:8787",
        "2130706433:8787",
        "0x7f.0.0.1:8787",
        "localhost%2eevil.example:8787",
        "localhost:8787:8787",
        "[::1]x:8787",
    ] {
        assert!(host(h.as_bytes()).is_err(), "{h}");
    }
}

#[test]
fn duplicate_host_headers_are_forbidden() {
    let h = headers(&[("host", b"localhost:8787"), ("host", b"localhost:8787")]);
    assert!(matches!(policy().check(&h), Err(Refused::Host(_))));
}

#[test]
fn duplicate_origin_headers_are_forbidden() {
    let h = headers(&[
        ("host", b"localhost:8787"),
        ("origin", b"http://localhost:8787"),
        ("origin", b"http://localhost:8787"),
    ]);
    assert!(matches!(policy().check(&h), Err(Refused::Origin(_))));
}

#[test]
fn missing_host_is_forbidden() {
    assert!(policy().check(&HeaderMap::new()).is_err());
}

#[test]
fn non_ascii_host_and_origin_are_forbidden() {
    assert!(host("localhost:8787\u{e9}".as_bytes()).is_err());
    assert!(host(b"localhost:8787\xff").is_err());
    let h = headers(&[
        ("host", b"localhost:8787"),
        ("origin", b"http://l\xc3\xb6calhost:8787"),
    ]);
    assert!(policy().check(&h).is_err());
    assert!(host(b"localhost :8787").is_err());
}

#[test]
fn the_listening_address_itself_is_a_valid_host_when_specific() {
    let none = BTreeSet::new();
    let p = OriginPolicy::new("192.0.2.7:8787".parse().unwrap(), &none, &none);
    assert_eq!(p.check(&headers(&[("host", b"192.0.2.7:8787")])), Ok(()));
    assert!(p.check(&headers(&[("host", b"192.0.2.8:8787")])).is_err());
    let any = OriginPolicy::new("0.0.0.0:8787".parse().unwrap(), &none, &none);
    assert!(any.check(&headers(&[("host", b"0.0.0.0:8787")])).is_err());
}
