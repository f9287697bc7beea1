//! The audit log file: appending chained records, reading the tail, verifying, pruning.
//!
//! `AuditLog::record` never panics and never blocks for long: a failure is returned and
//! counted (`failures()`), and the caller carries on with its tool call. Appends are not
//! fsynced (one per tool call would tax every call); a power loss can drop the newest lines.
//! Maintenance (`prune_keep_last`) is explicit, dry-run unless told to apply, and refuses a
//! log that does not verify.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::chain::{self, parse_line, seal, verify_text, ChainHead, VerifyReport, ANCHOR_KIND};
use crate::error::{Error, Result};
use crate::event::{AuditEvent, RECORD_VERSION};
use crate::time::rfc3339;

/// File name of the log inside the namespace directory.
pub const LOG_FILE: &str = "audit.jsonl";
/// Side file holding the cross-process lock.
const LOCK_FILE: &str = "audit.lock";
/// Longest line the writer will look back over to find the chain head. Records are
/// bounded by the field caps to well under this.
const MAX_LINE_BYTES: u64 = 64 * 1024;
/// How long an append waits for another process's lock before counting a failure.
const APPEND_LOCK_WAIT: Duration = Duration::from_secs(2);
/// Maintenance may wait longer: a human started it and can see it waiting.
const PRUNE_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Whether a prune only reports or also rewrites. The default is the harmless one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneMode {
    /// Report what would be removed; change nothing.
    #[default]
    DryRun,
    /// Rewrite the log.
    Apply,
}

/// What a prune did (or would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrunePlan {
    /// Dry run or applied.
    pub mode: PruneMode,
    /// Events in the log before pruning.
    pub total_events: u64,
    /// Events removed (or that would be).
    pub removed: u64,
    /// Events kept.
    pub kept: u64,
}

/// The audit log of one namespace.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    lock_path: PathBuf,
    failures: AtomicU64,
    /// Serialises this process's appends; the file lock serialises processes.
    guard: Mutex<()>,
}

impl AuditLog {
    /// The log in `dir` (the namespace directory). Nothing is touched until the first append.
    pub fn new(dir: &Path) -> Self {
        Self {
            path: dir.join(LOG_FILE),
            lock_path: dir.join(LOCK_FILE),
            failures: AtomicU64::new(0),
            guard: Mutex::new(()),
        }
    }

    /// Path of the log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends that failed since this handle was created.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Appends one event; returns its sequence number. On failure the error is returned and
    /// counted, and nothing else happens: audit never stops the caller.
    pub fn record(&self, event: &AuditEvent) -> Result<u64> {
        self.record_all(std::slice::from_ref(event))
    }

    /// Appends several events under one lock and one write, chained in order; returns the last sequence
    /// number. A writer that batches pays the lock, the open and the chain-head read once per batch instead of
    /// once per event. On failure every event of the batch is counted as failed.
    pub fn record_all(&self, events: &[AuditEvent]) -> Result<u64> {
        let result = self.append(events);
        if result.is_err() {
            self.failures
                .fetch_add(events.len() as u64, Ordering::Relaxed);
        }
        result
    }

    fn append(&self, events: &[AuditEvent]) -> Result<u64> {
        let _local = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        let _lock = crate::lock::FileLock::exclusive(&self.lock_path, APPEND_LOCK_WAIT)?;
        let mut file = open_log(&self.path)?;
        let mut head = read_head(&mut file)?;
        let mut text = String::new();
        let mut last = head.next_seq.saturating_sub(1);
        for event in events {
            let mut record = event.to_record();
            record.insert("seq".into(), head.next_seq.into());
            record.insert("prev".into(), head.prev.clone().into());
            let (line, hash) = seal(record);
            text.push_str(&line);
            text.push('\n');
            last = head.next_seq;
            head.next_seq += 1;
            head.prev = hash;
        }
        // One write for the batch: a crash leaves at most its last line torn, as with a single event.
        file.write_all(text.as_bytes())?;
        Ok(last)
    }

