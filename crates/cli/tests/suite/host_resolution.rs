//! Generated-corpus property: for every spelling of a URL's host, toolgate names the host and port that
//! mcp-server-fetch connects to, or refuses the URL.
//!
//! toolgate's side is its adapter and normalisation; the other side is one Python process of the venv that runs
//! mcp-server-fetch, doing what that server does with a `url` argument (pydantic `AnyUrl`, then httpx for the page
//! and, rebuilt with `urllib`, for its robots.txt). The corpus is deterministic and runs in seconds; a missing
//! peer fails the test.

use crate::support::peers;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::process::{Command, Stdio};

/// Reads JSON strings (URLs) on stdin and prints, for each, the targets mcp-server-fetch's `fetch` connects to:
/// the page, then its robots.txt, each as the raw host httpx connects to, its port, and the address a resolver
/// reads in the host when it is numeric; or the error that stops the server before it connects.
const FETCH_TARGETS: &str = r#"
import json, socket, sys
import httpx
from pydantic import AnyUrl, TypeAdapter
from urllib.parse import urlparse, urlunparse

any_url = TypeAdapter(AnyUrl)

def target(url):
    u = httpx.URL(url)
    if u.scheme not in ("http", "https"):
        raise ValueError("scheme")
    host = u.raw_host.decode("ascii")
    try:
        numeric = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)[0][4][0]
    except socket.gaierror:
        numeric = None
    # httpcore connects to `port or default_port`: port 0 is the default port.
    return {"host": host, "numeric": numeric, "port": u.port or {"http": 80, "https": 443}[u.scheme]}

for line in sys.stdin:
    url = json.loads(line)
    try:
        page = str(any_url.validate_python(url))
        p = urlparse(page)
        robots = urlunparse((p.scheme, p.netloc, "/robots.txt", "", "", ""))
        print(json.dumps({"targets": [target(page), target(robots)]}), flush=True)
    except Exception as e:
        print(json.dumps({"error": type(e).__name__}), flush=True)
"#;

/// Host spellings: IDNA (ideographic and fullwidth dots, fullwidth letters, case, `ß`, punycode), trailing dot,
/// percent-encoded bytes, IPv4 shorthand, IPv6 and mapped IPv4, userinfo, backslashes, ports and schemes, then
/// generated authorities.
fn url_corpus() -> Vec<String> {
    let names = [
        "example.com",
        "EXAMPLE.com",
        "example.com.",
        "example.com..",
        "ex%61mple.com",
        "example%2ecom",
        "example\u{3002}com",
        "example\u{ff0e}com",
        "example\u{ff61}com",
        "\u{ff45}xample.com",
        "b\u{fc}cher.de",
        "B\u{dc}CHER.de",
        "xn--bcher-kva.de",
        "XN--BCHER-KVA.DE",
        "fa\u{df}.de",
        "xn--fa-hia.de",
        "localhost",
        "localhost.",
        "127.0.0.1",
        "127.1",
        "0x7f.1",
        "0x7F.0.0.1",
        "0177.0.0.1",
        "2130706433",
        "0x7f000001",
        "127.0.0.1.",
        "127.0.0.01",
        "127.0.0.256",
        "1.2.3.4.5",
        "169.254.169.254",
        "0251.0376.0251.0376",
        "%31%32%37.0.0.1",
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::ffff:a9fe:a9fe]",
        "[64:ff9b::a9fe:a9fe]",
        "[::127.0.0.1]",
        "[fe80::1%25eth0]",
        "::1",
        "a_b.example",
        "-a.example",
        "a..example",
        "xn--.example",
        "\u{200b}example.com",
        "exa\u{ad}mple.com",
        "exa\tmple.com",
        "example.com%2e",
        "b%C3%BCcher.de",
        "%E2%80%8Bexample.com",
        "127\u{3002}0.0.1",
        "\u{ff11}\u{ff12}\u{ff17}.0.0.1",
        "0",
        "0.0.0.0",
        "127.000.000.001",
        "[::]",
        "[::ffff:0:0]",
        "\u{130}nstagram.com",
        "\u{3a3}\u{391}\u{3a3}.gr",
        "xn--ls8h.la",
        "xn--zz.example",
        "example.com:80@evil.com",
        "ex ample.com",
    ];
    let authorities = |host: &str| {
        vec![
            host.to_owned(),
            format!("{host}:8080"),
            format!("{host}:"),
            format!("{host}:0"),
            format!("{host}:00"),
            format!("{host}:0443"),
            format!("{host}:65536"),
            format!("user@{host}"),
            format!("user:pw@{host}:81"),
            format!("good.example@{host}"),
            format!("a@b@{host}"),
            format!("good.example\\@{host}"),
            format!("{host}\\@good.example"),
            format!("{host}#@good.example"),
            format!("{host}?@good.example"),
            format!("{host}%40good.example"),
        ]
    };
    let mut urls = Vec::new();
    for name in names {
        for (i, authority) in authorities(name).into_iter().enumerate() {
            // Each authority meets one scheme spelling and one separator form, in turn, so every form is used.
            let scheme = ["http", "https", "HTTP", "hTtPs"][i % 4];
            let separator = ["://", "://", ":\\\\", ":/", ":///", "://", "://\\"][i % 7];
            urls.push(format!("{scheme}{separator}{authority}/p?q#f"));
            urls.push(format!("{scheme}://{authority}"));
        }
    }
    urls.extend(generated_urls(6000));
    urls.sort();
    urls.dedup();
    urls
}

