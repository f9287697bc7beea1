//! The PostgreSQL schema and its versioned migrations.
//!
//! Every table holds the rows of any number of workspace namespaces, each row under its namespace id (`ns`), so
//! one database serves every workspace of a team's replicas. The versions applied are recorded in
//! `toolgate_schema`, one row per version, in the same transaction as the migration itself, and migrations run
//! one at a time across processes (an advisory lock), so a crash or a second migrator leaves a consistent
//! schema. Migrations run only when asked (`toolgate store migrate`, `PostgresStore::migrate`); opening a store
//! checks the version and refuses one behind or ahead of this build. This module holds no domain logic.

use super::pool::{col, Pool, Tx};
use crate::error::{Error, Result};

/// Schema migrations, in order; entry `i` is version `i + 1`. Never edit a shipped entry: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: everything the SQLite store keeps, under a namespace column; and the namespaces with the check of the
    // key their rows are sealed with.
    "
    CREATE TABLE namespaces (
        ns         TEXT PRIMARY KEY,
        key_check  TEXT NOT NULL,
        created_at BIGINT NOT NULL
    );

    CREATE TABLE approvals (
        ns              TEXT NOT NULL,
        id              TEXT NOT NULL,
        trace_id        TEXT NOT NULL,
        status          TEXT NOT NULL
                        CHECK (status IN ('PENDING','APPROVED','REJECTED','EXPIRED','CONSUMED','CANCELLED')),
        snapshot        TEXT NOT NULL,
        snapshot_sha256 TEXT NOT NULL,
        snapshot_bytes  BIGINT NOT NULL,
        created_at      BIGINT NOT NULL,
        expires_at      BIGINT NOT NULL,
        decided_at      BIGINT,
        decided_by      TEXT,
        consumed_at     BIGINT,
        session_id      TEXT NOT NULL,
        held_until      BIGINT NOT NULL,
        seal            TEXT NOT NULL,
        owner           TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (ns, id)
    );
    CREATE INDEX approvals_by_created ON approvals (ns, created_at);
    CREATE INDEX approvals_by_session ON approvals (ns, session_id, status);
    CREATE INDEX approvals_by_owner ON approvals (ns, owner, status);

    CREATE TABLE session_grants (
        ns                TEXT NOT NULL,
        session_id        TEXT NOT NULL,
        tool              TEXT NOT NULL,
        definition_sha256 TEXT NOT NULL,
        scope             TEXT NOT NULL,
        granted_at        BIGINT NOT NULL,
        seal              TEXT NOT NULL,
        PRIMARY KEY (ns, session_id, tool, definition_sha256, scope)
    );

    CREATE TABLE tool_pins (
        ns                    TEXT NOT NULL,
        name                  TEXT NOT NULL,
        state                 TEXT NOT NULL CHECK (state IN ('ACCEPTED','QUARANTINED')),
        definition_sha256     TEXT NOT NULL,
        definition_json       TEXT NOT NULL,
        candidate_sha256      TEXT,
        candidate_json        TEXT,
        first_seen            BIGINT NOT NULL,
        updated_at            BIGINT NOT NULL,
        flags_override_sha256 TEXT,
        PRIMARY KEY (ns, name)
    );

    CREATE TABLE pin_generation (
        ns TEXT PRIMARY KEY,
        n  BIGINT NOT NULL
    );

    -- Metadata only: there is deliberately no column for arguments, results, messages or secrets.
    CREATE TABLE report_events (
        id          BIGSERIAL PRIMARY KEY,
        ns          TEXT NOT NULL,
        time_ms     BIGINT NOT NULL,
        trace_id    TEXT NOT NULL,
        profile     TEXT NOT NULL,
        server      TEXT NOT NULL,
        tool        TEXT NOT NULL,
        operation   TEXT NOT NULL,
        decision    TEXT NOT NULL CHECK (decision IN ('allow','ask','deny')),
        reason_code TEXT NOT NULL,
        outcome     TEXT NOT NULL,
        duration_ms BIGINT,
        error_class TEXT,
        principal   TEXT,
        wait_ms     BIGINT,
        rule        TEXT
    );
    CREATE INDEX report_events_by_time ON report_events (ns, time_ms);

    CREATE TABLE audit_head (
        ns         TEXT PRIMARY KEY,
        seq        BIGINT NOT NULL,
        hash       TEXT NOT NULL,
        updated_at BIGINT NOT NULL
    );

    CREATE TABLE audit_anchors (
        ns         TEXT NOT NULL,
        hash       TEXT NOT NULL,
        next_seq   BIGINT NOT NULL,
        prev       TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (ns, hash)
    );

    CREATE TABLE path_locks (
        ns           TEXT NOT NULL,
        path         TEXT NOT NULL,
        lease_sha256 TEXT NOT NULL,
        holder       TEXT NOT NULL,
        owner        TEXT NOT NULL,
        acquired_at  BIGINT NOT NULL,
        expires_at   BIGINT NOT NULL,
        PRIMARY KEY (ns, path)
    );
    ",
    // 2: the audit witness per chain: replicas on one database each write an audit log of their own (a chain
    // per replica, named by it), each witnessed here; "" is the chain of a namespace's single writer.
    "
    ALTER TABLE audit_head ADD COLUMN chain TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit_head DROP CONSTRAINT audit_head_pkey;
    ALTER TABLE audit_head ADD PRIMARY KEY (ns, chain);
    ALTER TABLE audit_anchors ADD COLUMN chain TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit_anchors DROP CONSTRAINT audit_anchors_pkey;
    ALTER TABLE audit_anchors ADD PRIMARY KEY (ns, chain, hash);
    ",
    // 3: token buckets of rate limits, shared by the replicas: a bucket full again by `full_at` is the same as
    // none, and pruned.
    "
    CREATE TABLE rate_buckets (
        ns         TEXT NOT NULL,
        key        TEXT NOT NULL,
        tokens     DOUBLE PRECISION NOT NULL,
        updated_at BIGINT NOT NULL,
        full_at    BIGINT NOT NULL,
        PRIMARY KEY (ns, key)
    );
    CREATE INDEX rate_buckets_by_full_at ON rate_buckets(ns, full_at);
    ",
];