    /// The last `n` event records (anchors excluded), oldest first. Reads backwards from
    /// the end, so its cost follows `n`, not the size of the log.
    pub fn tail(&self, n: usize) -> Result<Vec<Value>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        // One extra line: the first line of a pruned log is an anchor, not an event.
        let lines = read_last_lines(&self.path, n + 1)?;
        let mut out = Vec::new();
        for (from_end, line) in lines.iter().rev().enumerate() {
            if out.len() == n {
                break;
            }
            let parsed = std::str::from_utf8(line)
                .ok()
                .and_then(|l| serde_json::from_str::<Value>(l).ok());
            let Some(v) = parsed else {
                return Err(Error::Tampered {
                    line: line_number_from_end(&self.path, from_end as u64)?,
                    problem: chain::ProblemKind::Malformed.to_string(),
                });
            };
            if v.get("kind").and_then(Value::as_str) != Some(ANCHOR_KIND) {
                out.push(v);
            }
        }
        out.reverse();
        Ok(out)
    }

    /// Verifies the whole log; a missing log verifies as empty.
    pub fn verify(&self) -> Result<VerifyReport> {
        Ok(verify_text(&read_all(&self.path)?))
    }

    /// Keeps the newest `keep` events. In `Apply` mode the log is rewritten atomically
    /// (temporary file, fsync, rename) starting with an anchor, so the kept part still
    /// verifies and later appends continue the chain. Refuses a log that does not verify.
    pub fn prune_keep_last(&self, keep: u64, mode: PruneMode, now_ms: i64) -> Result<PrunePlan> {
        let _local = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        let _lock = crate::lock::FileLock::exclusive(&self.lock_path, PRUNE_LOCK_WAIT)?;
        let text = read_all(&self.path)?;
        let report = verify_text(&text);
        if let Some(p) = report.problem {
            return Err(Error::Tampered {
                line: p.line,
                problem: p.kind.to_string(),
            });
        }
        let mut anchor = None;
        let mut events = Vec::new();
        for line in text.lines() {
            let parsed = parse_line(line).ok_or(Error::CorruptTail)?;
            if parsed.is_anchor() {
                anchor = Some(parsed);
            } else {
                events.push((line, parsed));
            }
        }
        let total = events.len() as u64;
        let removed = total.saturating_sub(keep);
        let plan = PrunePlan {
            mode,
            total_events: total,
            removed,
            kept: total - removed,
        };
        if mode == PruneMode::DryRun || removed == 0 {
            return Ok(plan);
        }
        let split = removed as usize;
        let head = match events.get(split) {
            Some((_, first_kept)) => ChainHead {
                next_seq: first_kept.seq().ok_or(Error::CorruptTail)?,
                prev: first_kept.prev().ok_or(Error::CorruptTail)?.to_owned(),
            },
            None => events
                .last()
                .and_then(|(_, p)| p.head_after())
                .ok_or(Error::CorruptTail)?,
        };
        let already = anchor
            .as_ref()
            .and_then(|a| a.record.get("pruned_events").and_then(Value::as_u64))
            .unwrap_or(0);
        let mut rec = Map::new();
        rec.insert("v".into(), RECORD_VERSION.into());
        rec.insert("kind".into(), ANCHOR_KIND.into());
        rec.insert("time".into(), rfc3339(now_ms).into());
        rec.insert("time_ms".into(), now_ms.into());
        rec.insert("next_seq".into(), head.next_seq.into());
        rec.insert("prev".into(), head.prev.into());
        rec.insert("pruned_events".into(), (already + removed).into());
        let (anchor_line, _) = seal(rec);
        let mut out = anchor_line;
        out.push('\n');
        for (line, _) in &events[split..] {
            out.push_str(line);
            out.push('\n');
        }
        replace_file(&self.path, out.as_bytes())?;
        Ok(plan)
    }
}

/// Opens the log for reading and appending, creating it with mode 0600.
fn open_log(path: &Path) -> Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    Ok(opts.open(path)?)
}

/// Finds where the chain continues from the log's last line.
fn read_head(file: &mut File) -> Result<ChainHead> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(ChainHead::genesis());
    }
    let start = len.saturating_sub(MAX_LINE_BYTES + 1);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    file.take(len - start).read_to_end(&mut buf)?;
    let Some((&b'\n', body)) = buf.split_last() else {
        return Err(Error::CorruptTail);
    };
    let line = match body.iter().rposition(|&b| b == b'\n') {
        Some(i) => &body[i + 1..],
        None if start == 0 => body,
        None => return Err(Error::CorruptTail),
    };
    let line = std::str::from_utf8(line).map_err(|_| Error::CorruptTail)?;
    parse_line(line)
        .and_then(|p| p.head_after())
        .ok_or(Error::CorruptTail)
}

/// Chunk size for reading the log backwards.
const TAIL_CHUNK: u64 = 64 * 1024;

/// Up to `want` last lines of the file, oldest first (a torn final line included, so the
/// caller sees it); a missing file has none.
fn read_last_lines(path: &Path, want: usize) -> Result<Vec<Vec<u8>>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let len = file.metadata()?.len();
    let mut start = len;
    let mut buf: Vec<u8> = Vec::new();
    while start > 0 {
        let step = TAIL_CHUNK.min(start);
        start -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        // `want` complete lines need `want + 1` newlines: one ends the line before them.
        if buf.iter().filter(|&&b| b == b'\n').count() > want {
            break;
        }
    }
    let mut pieces: Vec<&[u8]> = buf.split(|&b| b == b'\n').collect();
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    if start > 0 && !pieces.is_empty() {
        pieces.remove(0); // starts mid-line
    }
    let skip = pieces.len().saturating_sub(want);
    Ok(pieces[skip..].iter().map(|p| p.to_vec()).collect())
}

/// 1-based number of the line `from_end` lines before the last (0 = the last line).
/// Reads the whole log, which only happens on the way to reporting damage.
fn line_number_from_end(path: &Path, from_end: u64) -> Result<u64> {
    let bytes = fs::read(path)?;
    let mut lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    if bytes.last().is_some_and(|&b| b != b'\n') {
        lines += 1;
    }
    Ok(lines.saturating_sub(from_end))
}

/// The whole log as text; a missing log is empty.
fn read_all(path: &Path) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e.into()),
    }
}

/// Atomically replaces `path` with `bytes` (same directory, mode 0600).
fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("jsonl.tmp");
    let _ = fs::remove_file(&tmp);
    {
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        // Persist the rename itself; not all platforms can open a directory, hence `ok()`.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}
