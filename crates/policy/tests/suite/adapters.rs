//! Adapters against the servers they model: every argument of every tool in the real `tools/list` of
//! mcp-server-git and mcp-server-fetch (captured once, versions in the file names) is classified or the tool is
//! `unknown`; decisions over calls with several operations; and a property test holding toolgate's resolution of
//! server-filesystem paths to a model of the server's own (Node's `path.resolve` and the server's
//! `validatePath`), or to `unknown`.

use policy::{
    Effect, Lexical, Operation, ReasonCode, ServerKind, ToolCall, UnknownReason, FETCH_ARGUMENTS,
    GIT_ARGUMENTS,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

use crate::common::{call, load};

fn captured(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    doc["tools"].as_array().cloned().unwrap_or_default()
}

/// Every tool of the captured list: each declared argument is in the table, or a call of the tool is `unknown`.
fn assert_classified(file: &str, table: &[(&str, &[&str])], kind: ServerKind) {
    let tools = captured(file);
    assert!(!tools.is_empty());
    let p = load(&json!({"policy": {"default": "allow"}}));
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let declared: Vec<&String> = tool["inputSchema"]["properties"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        match table.iter().find(|(t, _)| *t == name) {
            Some((_, args)) => {
                for a in declared {
                    assert!(
                        args.contains(&a.as_str()),
                        "{file}: {name}.{a} is not classified"
                    );
                }
            }
            None => {
                let a = p.action_for(&call("srv", name, json!({}), Some(kind)), &Lexical);
                assert_eq!(a.unknown, Some(UnknownReason::UnknownTool), "{name}");
            }
        }
    }
}

#[test]
fn every_mcp_server_git_argument_is_classified() {
    assert_classified(
        "mcp-server-git-2026.10.19.tools.json",
        GIT_ARGUMENTS,
        ServerKind::Git,
    );
}

#[test]
fn every_mcp_server_fetch_argument_is_classified() {
    assert_classified(
        "mcp-server-fetch-2026.10.24.tools.json",
        FETCH_ARGUMENTS,
        ServerKind::Fetch,
    );
}

#[test]
fn git_server_repo_path_and_files_reach_the_decision() {
    let p = load(&json!({"policy": {"default": "allow", "rules": [
        {"id": "deny-env", "effect": "deny", "paths": ["**/.env"]}]}}));
    let git = |tool: &str, args: Value| {
        p.decide_call(&call("git", tool, args, Some(ServerKind::Git)), &Lexical)
    };
    let add = git("git_add", json!({"repo_path": "/ws", "files": [".env"]}));
    assert_eq!(
        (add.effect, add.rule_id.as_deref()),
        (Effect::Deny, Some("deny-env"))
    );
    // A diff prints content from anywhere in the repository: a deny beneath it needs a human.
    let diff = git("git_diff_unstaged", json!({"repo_path": "/ws"}));
    assert_eq!(
        (diff.effect, diff.reason),
        (Effect::Ask, ReasonCode::DeniedBeneath)
    );
    let unknown_arg = git("git_status", json!({"repo_path": "/ws", "extra": "/etc"}));
    assert_eq!(unknown_arg.unknown, Some(UnknownReason::UnknownArgument));
}

fn files(tool: &str, args: Value) -> ToolCall {
    call("files", tool, args, Some(ServerKind::Filesystem))
}

fn secret_policy() -> policy::Policy {
    load(
        &json!({"permissions": {"default": "deny", "allow": ["Read(./**)", "Edit(./**)"],
                                 "deny": ["Read(./secret/**)"]}}),
    )
}

#[test]
fn move_file_out_of_a_read_denied_tree_is_denied() {
    let p = secret_policy();
    let d = p.decide_call(
        &files(
            "move_file",
            json!({"source": "/ws/secret/k", "destination": "/ws/pub/k"}),
        ),
        &Lexical,
    );
    assert_eq!((d.effect, d.operation), (Effect::Deny, Operation::FsRead));
    let parent = p.decide_call(
        &files("move_file", json!({"source": "/ws", "destination": "/ws2"})),
        &Lexical,
    );
    assert_eq!(parent.effect, Effect::Deny);
    let plain = p.decide_call(
        &files(
            "move_file",
            json!({"source": "/ws/a", "destination": "/ws/b"}),
        ),
        &Lexical,
    );
    assert_eq!(plain.effect, Effect::Allow, "{plain}");
}

#[test]
fn edit_file_dry_run_of_a_read_denied_file_is_denied() {
    let p = secret_policy();
    for dry in [true, false] {
        let edit = json!({"path": "/ws/secret/k", "edits": [], "dryRun": dry});
        assert_eq!(
            p.decide_call(&files("edit_file", edit), &Lexical).effect,
            Effect::Deny
        );
    }
}

#[test]
fn listing_a_read_denied_tree_is_denied_and_listing_its_ancestor_recursively_asks() {
    let p = secret_policy();
    let decide = |tool: &str, path: &str| {
        let mut args = json!({"path": path});
        if tool == "search_files" {
            args["pattern"] = json!("*");
        }
        p.decide_call(&files(tool, args), &Lexical)
    };
    let inside = decide("list_directory", "/ws/secret");
    assert_eq!(inside.effect, Effect::Deny);
    let tree = decide("directory_tree", "/ws");
    assert_eq!(
        (tree.effect, tree.reason),
        (Effect::Ask, ReasonCode::DeniedBeneath)
    );
    assert_eq!(decide("search_files", "/ws").effect, Effect::Ask);
    assert_eq!(decide("list_directory", "/ws").effect, Effect::Allow);
    assert_eq!(decide("directory_tree", "/ws/pub").effect, Effect::Allow);
}

/// A deny on files (`Read(**/.env)`, `Read(**/*.pem)`) means one thing for every call that only lists or
/// searches names: with names hidden (the default) each of them asks where such a name may show, one level deep
/// or recursively, the explicit allow of `git_status` included; with `names = "shown"` the allows hold. A
/// listing inside a denied tree is denied either way.
#[test]
fn listings_and_searches_of_names_meet_a_deny_on_files_alike_and_names_shown_lets_them_through() {
    let decide = |names: &str, server: &str, tool: &str, args: Value| {
        let p = load(&json!({
            "policy": {"default": "deny", "names": names},
            "permissions": {"allow": ["Read(./**)", "mcp__git__git_status"], "deny": ["Read(**/.env)", "Read(**/*.pem)", "Read(./secret/**)"]}
        }));
        let kind = if server == "git" {
            ServerKind::Git
        } else {
            ServerKind::Filesystem
        };
        p.decide_call(&call(server, tool, args, Some(kind)), &Lexical)
    };
    let listings = [
        ("files", "list_directory", json!({"path": "/ws"})),
        ("files", "directory_tree", json!({"path": "/ws"})),
        (
            "files",
            "search_files",
            json!({"path": "/ws", "pattern": "*"}),
        ),
        ("git", "git_status", json!({"repo_path": "/ws"})),
    ];
    for (server, tool, args) in &listings {
        let hidden = decide("hidden", server, tool, args.clone());
        assert_eq!(
            (hidden.effect, hidden.reason),
            (Effect::Ask, ReasonCode::DeniedBeneath),
            "{tool}"
        );
        assert_eq!(
            decide("shown", server, tool, args.clone()).effect,
            Effect::Allow,
            "{tool}"
        );
    }
    for names in ["hidden", "shown"] {
        let inside = decide(
            names,
            "files",
            "list_directory",
            json!({"path": "/ws/secret"}),
        );
        assert_eq!(inside.effect, Effect::Deny, "{names}");
    }
}

/// server-filesystem's resolution, written from its source: `expandHome`, then `path.resolve` of an absolute
/// path, or `resolveRelativePathAgainstAllowedDirectories` of a relative one (each directory in order, kept when
/// the normalised candidate lies within any directory, else the first directory).
fn server_resolves(raw: &str, dirs: &[&str], home: &str) -> String {
    let expanded = if raw == "~" || raw.starts_with("~/") {
        format!("{home}/{}", &raw[1..])
    } else {
        raw.to_owned()
    };
    if expanded.starts_with('/') {
        return node_resolve(&[&expanded]);
    }
    let normalize = |p: &str| {
        let t = p
            .trim()
            .trim_start_matches(['"', '\''])
            .trim_end_matches(['"', '\'']);
        node_resolve(&[t])
    };
    let within = |p: &str| {
        dirs.iter()
            .any(|d| p == *d || *d == "/" || p.starts_with(&format!("{d}/")))
    };
    for dir in dirs {
        let candidate = node_resolve(&[dir, &expanded]);
        if within(&normalize(&candidate)) {
            return candidate;
        }
    }
    node_resolve(&[dirs[0], &expanded])
}

/// Node's `path.resolve` on POSIX for segments whose last absolute one comes first.
fn node_resolve(parts: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in parts {
        if part.starts_with('/') {
            out.clear();
        }
        for seg in part.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                s => out.push(s),
            }
        }
    }
    format!("/{}", out.join("/"))
}

