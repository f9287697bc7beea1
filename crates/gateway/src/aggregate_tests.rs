use super::*;
use pretty_assertions::assert_eq;
use std::sync::Arc;

fn catalog(tools: &[&str]) -> Arc<Catalog> {
    Arc::new(Catalog {
        capabilities: json!({"tools": {}, "resources": {}}),
        tools: tools
            .iter()
            .map(|t| json!({"name": t, "inputSchema": {"type": "object"}, "x": 1}))
            .collect(),
        resources: vec![
            json!({"uri": format!("mem://{}", tools.first().unwrap_or(&"none")), "name": "r"}),
        ],
        resource_templates: vec![json!({"uriTemplate": "mem://item/{id}", "name": "t"})],
        ..Catalog::default()
    })
}

fn naming(prefix: bool) -> Naming {
    Naming {
        separator: "__".into(),
        prefix,
    }
}

fn build(cats: &[(String, Arc<Catalog>)], prefix: bool, own: &[Value]) -> Aggregate {
    let naming = naming(prefix);
    let layout = Layout {
        naming: &naming,
        max_item_bytes: 1 << 20,
        awaiting: false,
    };
    Aggregate::build(cats, own, &layout)
}

fn served(agg: &Aggregate) -> Vec<&str> {
    agg.tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

fn held(agg: &Aggregate) -> Vec<(&str, &str)> {
    agg.held
        .iter()
        .map(|h| (h.server.as_str(), h.name.as_str()))
        .collect()
}

#[test]
fn prefixed_names_route_back_to_their_owner_and_keep_other_fields() {
    let cats = vec![
        ("a".to_owned(), catalog(&["read"])),
        ("b".to_owned(), catalog(&["read"])),
    ];
    let agg = build(&cats, true, &[]);
    assert_eq!(
        agg.tools[1],
        json!({"name": "b__read", "inputSchema": {"type": "object"}, "x": 1})
    );
    assert_eq!(
        agg.route_tool("b__read"),
        Some(&Route {
            server: "b".into(),
            name: "read".into()
        })
    );
    assert_eq!(agg.route_tool("read"), None);
    assert_eq!(agg.tool_sizes.len(), agg.tools.len());
}

#[test]
fn collision_between_upstreams_holds_every_claimant_and_names_both() {
    let cats = vec![
        ("a".to_owned(), catalog(&["read", "only_a"])),
        ("b".to_owned(), catalog(&["read"])),
    ];
    let agg = build(&cats, false, &[]);
    assert_eq!(served(&agg), ["only_a"]);
    assert_eq!(agg.route_tool("read"), None);
    assert_eq!(held(&agg), [("a", "read"), ("b", "read")]);
    let reason = &agg.held[0].reason;
    assert!(
        reason.contains("tool \"read\" of server a")
            && reason.contains("tool \"read\" of server b"),
        "{reason}"
    );
    // Which server started first does not decide who serves the name.
    let reversed = vec![cats[1].clone(), cats[0].clone()];
    assert_eq!(build(&reversed, false, &[]).route_tool("read"), None);
}

#[test]
fn duplicate_tool_name_within_one_upstream_is_held_not_fatal() {
    let cats = vec![
        ("a".to_owned(), catalog(&["echo", "echo", "fine"])),
        ("b".to_owned(), catalog(&["other"])),
    ];
    let agg = build(&cats, true, &[]);
    assert_eq!(served(&agg), ["a__fine", "b__other"]);
    assert_eq!(held(&agg), [("a", "echo"), ("a", "echo")]);
    assert!(agg.held[0].reason.contains("lists 2 tools named \"echo\""));
}

#[test]
fn upstream_tool_cannot_shadow_toolgate_own_tool() {
    let own = [json!({"name": "toolgate_status"})];
    let cats = vec![("a".to_owned(), catalog(&["toolgate_status"]))];
    let agg = build(&cats, false, &own);
    assert_eq!(served(&agg), ["toolgate_status"]);
    assert_eq!(agg.route_tool("toolgate_status"), None);
    assert!(agg.held[0].reason.contains("toolgate's own tool"));
}

#[test]
fn oversized_tool_definition_is_held_with_its_size() {
    let big = json!({"name": "big", "description": "d".repeat(5000)});
    let cats = vec![(
        "a".to_owned(),
        Arc::new(Catalog {
            capabilities: json!({"tools": {}}),
            tools: vec![big, json!({"name": "small"})],
            ..Catalog::default()
        }),
    )];
    let naming = naming(true);
    let layout = Layout {
        naming: &naming,
        max_item_bytes: 4096,
        awaiting: false,
    };
    let agg = Aggregate::build(&cats, &[], &layout);
    assert_eq!(served(&agg), ["a__small"]);
    assert_eq!(held(&agg), [("a", "big")]);
    assert!(
        agg.held[0].reason.contains("bytes"),
        "{}",
        agg.held[0].reason
    );
}

#[test]
fn resources_route_by_uri_then_template_prefix() {
    let cats = vec![
        ("a".to_owned(), catalog(&["x"])),
        ("b".to_owned(), catalog(&["y"])),
    ];
    let agg = build(&cats, true, &[]);
    assert_eq!(agg.route_resource("mem://y"), Some("b"));
    // Both have the same template; the first keeps it (stable sort).
    assert_eq!(agg.route_resource("mem://item/7"), Some("a"));
    assert_eq!(agg.route_resource("other://z"), None);
}

#[test]
fn capabilities_follow_upstreams() {
    let cats = vec![("a".to_owned(), catalog(&["x"]))];
    let agg = build(&cats, true, &[]);
    assert_eq!(
        agg.capabilities,
        json!({"tools": {"listChanged": true}, "resources": {"listChanged": true, "subscribe": false}})
    );
}

#[test]
fn capabilities_offer_every_list_while_an_upstream_is_still_starting() {
    let naming = naming(true);
    let layout = Layout {
        naming: &naming,
        max_item_bytes: 1 << 20,
        awaiting: true,
    };
    let agg = Aggregate::build(&[], &[], &layout);
    assert_eq!(
        agg.capabilities,
        json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true},
               "resources": {"listChanged": true, "subscribe": false}})
    );
}

