//! The conservative starter policy written by `policy init` (TOML). Text only; the CLI decides where it goes and
//! refuses to overwrite an existing file.
//!
//! Its shape is the `[policy]` table and `[permissions]` table of the config file; a unit test loads it.

/// Default ask; reads inside the workspace allowed; secrets, home credentials and destructive commands denied;
/// tests and git inspection allowed; everything unknown denied by the engine regardless.
pub const STARTER_POLICY: &str = r#"# toolgate policy. Decisions: any matching deny wins; else any matching ask; else any
# matching allow; else `default`. Unknown or ambiguous calls are always denied.
[policy]
version = 1
default = "ask"
# Paths compare case-sensitively. Use "insensitive" on case-insensitive filesystems.
path_case = "sensitive"
# What a deny on files means for calls that only list or search names (list_directory, directory_tree,
# search_files, git_status): "hidden" asks wherever a denied file's name may show; "shown" lets the allow rules
# decide them (content stays denied, and listing inside a denied tree is denied either way).
names = "hidden"

[[policy.rules]]
id = "deny-dotenv"
effect = "deny"
operations = ["fs.read", "fs.write", "fs.delete"]
paths = ["**/.env", "**/.env.*"]
match = [{ operation = "fs.read", paths = ["${workspace}/.env"] }]
not_match = [{ operation = "fs.read", paths = ["${workspace}/env.rs"] }]

# Writing git's own files (hooks, config such as core.fsmonitor) runs code the next time git runs.
[[policy.rules]]
id = "deny-git-internals-write"
effect = "deny"
operations = ["fs.write", "fs.delete"]
paths = ["**/.git/**"]
match = [{ call = { server = "files", tool = "write_file", kind = "filesystem", arguments = { path = "${workspace}/.git/hooks/pre-commit", content = "" } } }]

[[policy.rules]]
id = "deny-credentials"
effect = "deny"
paths = ["~/.ssh/**", "~/.aws/**", "~/.gnupg/**", "~/.config/gh/**", "**/*.pem", "**/id_rsa*"]

[[policy.rules]]
id = "deny-destructive-commands"
effect = "deny"
operations = ["shell.exec"]
command_prefixes = [["sudo"], ["rm", "-rf"], ["rm", "-fr"], ["dd"], ["mkfs"], ["chmod", "-R"], ["curl"], ["wget"]]
match = [{ operation = "shell.exec", command = ["/usr/bin/sudo", "ls"] }]

[[policy.rules]]
id = "allow-workspace-read"
effect = "allow"
operations = ["fs.read"]
paths = ["${workspace}/**"]
match = [{ operation = "fs.read", paths = ["${workspace}/src/main.rs"] }]
not_match = [{ operation = "fs.read", paths = ["${workspace}/../etc/passwd"] }]

[[policy.rules]]
id = "allow-git-inspection"
effect = "allow"
operations = ["git.read"]
paths = ["${workspace}/**"]

[[policy.rules]]
id = "ask-git-remote"
effect = "ask"
operations = ["git.remote"]

[permissions]
allow = ["Bash(cargo test)", "Bash(npm test)"]
ask = ["Edit(./**)"]
deny = ["Read(~/.netrc)"]
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, Policy, PolicySources};

    #[test]
    fn starter_policy_loads_and_is_lint_clean() {
        let doc: toml::Value = toml::from_str(STARTER_POLICY).unwrap();
        let json = serde_json::to_value(doc).unwrap();
        let ctx = Context {
            workspace: "/ws".into(),
            home: Some("/home/u".into()),
        };
        let sources = PolicySources {
            policy: json.get("policy"),
            permissions: json.get("permissions"),
            profiles: None,
        };
        Policy::load(sources, &ctx).unwrap();
        assert_eq!(crate::check_policy(sources, &ctx), vec![]);
    }
}
