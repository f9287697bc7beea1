//! The six tasks of the code-mode context benchmark over the fixture's dataset tools: filter, join, count, top-k,
//! diff and aggregate. Each says which calls a client makes to do it with direct tool calls, what it would ask
//! `search_tools`, the one `run_code` program that does it, and how to compute the answer from the direct
//! results — so a benchmark or test can check that both ways give the same answer.
//!
//! It holds no measurement and starts nothing: the `codemode_context` bench and the suite's tests drive toolgate.

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One task, against a fixture upstream whose tools are exposed as `<server>__<tool>`.
pub struct ContextTask {
    pub name: &'static str,
    /// What a user asks for.
    pub goal: &'static str,
    /// The calls made with direct tool calls: exposed tool name and arguments, in order.
    pub direct: Vec<(String, Value)>,
    /// What a model would ask `search_tools` before writing the program.
    pub query: &'static str,
    /// The `run_code` program (the body of an async function).
    pub program: String,
    /// The answer, from the `structuredContent` of each direct call's result, in the order of `direct`.
    pub answer: fn(&[Value]) -> Value,
}

/// The assignee and label the filter task looks for.
const WHO: &str = "user017";
const LABEL: &str = "bug";

/// The six tasks, for a fixture upstream named `server` (started with `--datasets`).
pub fn context_tasks(server: &str) -> Vec<ContextTask> {
    let t = |tool: &str| format!("{server}__{tool}");
    vec![
        ContextTask {
            name: "filter",
            goal: "open issues assigned to user017 labelled bug",
            direct: vec![(t("list_issues"), json!({"state": "open"}))],
            query: "list open issues",
            program: format!(
                r#"const {{ issues }} = await call("{}", {{ state: "open" }});
return issues
  .filter((i) => i.assignee === "{WHO}" && i.labels.includes("{LABEL}"))
  .map((i) => ({{ id: i.id, title: i.title }}));"#,
                t("list_issues")
            ),
            answer: filter,
        },
        ContextTask {
            name: "join",
            goal: "emails of the assignees of open p0 bugs",
            direct: vec![
                (t("list_issues"), json!({"state": "open"})),
                (t("list_users"), json!({})),
            ],
            query: "issues assignee user email",
            program: format!(
                r#"const {{ issues }} = await call("{}", {{ state: "open" }});
const {{ users }} = await call("{}", {{}});
const email = new Map(users.map((u) => [u.login, u.email]));
const who = new Set(
  issues.filter((i) => i.assignee && i.labels.includes("bug") && i.labels.includes("p0")).map((i) => i.assignee),
);
return [...who].map((login) => email.get(login)).sort();"#,
                t("list_issues"),
                t("list_users")
            ),
            answer: join,
        },
        ContextTask {
            name: "count",
            goal: "number of orders per status",
            direct: vec![(t("list_orders"), json!({}))],
            query: "orders status",
            program: format!(
                r#"const {{ orders }} = await call("{}", {{}});
const count = {{}};
for (const o of orders) count[o.status] = (count[o.status] || 0) + 1;
return count;"#,
                t("list_orders")
            ),
            answer: count,
        },
        ContextTask {
            name: "top-k",
            goal: "the 5 customers with the largest total of orders not cancelled or refunded",
            direct: vec![(t("list_orders"), json!({}))],
            query: "orders customer total",
            program: format!(
                r#"const {{ orders }} = await call("{}", {{}});
const cents = {{}};
for (const o of orders) {{
  if (o.status === "cancelled" || o.status === "refunded") continue;
  cents[o.customer] = (cents[o.customer] || 0) + Math.round(o.total * 100);
}}
return Object.entries(cents)
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  .slice(0, 5)
  .map(([customer, c]) => ({{ customer, total: c / 100 }}));"#,
                t("list_orders")
            ),
            answer: top_k,
        },
        ContextTask {
            name: "diff",
            goal: "files added, removed and changed between releases 1 and 2",
            direct: vec![
                (t("list_files"), json!({"version": 1})),
                (t("list_files"), json!({"version": 2})),
            ],
            query: "list files release version hash",
            program: format!(
                r#"const [a, b] = await Promise.all([
  call("{0}", {{ version: 1 }}),
  call("{0}", {{ version: 2 }}),
]);
const before = new Map(a.files.map((f) => [f.path, f.hash]));
const after = new Map(b.files.map((f) => [f.path, f.hash]));
return {{
  added: [...after.keys()].filter((p) => !before.has(p)).sort(),
  removed: [...before.keys()].filter((p) => !after.has(p)).sort(),
  changed: [...after.keys()].filter((p) => before.has(p) && before.get(p) !== after.get(p)).sort(),
}};"#,
                t("list_files")
            ),
            answer: diff,
        },
        ContextTask {
            name: "aggregate",
            goal: "per region: samples, mean and median latency, error total",
            direct: vec![(t("metrics"), json!({}))],
            query: "latency metrics region errors",
            program: format!(
                r#"const {{ samples }} = await call("{}", {{}});
const by = {{}};
for (const s of samples) (by[s.region] ??= []).push(s);
const out = {{}};
for (const [region, list] of Object.entries(by)) {{
  const lat = list.map((s) => s.latency_ms).sort((x, y) => x - y);
  const sum = lat.reduce((x, y) => x + y, 0);
  out[region] = {{
    samples: list.length,
    mean_ms: Math.round((sum / list.length) * 10) / 10,
    p50_ms: lat[Math.ceil(lat.length / 2) - 1],
    errors: list.reduce((x, s) => x + s.errors, 0),
  }};
}}
return out;"#,
                t("metrics")
            ),
            answer: aggregate,
        },
    ]
}

