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

#[test]
fn prefixed_names_route_back_to_their_owner_and_keep_other_fields() {
    let cats = vec![
        ("a".to_owned(), catalog(&["read"])),
        ("b".to_owned(), catalog(&["read"])),
    ];
    let agg = Aggregate::build(&cats, &naming(true), &[], true).unwrap();
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
}

#[test]
fn unprefixed_collision_is_refused_at_startup_naming_both_sources() {
    let cats = vec![
        ("a".to_owned(), catalog(&["read"])),
        ("b".to_owned(), catalog(&["read"])),
    ];
    let err = Aggregate::build(&cats, &naming(false), &[], true).unwrap_err();
    assert!(
        err.contains("tool \"read\" of server a") && err.contains("tool \"read\" of server b"),
        "{err}"
    );
    // After start-up the first keeps the name.
    let agg = Aggregate::build(&cats, &naming(false), &[], false).unwrap();
    assert_eq!(agg.route_tool("read").unwrap().server, "a");
    assert_eq!(agg.tools.len(), 1);
}

#[test]
fn upstream_tool_cannot_shadow_toolgate_own_tool() {
    let own = [json!({"name": "toolgate_status"})];
    let cats = vec![("a".to_owned(), catalog(&["toolgate_status"]))];
    assert!(Aggregate::build(&cats, &naming(false), &own, true).is_err());
}

#[test]
fn resources_route_by_uri_then_template_prefix() {
    let cats = vec![
        ("a".to_owned(), catalog(&["x"])),
        ("b".to_owned(), catalog(&["y"])),
    ];
    let agg = Aggregate::build(&cats, &naming(true), &[], true).unwrap();
    assert_eq!(agg.route_resource("mem://y"), Some("b"));
    // Both have the same template; the first keeps it (stable sort).
    assert_eq!(agg.route_resource("mem://item/7"), Some("a"));
    assert_eq!(agg.route_resource("other://z"), None);
}

#[test]
fn capabilities_follow_upstreams() {
    let cats = vec![("a".to_owned(), catalog(&["x"]))];
    let agg = Aggregate::build(&cats, &naming(true), &[], true).unwrap();
    assert_eq!(
        agg.capabilities,
        json!({"tools": {"listChanged": true}, "resources": {"listChanged": true, "subscribe": false}})
    );
}