fn segment() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "ws",
        "secret",
        "a",
        "..",
        ".",
        "",
        "WS",
        "Secret",
        "caf\u{e9}",
        "cafe\u{301}",
        "%2e%2e",
        "~",
        " ",
        "x ",
        "\"q",
        "other",
        "ws-evil",
    ])
    .prop_map(str::to_owned)
}

fn raw_path() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "/", "~/", "/ws/", "/other/", "./", "../"]),
        prop::collection::vec(segment(), 0..6),
        prop::sample::select(vec!["/", "//"]),
    )
        .prop_map(|(prefix, segs, sep)| format!("{prefix}{}", segs.join(sep)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn toolgate_resolves_server_filesystem_paths_as_the_server_does_or_calls_them_unknown(
        raw in raw_path(),
        both in any::<bool>(),
    ) {
        let dirs: &[&str] = if both { &["/ws", "/other"] } else { &["/other", "/ws"] };
        let mut servers = crate::common::servers();
        servers.filesystem_dirs.insert("files".into(), dirs.iter().map(|d| d.to_string()).collect());
        let p = load(&json!({"policy": {"default": "allow"}})).with_servers(servers);
        let a = p.action_for(&files("read_text_file", json!({"path": raw})), &Lexical);
        if a.unknown.is_none() {
            prop_assert_eq!(&a.paths, &vec![server_resolves(&raw, dirs, "/home/u")], "{:?}", raw);
        }
    }

    #[test]
    fn file_uris_name_the_path_a_plain_decoder_reads_or_are_refused(
        host in prop::sample::select(vec!["", "localhost", "LOCALHOST", "evil", "127.0.0.1"]),
        segs in prop::collection::vec(prop::sample::select(vec![
            "ws", "a%20b", "%2e%2e", "..", ".", "%2F", "%5c", "x?y", "x#y", "%00", "%e9", "%C3%A9", "secret",
        ]), 1..5),
        scheme in prop::sample::select(vec!["file", "FILE", "File"]),
    ) {
        let path = format!("/{}", segs.join("/"));
        let uri = format!("{scheme}://{host}{path}");
        match policy::file_uri_path(&uri) {
            Ok(Some(decoded)) => {
                // Accepted only when every parser agrees: a local host, no dot segments, no encoded separator.
                prop_assert!(host.is_empty() || host.eq_ignore_ascii_case("localhost"));
                prop_assert!(!decoded.split('/').any(|s| s == ".." || s == "."));
                prop_assert_eq!(decoded.matches('/').count(), path.matches('/').count());
                prop_assert!(!decoded.contains(['\\', '\0', '?', '#']));
            }
            Ok(None) => prop_assert!(false, "{} is a file URI", uri),
            Err(e) => prop_assert_eq!(e, UnknownReason::AmbiguousUri),
        }
    }
}
