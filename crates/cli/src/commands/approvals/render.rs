//! What the human sees of an approval request: the list and the full detail shown before a decision.
//!
//! Both show each request's age, whether a call is still waiting for the answer (live) or not (resumable: the
//! agent holds a handle, or its call is gone), and mark a request whose record failed its integrity check as
//! TAMPERED: such a record was changed outside toolgate and can be neither approved nor run.
//!
//! The detail reads the gateway's snapshot (`kind`, `server`, `tool`, `exposed`, `arguments`,
//! `definition_sha256`, `decision`) and shows every key it holds, known or not, so nothing the gateway would act
//! on is hidden. Each top-level argument is one line, `name = <JSON>`, in printable ASCII (`escape`): a newline,
//! a control character or a bidi override in an argument shows up as a visible escape, never as layout. This is
//! the only rendering of a protected request: raw pretty-printed JSON would leave bidi and other invisible
//! characters as they are. A held code-mode run (`code_run`) also shows its program in full, one numbered line per
//! program line, each escaped the same way, with the tool names it writes as literals (`calls`) and which of its
//! calls need the approval, and why (`why asked`).

use crate::commands::escape::{json_ascii, label, quoted, value_label};
use serde_json::Value;
use std::fmt::Write;
use store::{Approval, ApprovalStatus, Timestamp};

/// Snapshot keys shown as one-line header fields, in this order, when present.
const HEADER_KEYS: [(&str, &str); 9] = [
    ("kind", "kind"),
    ("server", "server"),
    ("tool", "tool"),
    ("prompt", "prompt"),
    ("uri", "uri"),
    ("exposed", "exposed as"),
    ("definition_sha256", "definition"),
    ("names", "calls"),
    // Why a hook asked; for a held run, which of its calls need the approval and why.
    ("note", "why asked"),
];
/// Snapshot keys shown as sections of `name = value` lines.
const SECTION_KEYS: [&str; 2] = ["decision", "arguments"];
/// Width of the field-name column of the detail view.
const FIELD: usize = 12;

/// One row per request: id, status, age, created, expires, server, tool (or prompt, or URI), trace id, and the
/// rule that asked, where it was written.
pub fn list(approvals: &[Approval], now: Timestamp) -> String {
    let mut rows: Vec<[String; 9]> = vec![[
        "ID".into(),
        "STATUS".into(),
        "AGE".into(),
        "CREATED".into(),
        "EXPIRES".into(),
        "SERVER".into(),
        "TARGET".into(),
        "TRACE".into(),
        "RULE".into(),
    ]];
    rows.extend(approvals.iter().map(|a| {
        [
            a.id.clone(),
            status_cell(a, now),
            age(a.created_at, now),
            a.created_at.to_rfc3339(),
            a.expires_at.to_rfc3339(),
            snapshot_field(&a.snapshot, "server"),
            target(&a.snapshot),
            label(&a.trace_id),
            rule(&a.snapshot).unwrap_or_else(|| "-".to_owned()),
        ]
    }));
    let mut widths = [0usize; 9];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let _ = write!(line, "{c:<w$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The full request, as shown before a decision, with expiry relative to `now`.
pub fn detail(a: &Approval, now: Timestamp) -> String {
    let mut out = String::new();
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(out, "{name:<FIELD$}{value}");
    };
    field("request", &label(&a.id));
    if !a.authentic {
        field(
            "integrity",
            "TAMPERED: this record was changed outside toolgate; it cannot be approved or run",
        );
    }
    field("status", &status_cell(a, now));
    field("asked", &format!("{} ago", age(a.created_at, now)));
    field("trace", &label(&a.trace_id));
    field("created", &a.created_at.to_rfc3339());
    field(
        "expires",
        &format!("{} ({})", a.expires_at.to_rfc3339(), remaining(a, now)),
    );
    if let Some(at) = a.decided_at {
        let by = a.decided_by.as_deref().map_or_else(String::new, label);
        field("decided", &format!("{} by {by}", at.to_rfc3339()));
    }
    if let Some(at) = a.consumed_at {
        field("consumed", &at.to_rfc3339());
    }
    field("snapshot", &format!("sha256 {}", a.snapshot_sha256));
    if let Some(rule) = rule(&a.snapshot) {
        field("asked by", &rule);
    }
    snapshot(&mut out, &a.snapshot);
    out
}

/// The rule that asked, as the user wrote it and where (`Edit(./src/**) at toolgate.toml:12 (ASK_RULE)`), as a
/// refusal and `policy explain` name it; `None` when no rule asked (the default did). Printable ASCII only.
fn rule(snapshot: &Value) -> Option<String> {
    let decision = snapshot.get("decision")?;
    let text = |k: &str| decision.get(k).and_then(Value::as_str);
    let id = text("rule_id")?;
    let mut shown = printable(id);
    if let Some(at) = text("rule_at") {
        shown.push_str(&format!(" at {}", printable(at)));
    }
    if let Some(reason) = text("reason") {
        shown.push_str(&format!(" ({})", printable(reason)));
    }
    Some(shown)
}

/// Text shown bare when it is visible ASCII without spaces (a rule such as `Read(**/.env)`), else quoted and
/// escaped, so nothing in it can pass for layout or for other text.
fn printable(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic()) {
        s.to_owned()
    } else {
        quoted(s)
    }
}

