//! Unified-diff parsing and all-or-nothing application.
//!
//! Every file's new content is computed in memory first; only when every hunk of every file applies are the
//! files written (each atomically). A hunk must match exactly (no fuzz), at its stated line or at the nearest
//! offset after the previous hunk, like `patch -F0`. Renames, copies, mode changes and binary patches are
//! refused rather than half-supported.

use jsonrpc::sha256_hex;
use serde::Serialize;

use crate::confine::Workspace;
use crate::error::{Error, Result};
use crate::fsops::{mutation_target, replace_atomically};

/// One hunk: old-side start line (1-based) and its lines tagged ' ', '-' or '+'.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    old_start: usize,
    lines: Vec<(char, String)>,
    /// "\ No newline at end of file" followed the last old-side / new-side line.
    old_no_newline: bool,
    new_no_newline: bool,
}

/// The hunks for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FilePatch {
    old_path: Option<String>,
    new_path: Option<String>,
    hunks: Vec<Hunk>,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchedFile {
    /// Workspace-relative path.
    pub path: String,
    /// `modified`, `created` or `deleted`.
    pub action: &'static str,
    /// Hunks applied.
    pub hunks: usize,
    /// SHA-256 of the new content (absent for deletions).
    pub sha256: Option<String>,
}

fn strip_prefix_path(raw: &str, prefix: &str) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or(raw).trim_end();
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(path).to_string())
}

fn parse_range(s: &str) -> Option<(usize, usize)> {
    let mut parts = s.splitn(2, ',');
    let start = parts.next()?.parse().ok()?;
    let len = match parts.next() {
        Some(l) => l.parse().ok()?,
        None => 1,
    };
    Some((start, len))
}

fn bad(path: &str, hunk: usize, reason: impl Into<String>) -> Error {
    Error::PatchFailed {
        path: path.to_string(),
        hunk,
        reason: reason.into(),
    }
}

fn parse(patch: &str) -> Result<Vec<FilePatch>> {
    let lines = split_lines(patch);
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("rename from")
            || line.starts_with("copy from")
            || line.starts_with("GIT binary patch")
            || line.starts_with("Binary files")
            || line.starts_with("old mode")
        {
            return Err(bad("", 0, format!("unsupported patch feature: {line}")));
        }
        let Some(old) = line.strip_prefix("--- ") else {
            i += 1;
            continue;
        };
        let new = lines
            .get(i + 1)
            .and_then(|l| l.strip_prefix("+++ "))
            .ok_or_else(|| bad("", 0, "'---' line without '+++' line"))?;
        let mut file = FilePatch {
            old_path: strip_prefix_path(old, "a/"),
            new_path: strip_prefix_path(new, "b/"),
            hunks: Vec::new(),
        };
        let name = file
            .new_path
            .clone()
            .or(file.old_path.clone())
            .unwrap_or_default();
        i += 2;
        while let Some(header) = lines.get(i).and_then(|l| l.strip_prefix("@@ -")) {
            let hunk_no = file.hunks.len() + 1;
            let mut ranges = header.split_whitespace();
            let (old_start, mut old_left) = ranges
                .next()
                .and_then(parse_range)
                .ok_or_else(|| bad(&name, hunk_no, "bad hunk header"))?;
            let (_, mut new_left) = ranges
                .next()
                .and_then(|r| r.strip_prefix('+'))
                .and_then(parse_range)
                .ok_or_else(|| bad(&name, hunk_no, "bad hunk header"))?;
            let mut hunk = Hunk {
                old_start,
                lines: Vec::new(),
                old_no_newline: false,
                new_no_newline: false,
            };
            i += 1;
            while old_left > 0 || new_left > 0 || lines.get(i).is_some_and(|l| l.starts_with('\\'))
            {
                let Some(&l) = lines.get(i) else {
                    return Err(bad(&name, hunk_no, "hunk is shorter than its header says"));
                };
                let (tag, text) = match l.chars().next() {
                    // Some tools strip the single space of an empty context line.
                    None => (' ', ""),
                    Some(c) => (c, &l[c.len_utf8()..]),
                };
                match tag {
                    ' ' if old_left > 0 && new_left > 0 => {
                        old_left -= 1;
                        new_left -= 1;
                    }
                    '-' if old_left > 0 => old_left -= 1,
                    '+' if new_left > 0 => new_left -= 1,
                    '\\' => {
                        match hunk.lines.last().map(|l| l.0) {
                            Some('-') => hunk.old_no_newline = true,
                            Some('+') => hunk.new_no_newline = true,
                            _ => {
                                hunk.old_no_newline = true;
                                hunk.new_no_newline = true;
                            }
                        }
                        i += 1;
                        continue;
                    }
                    _ => {
                        return Err(bad(
                            &name,
                            hunk_no,
                            format!("unexpected line in hunk: {l:?}"),
                        ))
                    }
                }
                hunk.lines.push((tag, text.to_string()));
                i += 1;
            }
            file.hunks.push(hunk);
        }
        if file.hunks.is_empty() {
            return Err(bad(&name, 0, "file section has no hunks"));
        }
        files.push(file);
    }
    if files.is_empty() {
        return Err(bad("", 0, "no file sections found in patch"));
    }
    Ok(files)
}

