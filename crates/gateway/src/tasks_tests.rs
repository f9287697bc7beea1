//! Task ids: where they sit in results, and the sealed id that only its owner resolves, in any process.

use super::*;

#[test]
fn every_place_a_task_id_sits_is_rewritten() {
    let mut create = json!({"task": {"taskId": "up-1", "status": "working"}});
    rewrite(&mut create, "ours");
    assert_eq!(create["task"]["taskId"], "ours");
    let mut result = json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "up-1"}}});
    rewrite(&mut result, "ours");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        "ours"
    );
    let mut modern = json!({"resultType": "task", "taskId": "up-1", "ttlMs": 5});
    assert_eq!(created(&modern), Some(("up-1".to_owned(), Some(5))));
    rewrite(&mut modern, "ours");
    assert_eq!(modern["taskId"], "ours");
}

/// `fx`'s task `up-1` of `owner`, minted by a process that names no address.
fn task(owner: &Owner) -> Task<'_> {
    Task {
        server: "fx",
        upstream_id: "up-1",
        owner,
        holder: json!({"i": "minter", "a": null}),
    }
}

fn owner(identity: Option<&str>, session: Option<&str>) -> Owner {
    Owner {
        identity: identity.map(str::to_owned),
        session: session.map(str::to_owned),
    }
}

#[test]
fn a_task_id_minted_by_one_process_resolves_in_another_of_the_same_state_root() {
    let root = tempfile::tempdir().unwrap();
    let here = TokenKey::for_state_root(root.path(), TOKEN_PURPOSE).unwrap();
    let there = TokenKey::for_state_root(root.path(), TOKEN_PURPOSE).unwrap();
    let alice = owner(Some("alice"), None);
    let now = Timestamp::now();
    let id = seal_id(&here, &task(&alice), now.plus_millis(60_000)).unwrap();
    assert!(id.starts_with(ID_PREFIX));
    assert!(
        !id.contains("up-1") && !id.contains("alice"),
        "names nothing in clear: {id}"
    );
    assert_eq!(
        open_id(&there, &id, &alice, now),
        Some(("fx".to_owned(), "up-1".to_owned()))
    );
    // Its ttl ends it everywhere.
    assert_eq!(open_id(&there, &id, &alice, now.plus_millis(60_000)), None);
}

#[test]
fn another_owners_or_a_forged_task_id_is_unknown() {
    let root = tempfile::tempdir().unwrap();
    let key = TokenKey::for_state_root(root.path(), TOKEN_PURPOSE).unwrap();
    let now = Timestamp::now();
    let legacy = owner(None, Some("session-1"));
    let id = seal_id(&key, &task(&legacy), now.plus_millis(60_000)).unwrap();
    assert!(open_id(&key, &id, &legacy, now).is_some());
    for other in [
        owner(None, Some("session-2")),
        owner(Some("alice"), Some("session-1")),
        owner(None, None),
    ] {
        assert_eq!(open_id(&key, &id, &other, now), None, "{other:?}");
    }
    let mut forged = id.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).unwrap();
    assert_eq!(open_id(&key, &forged, &legacy, now), None);
    let elsewhere = tempfile::tempdir().unwrap();
    let foreign = TokenKey::for_state_root(elsewhere.path(), TOKEN_PURPOSE).unwrap();
    assert_eq!(open_id(&foreign, &id, &legacy, now), None);
    let request_states = TokenKey::for_state_root(root.path(), "request state").unwrap();
    assert_eq!(open_id(&request_states, &id, &legacy, now), None);
    assert_eq!(open_id(&key, "tgtask-0123", &legacy, now), None);
    assert_eq!(
        open_id(&key, id.trim_start_matches(ID_PREFIX), &legacy, now),
        None
    );
}

#[test]
fn an_ordinary_result_is_no_task() {
    assert_eq!(created(&json!({"content": [], "task": "a string"})), None);
    assert_eq!(created(&json!({"content": []})), None);
}
