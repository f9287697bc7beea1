//! Redaction of secrets from any text that must be logged.
//!
//! Recognises cloud and SaaS credentials by shape (AWS key ids, GitHub, Anthropic, OpenAI,
//! GCP, Slack tokens, JWTs, PEM blocks), credentials by context (`Bearer …`,
//! `Authorization:` and cookie headers, `password=…`-style assignments, sensitive JSON keys,
//! URL passwords and query values), and whole maps of env vars or headers. Rules run to a
//! fixpoint, so `redact(redact(x)) == redact(x)`. It does not try to find secrets with no
//! recognisable shape or context; callers must not log such values at all.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// Passes after which redaction stops even if a rule still fires; every rule maps its own
/// output to itself, so in practice the second pass changes nothing.
const MAX_PASSES: usize = 4;

/// Key names whose values are secret wherever they appear (ASCII case-insensitive).
const SENSITIVE_KEY: &str = r"[A-Za-z0-9_.-]*(?i-u:secret|password|passwd|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|session[_-]?id|cookie)[A-Za-z0-9_.-]*";

/// One rule: a pattern and the replacement template (regex `$n` syntax).
struct Rule {
    re: Regex,
    with: &'static str,
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let specs: Vec<(String, &'static str)> = vec![
            // PEM blocks, including a truncated one that never reaches its END line.
            (
                r"-----BEGIN [A-Z0-9 ]{1,64}-----[\s\S]*?(?:-----END [A-Z0-9 ]{1,64}-----|\z)".into(),
                "[REDACTED:pem]",
            ),
            // JSON members with a sensitive key: `"client_secret": "…"`.
            (
                format!(r#""({SENSITIVE_KEY})"\s*:\s*"(?:[^"\\]|\\.)*""#),
                r#""$1": "[REDACTED]""#,
            ),
            // Header lines whose whole value is a credential.
            (
                r"(?m)\b((?i-u:proxy-authorization|authorization|x-api-key|api-key|set-cookie|cookie))(\s*[:=]\s*)[^\r\n]+".into(),
                "$1$2[REDACTED]",
            ),
            // Assignments: `password=…`, `AWS_SECRET_ACCESS_KEY: …`, `--token=…`.
            (
                format!(
                    r#"\b({SENSITIVE_KEY})(\s*[=:]\s*)(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s"',;&]+)"#
                ),
                "$1$2[REDACTED]",
            ),
            (r"\b((?i-u:bearer))\s+[A-Za-z0-9._~+/=-]{8,}".into(), "$1 [REDACTED]"),
            (
                r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b".into(),
                "[REDACTED:aws-key-id]",
            ),
            (
                r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})".into(),
                "[REDACTED:github-token]",
            ),
            (r"\bsk-ant-[A-Za-z0-9_-]{8,}".into(), "[REDACTED:anthropic-key]"),
            (
                r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}".into(),
                "[REDACTED:openai-key]",
            ),
            (r"\bAIza[0-9A-Za-z_-]{30,}".into(), "[REDACTED:gcp-api-key]"),
            (
                r"\b(?:xox[abprse]|xapp)-[A-Za-z0-9-]{8,}".into(),
                "[REDACTED:slack-token]",
            ),
            (
                r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*".into(),
                "[REDACTED:jwt]",
            ),
            // URL userinfo password: `scheme://user:secret@host`.
            (
                r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\[\]]+):[^/\s@]+@".into(),
                "$1:[REDACTED]@",
            ),
            // URL query values; the keys stay, so the log still says what was passed.
            (
                r#"([?&][A-Za-z0-9_.~%+\[\]-]+=)[^&#\s"'<>]+"#.into(),
                "$1[REDACTED]",
            ),
        ];
        specs
            .into_iter()
            .filter_map(|(pattern, with)| Regex::new(&pattern).ok().map(|re| Rule { re, with }))
            .collect()
    })
}

/// Number of compiled rules; a test checks none failed to compile.
#[cfg(test)]
pub(crate) fn rule_count() -> usize {
    rules().len()
}