/// Pieces of authorities that parsers split, map or decode differently: delimiters plain, percent-encoded and in
/// fullwidth or compatibility forms (`℀` maps to `a/c`), dots, invisible and joining characters, IDNA mappings,
/// IPv4 and IPv6 fragments, ports.
const PIECES: [&str; 56] = [
    "a",
    "A",
    "0",
    "1",
    "7",
    "x",
    ".",
    "\u{3002}",
    "\u{ff0e}",
    "\u{fe52}",
    "%2e",
    "%41",
    "%00",
    "%",
    "%%",
    "%g1",
    "@",
    ":",
    "[",
    "]",
    "\\",
    "/",
    "?",
    "#",
    "%40",
    "%3A",
    "%5B",
    "%2F",
    "%5C",
    "%23",
    "\u{ff20}",
    "\u{ff1a}",
    "\u{ff0f}",
    "\u{2100}",
    "\u{df}",
    "\u{fc}",
    "\u{ad}",
    "\u{200b}",
    "\u{feff}",
    "\u{ff21}",
    "\u{130}",
    "\u{3a3}",
    "\u{212a}",
    "\u{fb00}",
    "-",
    "_",
    "xn--",
    "127",
    "0x",
    "::",
    "::ffff:",
    "255.",
    "256",
    ":80",
    ":0",
    "example.com",
];

/// `count` URLs whose authorities are drawn from [`PIECES`] by a fixed linear congruential sequence, so every run
/// tries the same ones.
fn generated_urls(count: usize) -> Vec<String> {
    let schemes = [
        "http://",
        "https://",
        "HTTP://",
        "http:",
        "http:/",
        "http:\\\\",
        "http:///",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    };
    (0..count)
        .map(|_| {
            let scheme = schemes[next(schemes.len())];
            let pieces = 1 + next(6);
            let authority: String = (0..pieces).map(|_| PIECES[next(PIECES.len())]).collect();
            format!("{scheme}{authority}/x")
        })
        .collect()
}

/// The address as toolgate prints hosts: IPv4 dotted, IPv6 compressed in brackets, mapped IPv4 as IPv4.
fn printed_address(ip: &str) -> String {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.to_string(),
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{v6}]"),
        },
        // A zone id (`fe80::1%eth0`) is not an address toolgate ever prints.
        Err(_) => format!("unparsed address {ip}"),
    }
}

/// toolgate's `(host, port)` for a fetch of `url`, or `None` when it refuses the URL.
fn toolgate_target(url: &str) -> Option<(String, u16)> {
    let call = ::policy::ToolCall::new(
        "web",
        "fetch",
        json!({"url": url}),
        Some(::policy::ServerKind::Fetch),
    );
    let ctx = ::policy::Context {
        workspace: "/ws".into(),
        home: None,
    };
    let action = ::policy::normalise(&::policy::adapt(&call, &[]), &ctx, &::policy::Lexical);
    match (action.unknown, action.net) {
        (None, Some(net)) => Some((net.host, net.port)),
        _ => None,
    }
}

#[test]
fn hosts_resolve_as_mcp_server_fetch_connects_or_are_refused() {
    let python = peers().join(".venv-servers/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/test",
        python.display()
    );
    let urls = url_corpus();
    let mut child = Command::new(&python)
        .args(["-c", FETCH_TARGETS])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input: String = urls
        .iter()
        .map(|u| format!("{}\n", Value::from(u.as_str())))
        .collect();
    // Written from a thread so that a full stdout pipe cannot block both processes.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let answers: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(answers.len(), urls.len());
    let (mut agreed, mut refused, mut mismatches) = (0, 0, Vec::new());
    for (url, answer) in urls.iter().zip(&answers) {
        let Some(ours) = toolgate_target(url) else {
            refused += 1;
            continue;
        };
        let Some(targets) = answer["targets"].as_array() else {
            // The server stops before it connects anywhere.
            continue;
        };
        for target in targets {
            let theirs = match target["numeric"].as_str() {
                Some(ip) => printed_address(ip),
                // DNS compares names without case and with or without the root's trailing dot.
                None => {
                    let host = target["host"].as_str().unwrap().to_ascii_lowercase();
                    host.strip_suffix('.').unwrap_or(&host).to_owned()
                }
            };
            let port = target["port"].as_u64().unwrap();
            if (theirs.as_str(), port) != (ours.0.as_str(), u64::from(ours.1)) {
                mismatches.push(format!("{url:?}: toolgate {ours:?}, the server {target}"));
            }
        }
        agreed += 1;
    }
    assert!(
        mismatches.is_empty(),
        "toolgate allowed a URL it reads as another host or port:\n{}",
        mismatches.join("\n")
    );
    assert!(
        agreed > 100 && refused > 100,
        "agreed {agreed}, refused {refused}"
    );
}
