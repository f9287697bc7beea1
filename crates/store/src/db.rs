//! Opening the SQLite database: file mode, pragmas, and versioned migrations.
//!
//! Every connection runs in WAL mode with `synchronous=FULL` (a committed approval survives
//! a crash or power loss) and a busy timeout (concurrent processes wait rather than fail).
//! Migrations are applied under an immediate transaction and recorded in `user_version` in
//! the same transaction, so a crash mid-migration leaves the old schema intact. This module
//! holds no domain logic.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::{Error, Result};
use crate::namespace::create_private_file;

/// Long enough for a hundred contending writers with millisecond transactions; short
/// enough that a wedged peer surfaces as an error instead of a hang.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an open waits before trying a busy step again.
const BUSY_RETRY: Duration = Duration::from_millis(5);

/// Dirty pages a transaction may hold before SQLite spills them into the WAL mid-transaction: 64 MiB at the
/// default page size of 4 KiB.
const SPILL_AFTER_PAGES: i64 = 16_384;

/// Schema migrations, in order; entry `i` moves `user_version` from `i` to `i + 1`.
/// Never edit a shipped entry: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: approvals, session grants, tool pins, reporting events.
    "
    CREATE TABLE approvals (
        id              TEXT PRIMARY KEY NOT NULL,
        trace_id        TEXT NOT NULL,
        status          TEXT NOT NULL
                        CHECK (status IN ('PENDING','APPROVED','REJECTED','EXPIRED','CONSUMED')),
        snapshot        TEXT NOT NULL,
        snapshot_sha256 TEXT NOT NULL,
        snapshot_bytes  INTEGER NOT NULL,
        created_at      INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL,
        decided_at      INTEGER,
        decided_by      TEXT,
        consumed_at     INTEGER
    ) STRICT;
    CREATE INDEX approvals_by_created ON approvals(created_at);

    CREATE TABLE session_grants (
        session_id        TEXT NOT NULL,
        tool              TEXT NOT NULL,
        definition_sha256 TEXT NOT NULL,
        granted_at        INTEGER NOT NULL,
        PRIMARY KEY (session_id, tool)
    ) STRICT;

    CREATE TABLE tool_pins (
        name              TEXT PRIMARY KEY NOT NULL,
        state             TEXT NOT NULL CHECK (state IN ('ACCEPTED','QUARANTINED')),
        definition_sha256 TEXT NOT NULL,
        definition_json   TEXT NOT NULL,
        candidate_sha256  TEXT,
        candidate_json    TEXT,
        first_seen        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL
    ) STRICT;

    -- Metadata only: there is deliberately no column for arguments, results,
    -- messages or secrets, so none can be stored by mistake.
    CREATE TABLE report_events (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        time_ms     INTEGER NOT NULL,
        trace_id    TEXT NOT NULL,
        profile     TEXT NOT NULL,
        server      TEXT NOT NULL,
        tool        TEXT NOT NULL,
        operation   TEXT NOT NULL,
        decision    TEXT NOT NULL CHECK (decision IN ('allow','ask','deny')),
        reason_code TEXT NOT NULL,
        outcome     TEXT NOT NULL,
        duration_ms INTEGER,
        error_class TEXT
    ) STRICT;
    CREATE INDEX report_events_by_time ON report_events(time_ms);
    ",
    // 2: sealed approvals (the session that asked, how long its call is held, CANCELLED) and sealed session
    // grants scoped to the arguments a human saw. Rows of version 1 carry no seal and read as tampered: a
    // request or grant nobody can vouch for is not honoured.
    "
    CREATE TABLE approvals_v2 (
        id              TEXT PRIMARY KEY NOT NULL,
        trace_id        TEXT NOT NULL,
        status          TEXT NOT NULL
                        CHECK (status IN ('PENDING','APPROVED','REJECTED','EXPIRED','CONSUMED','CANCELLED')),
        snapshot        TEXT NOT NULL,
        snapshot_sha256 TEXT NOT NULL,
        snapshot_bytes  INTEGER NOT NULL,
        created_at      INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL,
        decided_at      INTEGER,
        decided_by      TEXT,
        consumed_at     INTEGER,
        session_id      TEXT NOT NULL DEFAULT '',
        held_until      INTEGER NOT NULL DEFAULT 0,
        seal            TEXT NOT NULL DEFAULT ''
    ) STRICT;
    INSERT INTO approvals_v2 (id, trace_id, status, snapshot, snapshot_sha256, snapshot_bytes, created_at,
                              expires_at, decided_at, decided_by, consumed_at)
        SELECT id, trace_id, status, snapshot, snapshot_sha256, snapshot_bytes, created_at,
               expires_at, decided_at, decided_by, consumed_at FROM approvals;
    DROP TABLE approvals;
    ALTER TABLE approvals_v2 RENAME TO approvals;
    CREATE INDEX approvals_by_created ON approvals(created_at);
    CREATE INDEX approvals_by_session ON approvals(session_id, status);

    DROP TABLE session_grants;
    CREATE TABLE session_grants (
        session_id        TEXT NOT NULL,
        tool              TEXT NOT NULL,
        definition_sha256 TEXT NOT NULL,
        scope             TEXT NOT NULL,
        granted_at        INTEGER NOT NULL,
        seal              TEXT NOT NULL,
        PRIMARY KEY (session_id, tool, definition_sha256, scope)
    ) STRICT;
    ",
    // 3: the audit chain's witness (newest head, every anchor) and audited overrides of
    // flagged pins.
    "
    CREATE TABLE audit_head (
        id         INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
        seq        INTEGER NOT NULL,
        hash       TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE audit_anchors (
        hash       TEXT PRIMARY KEY NOT NULL,
        next_seq   INTEGER NOT NULL,
        prev       TEXT NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;

    ALTER TABLE tool_pins ADD COLUMN flags_override_sha256 TEXT;
    ",
    // 4: the pins' generation, advanced by triggers on every write to a pin (in the writer's transaction), so a
    // running gateway can tell with one read whether any pin changed since it last looked, whoever wrote it.
    "
    CREATE TABLE pin_generation (
        id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
        n  INTEGER NOT NULL
    ) STRICT;
    INSERT INTO pin_generation (id, n) VALUES (1, 0);
    CREATE TRIGGER tool_pins_insert_advances AFTER INSERT ON tool_pins
        BEGIN UPDATE pin_generation SET n = n + 1 WHERE id = 1; END;
    CREATE TRIGGER tool_pins_update_advances AFTER UPDATE ON tool_pins
        BEGIN UPDATE pin_generation SET n = n + 1 WHERE id = 1; END;
    CREATE TRIGGER tool_pins_delete_advances AFTER DELETE ON tool_pins
        BEGIN UPDATE pin_generation SET n = n + 1 WHERE id = 1; END;
    ",
    // Who called, for calls an HTTP front end authenticated (`key:<name>`, `jwt:<issuer>#<subject>`).
    "ALTER TABLE report_events ADD COLUMN principal TEXT;",
    // The identity whose call asked, so its waiting requests are counted over all its sessions.
    "
    ALTER TABLE approvals ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    CREATE INDEX approvals_by_owner ON approvals(owner, status);
    ",
    // How long a call waited for a human, part of its duration, so reports show it apart from the call's own time.
    "ALTER TABLE report_events ADD COLUMN wait_ms INTEGER;",
    // The rule that decided, as the user wrote it and where, so a report can be grouped by rule.
    "ALTER TABLE report_events ADD COLUMN rule TEXT;",
    // Advisory leases on workspace paths (`locks`): the lease id only as its digest.
    "
    CREATE TABLE path_locks (
        path         TEXT PRIMARY KEY NOT NULL,
        lease_sha256 TEXT NOT NULL,
        holder       TEXT NOT NULL,
        owner        TEXT NOT NULL,
        acquired_at  INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL
    ) STRICT;
    ",
    // Token buckets of rate limits (`rate`): a bucket full again by `full_at` is the same as none, and pruned.
    "
    CREATE TABLE rate_buckets (
        key        TEXT PRIMARY KEY NOT NULL,
        tokens     REAL NOT NULL,
        updated_at INTEGER NOT NULL,
        full_at    INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX rate_buckets_by_full_at ON rate_buckets(full_at);
    ",
    // The pins' generation advances once per pass, not once per row: a pass advances it before its first write and
    // stamps each row it writes with the generation it advanced to (`generation`), and the triggers skip a row
    // stamped with the current generation. Any other write (unstamped, or stamped with anything else, or an update
    // that leaves the stamp as it was) still advances it per row, whoever writes.
    "
    ALTER TABLE tool_pins ADD COLUMN generation INTEGER;
    DROP TRIGGER tool_pins_insert_advances;
    DROP TRIGGER tool_pins_update_advances;
    CREATE TRIGGER tool_pins_insert_advances AFTER INSERT ON tool_pins
        WHEN NEW.generation IS NOT (SELECT n FROM pin_generation WHERE id = 1)
        BEGIN UPDATE pin_generation SET n = n + 1 WHERE id = 1; END;
    CREATE TRIGGER tool_pins_update_advances AFTER UPDATE ON tool_pins
        WHEN NEW.generation IS NOT (SELECT n FROM pin_generation WHERE id = 1)
          OR NEW.generation IS OLD.generation
        BEGIN UPDATE pin_generation SET n = n + 1 WHERE id = 1; END;
    ",
];

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Opens (creating with mode 0600 if absent) and migrates the database at `path`.
pub(crate) fn open(path: &Path) -> Result<Connection> {
    // Create the file ourselves so it gets 0600; SQLite gives its -wal and -shm files the
    // same mode as the main file.
    match create_private_file(path) {
        Ok(_) => {}
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // No CREATE (the file was made above with the right mode) and no URI parsing.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode = wal(&conn)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Corrupt(format!(
            "journal mode {mode} instead of wal"
        )));
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // A transaction keeps up to `SPILL_AFTER_PAGES` dirty pages in memory until it commits instead of spilling
    // them into the WAL as soon as the cache is full: the first pin pass over a large catalog writes tens of
    // megabytes in one transaction, and spilling made it write pages it touched again and again. Past the
    // threshold (a retention prune of millions of report rows) it spills as before, so memory stays bounded.
    conn.pragma_update(None, "cache_spill", SPILL_AFTER_PAGES)?;
    migrate(&mut conn)?;
    Ok(conn)
}

