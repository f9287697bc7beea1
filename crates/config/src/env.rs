//! The environment an stdio upstream receives: its configured `env` plus a short allowlist from toolgate's own
//! environment. Everything else — API keys, tokens, cloud credentials in the user's shell — stays out.

use std::collections::BTreeMap;

/// Variables passed through from toolgate's environment when set. Enough for interpreters and package runners
/// (`npx`, `uvx`) to find themselves, their caches and the locale; nothing that usually holds a secret.
pub const UPSTREAM_ENV_ALLOWLIST: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];

/// Builds an upstream's environment. Configured values win over passed-through ones.
pub fn upstream_env(
    configured: &BTreeMap<String, String>,
    parent: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = UPSTREAM_ENV_ALLOWLIST
        .iter()
        .filter_map(|k| parent(k).map(|v| ((*k).to_owned(), v)))
        .collect();
    env.extend(configured.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_parent_env_do_not_reach_upstreams() {
        let parent = |k: &str| match k {
            "PATH" => Some("/bin".to_owned()),
            "AWS_SECRET_ACCESS_KEY" | "GITHUB_TOKEN" => Some("s3cr3t".to_owned()),
            _ => None,
        };
        let configured = BTreeMap::from([("API_URL".to_owned(), "x".to_owned())]);
        let env = upstream_env(&configured, parent);
        assert_eq!(
            env,
            BTreeMap::from([
                ("API_URL".to_owned(), "x".to_owned()),
                ("PATH".to_owned(), "/bin".to_owned())
            ])
        );
    }
}
