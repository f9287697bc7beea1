//! The crate's one error type. Loading a policy is the only fallible step; deciding never fails (it denies).
//!
//! Errors name the offending key, rule or example so `policy check` can point at the line a human must fix.

/// Everything that can go wrong while loading or checking a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A value did not have the expected shape (unknown key, wrong type, bad enum value).
    #[error("{key}: {message}")]
    Parse { key: String, message: String },
    /// A rule is well-formed JSON but cannot be compiled (bad glob, bad host, bad variable...).
    #[error("rule `{rule}`: {message}")]
    Rule { rule: String, message: String },
    /// A rule's `match` / `not_match` example disagrees with the rule.
    #[error("rule `{rule}`: {list} example #{index} {message}")]
    Example {
        rule: String,
        list: &'static str,
        index: usize,
        message: String,
    },
    /// Two rules share an id, so decisions could not say which one fired.
    #[error("duplicate rule id `{0}`")]
    DuplicateId(String),
    /// A pattern uses `${name}` with a name the context does not provide.
    #[error("rule `{rule}`: unknown variable `${{{name}}}`")]
    UnknownVariable { rule: String, name: String },
    /// Net-only fields on a rule that cannot match network requests.
    #[error("rule `{rule}`: {message}")]
    NetFields { rule: String, message: String },
    /// A profile name that the policy does not define.
    #[error("unknown profile `{0}`")]
    UnknownProfile(String),
}

impl Error {
    /// Stable code for `policy check` output and for the lint report.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Parse { .. } => "PARSE_ERROR",
            Error::Rule { .. } => "INVALID_RULE",
            Error::Example { .. } => "EXAMPLE_FAILED",
            Error::DuplicateId(_) => "DUPLICATE_ID",
            Error::UnknownVariable { .. } => "UNKNOWN_VARIABLE",
            Error::NetFields { .. } => "INVALID_NET_FIELDS",
            Error::UnknownProfile(_) => "UNKNOWN_PROFILE",
        }
    }

    /// The rule the error is about, when there is one.
    pub fn rule_id(&self) -> Option<&str> {
        match self {
            Error::Rule { rule, .. }
            | Error::Example { rule, .. }
            | Error::UnknownVariable { rule, .. }
            | Error::NetFields { rule, .. } => Some(rule),
            Error::DuplicateId(id) => Some(id),
            Error::Parse { .. } | Error::UnknownProfile(_) => None,
        }
    }

    pub(crate) fn parse(key: impl Into<String>, message: impl ToString) -> Self {
        Error::Parse {
            key: key.into(),
            message: message.to_string(),
        }
    }

    pub(crate) fn rule(rule: impl Into<String>, message: impl ToString) -> Self {
        Error::Rule {
            rule: rule.into(),
            message: message.to_string(),
        }
    }
}

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