/// The schema version this build needs.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Serialises migrators across processes (an arbitrary constant of this schema's own).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7465;

/// What `migrate` did: the version found and the version left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The version the database was at.
    pub from: i64,
    /// The version it is at now (`SCHEMA_VERSION`).
    pub to: i64,
}

/// Applies every migration newer than the database's version, each recorded with it.
pub(crate) fn migrate(pool: &Pool, now_ms: i64) -> Result<Migrated> {
    let (migrated, _) = pool.write(
        |tx| {
            tx.one("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            tx.batch(
                "CREATE TABLE IF NOT EXISTS toolgate_schema (
                     version    INTEGER PRIMARY KEY,
                     applied_at BIGINT NOT NULL
                 )",
            )?;
            let from = applied(tx)?;
            if from > SCHEMA_VERSION {
                return Err(Error::SchemaTooNew {
                    found: from,
                    supported: SCHEMA_VERSION,
                });
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
                tx.batch(sql)?;
                let version = i32::try_from(i + 1).unwrap_or(i32::MAX);
                tx.execute(
                    "INSERT INTO toolgate_schema (version, applied_at) VALUES ($1, $2)",
                    &[&version, &now_ms],
                )?;
            }
            Ok(Migrated {
                from,
                to: SCHEMA_VERSION,
            })
        },
        |_| Ok(()),
    )?;
    Ok(migrated)
}

/// The database's version; refuses one that is behind (run `toolgate store migrate`) or ahead of this build.
pub(crate) fn check(pool: &Pool) -> Result<i64> {
    let found = pool.read(|tx| applied(tx))?;
    if found < SCHEMA_VERSION {
        return Err(Error::SchemaBehind {
            found,
            needed: SCHEMA_VERSION,
        });
    }
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(found)
}

/// The newest version recorded; 0 for a database toolgate never migrated.
fn applied(tx: &Tx<'_>) -> Result<i64> {
    let exists: bool = col(
        &tx.one("SELECT to_regclass('toolgate_schema') IS NOT NULL", &[])?,
        0,
    )?;
    if !exists {
        return Ok(0);
    }
    let version: Option<i32> = col(&tx.one("SELECT MAX(version) FROM toolgate_schema", &[])?, 0)?;
    Ok(i64::from(version.unwrap_or(0)))
}