/// Splits on `\n` only (a `\r` stays part of its line, so CRLF files keep their endings).
fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect()
}

/// Applies hunks to `original`; the error names the first hunk that does not match.
fn apply_hunks(path: &str, original: &str, hunks: &[Hunk]) -> Result<String> {
    let lines = split_lines(original);
    let mut trailing_newline = original.is_empty() || original.ends_with('\n');
    let mut result: Vec<&str> = Vec::new();
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|l| l.0 != '+')
            .map(|l| l.1.as_str())
            .collect();
        // A pure insertion's start names the line after which to insert.
        let expected = if old.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let at = find(&lines, &old, expected.max(cursor), cursor).ok_or_else(|| {
            bad(
                path,
                index + 1,
                format!("context does not match near line {}", hunk.old_start),
            )
        })?;
        result.extend_from_slice(&lines[cursor..at]);
        result.extend(
            hunk.lines
                .iter()
                .filter(|l| l.0 != '-')
                .map(|l| l.1.as_str()),
        );
        cursor = at + old.len();
        if cursor == lines.len() {
            if hunk.new_no_newline {
                trailing_newline = false;
            } else if hunk.old_no_newline || !trailing_newline {
                trailing_newline = true;
            }
        }
    }
    result.extend_from_slice(&lines[cursor..]);
    let mut text = result.join("\n");
    if trailing_newline && !result.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

/// Position of `needle` in `hay` at or after `min`, closest to `expected`.
fn find(hay: &[&str], needle: &[&str], expected: usize, min: usize) -> Option<usize> {
    let fits = |at: usize| at + needle.len() <= hay.len() && hay[at..at + needle.len()] == *needle;
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last.max(expected))
        .flat_map(|d| [expected.checked_add(d), expected.checked_sub(d)])
        .flatten()
        .filter(|&at| at >= min && at <= last)
        .find(|&at| fits(at))
}

/// The file one patch section changes, and how: `modified`, `created` or `deleted`.
fn target(file: &FilePatch) -> Result<(&String, &'static str)> {
    match (&file.old_path, &file.new_path) {
        (Some(o), Some(n)) if o != n => Err(bad(n, 0, "renames are not supported")),
        (Some(_), Some(n)) => Ok((n, "modified")),
        (None, Some(n)) => Ok((n, "created")),
        (Some(o), None) => Ok((o, "deleted")),
        (None, None) => Err(bad("", 0, "both sides are /dev/null")),
    }
}