/// The snapshot: header fields, then the decision and the arguments, then every other key.
fn snapshot(out: &mut String, snapshot: &Value) {
    let Value::Object(map) = snapshot else {
        // Not the gateway's shape; show it whole rather than guess.
        let _ = writeln!(out, "{:<FIELD$}{}", "content", json_ascii(snapshot));
        return;
    };
    for (key, name) in HEADER_KEYS {
        if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
            let _ = writeln!(out, "{name:<FIELD$}{}", value_label(v));
        }
    }
    for key in SECTION_KEYS {
        match map.get(key) {
            Some(Value::Object(entries)) => {
                let _ = writeln!(out, "{key} ({})", entries.len());
                for (name, v) in entries {
                    let _ = writeln!(out, "  {} = {}", label(name), json_ascii(v));
                }
            }
            Some(other) => {
                let _ = writeln!(out, "{key:<FIELD$}{}", json_ascii(other));
            }
            None => {}
        }
    }
    if let (Some("code_run"), Some(Value::String(program))) = (
        map.get("kind").and_then(Value::as_str),
        map.get("arguments").and_then(|a| a.get("code")),
    ) {
        program_lines(out, program);
    }
    let known = |k: &str| HEADER_KEYS.iter().any(|(h, _)| *h == k) || SECTION_KEYS.contains(&k);
    let others: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| !known(k)).collect();
    if !others.is_empty() {
        let _ = writeln!(out, "other ({})", others.len());
        for (name, v) in others {
            let _ = writeln!(out, "  {} = {}", label(name), json_ascii(v));
        }
    }
}

/// A program in full, numbered, each line printable ASCII (a control or bidi character shows as its escape).
fn program_lines(out: &mut String, program: &str) {
    let lines: Vec<&str> = program.split('\n').collect();
    let _ = writeln!(out, "program ({} lines)", lines.len());
    for (n, line) in lines.iter().enumerate() {
        let quoted = quoted(line);
        let inner = &quoted[1..quoted.len() - 1];
        let _ = writeln!(out, "  {:>4} | {inner}", n + 1);
    }
}

/// The status, with what a human must know before deciding: tampered, or whether a call still waits.
pub fn status_cell(a: &Approval, now: Timestamp) -> String {
    let mut cell = a.status.to_string();
    if a.status == ApprovalStatus::Pending {
        cell.push_str(if is_live(a, now) {
            " (live)"
        } else {
            " (resumable)"
        });
    }
    if !a.authentic {
        cell.push_str(" TAMPERED");
    }
    cell
}

/// Whether a call is still held waiting for this request's answer.
pub fn is_live(a: &Approval, now: Timestamp) -> bool {
    a.status == ApprovalStatus::Pending && a.held_until > now
}

