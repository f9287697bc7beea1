//! Grants, pins, reports and the audit witness as every backend keeps them.

use pretty_assertions::assert_eq;
use serde_json::json;
use store::{
    definition_hash, AuditHead, Decision, Error, FirstUse, GroupBy, Limits, PinCheck,
    PinObservation, PinState, PinsSince, ReportEvent, Retention,
};

use super::{at, Backend, T0};

pub fn grants_cover_exactly_their_session_tool_definition_and_scope<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let def = "ab".repeat(32);
    s.grant_session("s1", "fx/write", &def, r#"{"path":"a"}"#, T0)
        .unwrap();
    assert!(s
        .session_grant_valid("s1", "fx/write", &def, r#"{"path":"a"}"#)
        .unwrap());
    // Other arguments, another definition, tool or session: no grant.
    assert!(!s
        .session_grant_valid("s1", "fx/write", &def, r#"{"path":"b"}"#)
        .unwrap());
    assert!(!s
        .session_grant_valid("s1", "fx/write", &def, r#"{"path":"a" }"#)
        .unwrap());
    assert!(!s
        .session_grant_valid("s1", "fx/write", &"cd".repeat(32), r#"{"path":"a"}"#)
        .unwrap());
    assert!(!s
        .session_grant_valid("s1", "fx/read", &def, r#"{"path":"a"}"#)
        .unwrap());
    assert!(!s
        .session_grant_valid("s2", "fx/write", &def, r#"{"path":"a"}"#)
        .unwrap());
    // Renewing is not a second grant; another handle sees it; revoking ends it.
    s.grant_session("s1", "fx/write", &def, r#"{"path":"a"}"#, at(1))
        .unwrap();
    assert!(b
        .handle()
        .session_grant_valid("s1", "fx/write", &def, r#"{"path":"a"}"#)
        .unwrap());
    assert_eq!(s.revoke_session("s1").unwrap(), 1);
    assert!(!s
        .session_grant_valid("s1", "fx/write", &def, r#"{"path":"a"}"#)
        .unwrap());
}

pub fn pins_quarantine_on_change_and_accept_only_the_named_definition<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let (v1, v2, v3) = (json!({"d": 1}), json!({"d": 2}), json!({"d": 3}));
    let observe = |v| s.observe_tool("fx/t", v, FirstUse::Accept, T0).unwrap();
    assert_eq!(observe(&v1), PinCheck::New(PinState::Accepted));
    assert_eq!(observe(&v1), PinCheck::Unchanged);
    assert_eq!(
        observe(&v2),
        PinCheck::Changed {
            accepted_sha256: definition_hash(&v1),
            observed_sha256: definition_hash(&v2),
        }
    );
    assert_eq!(observe(&v3), PinCheck::Quarantined);
    let pin = s.get_pin("fx/t").unwrap().unwrap();
    assert_eq!(pin.state, PinState::Quarantined);
    assert_eq!(pin.definition_sha256, definition_hash(&v1));
    assert_eq!(
        pin.candidate_sha256,
        Some(definition_hash(&v3)),
        "the newest candidate is kept"
    );
    assert!(matches!(
        s.accept_pin("fx/t", &definition_hash(&v2), at(1)),
        Err(Error::PinMismatch)
    ));
    let accepted = s.accept_pin("fx/t", &definition_hash(&v3), at(1)).unwrap();
    assert_eq!(
        (accepted.state, accepted.definition_sha256),
        (PinState::Accepted, definition_hash(&v3))
    );
    assert_eq!(observe(&v3), PinCheck::Unchanged);
    assert_eq!(
        s.observe_tool("fx/new", &v1, FirstUse::Quarantine, T0)
            .unwrap(),
        PinCheck::New(PinState::Quarantined)
    );
    let names: Vec<_> = s.list_pins().unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["fx/new", "fx/t"]);
}

pub fn pin_generation_moves_on_every_pin_write_by_any_handle<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (s, other) = (b.handle(), b.handle());
    let v1 = json!({"d": 1});
    let item = |v| PinObservation {
        name: "fx/t",
        definition: v,
        sha256: None,
        first_use: FirstUse::Accept,
    };
    let g0 = s.pins_generation().unwrap();
    s.observe_pins(&[item(&v1)], T0).unwrap();
    let g1 = s.pins_generation().unwrap();
    assert!(g1 > g0, "a new pin moves the generation");
    s.observe_pins(&[item(&v1)], T0).unwrap();
    assert_eq!(
        s.pins_generation().unwrap(),
        g1,
        "an unchanged pin does not"
    );
    // A pass with nothing changed since its generation skips the unchanged items.
    let unchanged = [item(&v1)];
    let pass = |generation| PinsSince {
        generation,
        changed: &[],
        unchanged: &unchanged,
    };
    assert!(s
        .observe_pins_since(pass(Some(g1)), T0)
        .unwrap()
        .unchanged
        .is_none());
    // Another handle's write moves it for this one, and the next pass checks everything again.
    other
        .observe_tool("fx/t", &json!({"d": 2}), FirstUse::Accept, T0)
        .unwrap();
    let g2 = s.pins_generation().unwrap();
    assert!(g2 > g1);
    let again = s.observe_pins_since(pass(Some(g1)), T0).unwrap();
    let checks = again.unchanged.expect("checked again after a change");
    assert_eq!(checks[0].as_ref().unwrap().check, PinCheck::Quarantined);
    assert_eq!(again.generation, g2);
}

/// A pass of checks advances the generation once however many pins it writes, and says each definition's hash;
/// a pass that writes nothing leaves it, and every single write outside a pass (accept, override) moves it.
pub fn a_pass_advances_the_generation_once_for_all_its_writes<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let defs: Vec<_> = (0..5).map(|i| json!({"d": i})).collect();
    let names: Vec<_> = (0..5).map(|i| format!("fx/t{i}")).collect();
    let items: Vec<_> = names
        .iter()
        .zip(&defs)
        .map(|(name, definition)| PinObservation {
            name,
            definition,
            sha256: None,
            first_use: FirstUse::Accept,
        })
        .collect();
    let g0 = s.pins_generation().unwrap();
    let seen = s.observe_pins(&items, T0).unwrap();
    let hashes: Vec<_> = seen.into_iter().map(|o| o.unwrap().sha256).collect();
    let expected: Vec<_> = defs.iter().map(definition_hash).collect();
    assert_eq!(hashes, expected);
    let g1 = s.pins_generation().unwrap();
    assert_eq!(g1, g0 + 1, "five new pins, one pass");
    // Two changed and one new, in one pass with its generation: one step again.
    let (c0, c1, extra) = (json!({"d": "c0"}), json!({"d": "c1"}), json!({"d": "x"}));
    let changed = [
        PinObservation {
            definition: &c0,
            ..items[0]
        },
        PinObservation {
            definition: &c1,
            ..items[1]
        },
        PinObservation {
            name: "fx/extra",
            definition: &extra,
            ..items[0]
        },
    ];
    let pass = PinsSince {
        generation: Some(g1),
        changed: &changed,
        unchanged: &items[2..],
    };
    let checks = s.observe_pins_since(pass, at(1)).unwrap();
    assert!(checks.unchanged.is_none());
    assert_eq!(checks.generation, g1 + 1);
    assert_eq!(s.pins_generation().unwrap(), g1 + 1);
    assert_eq!(
        s.observe_pins(&items[2..], at(2)).unwrap().len(),
        3,
        "unchanged pins"
    );
    assert_eq!(s.pins_generation().unwrap(), g1 + 1, "nothing written");
    s.accept_pin("fx/t0", &definition_hash(&c0), at(3)).unwrap();
    let g2 = s.pins_generation().unwrap();
    assert!(g2 > g1 + 1, "an accept moves it");
    s.override_pin_flags("fx/t0", &definition_hash(&c0), at(4))
        .unwrap();
    assert!(s.pins_generation().unwrap() > g2, "an override moves it");
    // The pins the passes wrote are what they say.
    let pin = s.get_pin("fx/t1").unwrap().unwrap();
    assert_eq!(pin.state, PinState::Quarantined);
    assert_eq!(pin.candidate_sha256, Some(definition_hash(&c1)));
    assert_eq!(pin.candidate_json.as_deref(), Some(r#"{"d":"c1"}"#));
}

/// A long run of first sightings in one pass (a server's first listing) still finds the pins among them: a pin
/// met midway is checked against what it holds (changed, unchanged, or held as it was), never written over as
/// new, and the items after it are pinned as new again, each with the first use it was given.
pub fn a_run_of_first_sightings_still_finds_the_pins_among_them<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let (a, b2, c) = (json!({"d": "a"}), json!({"d": "b"}), json!({"d": "c"}));
    let one = |name, definition, first_use| PinObservation {
        name,
        definition,
        sha256: None,
        first_use,
    };
    s.observe_pins(
        &[
            one("fx/changed", &a, FirstUse::Accept),
            one("fx/same", &c, FirstUse::Accept),
            one("fx/held", &a, FirstUse::Quarantine),
        ],
        T0,
    )
    .unwrap();
    let g0 = s.pins_generation().unwrap();
    let news: Vec<_> = (0..8).map(|i| format!("fx/new{i}")).collect();
    let new = |i: usize, first_use| one(news[i].as_str(), &c, first_use);
    let items = [
        new(0, FirstUse::Accept),
        new(1, FirstUse::Accept),
        new(2, FirstUse::Accept),
        one("fx/changed", &b2, FirstUse::Accept),
        new(3, FirstUse::Accept),
        new(4, FirstUse::Accept),
        new(5, FirstUse::Accept),
        one("fx/same", &c, FirstUse::Accept),
        new(6, FirstUse::Accept),
        new(7, FirstUse::Quarantine),
        one("fx/held", &b2, FirstUse::Accept),
    ];
    let checks: Vec<_> = s
        .observe_pins(&items, at(1))
        .unwrap()
        .into_iter()
        .map(|o| o.unwrap())
        .collect();
    let new_accepted = PinCheck::New(PinState::Accepted);
    let kinds: Vec<_> = checks.iter().map(|o| o.check.clone()).collect();
    assert_eq!(
        kinds,
        [
            new_accepted.clone(),
            new_accepted.clone(),
            new_accepted.clone(),
            PinCheck::Changed {
                accepted_sha256: definition_hash(&a),
                observed_sha256: definition_hash(&b2),
            },
            new_accepted.clone(),
            new_accepted.clone(),
            new_accepted.clone(),
            PinCheck::Unchanged,
            new_accepted,
            PinCheck::New(PinState::Quarantined),
            PinCheck::Quarantined,
        ]
    );
    let held_new: Vec<_> = checks.iter().map(|o| o.never_accepted).collect();
    let expected: Vec<_> = (0..items.len()).map(|i| i == 9 || i == 10).collect();
    assert_eq!(held_new, expected, "first uses kept");
    assert!(checks
        .iter()
        .zip(&items)
        .all(|(o, item)| o.sha256 == definition_hash(item.definition)));
    assert_eq!(s.pins_generation().unwrap(), g0 + 1, "one pass, one step");
    let changed = s.get_pin("fx/changed").unwrap().unwrap();
    assert_eq!(changed.state, PinState::Quarantined);
    assert_eq!(
        changed.definition_sha256,
        definition_hash(&a),
        "not written over"
    );
    assert_eq!(changed.candidate_sha256, Some(definition_hash(&b2)));
    let held = s.get_pin("fx/held").unwrap().unwrap();
    assert_eq!(held.state, PinState::Quarantined);
    assert_eq!(
        held.definition_sha256,
        definition_hash(&b2),
        "never accepted: keeps the newest"
    );
    assert_eq!(
        s.get_pin("fx/new7").unwrap().unwrap().state,
        PinState::Quarantined
    );
    assert_eq!(
        s.get_pin("fx/new6").unwrap().unwrap().state,
        PinState::Accepted
    );
}

pub fn flag_overrides_name_the_accepted_definition<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let (v1, v2) = (json!({"d": 1}), json!({"d": 2}));
    s.observe_tool("fx/t", &v1, FirstUse::Accept, T0).unwrap();
    assert!(matches!(
        s.override_pin_flags("fx/t", &definition_hash(&v2), at(1)),
        Err(Error::PinMismatch)
    ));
    let pin = s
        .override_pin_flags("fx/t", &definition_hash(&v1), at(1))
        .unwrap();
    assert!(pin.flags_overridden());
    let item = PinObservation {
        name: "fx/t",
        definition: &v1,
        sha256: None,
        first_use: FirstUse::Accept,
    };
    let seen = s.observe_pins(&[item], at(2)).unwrap().remove(0).unwrap();
    assert!(seen.flags_overridden);
    // A changed definition is quarantined, and the override does not follow it.
    s.observe_tool("fx/t", &v2, FirstUse::Accept, at(3))
        .unwrap();
    s.accept_pin("fx/t", &definition_hash(&v2), at(4)).unwrap();
    assert!(!s.get_pin("fx/t").unwrap().unwrap().flags_overridden());
}

fn event(tool: &str, ms: Option<u64>, outcome: &str, time: store::Timestamp) -> ReportEvent {
    ReportEvent {
        time,
        trace_id: "t".into(),
        profile: "dev".into(),
        principal: None,
        server: "fx".into(),
        tool: tool.into(),
        operation: "fs.read".into(),
        decision: Decision::Allow,
        reason_code: "RULE_ALLOW".into(),
        outcome: outcome.into(),
        duration_ms: ms,
        wait_ms: None,
        rule: None,
        error_class: None,
    }
}

pub fn report_percentiles_rates_and_since<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let events: Vec<_> = (1..=100)
        .map(|ms| {
            event(
                "slow",
                Some(ms),
                if ms <= 80 { "SUCCEEDED" } else { "FAILED" },
                at(10),
            )
        })
        .collect();
    s.record_events(&events).unwrap();
    s.record_event(&event("old", Some(7), "SUCCEEDED", T0))
        .unwrap();
    assert_eq!(s.event_count().unwrap(), 101);
    let report = s.report(GroupBy::Tool, None).unwrap();
    let slow = &report.rows[0];
    assert_eq!(slow.key, "fx/slow");
    assert_eq!((slow.count, slow.succeeded), (100, 80));
    assert!((slow.success_rate - 0.8).abs() < 1e-9);
    assert_eq!(
        (slow.p50_ms, slow.p95_ms, slow.p99_ms),
        (Some(50), Some(95), Some(99))
    );
    assert_eq!(slow.top_reasons[0].reason_code, "RULE_ALLOW");
    let since = s.report(GroupBy::Tool, Some(at(1))).unwrap();
    assert_eq!(
        since
            .rows
            .iter()
            .map(|r| r.key.as_str())
            .collect::<Vec<_>>(),
        ["fx/slow"]
    );
    // No duration: no percentile.
    s.record_event(&event("quick", None, "SUCCEEDED", at(20)))
        .unwrap();
    let quick = s.report(GroupBy::Tool, Some(at(20))).unwrap();
    assert_eq!(quick.rows[0].p50_ms, None);
}

pub fn retention_keeps_the_newest_events<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let events: Vec<_> = (0..10)
        .map(|i| event("t", Some(i), "SUCCEEDED", at(i as i64)))
        .collect();
    s.record_events(&events).unwrap();
    let keep = Retention {
        max_age_days: None,
        max_events: Some(4),
    };
    assert_eq!(s.apply_retention(&keep, at(100)).unwrap(), 6);
    assert_eq!(s.event_count().unwrap(), 4);
    let report = s.report(GroupBy::Tool, None).unwrap();
    assert_eq!(
        report.rows[0].p50_ms,
        Some(7),
        "the newest four (6..=9) are kept"
    );
}

pub fn export_gives_the_newest_events_oldest_first_as_stored<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (s, other) = (b.handle(), b.handle());
    let events: Vec<_> = (0..6)
        .map(|i| event(&format!("t{i}"), Some(i), "SUCCEEDED", at(i as i64)))
        .collect();
    s.record_events(&events).unwrap();
    let mut free_text = event("leaky", None, "FAILED", at(10));
    free_text.reason_code = "password is hunter2".into();
    free_text.principal = Some("key:ci".into());
    free_text.decision = Decision::Deny;
    free_text.error_class = Some("TIMEOUT".into());
    s.record_event(&free_text).unwrap();
    let tools = |evs: &[ReportEvent]| evs.iter().map(|e| e.tool.clone()).collect::<Vec<_>>();
    // Another handle (another process) reads what this one wrote.
    let all = other.export_events(None, 100).unwrap();
    assert_eq!(tools(&all), ["t0", "t1", "t2", "t3", "t4", "t5", "leaky"]);
    assert_eq!(all[2], events[2], "an event comes back field for field");
    let stored = all.last().unwrap();
    assert_eq!(
        stored.reason_code, "INVALID",
        "what was refused on the way in stays out"
    );
    assert_eq!(
        (
            stored.decision,
            stored.principal.as_deref(),
            stored.duration_ms
        ),
        (Decision::Deny, Some("key:ci"), None)
    );
    assert_eq!(
        tools(&other.export_events(None, 3).unwrap()),
        ["t4", "t5", "leaky"]
    );
    assert_eq!(
        tools(&other.export_events(Some(at(4)), 2).unwrap()),
        ["t5", "leaky"]
    );
    assert_eq!(
        tools(&other.export_events(Some(at(11)), 10).unwrap()),
        Vec::<String>::new()
    );
}

pub fn audit_head_only_moves_forward_and_anchors_are_kept_once<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (s, other) = (b.handle(), b.handle());
    let head = |seq, hash: &str| AuditHead {
        seq,
        hash: hash.into(),
    };
    assert_eq!(s.audit_head().unwrap(), None);
    s.advance_audit_head(&head(5, "e"), at(1)).unwrap();
    other.advance_audit_head(&head(3, "c"), at(2)).unwrap();
    assert_eq!(
        s.audit_head().unwrap(),
        Some(head(5, "e")),
        "never moved back, whoever writes"
    );
    other.advance_audit_head(&head(6, "f"), at(3)).unwrap();
    assert_eq!(s.audit_head().unwrap(), Some(head(6, "f")));
    for _ in 0..2 {
        s.record_audit_anchor("a1", 4, "p", at(1)).unwrap();
    }
    other.record_audit_anchor("a2", 9, "q", at(2)).unwrap();
    let anchors = s.audit_anchors().unwrap();
    let got: Vec<_> = anchors
        .iter()
        .map(|a| (a.hash.as_str(), a.next_seq, a.prev.as_str()))
        .collect();
    assert_eq!(got, [("a1", 4, "p"), ("a2", 9, "q")]);
}

/// What the audit writer records after each batch: the reporting events and the head, together; an older head
/// still leaves the head where it was while its events are kept.
pub fn a_written_batch_records_its_events_and_head_together<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (s, other) = (b.handle(), b.handle());
    let head = |seq, hash: &str| AuditHead {
        seq,
        hash: hash.into(),
    };
    let events = [
        event("t1", Some(3), "SUCCEEDED", at(1)),
        event("t2", Some(4), "DENIED", at(2)),
    ];
    s.record_written(&events, &head(7, "g"), at(3)).unwrap();
    assert_eq!(other.audit_head().unwrap(), Some(head(7, "g")));
    assert_eq!(other.event_count().unwrap(), 2);
    other
        .record_written(&events[..1], &head(2, "b"), at(4))
        .unwrap();
    assert_eq!(
        s.audit_head().unwrap(),
        Some(head(7, "g")),
        "never moved back"
    );
    assert_eq!(s.event_count().unwrap(), 3);
    s.record_written(&[], &head(8, "h"), at(5)).unwrap();
    assert_eq!(other.audit_head().unwrap(), Some(head(8, "h")));
}
