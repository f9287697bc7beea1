//! `toolgate wrap -- CMD ARGS…`: one upstream behind toolgate, looking exactly like itself (no name prefixes, its
//! own identity, no extra tools), governed by the policy of `--config` if given.

use super::common::ConfigArgs;
use anyhow::{bail, Context};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// Wrap one stdio MCP server: toolgate sits in front of it, decides each call, and it keeps its own names.
#[derive(clap::Args)]
pub struct Args {
    /// Config (policy, profiles, limits). It must not list servers: the server is the command after --.
    #[command(flatten)]
    config: ConfigArgs,
    /// Name for the wrapped server in rules, logs and status. Default: the package a launcher runs
    /// (`npx -y @modelcontextprotocol/server-filesystem` → server-filesystem), else the command's file name.
    #[arg(long, alias = "server")]
    name: Option<String>,
    /// Pass an environment variable to the server: NAME (from toolgate's environment) or NAME=VALUE. Repeatable.
    /// Nothing else from toolgate's environment reaches it beyond a short allowlist (PATH, HOME, LANG, …).
    #[arg(long = "env", short = 'e', value_name = "NAME[=VALUE]")]
    env: Vec<String>,
    /// The server command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (program, rest) = args
        .command
        .split_first()
        .context("wrap needs a command after --")?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| default_name(program, rest));
    let mut env = serde_json::Map::new();
    for item in &args.env {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => {
                let v = std::env::var(item)
                    .with_context(|| format!("--env {item}: not set in toolgate's environment"))?;
                (item.clone(), v)
            }
        };
        env.insert(k, v.into());
    }
    let mut config = args.config.load_to_start()?;
    if !config.servers.is_empty() {
        bail!("the config given to wrap lists servers; wrap serves only the command after --");
    }
    let text =
        json!({"mcpServers": {name: {"command": program, "args": rest, "env": env}}}).to_string();
    let overrides = config::Overrides {
        self_exe: crate::runtime::self_exe(),
        ..config::Overrides::default()
    };
    // Values are already expanded by the shell; no `${VAR}` expansion applies to them.
    let no_vars = |_: &str| None;
    let server = config::parse_str(
        &text,
        config::Format::Json,
        Path::new("(command line)"),
        &no_vars,
        &overrides,
    )?;
    config.servers = server.servers;
    crate::runtime::serve(config, true, crate::runtime::Transport::Stdio)
}

/// Package runners: the server is the package they run, not the runner.
const LAUNCHERS: &[&str] = &[
    "npx", "bunx", "pnpx", "uvx", "pipx", "pnpm", "yarn", "bun", "uv", "deno",
];
/// Words between a launcher and its package (`pnpm dlx`, `pipx run`, `uv tool run`).
const LAUNCHER_VERBS: &[&str] = &["dlx", "exec", "run", "x", "tool"];
/// Launcher options whose value is the next word (`uvx --python 3.12 pkg`).
const OPTIONS_WITH_VALUE: &[&str] = &[
    "--from",
    "--with",
    "--python",
    "-p",
    "--package",
    "--registry",
];

/// The package a launcher runs, else the command's file name, reduced to a valid server name
/// (`@modelcontextprotocol/server-filesystem@1.2` → `server-filesystem`, `mcp-server-git`, `node`).
fn default_name(program: &str, args: &[String]) -> String {
    let file_name = |p: &str| {
        Path::new(p)
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
    };
    let launcher = file_name(program).filter(|b| LAUNCHERS.contains(&b.as_str()));
    // Options (and the values of those that take one) come before the package (`npx -y pkg`); the first
    // other word that is not a verb is what runs.
    let package = launcher.and_then(|_| {
        let mut words = args.iter().map(String::as_str);
        while let Some(a) = words.next() {
            if OPTIONS_WITH_VALUE.contains(&a) {
                words.next();
            } else if !a.starts_with('-') && !LAUNCHER_VERBS.contains(&a) {
                return Some(a.trim_start_matches("npm:").trim_start_matches("jsr:"));
            }
        }
        None
    });
    let base = match package {
        Some(pkg) => {
            let unscoped = match pkg.strip_prefix('@') {
                Some(scoped) => scoped.split_once('/').map_or(scoped, |(_, name)| name),
                None => pkg,
            };
            // `name@version` (npm) and `name==version` (Python).
            let bare = unscoped.split(['@', '=']).next().unwrap_or(unscoped);
            file_name(bare).unwrap_or_else(|| "server".to_owned())
        }
        None => file_name(program).unwrap_or_else(|| "server".to_owned()),
    };
    let cleaned: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let trimmed = cleaned
        .trim_matches('-')
        .split("--")
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    // "toolgate" names toolgate's own tools in rules.
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("toolgate") {
        "server".to_owned()
    } else {
        trimmed.chars().take(48).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::default_name;

    fn name(argv: &[&str]) -> String {
        let args: Vec<String> = argv[1..].iter().map(|a| (*a).to_owned()).collect();
        default_name(argv[0], &args)
    }

    #[test]
    fn wrapped_server_is_named_after_its_package_not_its_launcher() {
        let cases: &[(&[&str], &str)] = &[
            (
                &[
                    "npx",
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/tmp",
                ],
                "server-filesystem",
            ),
            (&["/usr/bin/npx", "-y", "@playwright/mcp@latest"], "mcp"),
            (
                &["uvx", "mcp-server-git", "--repository", "."],
                "mcp-server-git",
            ),
            (
                &["uvx", "--python", "3.12", "mcp-server-fetch==1.0"],
                "mcp-server-fetch",
            ),
            (&["pnpm", "dlx", "some-server"], "some-server"),
            (&["pipx", "run", "weather-mcp"], "weather-mcp"),
            (&["/opt/bin/mcp-server-git"], "mcp-server-git"),
            (&["node", "build/index.js"], "node"),
            (&["npx", "toolgate"], "server"),
            (&["npx"], "npx"),
        ];
        for (argv, want) in cases {
            assert_eq!(name(argv), *want, "{argv:?}");
        }
    }
}
