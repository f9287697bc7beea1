//! The audit witness kept outside the state root (`"auditWitness"` in the config): every head the writer moves
//! to and every anchor a prune or recovery writes, appended as JSON lines to a file the operator chose.
//!
//! The database's witness sits beside the log, so whoever can write the state directory can cut the log and
//! move the database's head back together, and both agree. This file is the copy they do not reach: it lies
//! elsewhere, and made append-only (`chattr +a`, which only root can undo) nothing of the user's can remove a
//! line from it. Verification then takes the highest head either witness saw and only the anchors this file
//! recorded. One file may serve several workspaces: each line names its log (the namespace directory). A file
//! that is new to a log adopts the database's head and anchors first, as they stand. Lines that are not
//! toolgate's are skipped: one appended by someone else can name a higher head (a false alarm, never a miss)
//! but cannot take one away. This module reads and appends the file; comparing with the log is the audit crate's.

use audit::{Head, Witness};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file, open for appending, and the log it speaks for.
pub struct OutsideWitness {
    path: PathBuf,
    log: String,
    file: Mutex<File>,
}

/// What the file recorded for one log.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub head: Option<Head>,
    pub anchors: Vec<String>,
    /// Whether any line names this log (false: the file is new to it).
    pub known: bool,
}

impl OutsideWitness {
    /// Opens (creating 0600) the witness file at `path` for the log named `log`.
    pub fn open(path: &Path, log: &str) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        Ok(Self {
            path: path.to_owned(),
            log: log.to_owned(),
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file carries the append-only attribute, which only root can set or clear; `None` when the
    /// file system cannot say.
    pub fn append_only(&self) -> Option<bool> {
        use std::os::fd::AsRawFd;
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let mut flags: libc::c_long = 0;
        // SAFETY: FS_IOC_GETFLAGS writes one long into `flags`; the descriptor is open for the call.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_GETFLAGS, &mut flags) };
        (rc == 0).then_some(flags & FS_APPEND_FL != 0)
    }

    /// Appends a head the writer moved to.
    pub(crate) fn record_head(&self, head: &Head) -> std::io::Result<()> {
        self.append(&json!({"log": self.log, "seq": head.seq, "hash": head.hash}))
    }

    /// Appends an anchor a prune, a recovery or an adoption recorded.
    pub(crate) fn record_anchor(&self, hash: &str) -> std::io::Result<()> {
        self.append(&json!({"log": self.log, "anchor": hash}))
    }

    /// One line per write: appends of a few dozen bytes land whole, whichever process writes beside this one.
    fn append(&self, line: &Value) -> std::io::Result<()> {
        let mut text = line.to_string();
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(text.as_bytes())
    }

    /// Reads what the file recorded for this log.
    pub(crate) fn read(&self) -> std::io::Result<Recorded> {
        let mut out = Recorded::default();
        for line in BufReader::new(File::open(&self.path)?).lines() {
            let Ok(entry) = serde_json::from_str::<Value>(&line?) else {
                continue;
            };
            if entry.get("log").and_then(Value::as_str) != Some(self.log.as_str()) {
                continue;
            }
            out.known = true;
            if let Some(anchor) = entry.get("anchor").and_then(Value::as_str) {
                out.anchors.push(anchor.to_owned());
            } else if let (Some(seq), Some(hash)) = (
                entry.get("seq").and_then(Value::as_u64),
                entry.get("hash").and_then(Value::as_str),
            ) {
                if out.head.as_ref().is_none_or(|h| seq > h.seq) {
                    out.head = Some(Head {
                        seq,
                        hash: hash.to_owned(),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// `linux/fs.h`: read the inode flags; the flag of an append-only file.
const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
const FS_APPEND_FL: libc::c_long = 0x20;

/// The witness the log is verified against when the file is kept too: the higher of the two heads, and the
/// anchors only the file recorded (the database's could have been added by whoever rewrote the log).
pub(crate) fn combine(database: Witness, outside: Recorded) -> Witness {
    let head = match (database.head, outside.head) {
        (Some(d), Some(o)) => Some(if o.seq >= d.seq { o } else { d }),
        (d, o) => o.or(d),
    };
    Witness {
        head,
        anchors: outside.anchors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, hash: &str) -> Head {
        Head {
            seq,
            hash: hash.to_owned(),
        }
    }

    #[test]
    fn the_highest_head_of_this_log_counts_and_foreign_lines_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("witness.jsonl");
        let w = OutsideWitness::open(&path, "ns-a").unwrap();
        let other = OutsideWitness::open(&path, "ns-b").unwrap();
        assert_eq!(w.read().unwrap(), Recorded::default());
        w.record_head(&head(3, "c")).unwrap();
        w.record_anchor("an").unwrap();
        other.record_head(&head(99, "z")).unwrap();
        // A line someone appended that names a lower head cannot take the higher one away.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"log\":\"ns-a\",\"seq\":1,\"hash\":\"a\"}\nnot json\n")
            .unwrap();
        assert_eq!(
            w.read().unwrap(),
            Recorded {
                head: Some(head(3, "c")),
                anchors: vec!["an".to_owned()],
                known: true
            }
        );
    }

    #[test]
    fn a_database_head_rolled_back_does_not_lower_the_witness() {
        let db = Witness {
            head: Some(head(2, "b")),
            anchors: vec!["forged".to_owned()],
        };
        let outside = Recorded {
            head: Some(head(8, "h")),
            anchors: vec!["real".to_owned()],
            known: true,
        };
        assert_eq!(
            combine(db, outside),
            Witness {
                head: Some(head(8, "h")),
                anchors: vec!["real".to_owned()]
            }
        );
    }
}
