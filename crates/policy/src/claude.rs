//! Claude Code permission strings (`Read(./src/**)`, `Bash(npm run test:*)`, `WebFetch(domain:x)`, `mcp__s__t`)
//! translated into structured [`RuleSpec`]s, so both spellings share one compiler and one meaning.
//!
//! Meanings chosen here (and pinned by tests against hand-written structured twins):
//! - `Read(p)` is `fs.read` only. `git.read` is not included: history can reveal content the path rules never saw.
//! - `Edit(p)` / `Write(p)` / `MultiEdit(p)` / `NotebookEdit(p)` are `fs.write` + `fs.delete`: in Claude Code the
//!   edit permission governs every file mutation, and a deny on edits must also stop deletes and moves.
//! - Paths: `//abs` is absolute, `~/x` is under home, `./x` and `/x` are under the workspace (Claude Code reads
//!   `/x` relative to the settings' project), `**/x` is anywhere, `a/b` is `${workspace}/a/b`, and a bare name
//!   without `/` (`*.env`) matches at any depth under the workspace, as in gitignore. As in gitignore too, a path
//!   names the file or directory AND everything beneath it (`/**` is appended unless the pattern ends in `**`).
//! - `Bash(cmd)` is exact argv; `Bash(cmd:*)` and `Bash(cmd *)` are token prefixes (`npm run test:*` admits
//!   `npm run test --watch`, never `npm run test-evil` nor `npm run test:unit`). `*` anywhere else is refused, and
//!   so are strings with shell operators or quotes, because such patterns could not mean what they look like.
//! - `WebFetch(domain:h)` is `net.request` to `h`; for allow/ask it is limited to GET/HEAD (what a fetch does),
//!   for deny every method is denied.
//! - `mcp__server__tool` (globs allowed) matches the tool for every operation; `mcp__server` means the whole server.

use crate::error::{Error, Result};
use crate::operation::{Effect, Operation};
use crate::rule::RuleSpec;
use crate::shell;

/// Translates one permission string into its structured twin with the given id.
pub fn translate_permission(text: &str, effect: Effect, id: &str) -> Result<RuleSpec> {
    let mut spec = RuleSpec::new(id, effect);
    spec.description = Some(text.to_owned());
    let bad = |m: &str| Error::rule(id, format!("`{text}`: {m}"));
    let text = text.trim();
    if let Some(rest) = text.strip_prefix("mcp__") {
        if rest.is_empty() || rest.contains(['(', ')', ' ']) {
            return Err(bad("expected mcp__server or mcp__server__tool"));
        }
        spec.tools = vec![if rest.contains("__") {
            text.to_owned()
        } else {
            format!("{text}__*")
        }];
        return Ok(spec);
    }
    let (name, arg) = match text.split_once('(') {
        Some((name, rest)) => {
            let inner = rest
                .strip_suffix(')')
                .ok_or_else(|| bad("missing closing `)`"))?;
            (name, Some(inner))
        }
        None => (text, None),
    };
    match name {
        "Read" => {
            spec.operations = vec![Operation::FsRead];
            spec.paths = path_patterns(arg).map_err(|m| bad(&m))?;
        }
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
            spec.operations = vec![Operation::FsWrite, Operation::FsDelete];
            spec.paths = path_patterns(arg).map_err(|m| bad(&m))?;
        }
        "Bash" => {
            spec.operations = vec![Operation::ShellExec];
            if let Some(arg) = arg {
                let (tokens, prefix) = command_pattern(arg).map_err(|m| bad(&m))?;
                if prefix {
                    if !tokens.is_empty() {
                        spec.command_prefixes = vec![tokens];
                    }
                } else {
                    spec.commands = vec![tokens];
                }
            }
        }
        "WebFetch" => {
            spec.operations = vec![Operation::NetRequest];
            if let Some(arg) = arg {
                let host = arg
                    .strip_prefix("domain:")
                    .ok_or_else(|| bad("expected `domain:HOST`"))?;
                if host.is_empty() {
                    return Err(bad("empty domain"));
                }
                spec.hosts = vec![host.to_owned()];
                if effect != Effect::Deny {
                    spec.methods = vec!["GET".to_owned(), "HEAD".to_owned()];
                }
            }
        }
        other => return Err(bad(&format!("unsupported permission kind `{other}`"))),
    }
    Ok(spec)
}

