//! `mcp-unified-gateway duplicate-preset` and `create-profile`: profiles stored beside a `gateway.json`'s store
//! (`<sqlite_path>.profiles.json`, which the config crate reads back as toolgate profiles). A new profile is
//! written only once the whole policy, with it, compiles as `serve` would compile it; an id already taken is
//! refused, never replaced. The profile file holds toolgate's profile keys plus its `id`.

use crate::products::unified::Place;
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
    #[command(flatten)]
    place: Place,
}

#[derive(clap::Args)]
pub(crate) struct CreateArgs {
    /// The profile as JSON: `{"id": …, "description", "default", "rules", "permissions", "tools", "mode"}`.
    #[arg(long, value_name = "FILE")]
    profile_file: PathBuf,
    #[command(flatten)]
    place: Place,
}

pub(crate) fn duplicate(args: DuplicateArgs) -> anyhow::Result<ExitCode> {
    let config = args.place.load(None, crate::runtime::ConfigUse::Read)?;
    let known = config
        .policy
        .profiles
        .as_ref()
        .and_then(|p| p.get(&args.id))
        .cloned()
        .with_context(|| {
            format!(
                "no preset or profile {:?} (list-presets shows them)",
                args.id
            )
        })?;
    let copy = renamed(known, &args.id, &args.profile_id);
    store(&config, &args.profile_id, copy)?;
    println!("stored profile {} (a copy of {})", args.profile_id, args.id);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn create(args: CreateArgs) -> anyhow::Result<ExitCode> {
    let config = args.place.load(None, crate::runtime::ConfigUse::Read)?;
    let text = std::fs::read_to_string(&args.profile_file)
        .with_context(|| format!("cannot read {}", args.profile_file.display()))?;
    let name = args.profile_file.display().to_string();
    let Value::Object(mut profile) = config::parse_json(&text, &name)? else {
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
    println!("stored profile {id}");
    Ok(ExitCode::SUCCESS)
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