/// Returns `text` with every recognised secret replaced.
pub fn redact(text: &str) -> String {
    let mut current = text.to_owned();
    for _ in 0..MAX_PASSES {
        let mut changed = false;
        for rule in rules() {
            let next = rule.re.replace_all(&current, rule.with);
            if next != current {
                current = next.into_owned();
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    current
}

/// Redacts a whole map of env vars or headers: keys are kept (themselves passed through
/// `redact`), every value becomes `[REDACTED]` whatever it looks like.
pub fn redact_map<K, V, I>(entries: I) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
{
    entries
        .into_iter()
        .map(|(k, _)| (redact(k.as_ref()), REDACTED.to_owned()))
        .collect()
}

/// Keys whose object value is a map of env vars or headers, redacted wholesale.
fn is_map_key(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "env" | "environment" | "headers" | "header" | "cookies"
    )
}

fn is_sensitive_key(key: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(&format!("^{SENSITIVE_KEY}$")).ok())
        .as_ref()
        // Without the pattern, treat every key as sensitive: fail towards redaction.
        .is_none_or(|re| re.is_match(key))
        || key.eq_ignore_ascii_case("authorization")
}

/// Redacts a JSON value: every string goes through `redact`, values under sensitive keys
/// become `[REDACTED]`, and `env`/`headers` objects are redacted wholesale.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_sensitive_key(k) {
                        Value::String(REDACTED.to_owned())
                    } else if is_map_key(k) {
                        match v {
                            Value::Object(inner) => Value::Object(
                                inner
                                    .keys()
                                    .map(|ik| (redact(ik), Value::String(REDACTED.to_owned())))
                                    .collect(),
                            ),
                            _ => Value::String(REDACTED.to_owned()),
                        }
                    } else {
                        redact_json(v)
                    };
                    (redact(k), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rule_count(), 14);
    }

    #[test]
    fn query_keys_stay_values_go() {
        assert_eq!(
            redact("GET https://api.example.com/v1?user=alice&key=abc123#frag"),
            "GET https://api.example.com/v1?user=[REDACTED]&key=[REDACTED]#frag"
        );
    }

    #[test]
    fn url_password_goes_user_stays() {
        assert_eq!(
            redact("postgres://app:hunter2@db:5432/x"),
            "postgres://app:[REDACTED]@db:5432/x"
        );
    }

    #[test]
    fn token_in_url_userinfo_is_redacted_once() {
        assert_eq!(
            redact("https://ghp_0123456789abcdefghijABCDEFGHIJ@github.com/o/r"),
            "https://[REDACTED:github-token]@github.com/o/r"
        );
    }

    #[test]
    fn bearer_and_headers() {
        assert_eq!(
            redact("curl -H 'X-Trace: 1' -H Bearer abcdefgh12345678"),
            "curl -H 'X-Trace: 1' -H Bearer [REDACTED]"
        );
        assert_eq!(
            redact("Authorization: Basic dXNlcjpwYXNz\nnext"),
            "Authorization: [REDACTED]\nnext"
        );
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let s = "Read src/main.rs (42 lines); task-manager ok; skipped 3 files";
        assert_eq!(redact(s), s);
    }

    #[test]
    fn maps_are_redacted_wholesale() {
        let env = [("PATH", "/usr/bin"), ("HOME", "/home/a")];
        let got = redact_map(env);
        assert_eq!(got.get("PATH").map(String::as_str), Some(REDACTED));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn json_env_headers_and_sensitive_keys() {
        let v = json!({
            "command": "deploy",
            "env": {"DEBUG": "1", "DB_URL": "postgres://u:p@h/db"},
            "headers": {"X-Request-Id": "abc"},
            "options": {"apiKey": "zzz", "retries": 3, "note": "ghp_0123456789abcdefghijABCDEFGHIJ"}
        });
        assert_eq!(
            redact_json(&v),
            json!({
                "command": "deploy",
                "env": {"DEBUG": REDACTED, "DB_URL": REDACTED},
                "headers": {"X-Request-Id": REDACTED},
                "options": {"apiKey": REDACTED, "retries": 3, "note": "[REDACTED:github-token]"}
            })
        );
    }
}
