//! Text renderings of approval requests for the administrator CLI, returned as Strings.
//!
//! The detail view is what a human reads before typing APPROVE, so it shows the protected
//! snapshot as pretty JSON (every string JSON-escaped, so argument boundaries and control
//! characters are unambiguous) with its hash. Nothing here is meant for the agent: agents
//! get `ApprovalHandle`.

use std::fmt::Write;

use crate::approvals::Approval;

/// One line per request: id, status, created, expires, trace id.
pub fn render_approval_list(approvals: &[Approval]) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "ID".into(),
        "STATUS".into(),
        "CREATED".into(),
        "EXPIRES".into(),
        "TRACE".into(),
    ]];
    rows.extend(approvals.iter().map(|a| {
        [
            a.id.clone(),
            a.status.to_string(),
            a.created_at.to_rfc3339(),
            a.expires_at.to_rfc3339(),
            printable(&a.trace_id),
        ]
    }));
    let mut widths = [0usize; 5];
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

/// The full request for a human deciding on it.
pub fn render_approval_detail(a: &Approval) -> String {
    let snapshot =
        serde_json::to_string_pretty(&a.snapshot).unwrap_or_else(|_| "<unprintable>".into());
    let mut out = String::new();
    let _ = writeln!(out, "request:    {}", a.id);
    let _ = writeln!(out, "status:     {}", a.status);
    let _ = writeln!(out, "trace:      {}", printable(&a.trace_id));
    let _ = writeln!(out, "created:    {}", a.created_at.to_rfc3339());
    let _ = writeln!(out, "expires:    {}", a.expires_at.to_rfc3339());
    if let (Some(at), Some(by)) = (a.decided_at, &a.decided_by) {
        let _ = writeln!(out, "decided:    {} by {}", at.to_rfc3339(), printable(by));
    }
    if let Some(at) = a.consumed_at {
        let _ = writeln!(out, "consumed:   {}", at.to_rfc3339());
    }
    let _ = writeln!(out, "sha256:     {}", a.snapshot_sha256);
    let _ = writeln!(out, "snapshot:");
    for line in snapshot.lines() {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// Replaces control characters so a crafted label cannot drive the terminal.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::ApprovalStatus;
    use crate::time::Timestamp;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn approval() -> Approval {
        Approval {
            id: "apr_0123".into(),
            trace_id: "tr\u{1b}[31m".into(),
            status: ApprovalStatus::Approved,
            snapshot: json!({"argv": ["rm", "a b", "\u{1b}[2J"]}),
            snapshot_sha256: "ab".repeat(32),
            created_at: Timestamp::from_millis(0),
            expires_at: Timestamp::from_millis(60_000),
            decided_at: Some(Timestamp::from_millis(1_000)),
            decided_by: Some("alice".into()),
            consumed_at: None,
        }
    }

    #[test]
    fn detail_escapes_arguments_and_labels() {
        let text = render_approval_detail(&approval());
        assert!(text.contains("trace:      tr?[31m"));
        assert!(text.contains(r#""a b","#));
        assert!(text.contains(r#""\u001b[2J""#));
        assert!(!text.contains('\u{1b}'));
        assert!(text.contains("decided:    1970-01-01T00:00:01.000Z by alice"));
    }

    #[test]
    fn list_is_aligned() {
        let text = render_approval_list(&[approval()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "ID        STATUS    CREATED                   EXPIRES                   TRACE"
        );
        assert!(lines[1].starts_with("apr_0123  APPROVED  1970-01-01T00:00:00.000Z"));
    }
}
