//! How a server entry is reached: its transport (a command with its arguments, environment and working
//! directory, or a URL with its headers), in every client's spelling.

use crate::envfile;
use crate::error::{ConfigError, Result};
use crate::expand::expand;
use crate::load::Validator;
use crate::model::Transport;
use crate::raw::RawServer;
use std::collections::BTreeMap;
use std::path::PathBuf;

impl Validator<'_> {
    pub(super) fn transport(
        &self,
        at: &str,
        raw: &RawServer,
        notes: &mut Vec<String>,
    ) -> Result<Transport> {
        let vars = self.vars();
        let kind = raw.kind.as_deref();
        match (kind, &raw.command, &raw.url) {
            (None | Some("stdio"), Some(command), None) => {
                let http_only = [
                    (!raw.headers.is_empty(), "headers"),
                    (!raw.env_http_headers.is_empty(), "env_http_headers"),
                    (raw.bearer_token_env_var.is_some(), "bearer_token_env_var"),
                ];
                if let Some((_, key)) = http_only.iter().find(|(given, _)| *given) {
                    return Err(ConfigError::invalid(
                        format!("{at}.{key}"),
                        "only HTTP servers take this",
                    ));
                }
                let args = raw
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| expand(a, &format!("{at}.args[{i}]"), &vars))
                    .collect::<Result<Vec<_>>>()?;
                let env = self.stdio_env(at, raw, notes)?;
                let command = expand(command, &format!("{at}.command"), &vars)?;
                if command.trim().is_empty() {
                    return Err(ConfigError::invalid(
                        format!("{at}.command"),
                        "must not be empty",
                    ));
                }
                self.refuse_self(at, &command, &args)?;
                let cwd = raw
                    .cwd
                    .as_deref()
                    .map(|c| expand(c, &format!("{at}.cwd"), &vars))
                    .transpose()?;
                Ok(Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd: cwd.map(PathBuf::from),
                })
            }
            (
                None
                | Some("http")
                | Some("streamable-http")
                | Some("streamableHttp")
                | Some("sse"),
                None,
                Some(url),
            ) => {
                let given = [
                    (!raw.args.is_empty(), "args"),
                    (!raw.env.is_empty(), "env"),
                    (raw.cwd.is_some(), "cwd"),
                    (!raw.env_vars.is_empty(), "env_vars"),
                    (raw.env_file.is_some(), "envFile"),
                ];
                if let Some((_, key)) = given.iter().find(|(given, _)| *given) {
                    return Err(ConfigError::invalid(
                        format!("{at}.{key}"),
                        "an HTTP server takes url and headers, not args/env/cwd",
                    ));
                }
                let url = expand(url, &format!("{at}.url"), &vars)?;
                check_url(&format!("{at}.url"), &url)?;
                let mut headers: BTreeMap<String, String> = raw
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v, &format!("{at}.headers.{k}"), &vars)?)))
                    .collect::<Result<_>>()?;
                // Codex leaves a header out when its variable is unset; so does toolgate, and says so.
                for (header, var) in &raw.env_http_headers {
                    match (self.env)(var) {
                        Some(v) => {
                            headers.insert(header.clone(), v);
                        }
                        None => notes.push(format!(
                            "env_http_headers.{header}: {var} is not set in toolgate's environment; header left out"
                        )),
                    }
                }
                if let Some(var) = &raw.bearer_token_env_var {
                    match (self.env)(var) {
                        Some(v) => {
                            headers.insert("Authorization".to_owned(), format!("Bearer {v}"));
                        }
                        None => notes.push(format!(
                            "bearer_token_env_var: {var} is not set in toolgate's environment; no token sent"
                        )),
                    }
                }
                let sse = kind == Some("sse");
                if sse {
                    notes.push(
                        "HTTP+SSE is the deprecated 2024-11-05 transport: connected, but prefer the server's \
                         Streamable HTTP URL (\"type\": \"http\") when it has one"
                            .to_owned(),
                    );
                }
                Ok(Transport::Http { url, headers, sse })
            }
            (
                Some(kind @ ("stdio" | "http" | "streamable-http" | "streamableHttp" | "sse")),
                _,
                _,
            ) => {
                let need = if kind == "stdio" {
                    "command (and no url)"
                } else {
                    "url (and no command)"
                };
                Err(ConfigError::invalid(
                    at,
                    format!("a {kind:?} server needs {need}"),
                ))
            }
            (Some(kind), _, _) => Err(ConfigError::invalid(
                format!("{at}.type"),
                format!("{kind:?} is not one of \"stdio\", \"http\", \"sse\""),
            )),
            (None, Some(_), Some(_)) => Err(ConfigError::invalid(
                at,
                "give either command (stdio) or url (http), not both",
            )),
            (None, None, None) => Err(ConfigError::invalid(
                at,
                "needs command (stdio) or url (http)",
            )),
        }
    }

    /// The env file first, then `env_vars` passed through, then `env`: the most explicit wins.
    fn stdio_env(
        &self,
        at: &str,
        raw: &RawServer,
        notes: &mut Vec<String>,
    ) -> Result<BTreeMap<String, String>> {
        let vars = self.vars();
        let mut env = match &raw.env_file {
            Some(file) => {
                let file = expand(file, &format!("{at}.envFile"), &vars)?;
                envfile::read(&format!("{at}.envFile"), &file, self.origin)?
            }
            None => BTreeMap::new(),
        };
        for name in &raw.env_vars {
            match (self.env)(name) {
                Some(v) => {
                    env.insert(name.clone(), v);
                }
                None => notes.push(format!(
                    "env_vars: {name} is not set in toolgate's environment; not passed"
                )),
            }
        }
        for (k, v) in &raw.env {
            env.insert(k.clone(), expand(v, &format!("{at}.env.{k}"), &vars)?);
        }
        Ok(env)
    }
}

fn check_url(at: &str, url: &str) -> Result<()> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(h) if !h.is_empty() && !h.contains(char::is_whitespace) => Ok(()),
        _ => Err(ConfigError::invalid(
            at,
            "must be an http:// or https:// URL with a host",
        )),
    }
}
