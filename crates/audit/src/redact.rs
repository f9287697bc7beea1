//! Redaction of secrets from any text that must be logged.
//!
//! Recognises cloud and SaaS credentials by shape (AWS key ids, GitHub, GitLab, Anthropic,
//! OpenAI, GCP, Slack, Stripe, npm and Hugging Face tokens, JWTs, PEM blocks), credentials
//! by context (`Bearer …`, `Authorization:` and cookie headers, `password=…`-style
//! assignments, sensitive options followed by their value on a command line (`--token X`, `-u user:pw`, and in
//! JSON argv arrays), sensitive JSON keys, URL passwords and query values), and whole maps of env
//! vars or headers. Rules run to a fixpoint, so `redact(redact(x)) == redact(x)`. It does
//! not try to find secrets with no recognisable shape or context; callers must not log
//! such values at all.

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
const SENSITIVE_KEY: &str = r"[A-Za-z0-9_.-]*(?i-u:secret|password|passwd|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key|account[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|credential|session[_-]?id|cookie)[A-Za-z0-9_.-]*";

/// One rule: a pattern, its replacement template (regex `$n` syntax), and a cheap
/// necessary condition for a match. The regex engine is built without its literal
/// optimisations, so skipping rules whose anchor text is absent keeps redaction of
/// ordinary text fast; a hint must never be false when the pattern could match.
struct Rule {
    re: Regex,
    with: &'static str,
    hint: fn(&Hay<'_>) -> bool,
}

/// The text being redacted, as seen by rule hints.
struct Hay<'a> {
    text: &'a str,
}

impl Hay<'_> {
    fn has(&self, needle: &str) -> bool {
        self.text.contains(needle)
    }

    fn has_any(&self, needles: &[&str]) -> bool {
        needles.iter().any(|n| self.text.contains(n))
    }

    /// ASCII case-insensitive search; `needles` must be lower case.
    fn lower_has_any(&self, needles: &[&str]) -> bool {
        let hay = self.text.as_bytes();
        needles.iter().any(|n| {
            hay.windows(n.len())
                .any(|w| w.eq_ignore_ascii_case(n.as_bytes()))
        })
    }
}

/// Lower-case fragments one of which every sensitive key name contains.
const SENSITIVE_HINTS: &[&str] = &[
    "secret",
    "passw",
    "pwd",
    "token",
    "key",
    "credential",
    "session",
    "cookie",
];

type Spec = (String, &'static str, fn(&Hay<'_>) -> bool);

/// The rules, compiled once per process (`rules`, or ahead of the first record by `prepare`).
static RULES: OnceLock<Vec<Rule>> = OnceLock::new();

