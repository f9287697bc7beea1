use super::*;

fn paths_of(raw: &RawAction, op: Operation) -> Vec<String> {
    if raw.operation == op {
        return raw.paths.clone();
    }
    raw.also
        .iter()
        .filter(|a| a.operation == op)
        .flat_map(|a| a.paths.clone())
        .collect()
}

#[test]
fn git_diff_paths_reach_the_policy_as_reads() {
    let raw = adapt(
        GIT_DIFF,
        "toolgate__git_diff".into(),
        &json!({"paths": [".env"]}),
    );
    assert_eq!(raw.unknown, None);
    assert_eq!(paths_of(&raw, Operation::GitRead), vec![".env".to_owned()]);
    assert_eq!(paths_of(&raw, Operation::FsRead), vec![".env".to_owned()]);
    let whole = adapt(GIT_STATUS, "toolgate__git_status".into(), &json!({}));
    assert_eq!(whole.paths, vec![".".to_owned()]);
}

#[test]
fn apply_patch_names_every_file_it_touches() {
    let patch = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-x\n+y\n\
                 --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n\n\
                 --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-o\n";
    let raw = adapt(
        APPLY_PATCH,
        "toolgate__filesystem_apply_patch".into(),
        &json!({"patch": patch}),
    );
    assert_eq!(raw.unknown, None, "{raw:?}");
    assert_eq!(raw.operation, Operation::FsWrite);
    assert_eq!(raw.paths, vec!["src/a.rs", "new.txt", "old.txt"]);
    assert_eq!(
        paths_of(&raw, Operation::FsRead),
        vec!["src/a.rs", "old.txt"]
    );
    assert_eq!(paths_of(&raw, Operation::FsDelete), vec!["old.txt"]);
}

#[test]
fn unparseable_or_empty_patch_is_unknown() {
    for patch in ["not a diff", "--- a/x\n"] {
        let raw = adapt(APPLY_PATCH, "t".into(), &json!({"patch": patch}));
        assert_eq!(raw.unknown, Some(UnknownReason::BadArgument), "{patch}");
    }
}

#[test]
fn write_with_expected_hash_reads_the_file() {
    let raw = adapt(
        WRITE_FILE,
        "t".into(),
        &json!({"path": "a", "content": "x", "expected_hash": "0".repeat(64)}),
    );
    assert_eq!(paths_of(&raw, Operation::FsRead), vec!["a".to_owned()]);
    let plain = adapt(
        WRITE_FILE,
        "t".into(),
        &json!({"path": "a", "content": "x"}),
    );
    assert!(paths_of(&plain, Operation::FsRead).is_empty());
}

/// The guard looks a tool up in these on every call of one of toolgate's own tools (`run_code` among
/// them): they are built once, not at each lookup.
#[test]
fn the_built_in_tools_are_built_once_per_process() {
    assert!(std::ptr::eq(tools(), tools()));
    assert!(tools().iter().any(|t| t.name == READ_FILE));
}

#[test]
fn every_schema_property_has_a_role_and_no_type_lists() {
    for tool in tools() {
        let def = tool.definition();
        let props = def["inputSchema"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(props.len(), tool.args.len(), "{}", tool.name);
        assert!(!def.to_string().contains("\"null\""), "{}", tool.name);
    }
    assert_eq!(
        adapt("nope", "t".into(), &json!({})).unknown,
        Some(UnknownReason::UnknownTool)
    );
}
