//! `mcp-unified-gateway duplicate-preset` and `create-profile`: profiles stored beside a `gateway.json`'s store
//! (`<sqlite_path>.profiles.json`, which the config crate reads back as toolgate profiles). A new profile is
//! written only once the whole policy, with it, compiles as `serve` would compile it; an id already taken is
//! refused, never replaced. The profile file holds toolgate's profile keys plus its `id`. With `--remote` the running
//! gateway does the same to its own store (`unified_admin`); it reads its profiles when it starts.

use crate::products::unified::Place;
use crate::products::unified_remote::Remote;
use anyhow::Context;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct DuplicateArgs {
    /// The preset (or stored profile) to copy.
    id: String,
    /// The new profile's id.
    #[arg(long, value_name = "ID")]
    profile_id: String,
    /// Store it in the running gateway's profile store, at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key
    /// in $MCP_UNIFIED_GATEWAY_ADMIN_KEY); it serves the profile after a restart.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

#[derive(clap::Args)]
pub(crate) struct CreateArgs {
    /// The profile as JSON: `{"id": …, "description", "default", "rules", "permissions", "tools", "mode"}`.
    #[arg(long, value_name = "FILE")]
    profile_file: PathBuf,
    /// Store it in the running gateway's profile store, at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key
    /// in $MCP_UNIFIED_GATEWAY_ADMIN_KEY); it serves the profile after a restart.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

/// What a remote store adds: the running gateway read its profiles when it started.
const AFTER_RESTART: &str = "the running gateway serves it after a restart";

pub(crate) fn duplicate(args: DuplicateArgs) -> anyhow::Result<ExitCode> {
    if args.remote {
        let body = serde_json::json!({"profile_id": args.profile_id});
        Remote::from_env()?.post(&["presets", &args.id, "duplicate"], &body)?;
    } else {
        duplicate_at(&args.place, &args.id, &args.profile_id)?;
    }
    println!("stored profile {} (a copy of {})", args.profile_id, args.id);
    if args.remote {
        println!("{AFTER_RESTART}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Stores a copy of `id` as `new` in the profile store of the config at `place`.
pub(crate) fn duplicate_at(place: &Place, id: &str, new: &str) -> anyhow::Result<()> {
    let config = place.load(None, crate::runtime::ConfigUse::Read)?;
    let known = config
        .policy
        .profiles
        .as_ref()
        .and_then(|p| p.get(id))
        .cloned()
        .with_context(|| format!("no preset or profile {id:?} (list-presets shows them)"))?;
    store(&config, new, renamed(known, id, new))
}

pub(crate) fn create(args: CreateArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.profile_file)
        .with_context(|| format!("cannot read {}", args.profile_file.display()))?;
    let name = args.profile_file.display().to_string();
    let profile = config::parse_json(&text, &name)?;
    let id = if args.remote {
        anyhow::ensure!(
            profile.is_object(),
            "{name}: a profile must be a JSON object"
        );
        let answer =
            Remote::from_env()?.post(&["profiles"], &serde_json::json!({"profile": profile}))?;
        answer["stored"]
            .as_str()
            .context("the gateway did not say which profile it stored")?
            .to_owned()
    } else {
        create_at(&args.place, profile, &name)?
    };
    println!("stored profile {id}");
    if args.remote {
        println!("{AFTER_RESTART}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Stores `profile` (its `id` names it; `name` says where it came from) in the profile store of the config at
/// `place`; its id.
pub(crate) fn create_at(place: &Place, profile: Value, name: &str) -> anyhow::Result<String> {
    let config = place.load(None, crate::runtime::ConfigUse::Read)?;
    let Value::Object(mut profile) = profile else {
        anyhow::bail!("{name}: a profile must be a JSON object");
    };
    let id = match profile
        .remove("id")
        .or_else(|| profile.remove("profile_id"))
    {
        Some(Value::String(id)) if valid_id(&id) => id,
        Some(other) => anyhow::bail!(
            "{name}: \"id\" {other} must be a profile id (letters, digits, '-', '_', '.')"
        ),
        None => anyhow::bail!("{name}: the profile needs an \"id\""),
    };
    store(&config, &id, Value::Object(profile))?;
    Ok(id)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A copy of a profile under `new`: rule ids are unique across every profile, so each is renamed for it.
fn renamed(mut profile: Value, old: &str, new: &str) -> Value {
    if let Some(rules) = profile.get_mut("rules").and_then(Value::as_array_mut) {
        for rule in rules {
            if let Some(Value::String(id)) = rule.get_mut("id") {
                let rest = id
                    .strip_prefix(old)
                    .and_then(|r| r.strip_prefix('.'))
                    .unwrap_or(id.as_str());
                *id = format!("{new}.{rest}");
            }
        }
    }
    if let Some(Value::String(d)) = profile.get_mut("description") {
        *d = format!("{d} (copied from {old})");
    }
    profile
}

/// Adds `id` to the stored profiles once the policy with it compiles.
fn store(config: &config::Config, id: &str, profile: Value) -> anyhow::Result<()> {
    anyhow::ensure!(
        valid_id(id),
        "{id:?} is not a profile id (letters, digits, '-', '_', '.')"
    );
    let file = config.profile_store.clone().context(
        "this config has no profile store: give a gateway.json with \"store\": {\"kind\": \"sqlite\", \
         \"sqlite_path\": …}",
    )?;
    let taken = config
        .policy
        .profiles
        .as_ref()
        .is_some_and(|p| p.get(id).is_some());
    anyhow::ensure!(
        !taken,
        "a preset or profile {id:?} exists already; choose another id"
    );
    let mut stored = read_stored(&file)?;
    // Another writer may have stored it since the config was read.
    anyhow::ensure!(
        !stored.contains_key(id),
        "a preset or profile {id:?} exists already; choose another id"
    );
    stored.insert(id.to_owned(), profile);
    let mut with = config.clone();
    let mut all = match with.policy.profiles.take() {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    all.extend(stored.clone());
    with.policy.profiles = Some(Value::Object(all));
    with.profile = Some(config::Setting::default(id.to_owned()));
    crate::runtime::load_guard(&with).with_context(|| format!("profile {id} does not load"))?;
    write_atomically(&file, &serde_json::to_string_pretty(&stored)?)
}

fn read_stored(file: &Path) -> anyhow::Result<Map<String, Value>> {
    match std::fs::read_to_string(file) {
        Ok(text) => match config::parse_json(&text, &file.display().to_string())? {
            Value::Object(m) => Ok(m),
            _ => anyhow::bail!("{} must hold an object of profiles", file.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// Written beside, then renamed over: a reader sees the old file or the new one, never half of one.
fn write_atomically(file: &Path, text: &str) -> anyhow::Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, format!("{text}\n"))
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("cannot write {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_duplicate_gets_rule_ids_of_its_own() {
        let p = json!({"rules": [{"id": "project-researcher.read"}, {"id": "other"}], "description": "d"});
        let copy = renamed(p, "project-researcher", "mine");
        assert_eq!(copy["rules"][0]["id"], "mine.read");
        assert_eq!(copy["rules"][1]["id"], "mine.other");
        assert_eq!(copy["description"], "d (copied from project-researcher)");
    }

    #[test]
    fn profile_ids_are_plain_names() {
        assert!(valid_id("team-a.v2_x"));
        for bad in ["", "a b", "../x", "a/b", "é"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}