fn rules() -> &'static [Rule] {
    RULES.get_or_init(|| {
        let specs: Vec<Spec> = vec![
            // PEM blocks, including a truncated one that never reaches its END line.
            (
                r"-----BEGIN [A-Z0-9 ]{1,64}-----[\s\S]*?(?:-----END [A-Z0-9 ]{1,64}-----|\z)".into(),
                "[REDACTED:pem]",
                |h| h.has("-----BEGIN "),
            ),
            // JSON members with a sensitive key: `"client_secret": "…"`.
            (
                format!(r#""({SENSITIVE_KEY})"\s*:\s*"(?:[^"\\]|\\.)*""#),
                r#""$1": "[REDACTED]""#,
                |h| h.has("\"") && h.lower_has_any(SENSITIVE_HINTS),
            ),
            // Header lines whose whole value is a credential.
            (
                r"(?m)\b((?i-u:proxy-authorization|authorization|x-api-key|api-key|set-cookie|cookie))(\s*[:=]\s*)[^\r\n]+".into(),
                "$1$2[REDACTED]",
                |h| h.lower_has_any(&["authorization", "api-key", "cookie"]),
            ),
            // Assignments: `password=…`, `AWS_SECRET_ACCESS_KEY: …`, `--token=…`.
            (
                format!(
                    r#"\b({SENSITIVE_KEY})(\s*[=:]\s*)(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s"',;&]+)"#
                ),
                "$1$2[REDACTED]",
                |h| h.has_any(&["=", ":"]) && h.lower_has_any(SENSITIVE_HINTS),
            ),
            // A sensitive option whose value is the next word of a command line: `--token ghp…`,
            // `--password hunter2`, `-api-key k`.
            (
                format!(
                    r#"(^|\s)(--?{SENSITIVE_KEY})(\s+)(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s"'-][^\s"']*)"#
                ),
                "$1$2$3[REDACTED]",
                |h| h.has("-") && h.lower_has_any(SENSITIVE_HINTS),
            ),
            // A user and password given together as one option: `curl -u me:secret`, `--user=me:secret`.
            (
                r"(^|\s)(-u|--user|--proxy-user)(\s+|=)([^\s:]+):[^\s]+".into(),
                "$1$2$3$4:[REDACTED]",
                |h| h.has("-") && h.has(":") && h.lower_has_any(&["-u", "--user", "--proxy-user"]),
            ),
            (
                r"\b((?i-u:bearer))\s+[A-Za-z0-9._~+/=-]{8,}".into(),
                "$1 [REDACTED]",
                |h| h.lower_has_any(&["bearer"]),
            ),
            (
                r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b".into(),
                "[REDACTED:aws-key-id]",
                |h| {
                    h.has_any(&[
                        "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA",
                        "ANVA", "APKA",
                    ])
                },
            ),
            (
                r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})".into(),
                "[REDACTED:github-token]",
                |h| h.has_any(&["gh", "github_pat_"]),
            ),
            (
                r"\bsk-ant-[A-Za-z0-9_-]{8,}".into(),
                "[REDACTED:anthropic-key]",
                |h| h.has("sk-ant-"),
            ),
            (
                r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}".into(),
                "[REDACTED:openai-key]",
                |h| h.has("sk-"),
            ),
            (
                r"\bAIza[0-9A-Za-z_-]{30,}".into(),
                "[REDACTED:gcp-api-key]",
                |h| h.has("AIza"),
            ),
            (
                r"\b(?:xox[abprse]|xapp)-[A-Za-z0-9-]{8,}".into(),
                "[REDACTED:slack-token]",
                |h| h.has_any(&["xox", "xapp-"]),
            ),
            (
                r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}".into(),
                "[REDACTED:stripe-key]",
                |h| h.has_any(&["sk_", "rk_"]),
            ),
            (
                r"\bglpat-[A-Za-z0-9_-]{20,}".into(),
                "[REDACTED:gitlab-token]",
                |h| h.has("glpat-"),
            ),
            (
                r"\bnpm_[A-Za-z0-9]{36,}".into(),
                "[REDACTED:npm-token]",
                |h| h.has("npm_"),
            ),
            (
                r"\bhf_[A-Za-z0-9]{30,}".into(),
                "[REDACTED:huggingface-token]",
                |h| h.has("hf_"),
            ),
            (
                r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*".into(),
                "[REDACTED:jwt]",
                |h| h.has("eyJ"),
            ),
            // URL userinfo password: `scheme://user:secret@host`.
            (
                r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\[\]]+):[^/\s@]+@".into(),
                "$1:[REDACTED]@",
                |h| h.has("://") && h.has("@"),
            ),
            // URL query values; the keys stay, so the log still says what was passed.
            (
                r#"([?&][A-Za-z0-9_.~%+\[\]-]+=)[^&#\s"'<>]+"#.into(),
                "$1[REDACTED]",
                |h| h.has("=") && h.has_any(&["?", "&"]),
            ),
        ];
        specs
            .into_iter()
            .filter_map(|(pattern, with, hint)| {
                Regex::new(&pattern)
                    .ok()
                    .map(|re| Rule { re, with, hint })
            })
            .collect()
    })
}

/// Number of compiled rules; a test checks none failed to compile.
#[cfg(test)]
pub(crate) fn rule_count() -> usize {
    rules().len()
}

/// Builds the rules now instead of at the first text redacted (a dozen regexes, several milliseconds): a gateway
/// calls this on a thread of its own as it starts, so its first call does not wait for them. Redacting before
/// this returns waits for the same build; nothing is built twice.
pub fn prepare() {
    let _ = rules();
    let _ = is_sensitive_key("");
}

/// Whether the rules are built (by `prepare` or by a first redaction).
pub fn prepared() -> bool {
    RULES.get().is_some()
}