/// Every file a patch would change and how (`modified`, `created`, `deleted`), read by the same parser that
/// applies it, so the policy decides on exactly the files that would be touched.
pub fn patch_targets(patch: &str) -> Result<Vec<(String, &'static str)>> {
    parse(patch)?
        .iter()
        .map(|f| target(f).map(|(p, a)| (p.clone(), a)))
        .collect()
}

/// Applies a unified diff to the workspace: all files and hunks, or nothing.
pub fn apply_patch(ws: &Workspace, patch: &str, max_file_bytes: u64) -> Result<Vec<PatchedFile>> {
    let files = parse(patch)?;
    let mut planned = Vec::new();
    for file in &files {
        let (path, action) = target(file)?;
        let rel = ws.relative(path)?;
        let target = mutation_target(ws, &rel, action == "created", max_file_bytes)?;
        let current = match (&target.current, action) {
            (Some(_), "created") => return Err(bad(path, 0, "file to create already exists")),
            (None, "modified" | "deleted") => return Err(Error::NotFound(rel.display())),
            (Some(bytes), _) => std::str::from_utf8(bytes)
                .map_err(|_| bad(path, 0, "file is not UTF-8 text"))?
                .to_string(),
            (None, _) => String::new(),
        };
        let new = apply_hunks(path, &current, &file.hunks)?;
        if action == "deleted" && !new.is_empty() {
            return Err(bad(
                path,
                file.hunks.len(),
                "deletion leaves content behind",
            ));
        }
        if new.len() as u64 > max_file_bytes {
            return Err(Error::TooLarge {
                what: rel.display(),
                size: new.len() as u64,
                limit: max_file_bytes,
            });
        }
        planned.push((rel, target, action, new, file.hunks.len()));
    }
    let mut done = Vec::new();
    for (rel, target, action, new, hunks) in planned {
        let sha256 = if action == "deleted" {
            crate::fsops::remove(&target)?;
            None
        } else {
            replace_atomically(&target, new.as_bytes())?;
            Some(sha256_hex(new.as_bytes()))
        };
        done.push(PatchedFile {
            path: rel.display(),
            action,
            hunks,
            sha256,
        });
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(original: &str, patch: &str) -> Result<String> {
        let files = parse(patch)?;
        apply_hunks("f", original, &files[0].hunks)
    }

    #[test]
    fn applies_two_hunks_with_offset() {
        let original = "a\nb\nc\nd\ne\nf\ng\n";
        let patch = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n@@ -6,1 +6,2 @@\n f\n+F\n";
        assert_eq!(apply(original, patch).unwrap(), "a\nb\nC\nd\ne\nf\nF\ng\n");
        // Same patch on a file with two extra lines at the top still applies (offset).
        assert_eq!(
            apply(&format!("x\ny\n{original}"), patch).unwrap(),
            "x\ny\na\nb\nC\nd\ne\nf\nF\ng\n"
        );
    }

    #[test]
    fn reports_failing_hunk_number() {
        let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n@@ -3 +3 @@\n-zzz\n+Z\n";
        match apply("a\nb\nc\n", patch) {
            Err(Error::PatchFailed { hunk, .. }) => assert_eq!(hunk, 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn handles_missing_newline_at_eof() {
        let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n";
        assert_eq!(apply("a", patch).unwrap(), "b\n");
        let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n";
        assert_eq!(apply("a\n", patch).unwrap(), "b");
    }

    #[test]
    fn creation_from_dev_null() {
        let files = parse("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n").unwrap();
        assert_eq!(files[0].old_path, None);
        assert_eq!(files[0].new_path.as_deref(), Some("new.txt"));
        assert_eq!(
            apply_hunks("new.txt", "", &files[0].hunks).unwrap(),
            "one\ntwo\n"
        );
    }

    #[test]
    fn refuses_renames_and_garbage() {
        assert!(parse("hello").is_err());
        assert!(parse("diff --git a/x b/y\nrename from x\nrename to y\n").is_err());
    }
}
