//! Reading and validating a config file. Parse first (TOML or JSON into one JSON tree), then validate each known
//! section into the typed `Config`, recording provenance. Top-level keys toolgate does not read are judged by
//! `keys`: another client's setting is ignored with a warning; a slip of a toolgate key, a section of toolgate's
//! under another name, or a policy's keys at the top level (a ToolFence policy passed as a config) are refused
//! with the fix. Server entries are validated in `server`.

use crate::error::{ConfigError, Result};
use crate::expand::{expand, Vars};
use crate::keys::{
    did_you_mean, near_miss, Verdict, PERMISSION_LISTS, POLICY_FILE, SECTIONS, TOP_LEVEL,
};
use crate::model::{Config, Provenance, Setting};
use crate::raw::RawPins;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

mod sections;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON as clients write it: comments and trailing commas allowed (VS Code's `mcp.json`).
    Json,
    Toml,
    /// A toolgate config in YAML, or a ToolFence policy (`version`, `default`, `rules`).
    Yaml,
}

/// Values given on the command line; they win over the file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub workspace: Option<PathBuf>,
    /// toolgate's own executable, canonical, so a config that would spawn toolgate as an upstream is refused.
    pub self_exe: Option<PathBuf>,
    /// `--profile`.
    pub profile: Option<String>,
    /// `--mode`.
    pub mode: Option<crate::model::Mode>,
}

/// Sections reserved for features that this version does not enforce yet. Accepting them silently would let a
/// user believe a deny rule is active when it is not, so they are refused.
const NOT_YET: &[(&str, &str)] = &[];

/// Reads and validates the config file at `path`; the format follows the extension (`.toml`, else JSON).
pub fn load(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        error,
    })?;
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("toml") => Format::Toml,
        Some(e) if e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml") => Format::Yaml,
        _ => Format::Json,
    };
    parse_str(&text, format, path, env, overrides)
}

/// Validates config text. `origin` is used in messages and provenance.
pub fn parse_str(
    text: &str,
    format: Format,
    origin: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config> {
    let name = origin.display().to_string();
    let parsed: Result<Value> = match format {
        Format::Json => crate::syntax::parse_json(text, &name),
        Format::Toml => crate::syntax::parse_toml(text, &name),
        Format::Yaml => crate::syntax::parse_yaml(text, &name),
    };
    let tree: Value = match parsed {
        Ok(tree) => tree,
        Err(_) if format != Format::Yaml && looks_like_yaml_policy(text) => {
            return Err(not_a_config(origin))
        }
        Err(e) => return Err(e),
    };
    // A ToolFence policy given as the config is what ToolFence would read it as: its rules, with its precedence,
    // and no servers.
    let tree = if policy::is_toolfence_policy(&tree) {
        let structured = policy::translate_toolfence(&tree).map_err(|e| match e {
            policy::Error::Parse { key, message } => {
                ConfigError::invalid(format!("{name} (ToolFence policy) {key}"), message)
            }
            other => ConfigError::invalid(format!("{name} (ToolFence policy)"), other.to_string()),
        })?;
        serde_json::json!({ "policy": structured })
    } else {
        tree
    };
    let Value::Object(top) = tree else {
        return Err(ConfigError::invalid(
            "(top level)",
            "the config must be an object/table",
        ));
    };
    Validator {
        origin,
        env,
        overrides,
        config: Config::empty(),
    }
    .run(top)
}

pub(crate) struct Validator<'a> {
    pub(crate) origin: &'a Path,
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
    pub(crate) overrides: &'a Overrides,
    pub(crate) config: Config,
}