/// Returns `text` with every recognised secret replaced.
pub fn redact(text: &str) -> String {
    let mut current = text.to_owned();
    for _ in 0..MAX_PASSES {
        let mut changed = false;
        for rule in rules() {
            if !(rule.hint)(&Hay { text: &current }) {
                continue;
            }
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

/// Whether one word of a command line is an option whose value is secret and may be the next word
/// (`--token`, `--password`, `-u`).
fn is_secret_option(word: &str) -> bool {
    let Some(name) = word.strip_prefix('-') else {
        return false;
    };
    let name = name.strip_prefix('-').unwrap_or(name);
    !name.is_empty()
        && !name.contains('=')
        && (is_sensitive_key(name) || matches!(word, "-u" | "--user" | "--proxy-user"))
}

/// An array's items, read as argv where they are words: the word after a secret option is redacted whole,
/// since it has no shape of its own to be recognised by (`["--token", "abc"]`).
fn redact_items(items: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(items.len());
    let mut secret_next = false;
    for item in items {
        let redacted = match item {
            Value::String(s) if secret_next && !s.starts_with('-') => {
                Value::String(REDACTED.to_owned())
            }
            other => redact_json(other),
        };
        secret_next = item.as_str().is_some_and(is_secret_option);
        out.push(redacted);
    }
    out
}

/// Redacts a JSON value: every string goes through `redact`, values under sensitive keys
/// become `[REDACTED]`, and `env`/`headers` objects are redacted wholesale.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => Value::Array(redact_items(items)),
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
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    /// `redact` without the hints, to check that hints only skip work.
    fn redact_unhinted(text: &str) -> String {
        let mut current = text.to_owned();
        for _ in 0..MAX_PASSES {
            let before = current.clone();
            for rule in rules() {
                current = rule.re.replace_all(&current, rule.with).into_owned();
            }
            if current == before {
                break;
            }
        }
        current
    }

    proptest! {
        #[test]
        fn hints_never_skip_a_match(parts in prop::collection::vec(prop_oneof![
            Just("ghp_"), Just("github_pat_"), Just("sk-ant-"), Just("sk-proj-"), Just("AKIA"),
            Just("AIza"), Just("xoxb-"), Just("xapp-"), Just("eyJ"), Just("."), Just("BeArEr "),
            Just("AUTHORIZATION: "), Just("Cookie="), Just("PassWord="), Just("\"Api_Key\": \""),
            Just("-----BEGIN X-----"), Just("https://u:"), Just("@"), Just("?q="), Just("&"),
            Just("sk_live_"), Just("glpat-"), Just("npm_"), Just("hf_"), Just("AccountKey="),
            Just("0123456789abcdefghijKLMNOPQRSTUV"), Just(" "), Just("\n"),
        ], 0..10)) {
            let s = parts.concat();
            prop_assert_eq!(redact(&s), redact_unhinted(&s));
        }
    }

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rule_count(), 20);
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

    #[test]
    fn secrets_given_as_the_next_word_of_a_command_line_are_redacted() {
        for (line, want) in [
            (
                "gh --token ghpabc123 repo list",
                "gh --token [REDACTED] repo list",
            ),
            (
                "mysql --password hunter2 -h db",
                "mysql --password [REDACTED] -h db",
            ),
            ("tool -api-key 'k e y' run", "tool -api-key [REDACTED] run"),
            (
                "curl -u me:hunter2 https://h/",
                "curl -u me:[REDACTED] https://h/",
            ),
            (
                "curl --user=me:hunter2 https://h/",
                "curl --user=me:[REDACTED] https://h/",
            ),
            (
                "deploy --token-file /run/t --verbose",
                "deploy --token-file [REDACTED] --verbose",
            ),
            ("git log --oneline -n 3", "git log --oneline -n 3"),
            ("ls --password-less-mode", "ls --password-less-mode"),
        ] {
            assert_eq!(redact(line), want, "{line}");
            assert_eq!(redact(&redact(line)), want, "fixpoint: {line}");
        }
    }

    #[test]
    fn argv_arrays_lose_the_value_after_a_secret_option() {
        let v = json!({"program": "curl", "args": [
            "--token", "abc", "-u", "me:pw", "--password", "--verbose",
            "-H", "Authorization: Bearer abcdefghijkl", "https://u:pw@h/x?key=v", "plain"
        ]});
        assert_eq!(
            redact_json(&v)["args"],
            json!([
                "--token",
                REDACTED,
                "-u",
                REDACTED,
                "--password",
                "--verbose",
                "-H",
                "Authorization: [REDACTED]",
                "https://u:[REDACTED]@h/x?key=[REDACTED]",
                "plain"
            ])
        );
    }
}
