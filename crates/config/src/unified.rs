//! MCP Unified's `gateway.json` read as toolgate settings: `store` (`kind: "sqlite"`, `sqlite_path`) becomes the
//! state root, `<sqlite_path>.d` (toolgate's own SQLite store lives there, one per workspace, so an MCP Unified
//! database at `sqlite_path` itself is never opened or overwritten); profiles stored by `duplicate-preset` and
//! `create-profile` live beside it in `<sqlite_path>.profiles.json`; `default_preset_id` is the profile served,
//! chosen among the bundled role presets and the stored profiles; `tool_use_reporting` is the reporting switch and
//! its retention. A relative path is relative to the config file's directory.
//!
//! `store` may instead name a PostgreSQL server (`kind: "postgres"`, `url`, with `${VAR}` expanded) that a team's
//! replicas share; the state root (`stateDir` beside it, or the default) then keeps each replica's keys and audit.
//!
//! What toolgate cannot do as MCP Unified does is refused or said: a store `kind` other than `sqlite` or
//! `postgres` is refused;
//! a separate reporting store is accepted with a warning (toolgate keeps reporting events in the state store).
//! It reads the stored-profiles file and nothing else; it writes nothing.

use crate::error::{ConfigError, Result};
use crate::keys::UNIFIED;
use crate::load::{check_range, section, Validator};
use crate::model::Setting;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The bundled role presets, as toolgate profiles.
const PRESETS: &str = include_str!("unified_presets.json");

/// MCP Unified's role presets as toolgate profiles (`{name: profile}`), with descriptions.
pub fn unified_presets() -> Map<String, Value> {
    match serde_json::from_str(PRESETS) {
        Ok(Value::Object(map)) => map,
        // The file is part of the binary and held to this shape by a unit test.
        _ => Map::new(),
    }
}

/// Where the profiles a `gateway.json` stores are kept, for its `store.sqlite_path`.
pub fn profile_store_for(sqlite_path: &Path) -> PathBuf {
    with_suffix(sqlite_path, ".profiles.json")
}

/// The state root a `gateway.json`'s `store.sqlite_path` maps to.
pub fn state_root_for(sqlite_path: &Path) -> PathBuf {
    with_suffix(sqlite_path, ".d")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Whether a top-level object is MCP Unified's shape: it holds one of its keys.
pub(crate) fn is_unified(top: &Map<String, Value>) -> bool {
    UNIFIED.read.iter().any(|k| top.contains_key(*k))
}

/// A key of a `gateway.json` that neither toolgate nor this reading of MCP Unified's file knows: refused, since
/// the setting it carries (an external server, an admin key, a grant) would otherwise be dropped unseen.
pub(crate) fn unsupported(key: &str) -> ConfigError {
    let hint = match UNIFIED.judge(key) {
        crate::keys::Verdict::Misspelt(near) => format!(" (did you mean {near}?)"),
        _ => format!(
            ": this gateway.json key is not supported by toolgate (it reads {}, and toolgate's own keys)",
            UNIFIED.read.join(", ")
        ),
    };
    ConfigError::UnknownKey {
        key: key.to_owned(),
        hint,
    }
}

/// MCP Unified's reporting settings, for `tool-events` and the gateway's retention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reporting {
    /// Whether reports are asked for at all; MCP Unified's default is off.
    pub enabled: Setting<bool>,
    pub max_age_days: Option<u32>,
    pub max_events: Option<u64>,
}