/// Switches the database to WAL. A fresh database needs a moment to itself for it, and SQLite answers BUSY at once
/// rather than wait (a wait there could deadlock) while another process opens the same fresh file — two clients
/// starting `serve` on one workspace — so the switch is tried again until the busy timeout.
fn wal(conn: &Connection) -> Result<String> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(BUSY_RETRY);
            }
            answer => return Ok(answer?),
        }
    }
}

/// Applies every migration newer than the stored `user_version`.
fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let start =
        usize::try_from(found).map_err(|_| Error::Corrupt("negative user_version".into()))?;
    for sql in MIGRATIONS.iter().skip(start) {
        tx.execute_batch(sql)?;
    }
    if found < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_is_idempotent_and_records_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path).unwrap());
        let conn = open(&path).unwrap();
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    /// Spilling stays on, past a threshold: off, a prune of millions of rows would hold all its pages in memory.
    #[test]
    fn a_transaction_spills_only_past_its_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("t.db")).unwrap();
        let spill: i64 = conn
            .query_row("PRAGMA cache_spill", [], |r| r.get(0))
            .unwrap();
        assert_eq!(spill, SPILL_AFTER_PAGES);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(conn);
        assert!(matches!(open(&path), Err(Error::SchemaTooNew { .. })));
    }

    /// Whoever writes a pin without the pass's stamp — another tool on the database, an update that leaves the
    /// stamp as it was, a stamp of any other generation — still moves the generation, row by row.
    #[test]
    fn a_pin_written_outside_a_pass_still_moves_the_generation() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("t.db")).unwrap();
        let n = || -> i64 {
            conn.query_row("SELECT n FROM pin_generation", [], |r| r.get(0))
                .unwrap()
        };
        let insert = |name: &str, generation: Option<i64>| {
            conn.execute(
                "INSERT INTO tool_pins (name, state, definition_sha256, definition_json, first_seen,
                                        updated_at, generation)
                 VALUES (?1, 'ACCEPTED', 'h', '{}', 0, 0, ?2)",
                rusqlite::params![name, generation],
            )
            .unwrap();
        };
        insert("a", None);
        assert_eq!(n(), 1, "an unstamped insert");
        insert("b", Some(7));
        assert_eq!(n(), 2, "an insert stamped with another generation");
        conn.execute("UPDATE tool_pins SET state = 'QUARANTINED'", [])
            .unwrap();
        assert_eq!(n(), 4, "an update of two rows leaving their stamps");
        conn.execute("UPDATE tool_pins SET generation = 1 WHERE name = 'a'", [])
            .unwrap();
        assert_eq!(n(), 5, "an update stamped with a stale generation");
        conn.execute("DELETE FROM tool_pins WHERE name = 'b'", [])
            .unwrap();
        assert_eq!(n(), 6, "a delete");
        // The pass's own protocol: advance once, then stamp the rows with the generation advanced to.
        conn.execute("UPDATE pin_generation SET n = n + 1", [])
            .unwrap();
        insert("c", Some(7));
        insert("d", Some(7));
        conn.execute("UPDATE tool_pins SET generation = 7 WHERE name = 'a'", [])
            .unwrap();
        assert_eq!(n(), 7, "stamped rows leave it to the pass");
    }

    #[cfg(unix)]
    #[test]
    fn database_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