/// How long ago `then` was, coarsely: `42s`, `5m 03s`, `3h 02m`, `2d 04h`.
pub fn age(then: Timestamp, now: Timestamp) -> String {
    let secs = (now.as_millis() - then.as_millis()).max(0) / 1000;
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {:02}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d {:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// What the request is about: the tool, prompt or resource URI.
/// For a held run, also the tools its program calls by literal name (the detail says which need the approval).
fn target(snapshot: &Value) -> String {
    let target = ["tool", "prompt", "uri"]
        .iter()
        .find(|k| snapshot.get(**k).is_some())
        .map_or_else(|| "-".to_owned(), |k| snapshot_field(snapshot, k));
    match (
        snapshot.get("kind").and_then(Value::as_str),
        snapshot.get("names"),
    ) {
        (Some("code_run"), Some(names)) => format!("{target}:{}", value_label(names)),
        _ => target,
    }
}

/// A one-line snapshot field for the list; `-` when absent.
fn snapshot_field(snapshot: &Value, key: &str) -> String {
    snapshot
        .get(key)
        .map_or_else(|| "-".to_owned(), value_label)
}

/// How long a live request has left, or why it has none.
fn remaining(a: &Approval, now: Timestamp) -> String {
    match a.status {
        ApprovalStatus::Pending | ApprovalStatus::Approved => {
            let secs = (a.expires_at.as_millis() - now.as_millis()).max(0) / 1000;
            let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
            if h > 0 {
                format!("in {h}h {m:02}m")
            } else {
                format!("in {m}m {s:02}s")
            }
        }
        ApprovalStatus::Expired => "expired".to_owned(),
        ApprovalStatus::Rejected | ApprovalStatus::Consumed | ApprovalStatus::Cancelled => {
            "no longer usable".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn approval(snapshot: Value) -> Approval {
        Approval {
            id: "apr_01".into(),
            trace_id: "tr-1".into(),
            status: ApprovalStatus::Pending,
            snapshot,
            snapshot_sha256: "ab".repeat(32),
            created_at: Timestamp::from_millis(0),
            expires_at: Timestamp::from_millis(600_000),
            decided_at: None,
            decided_by: None,
            consumed_at: None,
            session_id: None,
            held_until: Timestamp::from_millis(0),
            authentic: true,
        }
    }

    #[test]
    fn detail_shows_every_key_with_one_argument_per_line() {
        let a = approval(json!({
            "kind": "tools/call", "server": "fs", "tool": "write_file", "exposed": "fs__write_file",
            "arguments": {"path": "a.txt", "content": "x\ny\u{202e}z", "n": [1, {"b": true}]},
            "definition_sha256": "cd".repeat(32),
            "decision": {"effect": "ask", "reason": "ASK_RULE", "rule_id": "Edit(./**)", "rule_at": "toolgate.toml:12",
                         "operation": "fs.write"},
            "extra key": "\u{1b}[2J",
        }));
        let expected = format!(
            "\
request     apr_01
status      PENDING (resumable)
asked       1m 40s ago
trace       tr-1
created     1970-01-01T00:00:00.000Z
expires     1970-01-01T00:10:00.000Z (in 8m 20s)
snapshot    sha256 {ab}
asked by    Edit(./**) at toolgate.toml:12 (ASK_RULE)
kind        tools/call
server      fs
tool        write_file
exposed as  fs__write_file
definition  {cd}
decision (5)
  effect = \"ask\"
  reason = \"ASK_RULE\"
  rule_id = \"Edit(./**)\"
  rule_at = \"toolgate.toml:12\"
  operation = \"fs.write\"
arguments (3)
  path = \"a.txt\"
  content = \"x\\ny\\u202ez\"
  n = [1,{{\"b\":true}}]
other (1)
  \"extra key\" = \"\\u001b[2J\"
",
            ab = "ab".repeat(32),
            cd = "cd".repeat(32)
        );
        assert_eq!(detail(&a, Timestamp::from_millis(100_000)), expected);
    }

    #[test]
    fn held_program_is_shown_in_full_line_by_line_escaped() {
        let program =
            "const r = await call(\"fs__read_file\", {path: \"a\"});\n// \u{202e}hidden\nreturn r;";
        let a = approval(json!({
            "kind": "code_run", "server": "toolgate", "tool": "run_code", "exposed": "run_code",
            "arguments": {"code": program}, "names": ["fs__read_file"],
        }));
        let text = detail(&a, Timestamp::from_millis(0));
        assert!(text.contains("calls       [\"fs__read_file\"]\n"), "{text}");
        let shown = "program (3 lines)\n\
                     \x20    1 | const r = await call(\\\"fs__read_file\\\", {path: \\\"a\\\"});\n\
                     \x20    2 | // \\u202ehidden\n\
                     \x20    3 | return r;\n";
        assert!(text.contains(shown), "{text}");
    }

    #[test]
    fn held_run_says_which_calls_need_the_approval_and_why() {
        let note = "this run needs a human's approval for: shell_run {\"program\":\"/bin/sh\"}: shell.exec \
                    (DEFAULT_ASK), approved out of band only";
        let a = approval(json!({
            "kind": "code_run", "server": "toolgate", "tool": "run_code", "exposed": "run_code",
            "arguments": {"code": "await call(\"shell_run\", {program: \"/bin/sh\"})"},
            "names": ["shell_run"], "note": note,
        }));
        let text = detail(&a, Timestamp::from_millis(0));
        assert!(
            text.contains("why asked   \"this run needs a human's approval for: shell_run"),
            "{text}"
        );
        assert!(text.contains("approved out of band only"), "{text}");
        let listed = list(&[a], Timestamp::from_millis(0));
        assert!(listed.contains("run_code:[\"shell_run\"]"), "{listed}");
        // No note, no line for it.
        let plain = approval(json!({"kind": "tools/call", "tool": "t", "note": null}));
        assert!(!detail(&plain, Timestamp::from_millis(0)).contains("why asked"));
    }

    #[test]
    fn a_snapshot_of_another_shape_is_shown_whole() {
        let text = detail(&approval(json!(["rm", "-rf"])), Timestamp::from_millis(0));
        assert!(text.ends_with("content     [\"rm\",\"-rf\"]\n"), "{text}");
    }

    #[test]
    fn list_escapes_names() {
        let text = list(
            &[approval(json!({"server": "s\u{202e}", "tool": "t"}))],
            Timestamp::from_millis(0),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("ID      STATUS               AGE"),
            "{text}"
        );
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(cells[6..], ["\"s\\u202e\"", "t", "tr-1", "-"], "{text}");
    }

    #[test]
    fn tampered_and_stale_requests_are_marked() {
        let mut a = approval(json!({"tool": "t"}));
        a.authentic = false;
        a.held_until = Timestamp::from_millis(5_000);
        let now = Timestamp::from_millis(1_000);
        assert_eq!(status_cell(&a, now), "PENDING (live) TAMPERED");
        assert!(detail(&a, now).contains("integrity   TAMPERED"));
        assert_eq!(
            status_cell(&a, Timestamp::from_millis(5_000)),
            "PENDING (resumable) TAMPERED"
        );
        assert_eq!(
            age(Timestamp::from_millis(0), Timestamp::from_millis(3_723_000)),
            "1h 02m"
        );
    }
}