impl Default for Reporting {
    /// toolgate's own: on, 30 days and 100,000 events, whichever is less.
    fn default() -> Self {
        Reporting {
            enabled: Setting::default(true),
            max_age_days: Some(30),
            max_events: Some(100_000),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStore {
    kind: String,
    sqlite_path: Option<String>,
    url: Option<String>,
    pool_size: Option<u64>,
    connect_timeout_seconds: Option<u64>,
    statement_timeout_seconds: Option<u64>,
}

impl RawStore {
    /// The PostgreSQL keys given, by name, so a SQLite store refuses them.
    fn postgres_keys(&self) -> Option<&'static str> {
        [
            (self.url.is_some(), "url"),
            (self.pool_size.is_some(), "pool_size"),
            (
                self.connect_timeout_seconds.is_some(),
                "connect_timeout_seconds",
            ),
            (
                self.statement_timeout_seconds.is_some(),
                "statement_timeout_seconds",
            ),
        ]
        .into_iter()
        .find_map(|(given, key)| given.then_some(key))
    }

    /// The pool and deadlines, each within its range.
    fn pool(&self) -> Result<crate::model::StorePool> {
        let d = crate::model::StorePool::default();
        let secs = |key: &str, v: Option<u64>, max: u64, default: std::time::Duration| {
            v.map_or(Ok(default), |n| {
                check_range(&format!("store.{key}"), n, 1, max)?;
                Ok(std::time::Duration::from_secs(n))
            })
        };
        let size = match self.pool_size {
            Some(n) => {
                check_range("store.pool_size", n, 1, 256)?;
                n as usize
            }
            None => d.size,
        };
        Ok(crate::model::StorePool {
            size,
            connect_timeout: secs(
                "connect_timeout_seconds",
                self.connect_timeout_seconds,
                300,
                d.connect_timeout,
            )?,
            statement_timeout: secs(
                "statement_timeout_seconds",
                self.statement_timeout_seconds,
                3600,
                d.statement_timeout,
            )?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReporting {
    #[serde(default)]
    enabled: bool,
    store: Option<Value>,
    retention_max_age_days: Option<u32>,
    retention_max_events: Option<u64>,
}

impl Validator<'_> {
    /// A path of the file, relative to its directory, made absolute.
    fn unified_path(&self, key: &str, raw: &str) -> Result<PathBuf> {
        let raw = crate::expand::expand(raw, key, &self.vars())?;
        let base = self.origin.parent().unwrap_or(Path::new("."));
        let joined = base.join(&raw);
        std::path::absolute(&joined).map_err(|e| ConfigError::invalid(key, format!("{raw}: {e}")))
    }

    fn unified_sqlite(&self, key: &str, value: Value) -> Result<PathBuf> {
        let raw: RawStore = section(value, key)?;
        self.sqlite_path(key, raw)
    }

    fn sqlite_path(&self, key: &str, raw: RawStore) -> Result<PathBuf> {
        if let Some(pg) = raw.postgres_keys() {
            return Err(ConfigError::invalid(
                format!("{key}.{pg}"),
                format!("{pg} is for \"kind\": \"postgres\"; SQLite takes sqlite_path"),
            ));
        }
        if raw.kind != "sqlite" {
            return Err(ConfigError::invalid(
                format!("{key}.kind"),
                format!(
                    "{:?} is not supported: give \"kind\": \"sqlite\" with a sqlite_path, or \"kind\": \
                     \"postgres\" with a url (for store)",
                    raw.kind
                ),
            ));
        }
        let path = raw
            .sqlite_path
            .ok_or_else(|| ConfigError::invalid(key, "\"kind\": \"sqlite\" needs sqlite_path"))?;
        self.unified_path(&format!("{key}.sqlite_path"), &path)
    }

    /// `"store"`: the state root and the stored profiles, or a PostgreSQL server replicas share.
    pub(crate) fn unified_store(&mut self, value: Value) -> Result<()> {
        let raw: RawStore = section(value, "store")?;
        if raw.kind == "postgres" {
            return self.postgres_store(raw);
        }
        let db = self.sqlite_path("store", raw)?;
        self.config.state_dir = Some(Setting {
            value: state_root_for(&db),
            from: self.provenance("store"),
        });
        self.config.profile_store = Some(profile_store_for(&db));
        Ok(())
    }

    /// `"store": {"kind": "postgres", "url": "postgres://…"}`: the state every replica shares. The state root
    /// (`stateDir` or the default) still holds each replica's keys and audit log.
    fn postgres_store(&mut self, raw: RawStore) -> Result<()> {
        if raw.sqlite_path.is_some() {
            return Err(ConfigError::invalid(
                "store.sqlite_path",
                "sqlite_path is for \"kind\": \"sqlite\"; PostgreSQL takes url",
            ));
        }
        let pool = raw.pool()?;
        let url = raw.url.ok_or_else(|| {
            ConfigError::invalid(
                "store",
                "\"kind\": \"postgres\" needs url (postgres://user:${PASSWORD}@host:5432/db)",
            )
        })?;
        let url = crate::expand::expand(&url, "store.url", &self.vars())?;
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::invalid(
                "store.url",
                "must be a postgres:// (or postgresql://) URL",
            ));
        }
        let url = Setting {
            value: crate::model::StoreUrl::new(url),
            from: self.provenance("store.url"),
        };
        self.config.store = crate::model::Store::Postgres(url, pool);
        Ok(())
    }

    /// `"default_preset_id"`: the profile served unless `--profile` says otherwise.
    pub(crate) fn unified_default_preset(&mut self, value: &Value) -> Result<()> {
        let id = value.as_str().filter(|s| !s.is_empty()).ok_or_else(|| {
            ConfigError::invalid("default_preset_id", "must be a preset or profile id")
        })?;
        self.config.profile = Some(Setting {
            value: id.to_owned(),
            from: self.provenance("default_preset_id"),
        });
        Ok(())
    }

    /// `"tool_use_reporting"`.
    pub(crate) fn unified_reporting(&mut self, value: Value) -> Result<()> {
        let raw: RawReporting = section(value, "tool_use_reporting")?;
        if let Some(days) = raw.retention_max_age_days {
            check_range("tool_use_reporting.retention_max_age_days", days, 1, 36_500)?;
        }
        if let Some(n) = raw.retention_max_events {
            check_range("tool_use_reporting.retention_max_events", n, 1, 1 << 40)?;
        }
        if let Some(store) = raw.store {
            self.unified_sqlite("tool_use_reporting.store", store)?;
            self.config.warnings.push(
                "tool_use_reporting.store: reporting events are kept in toolgate's state store (see store), one \
                 per workspace, not in a database of their own"
                    .to_owned(),
            );
        }
        let defaults = crate::unified::Reporting::default();
        self.config.reporting = Reporting {
            enabled: Setting {
                value: raw.enabled,
                from: self.provenance("tool_use_reporting.enabled"),
            },
            max_age_days: raw.retention_max_age_days.or(defaults.max_age_days),
            max_events: raw.retention_max_events.or(defaults.max_events),
        };
        Ok(())
    }

    /// Once every key is read: MCP Unified's reporting is off unless the file turns it on, and the profiles are
    /// the presets, then the stored ones, then the file's own `profiles` (each later one wins a shared name).
    ///
    /// A file whose one MCP Unified key is a `store` naming PostgreSQL is toolgate's own config with its team's
    /// store: it keeps toolgate's defaults (reporting on, the config's profiles), so that moving a config onto a
    /// shared store does not silently turn its reporting off.
    pub(crate) fn unified_finish(&mut self, top: &[String]) -> Result<()> {
        let has = |k: &str| top.iter().any(|t| t == k);
        if !UNIFIED.read.iter().any(|k| has(k)) {
            return Ok(());
        }
        let shared = matches!(self.config.store, crate::model::Store::Postgres(..));
        if shared && !has("default_preset_id") && !has("tool_use_reporting") {
            return Ok(());
        }
        if has("store") && !shared && (has("stateDir") || has("state_dir")) {
            return Err(ConfigError::invalid(
                "store",
                "give store (MCP Unified) or stateDir (toolgate), not both",
            ));
        }
        if !has("tool_use_reporting") {
            // MCP Unified's default.
            self.config.reporting.enabled = Setting::default(false);
        }
        let mut profiles = unified_presets();
        if let Some(file) = &self.config.profile_store {
            match std::fs::read_to_string(file) {
                Ok(text) => {
                    let name = file.display().to_string();
                    match crate::syntax::parse_json(&text, &name)? {
                        Value::Object(stored) => profiles.extend(stored),
                        _ => {
                            return Err(ConfigError::invalid(
                                name,
                                "the stored profiles must be an object of profiles by id",
                            ))
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(ConfigError::Read {
                        path: file.clone(),
                        error,
                    })
                }
            }
        }
        if let Some(Value::Object(own)) = self.config.policy.profiles.take() {
            profiles.extend(own);
        }
        self.config.policy.profiles = Some(Value::Object(profiles));
        Ok(())
    }
}

#[cfg(test)]
#[path = "unified_tests.rs"]
mod tests;
