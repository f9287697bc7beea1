//! `toolscript-mcp`: toolgate in code mode, started as toolscript-mcp is. The config is found where toolscript-mcp
//! looks (`--config`, else `TOOLSCRIPT_CONFIG`, else `$XDG_CONFIG_HOME/toolscript-mcp/config.json`, else
//! `~/.config/toolscript-mcp/config.json`) and read unchanged: its `mcpServers`, `${VAR}`s, `sandbox` and
//! first-match `policy` list are the config crate's (`code`). An entry that would start toolscript-mcp or toolgate
//! again is refused there. What the client sees is `search_tools` and `run_code`, as with toolscript-mcp.

use anyhow::Context;
use clap::Parser;
use config::{Mode, Provenance, Setting};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// A code-mode MCP server: the model writes one JavaScript program that calls the tools of your other MCP
/// servers in a sandbox (toolgate speaking toolscript-mcp).
#[derive(Parser)]
#[command(name = "toolscript-mcp", version)]
struct Cli {
    /// The config file (the `mcpServers` shape, with a `policy` list). Default: $TOOLSCRIPT_CONFIG, else
    /// $XDG_CONFIG_HOME/toolscript-mcp/config.json, else ~/.config/toolscript-mcp/config.json.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

pub fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    crate::runtime::init_logging();
    let env = |k: &str| std::env::var_os(k);
    let path = config_path(cli.config, &env)?;
    let mut config =
        crate::runtime::load_config(Some(&path), None, None, crate::runtime::ConfigUse::Start)?;
    if config.mode.value == Mode::Direct && config.mode.from != Provenance::Default {
        anyhow::bail!(
            "{} says \"mode\": \"direct\" ({}); toolscript-mcp serves code mode only (run `toolgate serve --config \
             …` for every tool)",
            path.display(),
            config.mode.from
        );
    }
    config.mode = Setting {
        value: Mode::Code,
        from: Provenance::Flag("toolscript-mcp"),
    };
    crate::runtime::serve(config, false, crate::runtime::Transport::Stdio)
}

/// Where toolscript-mcp reads its config, in its order; the file must exist.
fn config_path(
    flag: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> anyhow::Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p);
    }
    if let Some(p) = env("TOOLSCRIPT_CONFIG").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let absolute = |k: &str| {
        env(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let dir = absolute("XDG_CONFIG_HOME")
        .or_else(|| absolute("HOME").map(|h| h.join(".config")))
        .context("no config: give --config FILE or set TOOLSCRIPT_CONFIG (no HOME to look in)")?;
    let path = dir.join("toolscript-mcp").join("config.json");
    anyhow::ensure!(
        path.is_file(),
        "no config: give --config FILE, set TOOLSCRIPT_CONFIG, or write {}",
        path.display()
    );
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_looked_for_where_toolscript_mcp_looks() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().join("xdg");
        let home = dir.path().join("home");
        let vars = |pairs: Vec<(&'static str, OsString)>| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        };
        let flag = Some(PathBuf::from("/f.json"));
        let e = vars(vec![("TOOLSCRIPT_CONFIG", "/t.json".into())]);
        assert_eq!(config_path(flag, &e).unwrap(), PathBuf::from("/f.json"));
        assert_eq!(config_path(None, &e).unwrap(), PathBuf::from("/t.json"));
        for base in [
            xdg.join("toolscript-mcp"),
            home.join(".config/toolscript-mcp"),
        ] {
            std::fs::create_dir_all(&base).unwrap();
        }
        let both = vars(vec![
            ("XDG_CONFIG_HOME", xdg.clone().into()),
            ("HOME", home.clone().into()),
        ]);
        assert!(config_path(None, &both)
            .unwrap_err()
            .to_string()
            .contains("xdg/toolscript-mcp/config.json"));
        std::fs::write(xdg.join("toolscript-mcp/config.json"), "{}").unwrap();
        assert_eq!(
            config_path(None, &both).unwrap(),
            xdg.join("toolscript-mcp/config.json")
        );
        let home_only = vars(vec![
            ("XDG_CONFIG_HOME", "relative".into()),
            ("HOME", home.clone().into()),
        ]);
        std::fs::write(home.join(".config/toolscript-mcp/config.json"), "{}").unwrap();
        assert_eq!(
            config_path(None, &home_only).unwrap(),
            home.join(".config/toolscript-mcp/config.json")
        );
    }
}
