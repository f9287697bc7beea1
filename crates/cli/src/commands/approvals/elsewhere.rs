//! Where approval requests wait besides the namespace a command reads: which state directory it reads and why
//! (`stateDir` in the config, `--state-dir`, `TOOLGATE_STATE_DIR`, or the per-user default), the other workspaces
//! of that state with pending requests, and pending requests under the other state directories a toolgate of the
//! same user may be using — a client that starts toolgate with a trimmed environment (no `TOOLGATE_STATE_DIR`, no
//! `XDG_STATE_HOME`) keeps its requests under the per-user default, where `approvals` run from a shell with
//! `TOOLGATE_STATE_DIR` set would never look.
//!
//! It only reads: each database is opened read-only, nothing is created or bound. A directory that cannot be read
//! is passed over, since this only advises.

use crate::commands::escape::label;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use store::{StateRootInputs, Timestamp};

/// Pending requests of one workspace somewhere else.
#[derive(Debug, PartialEq, Eq)]
pub struct Waiting {
    pub workspace: PathBuf,
    pub count: u64,
    /// The other state root and why toolgate might use it; `None`: the state root read here.
    pub root: Option<(PathBuf, &'static str)>,
}

/// What a command that reads `state` should say about where it reads and where else requests wait.
pub fn lines(config: &config::Config, state: &gateway::State) -> Vec<String> {
    let ns = state.namespace();
    let env = |k: &str| std::env::var_os(k);
    let mut out = vec![format!(
        "reading state {} ({})",
        label(&ns.state_root().display().to_string()),
        source(config, env("TOOLGATE_STATE_DIR"))
    )];
    let now = Timestamp::now();
    let here = crate::runtime::pending_elsewhere(state)
        .into_iter()
        .map(|(workspace, count)| Waiting {
            workspace,
            count,
            root: None,
        });
    let roots = candidates(config, &StateRootInputs::from_process_env());
    let there = others(ns.state_root(), &roots)
        .into_iter()
        .flat_map(|(root, why)| {
            store::pending_under(&root, now)
                .unwrap_or_default()
                .into_iter()
                .map(move |(workspace, count)| Waiting {
                    workspace,
                    count,
                    root: Some((root.clone(), why)),
                })
        });
    let waiting: Vec<Waiting> = here.chain(there).collect();
    if waiting.is_empty() {
        return out;
    }
    out.push("requests are also waiting:".to_owned());
    out.extend(waiting.iter().map(describe));
    out
}

/// Where the state root comes from, in words.
fn source(config: &config::Config, explicit: Option<OsString>) -> String {
    match (&config.state_dir, explicit.filter(|v| !v.is_empty())) {
        (Some(dir), _) => format!("from {}", dir.from),
        (None, Some(_)) => "from TOOLGATE_STATE_DIR".to_owned(),
        (None, None) => "the per-user default".to_owned(),
    }
}

/// The state roots a toolgate of this user may be using, each with why: the config's, `TOOLGATE_STATE_DIR`'s,
/// the per-user default, and that default as a client that passes neither `TOOLGATE_STATE_DIR` nor
/// `XDG_STATE_HOME` gets it.
fn candidates(config: &config::Config, env: &StateRootInputs) -> Vec<(PathBuf, &'static str)> {
    let default = |inputs: StateRootInputs| store::resolve_state_root(&inputs).ok();
    let mut out: Vec<(PathBuf, &'static str)> = Vec::new();
    let mut add = |root: Option<PathBuf>, why: &'static str| {
        if let Some(root) = root.filter(|r| r.is_absolute()) {
            out.push((root, why));
        }
    };
    add(
        config.state_dir.as_ref().map(|d| d.value.clone()),
        "the config's stateDir",
    );
    add(
        env.explicit
            .as_ref()
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        "TOOLGATE_STATE_DIR",
    );
    add(
        default(StateRootInputs {
            explicit: None,
            ..env.clone()
        }),
        "the per-user default",
    );
    add(
        default(StateRootInputs {
            explicit: None,
            xdg_state_home: None,
            home: env.home.clone(),
        }),
        "the per-user default of a client that starts toolgate with a trimmed environment",
    );
    out
}

/// The candidates that are directories other than `here`, each once (the same directory by two names counts
/// once, under its first reason).
fn others(here: &Path, candidates: &[(PathBuf, &'static str)]) -> Vec<(PathBuf, &'static str)> {
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    let mut seen = vec![canonical(here).unwrap_or_else(|| here.to_owned())];
    let mut out = Vec::new();
    for (root, why) in candidates {
        let Some(c) = canonical(root) else {
            continue;
        };
        if !seen.contains(&c) {
            seen.push(c.clone());
            out.push((c, *why));
        }
    }
    out
}

/// One line: how many, for which workspace, where, and the command that shows them.
fn describe(w: &Waiting) -> String {
    let ws = label(&w.workspace.display().to_string());
    let n = match w.count {
        1 => "1 request".to_owned(),
        n => format!("{n} requests"),
    };
    match &w.root {
        None => format!(
            "  {n} for workspace {ws} in this state: toolgate approvals watch --workspace {ws}"
        ),
        Some((root, why)) => {
            let root = label(&root.display().to_string());
            format!(
                "  {n} for workspace {ws} in state {root} ({why}): toolgate approvals watch --state-dir {root} \
                 --workspace {ws}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn inputs(explicit: Option<&str>, xdg: Option<&str>, home: Option<&str>) -> StateRootInputs {
        StateRootInputs {
            explicit: explicit.map(OsString::from),
            xdg_state_home: xdg.map(OsString::from),
            home: home.map(OsString::from),
        }
    }

    #[test]
    fn the_candidates_are_the_config_the_variable_and_both_defaults() {
        let mut config = config::Config::empty();
        config.state_dir = Some(config::Setting {
            value: PathBuf::from("/srv/state"),
            from: config::Provenance::Flag("--state-dir"),
        });
        let found = candidates(
            &config,
            &inputs(Some("/var/lib/tg"), Some("/x/state"), Some("/home/u")),
        );
        let roots: Vec<&str> = found.iter().map(|(r, _)| r.to_str().unwrap()).collect();
        assert_eq!(
            roots,
            [
                "/srv/state",
                "/var/lib/tg",
                "/x/state/toolgate",
                "/home/u/.local/state/toolgate"
            ]
        );
        // An empty or relative value names nothing.
        let none = candidates(
            &config::Config::empty(),
            &inputs(Some(""), Some("rel"), None),
        );
        assert_eq!(none, []);
    }

    #[test]
    fn the_source_says_which_setting_chose_the_state() {
        let mut config = config::Config::empty();
        assert_eq!(source(&config, None), "the per-user default");
        assert_eq!(source(&config, Some("".into())), "the per-user default");
        assert_eq!(
            source(&config, Some("/s".into())),
            "from TOOLGATE_STATE_DIR"
        );
        config.state_dir = Some(config::Setting {
            value: PathBuf::from("/srv/state"),
            from: config::Provenance::Flag("--state-dir"),
        });
        assert_eq!(
            source(&config, Some("/s".into())),
            "from command line (--state-dir)"
        );
    }
}