impl Validator<'_> {
    /// What `${…}` references resolve against. `${workspaceFolder}` in `.vscode/mcp.json` is the folder holding
    /// `.vscode`, as VS Code means it; elsewhere it is the workspace (flag first).
    pub(crate) fn vars(&self) -> Vars<'_> {
        let vscode_folder = self
            .origin
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == ".vscode"))
            .and_then(Path::parent);
        let workspace_folder = vscode_folder
            .or(self.overrides.workspace.as_deref())
            .or(self.config.workspace.as_ref().map(|w| w.value.as_path()));
        Vars {
            env: self.env,
            workspace_folder,
            origin: self.origin,
        }
    }

    /// A top-level setting that must be an absolute path (variables expanded).
    fn absolute_path(&self, key: &str, value: &Value) -> Result<Setting<PathBuf>> {
        let s = value
            .as_str()
            .ok_or_else(|| ConfigError::invalid(key, "must be a path"))?;
        let s = expand(s, key, &self.vars())?;
        if !Path::new(&s).is_absolute() {
            return Err(ConfigError::invalid(key, "must be an absolute path"));
        }
        Ok(Setting {
            value: PathBuf::from(s),
            from: self.provenance(key),
        })
    }

    pub(crate) fn provenance(&self, key: &str) -> Provenance {
        Provenance::File {
            path: self.origin.to_owned(),
            key: key.to_owned(),
        }
    }

    fn run(mut self, top: Map<String, Value>) -> Result<Config> {
        let mut servers = None;
        let mut credentials = None;
        let unified = crate::unified::is_unified(&top);
        let keys: Vec<String> = top.keys().cloned().collect();
        for (key, value) in top {
            if let Some((_, why)) = NOT_YET.iter().find(|(k, _)| *k == key) {
                return Err(ConfigError::NotYetSupported { key, why });
            }
            match key.as_str() {
                "mcpServers" | "mcp_servers" | "servers" => {
                    if servers.is_some() {
                        return Err(ConfigError::invalid(
                            key,
                            "give one of mcpServers, mcp_servers (Codex) or servers (VS Code), not several",
                        ));
                    }
                    servers = Some((key, value));
                }
                "separator" => self.separator(value)?,
                "prefixTools" | "prefix_tools" => {
                    let v = value
                        .as_bool()
                        .ok_or_else(|| ConfigError::invalid(&key, "must be true or false"))?;
                    self.config.prefix_tools = Setting {
                        value: v,
                        from: self.provenance(&key),
                    };
                }
                "limits" => self.limits(value)?,
                "approvals" => self.approvals(value)?,
                "sandbox" => self.sandbox(value)?,
                "http" => self.http(value)?,
                "telemetry" => self.telemetry(value)?,
                "pins" => {
                    let raw: RawPins = section(value, "pins")?;
                    self.config.pins_on_change_ask = match raw.on_change.as_deref() {
                        None | Some("hide") => false,
                        Some("ask") => true,
                        Some(other) => {
                            return Err(ConfigError::invalid(
                                "pins.onChange",
                                format!("{other:?} is not one of \"hide\", \"ask\""),
                            ))
                        }
                    };
                    self.config.pins_accept_new_tools = match raw.new_tools.as_deref() {
                        None | Some("hold") => false,
                        Some("accept") => true,
                        Some(other) => {
                            return Err(ConfigError::invalid(
                                "pins.newTools",
                                format!("{other:?} is not one of \"hold\", \"accept\""),
                            ))
                        }
                    };
                }
                "hooks" => self.hooks(value)?,
                "credentials" => credentials = Some(value),
                "rateLimits" | "rate_limits" => {
                    self.config.rate_limits = crate::rate::parse(value)?
                }
                "mode" => self.mode(&value)?,
                "stateDir" | "state_dir" => {
                    self.config.state_dir = Some(self.absolute_path(&key, &value)?);
                }
                "auditWitness" | "audit_witness" => {
                    self.config.audit_witness = Some(self.absolute_path(&key, &value)?);
                }
                "permissions" | "policy" | "profiles" => self.policy_section(&key, value)?,
                "inputs" => {
                    if !value.is_array() {
                        return Err(ConfigError::invalid(
                            "inputs",
                            "must be an array (VS Code's inputs)",
                        ));
                    }
                    // VS Code prompts for these; a server that references one is reported as not started.
                }
                "profile" => {
                    let p = value
                        .as_str()
                        .ok_or_else(|| ConfigError::invalid("profile", "must be a profile name"))?;
                    self.config.profile = Some(Setting {
                        value: p.to_owned(),
                        from: self.provenance("profile"),
                    });
                }
                "workspace" => {
                    let s = value
                        .as_str()
                        .ok_or_else(|| ConfigError::invalid("workspace", "must be a path"))?;
                    let s = expand(s, "workspace", &self.vars())?;
                    self.config.workspace = Some(Setting {
                        value: PathBuf::from(s),
                        from: self.provenance("workspace"),
                    });
                }
                "store" if unified => self.unified_store(value)?,
                "default_preset_id" if unified => self.unified_default_preset(&value)?,
                "tool_use_reporting" if unified => self.unified_reporting(value)?,
                _ if unified && TOP_LEVEL.judge(&key) != Verdict::Read => {
                    return Err(crate::unified::unsupported(&key))
                }
                _ => self.unknown_top_level(key, value)?,
            }
        }
        self.unified_finish(&keys)?;
        crate::telemetry::check_metrics(&self.config)?;
        if let Some((key, value)) = servers {
            self.servers(&key, value)?;
        }
        if let Some(value) = credentials {
            let folder = self.vars().workspace_folder.map(Path::to_path_buf);
            let vars = Vars {
                env: self.env,
                workspace_folder: folder.as_deref(),
                origin: self.origin,
            };
            crate::credentials::apply(value, &mut self.config, &vars)?;
        }
        self.toolscript_policy()?;
        if self.config.policy.toolscript.is_some() && self.config.mode.from == Provenance::Default {
            // toolscript-mcp's file, unchanged: what it serves is code mode.
            self.config.mode = Setting {
                value: crate::model::Mode::Code,
                from: self.provenance("policy"),
            };
        }
        if let Some(mode) = self.overrides.mode {
            self.config.mode = crate::code::flag_mode(mode);
        }
        if let Some(p) = &self.overrides.profile {
            self.config.profile = Some(Setting {
                value: p.clone(),
                from: Provenance::Flag("--profile"),
            });
        }
        if let Some(ws) = &self.overrides.workspace {
            self.config.workspace = Some(Setting {
                value: ws.clone(),
                from: Provenance::Flag("--workspace"),
            });
        }
        self.config.source = Some(self.origin.to_owned());
        Ok(self.config)
    }

    /// A key toolgate does not read. Another client's setting is ignored with a warning; anything that may be
    /// one of toolgate's settings under a wrong name or in the wrong place is refused, since ignoring it could
    /// drop a deny rule, a hook or a sandbox requirement without a word.
    fn unknown_top_level(&mut self, key: String, value: Value) -> Result<()> {
        if let Some(hint) = out_of_place(&key) {
            return Err(ConfigError::UnknownKey { key, hint });
        }
        if let Some((known, _)) = NOT_YET.iter().find(|(k, _)| near_miss(k, &key)) {
            return Err(ConfigError::UnknownKey {
                key,
                hint: format!(" (did you mean {known}?)"),
            });
        }
        let why = match TOP_LEVEL.judge(&key) {
            Verdict::Misspelt(known) => {
                return Err(ConfigError::UnknownKey {
                    key,
                    hint: format!(" (did you mean {known}?)"),
                })
            }
            Verdict::Foreign { why, near } => {
                // `"model": "code"` is Codex's key in name only: a value toolgate's near key accepts is taken as
                // a slip of that key.
                if let Some(near) = near.filter(|n| self.would_read(n, &value)) {
                    let hint = format!(
                        " (did you mean {near}? the value is one {near} takes; {key} itself is: {why})"
                    );
                    return Err(ConfigError::UnknownKey { key, hint });
                }
                why
            }
            Verdict::Read | Verdict::Unknown => {
                if let Some(section) = section_by_shape(&value) {
                    return Err(ConfigError::UnknownKey {
                        key,
                        hint: format!(
                            " (it holds the keys of toolgate's {section:?} section: did you mean {section}?)"
                        ),
                    });
                }
                "not a toolgate setting"
            }
        };
        self.config
            .warnings
            .push(format!("ignoring top-level key {key:?}: {why}"));
        Ok(())
    }

    /// Whether `value` is a valid `key` of toolgate's top level, in a scratch validation of its own.
    fn would_read(&self, key: &str, value: &Value) -> bool {
        let top = Map::from_iter([(key.to_owned(), value.clone())]);
        Validator {
            origin: self.origin,
            env: self.env,
            overrides: self.overrides,
            config: Config::empty(),
        }
        .run(top)
        .is_ok()
    }

    /// Kept as written: the policy stage parses, validates and explains these sections.
    fn policy_section(&mut self, key: &str, value: Value) -> Result<()> {
        if key == "policy" && value.is_array() {
            // toolscript-mcp's first-match list: translated once the servers are known (`code`).
            self.config.policy.toolscript = Some(value);
            return Ok(());
        }
        if !value.is_object() {
            return Err(ConfigError::invalid(key, "must be an object/table"));
        }
        let slot = match key {
            "permissions" => &mut self.config.policy.permissions,
            "policy" => &mut self.config.policy.policy,
            _ => &mut self.config.policy.profiles,
        };
        *slot = Some(value);
        Ok(())
    }
}