/// A rebuild reuses what the previous aggregate made of unchanged catalogs; whatever it reuses, the result is the
/// one a build from nothing gives: through an unchanged server, a changed definition under the same name, and a
/// name that another server starts to share.
#[test]
fn build_after_a_previous_aggregate_equals_a_build_from_nothing() {
    let naming = naming(false);
    let layout = Layout {
        naming: &naming,
        max_item_bytes: 1 << 20,
        awaiting: false,
    };
    let big = catalog(&["read", "write", "list"]);
    let mut changed = (*catalog(&["read", "write", "list"])).clone();
    changed.tools[1]["x"] = json!(2);
    let steps: Vec<Vec<(String, Arc<Catalog>)>> = vec![
        vec![("a".into(), Arc::clone(&big))],
        vec![
            ("a".into(), Arc::clone(&big)),
            ("b".into(), catalog(&["other"])),
        ],
        vec![
            ("a".into(), Arc::new(changed)),
            ("b".into(), catalog(&["other"])),
        ],
        vec![
            ("a".into(), Arc::clone(&big)),
            ("b".into(), catalog(&["list"])),
        ],
    ];
    let mut previous = Aggregate::default();
    for (i, cats) in steps.iter().enumerate() {
        let after = Aggregate::build_after(cats, &[], &layout, &previous);
        let fresh = Aggregate::build(cats, &[], &layout);
        assert_eq!(after.tools, fresh.tools, "step {i}");
        assert_eq!(after.tool_sizes, fresh.tool_sizes, "step {i}");
        assert_eq!(after.tool_owners, fresh.tool_owners, "step {i}");
        assert_eq!(after.held, fresh.held, "step {i}");
        previous = after;
    }
    assert_eq!(previous.tools.len(), 2, "`list` is held on both servers");
}
