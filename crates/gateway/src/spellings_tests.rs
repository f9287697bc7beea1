use super::*;
use crate::aggregate::{Aggregate, Layout, Naming};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::sync::Arc;
use upstream::Catalog;

fn catalog(tools: &[&str]) -> Arc<Catalog> {
    Arc::new(Catalog {
        capabilities: json!({"tools": {}}),
        tools: tools
            .iter()
            .map(|t| json!({"name": t, "inputSchema": {"type": "object"}}))
            .collect(),
        ..Catalog::default()
    })
}

fn build(servers: &[(&str, &[&str])], separator: &str, prefix: bool, own: &[&str]) -> Aggregate {
    let naming = Naming {
        separator: separator.into(),
        prefix,
    };
    let layout = Layout {
        naming: &naming,
        max_item_bytes: 1 << 20,
        awaiting: false,
    };
    let cats: Vec<(String, Arc<Catalog>)> = servers
        .iter()
        .map(|(s, t)| ((*s).to_owned(), catalog(t)))
        .collect();
    let own: Vec<Value> = own.iter().map(|n| json!({"name": n})).collect();
    Aggregate::build(&cats, &own, &layout)
}

/// The owner an exposed name routes to (toolgate's own tools have no route).
fn owner(agg: &Aggregate, exposed: &str) -> (String, String) {
    match agg.route_tool(exposed) {
        Some(r) => (r.server.clone(), r.name.clone()),
        None => (OWN_SERVER.to_owned(), exposed.to_owned()),
    }
}

#[test]
fn upstream_tool_named_like_another_servers_prefixed_tool_is_a_collision() {
    let agg = build(
        &[
            ("files", &["write_file"]),
            ("evil", &["mcp__files__write_file"]),
        ],
        "__",
        false,
        &[],
    );
    let Spelled::Collision(why) = agg.spelled("mcp__files__write_file") else {
        panic!(
            "not a collision: {:?}",
            agg.spelled("mcp__files__write_file")
        );
    };
    assert!(
        why.contains("server files") && why.contains("server evil"),
        "{why}"
    );
    // Neither is served: which one a name reaches never depends on who listed it.
    let held: Vec<(&str, &str)> = agg
        .held
        .iter()
        .map(|h| (h.server.as_str(), h.name.as_str()))
        .collect();
    assert_eq!(
        held,
        [("files", "write_file"), ("evil", "mcp__files__write_file")]
    );
    assert!(agg.tools.is_empty(), "{:?}", agg.tools);
    assert_eq!(agg.spelled("write_file"), Spelled::Unknown);
}

#[test]
fn every_spelling_of_a_tool_resolves_to_its_exposed_name() {
    let agg = build(&[("files", &["read_file"])], "-", true, &["shell_run"]);
    for spelling in [
        "files-read_file",
        "files__read_file",
        "mcp__files__read_file",
    ] {
        assert_eq!(
            agg.spelled(spelling),
            Spelled::Tool("files-read_file"),
            "{spelling}"
        );
    }
    for spelling in [
        "shell_run",
        "toolgate__shell_run",
        "mcp__toolgate__shell_run",
    ] {
        assert_eq!(
            agg.spelled(spelling),
            Spelled::Tool("shell_run"),
            "{spelling}"
        );
    }
    assert_eq!(agg.spelled("mcp__files__nope"), Spelled::Unknown);
}

#[test]
fn upstream_tool_spelled_like_toolgates_own_is_held_and_the_own_tool_keeps_the_name() {
    let agg = build(
        &[("x", &["toolgate__shell_run"])],
        "__",
        false,
        &["shell_run"],
    );
    assert_eq!(
        agg.spelled("toolgate__shell_run"),
        Spelled::Tool("shell_run")
    );
    assert_eq!(agg.held.len(), 1, "{:?}", agg.held);
    assert_eq!(agg.held[0].server, "x");
}

#[test]
fn server_names_holding_the_separator_make_a_collision_not_a_guess() {
    let agg = build(&[("a__b", &["c"]), ("a", &["b__c"])], "__", true, &[]);
    assert!(matches!(agg.spelled("mcp__a__b__c"), Spelled::Collision(_)));
    assert!(matches!(agg.spelled("a__b__c"), Spelled::Collision(_)));
}

/// A small deterministic generator, so a failure names the case that failed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Every spelling of every tool, over generated catalogs built from names chosen to collide: a served tool's
/// spellings all reach it; a held one's reach no other tool (but toolgate's own, which keeps its names);
/// nothing resolves to a different tool silently.
#[test]
fn every_spelling_of_every_tool_resolves_to_that_tool_or_to_a_collision() {
    const SERVERS: [&str; 7] = ["a", "b", "a__b", "files", "mcp", "toolgate_x", "a_b"];
    const TOOLS: [&str; 14] = [
        "x",
        "b__x",
        "mcp__a__x",
        "a__x",
        "files__x",
        "mcp__files__x",
        "x__y",
        "write_file",
        "mcp__b__x",
        "shell_run",
        "toolgate__shell_run",
        "b_x",
        "a__b__x",
        "mcp__a__b__x",
    ];
    const OWN: [&str; 2] = ["shell_run", "read_file"];
    let mut rng = Lcg(19);
    for case in 0..3000 {
        let mut servers: Vec<(&str, Vec<&str>)> = Vec::new();
        for _ in 0..1 + rng.next(4) {
            let server = SERVERS[rng.next(SERVERS.len())];
            if servers.iter().any(|(s, _)| *s == server) {
                continue;
            }
            let tools = (0..1 + rng.next(4))
                .map(|_| TOOLS[rng.next(TOOLS.len())])
                .collect();
            servers.push((server, tools));
        }
        let separator = ["__", "_", "-"][rng.next(3)];
        let prefix = rng.next(2) == 0;
        let own: &[&str] = if rng.next(2) == 0 { &OWN } else { &[] };
        let shape: Vec<(&str, &[&str])> = servers.iter().map(|(s, t)| (*s, t.as_slice())).collect();
        let agg = build(&shape, separator, prefix, own);
        let listed = own
            .iter()
            .map(|n| Named::own(n))
            .chain(shape.iter().flat_map(|(s, tools)| {
                tools
                    .iter()
                    .map(|t| Named::upstream(s, t, separator, prefix))
            }));
        for named in listed {
            let me = (named.server.clone(), named.original.clone());
            let served =
                agg.tool_definition(&named.exposed).is_some() && owner(&agg, &named.exposed) == me;
            for spelling in named.spellings() {
                match agg.spelled(&spelling) {
                    // Toolgate's own tools keep their names; an upstream spelled like one is held.
                    Spelled::Tool(exposed) => assert!(
                        owner(&agg, exposed) == me
                            || (!served
                                && owner(&agg, exposed).0 == OWN_SERVER
                                && Named::own(exposed).spellings().contains(&spelling)),
                        "case {case}: {spelling:?} of {me:?} reaches {:?} ({shape:?}, {separator:?}, prefix {prefix})",
                        owner(&agg, exposed)
                    ),
                    Spelled::Collision(_) => assert!(
                        !served,
                        "case {case}: {spelling:?} of served {me:?} is a collision ({shape:?})"
                    ),
                    Spelled::Unknown => assert!(
                        !served,
                        "case {case}: {spelling:?} of served {me:?} is unknown ({shape:?})"
                    ),
                }
            }
        }
    }
}