/// Whether YAML text has a policy's keys at its top level (`version: 1`, `default: ask`, `rules:`).
fn looks_like_yaml_policy(text: &str) -> bool {
    text.lines().any(|line| {
        line.split_once(':')
            .is_some_and(|(key, _)| POLICY_FILE.contains(&key) || PERMISSION_LISTS.contains(&key))
    })
}

/// Text that is neither valid JSON nor TOML but reads as a YAML policy: a YAML file under another extension.
fn not_a_config(path: &Path) -> ConfigError {
    ConfigError::NotAConfig {
        path: path.to_owned(),
        why: "it reads as YAML (a ToolFence policy?) under a JSON or TOML name; name it .yaml and it is read as \
              YAML (a ToolFence policy, with version, default and rules only, is accepted as one)",
    }
}

/// The fix for a policy's own key at the top level: a ToolFence policy passed as a config, or permission lists
/// written outside `permissions`.
fn out_of_place(key: &str) -> Option<String> {
    let squash = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
    let is = |list: &[&str]| list.iter().any(|k| squash(k) == squash(key));
    if is(POLICY_FILE) {
        return Some(format!(
            ": {key:?} belongs to a policy, not at the top level of a toolgate config. A ToolFence policy has \
             only version, default and rules at its top level (then it is read as one); in a toolgate config, put \
             these keys inside its \"policy\" section, which takes the same rules, beside \"mcpServers\""
        ));
    }
    if is(PERMISSION_LISTS) {
        return Some(format!(
            ": permission lists belong inside \"permissions\" (did you mean permissions.{key}?)"
        ));
    }
    None
}

