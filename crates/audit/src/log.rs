//! The audit log file: appending chained records, reading the tail, verifying, pruning.
//!
//! `AuditLog::record` never panics and never blocks for long: a failure is returned and
//! counted (`failures()`); whether the caller's work goes on is the caller's decision.
//! `append_checked` also refuses to append after a log whose end is short of the head the
//! caller witnessed (cut or rewritten since). Appends are not fsynced (one per tool call
//! would tax every call); a power loss can drop the newest lines. Maintenance (pruning,
//! recovery) lives in `maintain`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::chain::{
    self, parse_line, seal_printed, verify_text_with, ChainHead, VerifyReport, ANCHOR_KIND,
};
use crate::error::{Error, Result};
use crate::event::AuditEvent;
use crate::print::Entries;
use crate::witness::{Against, Head, Witness};

/// File name of the log inside the namespace directory.
pub const LOG_FILE: &str = "audit.jsonl";
/// Side file holding the cross-process lock.
const LOCK_FILE: &str = "audit.lock";
/// Longest line the writer will look back over to find the chain head. Records are
/// bounded by the field caps to well under this.
const MAX_LINE_BYTES: u64 = 64 * 1024;
/// How long an append waits for another process's lock before counting a failure.
const APPEND_LOCK_WAIT: Duration = Duration::from_secs(2);