/// Whether two answers are the same JSON, numbers compared by value (an engine may write `3` as `3.0`).
pub fn same_answer(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_answer(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_answer(v, w)))
        }
        _ => a == b,
    }
}

fn list<'a>(results: &'a [Value], i: usize, key: &str) -> &'a [Value] {
    results
        .get(i)
        .and_then(|r| r.get(key))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn has_label(issue: &Value, label: &str) -> bool {
    issue["labels"]
        .as_array()
        .is_some_and(|l| l.iter().any(|x| x == label))
}

fn filter(results: &[Value]) -> Value {
    list(results, 0, "issues")
        .iter()
        .filter(|i| i["state"] == "open" && i["assignee"] == WHO && has_label(i, LABEL))
        .map(|i| json!({"id": i["id"], "title": i["title"]}))
        .collect()
}

fn join(results: &[Value]) -> Value {
    let emails: HashMap<&str, &str> = list(results, 1, "users")
        .iter()
        .map(|u| (str_of(u, "login"), str_of(u, "email")))
        .collect();
    let who: BTreeSet<&str> = list(results, 0, "issues")
        .iter()
        .filter(|i| i["state"] == "open" && has_label(i, "bug") && has_label(i, "p0"))
        .filter_map(|i| i["assignee"].as_str())
        .collect();
    let mut out: Vec<&str> = who.iter().filter_map(|l| emails.get(l).copied()).collect();
    out.sort_unstable();
    json!(out)
}

fn count(results: &[Value]) -> Value {
    let mut count: BTreeMap<&str, u64> = BTreeMap::new();
    for o in list(results, 0, "orders") {
        *count.entry(str_of(o, "status")).or_default() += 1;
    }
    json!(count)
}

fn top_k(results: &[Value]) -> Value {
    let mut cents: BTreeMap<&str, i64> = BTreeMap::new();
    for o in list(results, 0, "orders") {
        if matches!(str_of(o, "status"), "cancelled" | "refunded") {
            continue;
        }
        let total = (o["total"].as_f64().unwrap_or(0.0) * 100.0).round() as i64;
        *cents.entry(str_of(o, "customer")).or_default() += total;
    }
    let mut ranked: Vec<(&str, i64)> = cents.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(5)
        .map(|(customer, c)| json!({"customer": customer, "total": c as f64 / 100.0}))
        .collect()
}

fn diff(results: &[Value]) -> Value {
    let hashes = |i: usize| -> BTreeMap<&str, &str> {
        list(results, i, "files")
            .iter()
            .map(|f| (str_of(f, "path"), str_of(f, "hash")))
            .collect()
    };
    let (before, after) = (hashes(0), hashes(1));
    let added: Vec<&str> = after
        .keys()
        .filter(|p| !before.contains_key(*p))
        .copied()
        .collect();
    let removed: Vec<&str> = before
        .keys()
        .filter(|p| !after.contains_key(*p))
        .copied()
        .collect();
    let changed: Vec<&str> = after
        .iter()
        .filter(|(p, h)| before.get(*p).is_some_and(|b| b != *h))
        .map(|(p, _)| *p)
        .collect();
    json!({"added": added, "removed": removed, "changed": changed})
}

fn aggregate(results: &[Value]) -> Value {
    let mut by: BTreeMap<&str, (Vec<u64>, u64)> = BTreeMap::new();
    for s in list(results, 0, "samples") {
        let entry = by.entry(str_of(s, "region")).or_default();
        entry.0.push(s["latency_ms"].as_u64().unwrap_or(0));
        entry.1 += s["errors"].as_u64().unwrap_or(0);
    }
    let mut out = Map::new();
    for (region, (mut lat, errors)) in by {
        lat.sort_unstable();
        let n = lat.len();
        let sum: u64 = lat.iter().sum();
        // The same operations in the same order as the program, so both give the same double.
        let mean = ((sum as f64 / n as f64) * 10.0).round() / 10.0;
        let p50 = lat[n.div_ceil(2) - 1];
        out.insert(
            region.to_owned(),
            json!({"samples": n, "mean_ms": mean, "p50_ms": p50, "errors": errors}),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::dataset_result;

    /// The answers computed from the fixture's own data: small (the point of code mode) but never empty, so a
    /// program that returns nothing cannot pass.
    #[test]
    fn every_task_has_a_small_non_empty_answer() {
        for task in context_tasks("fx") {
            let results: Vec<Value> = task
                .direct
                .iter()
                .map(|(name, args)| {
                    let tool = name.strip_prefix("fx__").unwrap();
                    dataset_result(tool, args).unwrap().unwrap()["structuredContent"].clone()
                })
                .collect();
            let answer = (task.answer)(&results);
            let text = answer.to_string();
            let empty = match &answer {
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => {
                    o.is_empty() || o.values().all(|v| v.as_array().is_some_and(Vec::is_empty))
                }
                _ => true,
            };
            assert!(!empty, "{}: {answer}", task.name);
            assert!(text.len() < 2_000, "{}: {text}", task.name);
        }
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(same_answer(&json!({"a": [3]}), &json!({"a": [3.0]})));
        assert!(!same_answer(&json!({"a": [3]}), &json!({"a": [3, 4]})));
        assert!(!same_answer(&json!({"a": 1}), &json!({"b": 1})));
    }
}