/// The toolgate section whose keys are all that `value` holds, if any.
fn section_by_shape(value: &Value) -> Option<&'static str> {
    let Value::Object(map) = value else {
        return None;
    };
    if map.is_empty() {
        return None;
    }
    SECTIONS
        .iter()
        .find(|(_, keys)| map.keys().all(|k| keys.contains(&k.as_str())))
        .map(|(name, _)| *name)
}

pub(crate) fn section<T: serde::de::DeserializeOwned>(value: Value, at: &str) -> Result<T> {
    serde_json::from_value(value).map_err(|e| {
        let msg = e.to_string();
        match msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split_once('`'))
        {
            Some((field, rest)) => {
                let expected = rest.split('`').skip(1).step_by(2);
                let hint = match did_you_mean(field, expected) {
                    Some(near) => format!(" (did you mean {near}?)"),
                    None => format!(" ({})", rest.trim_start_matches(", ")),
                };
                ConfigError::UnknownKey {
                    key: format!("{at}.{field}"),
                    hint,
                }
            }
            None => ConfigError::invalid(at, msg),
        }
    })
}

pub(crate) fn check_range<T: PartialOrd + std::fmt::Display>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<()> {
    if v < lo || v > hi {
        return Err(ConfigError::invalid(
            key,
            format!("{v} is outside {lo}..={hi}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
