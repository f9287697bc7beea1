//! Which config file a command uses and how far it is trusted: `--config`, else the default locations (the
//! user's config directory, then the current directory, whose file is not trusted to start anything from inside
//! the workspace), then its warnings and the entries toolgate does not act on, on stderr.

use anyhow::Context;
use config::{Config, Overrides};
use std::path::{Path, PathBuf};

use super::self_exe;

/// Where the config came from, when `--config` was not given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config PATH`.
    Flag(PathBuf),
    /// `$XDG_CONFIG_HOME/toolgate/config.{toml,json}` (or `~/.config/…`): the user's own file.
    User(PathBuf),
    /// `./toolgate.{toml,json}` in the current directory.
    CurrentDir(PathBuf),
    /// None found: only toolgate's own tools.
    None,
}

/// The files looked for without `--config`, in order: the user's config directory (XDG), then the current
/// directory. Empty or relative `XDG_CONFIG_HOME` is ignored, as the XDG specification says.
pub fn default_config_candidates(
    xdg_config_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
    cwd: Option<&Path>,
) -> Vec<ConfigSource> {
    let absolute = |v: Option<&std::ffi::OsStr>| {
        v.filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let user_dir = absolute(xdg_config_home).or_else(|| absolute(home).map(|h| h.join(".config")));
    let mut out = Vec::new();
    if let Some(dir) = user_dir {
        for name in ["config.toml", "config.json"] {
            out.push(ConfigSource::User(dir.join("toolgate").join(name)));
        }
    }
    if let Some(cwd) = cwd {
        for name in ["toolgate.toml", "toolgate.json"] {
            out.push(ConfigSource::CurrentDir(cwd.join(name)));
        }
    }
    out
}

/// `--config`, else the first default file that exists, else none.
pub fn config_source(flag: Option<&Path>) -> ConfigSource {
    if let Some(p) = flag {
        return ConfigSource::Flag(p.to_owned());
    }
    let cwd = std::env::current_dir().ok();
    default_config_candidates(
        std::env::var_os("XDG_CONFIG_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
        cwd.as_deref(),
    )
    .into_iter()
    .find(|c| match c {
        ConfigSource::User(p) | ConfigSource::CurrentDir(p) => p.is_file(),
        ConfigSource::Flag(_) | ConfigSource::None => false,
    })
    .unwrap_or(ConfigSource::None)
}

/// What a command will do with the config, which decides how far a file found in the current directory is
/// trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigUse {
    /// Read or decide state, explain the policy: nothing is started.
    Read,
    /// Serve, or start the upstream commands the config names.
    Start,
}

/// Loads the config `serve` would use (`--config`, else the default locations), then reports warnings and
/// what each server's entry says that toolgate does not act on, on stderr.
pub fn load_config(
    path: Option<&Path>,
    workspace: Option<PathBuf>,
    profile: Option<String>,
    used: ConfigUse,
) -> anyhow::Result<Config> {
    let flag_workspace = workspace.clone();
    let overrides = Overrides {
        workspace,
        self_exe: self_exe(),
        profile,
        mode: None,
    };
    let env = |k: &str| std::env::var(k).ok();
    let source = config_source(path);
    let mut config = match &source {
        ConfigSource::Flag(p) | ConfigSource::User(p) | ConfigSource::CurrentDir(p) => {
            config::load(p, &env, &overrides)?
        }
        ConfigSource::None => {
            let mut c = Config::empty();
            c.workspace = overrides.workspace.map(|w| config::Setting {
                value: w,
                from: config::Provenance::Flag("--workspace"),
            });
            c.profile = overrides.profile.map(|p| config::Setting {
                value: p,
                from: config::Provenance::Flag("--profile"),
            });
            c
        }
    };
    if let (ConfigSource::CurrentDir(p), ConfigUse::Start) = (&source, used) {
        refuse_config_inside_workspace(p, flag_workspace.as_deref())?;
    }
    for w in config.warnings.drain(..) {
        tracing::warn!("{w}");
    }
    for s in &config.servers {
        for note in &s.notes {
            tracing::warn!("server {}: {note}", s.name);
        }
    }
    Ok(config)
}

/// A config found only because it sits in the current directory is not trusted to start anything from inside
/// the workspace: whoever can write there (a cloned repository, the agent through its file tools) would choose
/// toolgate's rules and the commands it runs. The workspace judged is `--workspace`, else the current directory —
/// never the file's own `"workspace"`, which the same writer chose. An explicit `--config` is the user's own
/// choice and is not second-guessed.
fn refuse_config_inside_workspace(
    path: &Path,
    flag_workspace: Option<&Path>,
) -> anyhow::Result<()> {
    let workspace = match flag_workspace {
        Some(w) => w.to_owned(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = std::fs::canonicalize(&workspace)
        .with_context(|| format!("the workspace {} cannot be resolved", workspace.display()))?;
    let file = std::fs::canonicalize(path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    if file.starts_with(&workspace) {
        anyhow::bail!(
            "refusing {} found in the current directory: it lies inside the workspace ({}), where a cloned \
             repository or the agent could choose toolgate's rules and commands. Move it to \
             ~/.config/toolgate/ or pass --config explicitly",
            file.display(),
            workspace.display()
        );
    }
    Ok(())
}