fn path_patterns(arg: Option<&str>) -> std::result::Result<Vec<String>, String> {
    let Some(arg) = arg else {
        return Ok(Vec::new());
    };
    if arg.is_empty() {
        return Err("empty path".to_owned());
    }
    let pattern = if let Some(abs) = arg.strip_prefix("//") {
        format!("/{abs}")
    } else if arg == "~" || arg.starts_with("~/") || arg.starts_with("**") {
        arg.to_owned()
    } else if let Some(rel) = arg.strip_prefix("./") {
        format!("${{workspace}}/{rel}")
    } else if arg == "." {
        "${workspace}".to_owned()
    } else if let Some(rel) = arg.strip_prefix('/') {
        format!("${{workspace}}/{rel}")
    } else if arg.contains('/') {
        format!("${{workspace}}/{arg}")
    } else {
        format!("${{workspace}}/**/{arg}")
    };
    // gitignore semantics: a pattern naming a directory covers everything beneath it. `/**` also matches the path
    // itself, so one pattern covers a file, a directory and its contents; for a deny this is what keeps
    // `Read(secrets)` from leaving `secrets/key` readable.
    let pattern = pattern.trim_end_matches('/');
    if pattern == "**" || pattern.ends_with("/**") {
        Ok(vec![pattern.to_owned()])
    } else {
        Ok(vec![format!("{pattern}/**")])
    }
}

fn command_pattern(arg: &str) -> std::result::Result<(Vec<String>, bool), String> {
    let arg = arg.trim();
    if arg == "*" {
        return Ok((Vec::new(), true));
    }
    let (body, prefix) = match arg.strip_suffix(":*").or_else(|| arg.strip_suffix(" *")) {
        Some(body) => (body, true),
        None => (arg, false),
    };
    if body.contains('*') {
        return Err("`*` is only allowed as a trailing `:*` or ` *`".to_owned());
    }
    let tokens = shell::plain_argv(body).ok_or_else(|| {
        "command contains shell syntax (operators, quotes, expansions); name argv instead"
            .to_owned()
    })?;
    Ok((tokens, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> RuleSpec {
        translate_permission(s, Effect::Allow, "allow[0]").unwrap()
    }

    #[test]
    fn paths_follow_the_documented_anchors() {
        assert_eq!(t("Read(./src/**)").paths, vec!["${workspace}/src/**"]);
        assert_eq!(t("Read(//etc/hosts)").paths, vec!["/etc/hosts/**"]);
        assert_eq!(t("Read(~/.ssh/**)").paths, vec!["~/.ssh/**"]);
        assert_eq!(t("Read(**/.env)").paths, vec!["**/.env/**"]);
        assert_eq!(t("Read(*.env)").paths, vec!["${workspace}/**/*.env/**"]);
        assert_eq!(t("Read(/docs/**)").paths, vec!["${workspace}/docs/**"]);
        assert_eq!(t("Read(./secrets/)").paths, vec!["${workspace}/secrets/**"]);
        assert_eq!(t("Read(.)").paths, vec!["${workspace}/**"]);
        assert_eq!(t("Read(//)").paths, vec!["/**"]);
        assert_eq!(t("Read(**)").paths, vec!["**"]);
        assert!(t("Read").paths.is_empty());
    }

    #[test]
    fn bash_prefixes_are_token_prefixes() {
        assert_eq!(
            t("Bash(npm run test:*)").command_prefixes,
            vec![vec!["npm", "run", "test"]]
        );
        assert_eq!(t("Bash(npm *)").command_prefixes, vec![vec!["npm"]]);
        assert_eq!(t("Bash(npm test)").commands, vec![vec!["npm", "test"]]);
        for bad in [
            "Bash(npm t*st)",
            "Bash(a && b)",
            "Bash(echo \"x\")",
            "Frob(x)",
            "Read(x",
            "WebFetch(example.com)",
        ] {
            assert!(
                translate_permission(bad, Effect::Allow, "allow[0]").is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn webfetch_methods_depend_on_effect() {
        assert_eq!(
            t("WebFetch(domain:example.com)").methods,
            vec!["GET", "HEAD"]
        );
        let deny =
            translate_permission("WebFetch(domain:example.com)", Effect::Deny, "deny[0]").unwrap();
        assert!(deny.methods.is_empty());
    }

    #[test]
    fn mcp_names_become_tool_globs() {
        assert_eq!(t("mcp__files__read_*").tools, vec!["mcp__files__read_*"]);
        assert_eq!(t("mcp__files").tools, vec!["mcp__files__*"]);
    }
}