/// Whether `name` may name a chain (a replica): 1 to 64 ASCII letters, digits, `-` and `_`, so it is a file name
/// and nothing else.
pub fn valid_chain(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The audit log of one namespace.
#[derive(Debug)]
pub struct AuditLog {
    pub(crate) path: PathBuf,
    pub(crate) lock_path: PathBuf,
    failures: AtomicU64,
    /// Serialises this process's appends; the file lock serialises processes.
    pub(crate) guard: Mutex<()>,
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

    /// The log of the chain `chain` in `dir`: `audit-CHAIN.jsonl`, with its own lock, for each of several
    /// replicas that write one namespace's audit (a chain per replica, each witnessed on its own); `""` is the
    /// namespace's one log, `audit.jsonl`. `chain` is a replica name (`valid_chain`).
    pub fn for_chain(dir: &Path, chain: &str) -> Self {
        if chain.is_empty() {
            return Self::new(dir);
        }
        Self {
            path: dir.join(format!("audit-{chain}.jsonl")),
            lock_path: dir.join(format!("audit-{chain}.lock")),
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
        self.append_checked(events, None).map(|h| h.seq)
    }

    /// Appends `events` like `record_all`, first checking that the log's end is not short of
    /// `expected` (the head the caller last saw written): after a cut or rewritten end the
    /// append is refused with `Error::Witness`, so new records never paper over the damage.
    /// Returns the new head, for the caller's witness.
    pub fn append_checked(&self, events: &[AuditEvent], expected: Option<&Head>) -> Result<Head> {
        let result = self.append(events, expected);
        if result.is_err() {
            self.failures
                .fetch_add(events.len() as u64, Ordering::Relaxed);
        }
        result
    }

    /// Checks, without writing, that the log's last line is a complete record and that the
    /// log's end is not short of `expected`; a missing log counts as empty. Cheap: reads only
    /// the last line.
    pub fn check_head(&self, expected: Option<&Head>) -> Result<()> {
        let _local = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        let position = match File::open(&self.path) {
            Ok(mut f) => read_head(&mut f)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ChainHead::genesis(),
            Err(e) => return Err(e.into()),
        };
        match expected {
            Some(expected) => check_against(&position, expected),
            None => Ok(()),
        }
    }

    fn append(&self, events: &[AuditEvent], expected: Option<&Head>) -> Result<Head> {
        let _local = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        let _lock = crate::lock::FileLock::exclusive(&self.lock_path, APPEND_LOCK_WAIT)?;
        let mut file = open_log(&self.path)?;
        let mut head = read_head(&mut file)?;
        if let Some(expected) = expected {
            check_against(&head, expected)?;
        }
        let mut text = String::new();
        let mut last = Head {
            seq: head.next_seq.saturating_sub(1),
            hash: head.prev.clone(),
        };
        let mut entries = Entries::default();
        for event in events {
            event.print_entries(head.next_seq, &head.prev, &mut entries);
            let hash = seal_printed(&entries, &mut text);
            text.push('\n');
            last = Head {
                seq: head.next_seq,
                hash: hash.clone(),
            };
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

    /// Verifies the whole log by its chain alone; a missing log verifies as empty. It cannot
    /// see a cut end or a forged anchor: use `verify_with` where a witness is kept.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(&Witness::default())
    }

    /// Verifies the whole log and checks it against `witness` (see `verify_text_with`).
    pub fn verify_with(&self, witness: &Witness) -> Result<VerifyReport> {
        Ok(verify_text_with(&read_all(&self.path)?, witness))
    }
}

/// Refuses a log position short of (or diverging at) the witnessed head.
fn check_against(position: &ChainHead, expected: &Head) -> Result<()> {
    match expected.against(position) {
        Against::Fine => Ok(()),
        Against::Behind => Err(Error::Witness(chain::ProblemKind::Truncated {
            witnessed: expected.seq,
            last: position.next_seq.saturating_sub(1),
        })),
        Against::Diverged => Err(Error::Witness(chain::ProblemKind::HeadMismatch)),
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

/// Bytes read first to find the last line: records are well under this, so one small read usually does, and the
/// rare longer line is read again over `MAX_LINE_BYTES`.
const HEAD_PROBE_BYTES: u64 = 4 * 1024;

/// Finds where the chain continues from the log's last line.
fn read_head(file: &mut File) -> Result<ChainHead> {
    let len = file.metadata()?.len();
    head_of(file, len)
}

/// The chain's head after the last line of a log of `len` bytes.
fn head_of<F: Read + Seek>(file: &mut F, len: u64) -> Result<ChainHead> {
    if len == 0 {
        return Ok(ChainHead::genesis());
    }
    let mut buf = Vec::new();
    let mut span = HEAD_PROBE_BYTES;
    let line = loop {
        let start = len.saturating_sub(span + 1);
        file.seek(SeekFrom::Start(start))?;
        buf.clear();
        // Room for the whole span first, so it comes in one read rather than a growing series from 32 bytes.
        buf.reserve_exact((len - start) as usize);
        Read::take(&mut *file, len - start).read_to_end(&mut buf)?;
        let Some((&b'\n', body)) = buf.split_last() else {
            return Err(Error::CorruptTail);
        };
        match body.iter().rposition(|&b| b == b'\n') {
            Some(i) => break i + 1,
            None if start == 0 => break 0,
            None if span < MAX_LINE_BYTES => span = MAX_LINE_BYTES,
            None => return Err(Error::CorruptTail),
        }
    };
    let line = &buf[line..buf.len() - 1];
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
pub(crate) fn read_all(path: &Path) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e.into()),
    }
}

/// Atomically replaces `path` with `bytes` (same directory, mode 0600).
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A log's bytes, counting the reads that reach them.
    struct Counted {
        bytes: Cursor<Vec<u8>>,
        reads: usize,
    }

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads += 1;
            self.bytes.read(buf)
        }
    }

    impl Seek for Counted {
        fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
            self.bytes.seek(pos)
        }
    }

    /// Every batch written looks for the log's head first: a record of a few KB is found in one read of the
    /// span, not in a series of reads growing from a few bytes.
    #[test]
    fn the_head_of_a_log_is_found_in_one_read_of_its_last_span() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path());
        let events: Vec<_> = (0..3)
            .map(|i| {
                let mut e = AuditEvent::new(crate::event::EventKind::Execution, i, "t");
                e.tool = "x".repeat(2_000);
                e
            })
            .collect();
        let written = log.append_checked(&events, None).unwrap();
        let bytes = fs::read(dir.path().join(LOG_FILE)).unwrap();
        let len = bytes.len() as u64;
        let mut file = Counted {
            bytes: Cursor::new(bytes),
            reads: 0,
        };
        let head = head_of(&mut file, len).unwrap();
        assert_eq!((head.next_seq - 1, head.prev), (written.seq, written.hash));
        assert_eq!(file.reads, 1);
    }
}
