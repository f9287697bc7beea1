//! Fuzzes policy loading and linting with arbitrary JSON: no panic, and `load` succeeds exactly when `check_policy`
//! reports no error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use policy::{check_policy, Context, Policy, PolicySources, Severity};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else { return };
    let sources = PolicySources { policy: doc.get("policy"), permissions: doc.get("permissions"), profiles: doc.get("profiles") };
    let ctx = Context { workspace: "/ws".into(), home: Some("/home/u".into()) };
    let loaded = Policy::load(sources, &ctx);
    let errors = check_policy(sources, &ctx).iter().filter(|f| f.severity == Severity::Error).count();
    assert_eq!(loaded.is_ok(), errors == 0);
});
