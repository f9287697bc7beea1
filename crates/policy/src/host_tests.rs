//! Tests of `host.rs`: URLs resolve to the host a WHATWG client would contact, or are refused.

use super::*;

fn t(url: &str) -> NetTarget {
    parse_url(url).unwrap()
}

fn host(url: &str) -> String {
    t(url).host
}

#[test]
fn urls_split_into_scheme_host_port() {
    assert_eq!(
        t("https://API.Example.com./x?y"),
        NetTarget {
            scheme: "https".into(),
            host: "api.example.com".into(),
            port: 443
        }
    );
    assert_eq!(t("http://u:p@h.com:8080").port, 8080);
    assert_eq!(t("HTTP://h.com:80/").port, 80);
    assert_eq!(host("http://a@b@evil.com/"), "evil.com");
    assert_eq!(host("http://[::1]:9/"), "[::1]");
    assert_eq!(host("http://[0:0:0:0:0:0:0:1]/"), "[::1]");
    assert_eq!(host("http://[::ffff:a9fe:a9fe]/"), "169.254.169.254");
    assert!(parse_url("http://[fe80::1%25eth0]/").is_err());
}

#[test]
fn unicode_dots_and_fullwidth_letters_resolve_to_the_ascii_host() {
    for url in [
        "https://evil\u{3002}example/",
        "https://evil\u{ff0e}example/",
        "https://evil\u{ff61}example/",
        "https://\u{ff45}\u{ff56}\u{ff49}\u{ff4c}.example/",
        "https://EVIL.EXAMPLE./",
        "https://ev%69l.example/",
        "https://evil%2Eexample/",
        "https://user:pw@evil.example:443/",
        "https://good.example@evil.example/",
    ] {
        assert_eq!(host(url), "evil.example", "{url}");
    }
    assert_eq!(host("http://bücher.de/"), "xn--bcher-kva.de");
    assert_eq!(host("http://MÜNCHEN.de/"), "xn--mnchen-3ya.de");
}

#[test]
fn ipv4_shorthand_resolves_to_dotted_decimal() {
    for url in [
        "http://0x7f.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://0x7f000001/",
        "http://127.0.0.1./",
        "http://[::ffff:127.0.0.1]/",
    ] {
        assert_eq!(host(url), "127.0.0.1", "{url}");
    }
}

#[test]
fn ambiguous_urls_are_refused() {
    for bad in [
        "http://evil.com\\@good.com/",
        "http:\\\\evil.com/",
        "ftp://x.com",
        "http://",
        "http:///evil.com/",
        "http:evil.com",
        "http://a b/",
        "http://ev\til.com/",
        "http://h:99999/",
        "http://evil..example/",
        "http://1.2.3.256/",
        "http://xn--a.example/",
        "http://ex%00ample.com/",
        "example.com",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}

#[test]
fn rule_hosts_are_normalised_like_urls() {
    let p = HostPattern::new("EVIL\u{3002}example.").unwrap();
    assert!(p.matches(&t("https://evil.example/")));
    let ip = HostPattern::new("0x7f.1").unwrap();
    assert!(ip.matches(&t("http://127.0.0.1/")));
    assert!(HostPattern::new("*.127.0.0.1").is_err());
    assert!(HostPattern::new("a/b").is_err());
    assert!(HostPattern::new("xn--a").is_err());
}

#[test]
fn wildcard_is_label_aware() {
    let p = HostPattern::new("*.example.com").unwrap();
    assert!(p.matches(&t("https://a.example.com")));
    assert!(p.matches(&t("https://a.b.example.com")));
    assert!(p.matches(&t("https://a\u{3002}example\u{3002}com")));
    assert!(!p.matches(&t("https://example.com")));
    assert!(!p.matches(&t("https://evilexample.com")));
}

#[test]
fn ports_are_optional_but_exact_when_given() {
    let p = HostPattern::new("api.example.com:443").unwrap();
    assert!(p.matches(&t("https://api.example.com/")));
    assert!(!p.matches(&t("http://api.example.com/")));
    assert!(HostPattern::new("api.example.com")
        .unwrap()
        .matches(&t("http://api.example.com:8080/")));
}

#[test]
fn port_zero_is_refused_because_httpx_connects_to_the_default_port() {
    // httpcore's origin is `port or default_port`: `http://api.example.com:0/` reaches port 80, which a rule on
    // `api.example.com:80` must not miss.
    for url in [
        "http://api.example.com:0/",
        "https://api.example.com:00/",
        "http://127.0.0.1:0000/",
    ] {
        assert_eq!(parse_url(url), Err(UrlError::Malformed("port 0")), "{url}");
    }
    assert!(HostPattern::new("api.example.com:0").is_err());
}
