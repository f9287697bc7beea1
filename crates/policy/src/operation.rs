//! The closed set of operations a call is normalised into, and the effects a rule can have.
//!
//! Names are part of the policy file format and of audit records, so they never change spelling.

use serde::{Deserialize, Serialize};

/// What a tool call does, as far as the firewall is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Operation {
    #[serde(rename = "fs.read")]
    FsRead,
    #[serde(rename = "fs.write")]
    FsWrite,
    #[serde(rename = "fs.delete")]
    FsDelete,
    #[serde(rename = "shell.exec")]
    ShellExec,
    #[serde(rename = "git.read")]
    GitRead,
    #[serde(rename = "git.write")]
    GitWrite,
    #[serde(rename = "git.remote")]
    GitRemote,
    #[serde(rename = "net.request")]
    NetRequest,
    #[serde(rename = "mcp.call")]
    McpCall,
    /// An upstream's `sampling/createMessage` toward the client whose call caused it.
    #[serde(rename = "mcp.sample")]
    McpSample,
    /// An upstream's `elicitation/create` toward the client whose call caused it.
    #[serde(rename = "mcp.elicit")]
    McpElicit,
    /// An upstream's `roots/list` toward the client whose call caused it.
    #[serde(rename = "mcp.roots")]
    McpRoots,
    #[serde(rename = "unknown")]
    Unknown,
}

impl Operation {
    /// Every operation, in file-format order.
    pub const ALL: [Operation; 13] = [
        Operation::FsRead,
        Operation::FsWrite,
        Operation::FsDelete,
        Operation::ShellExec,
        Operation::GitRead,
        Operation::GitWrite,
        Operation::GitRemote,
        Operation::NetRequest,
        Operation::McpCall,
        Operation::McpSample,
        Operation::McpElicit,
        Operation::McpRoots,
        Operation::Unknown,
    ];

    /// The spelling used in policy files and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::FsRead => "fs.read",
            Operation::FsWrite => "fs.write",
            Operation::FsDelete => "fs.delete",
            Operation::ShellExec => "shell.exec",
            Operation::GitRead => "git.read",
            Operation::GitWrite => "git.write",
            Operation::GitRemote => "git.remote",
            Operation::NetRequest => "net.request",
            Operation::McpCall => "mcp.call",
            Operation::McpSample => "mcp.sample",
            Operation::McpElicit => "mcp.elicit",
            Operation::McpRoots => "mcp.roots",
            Operation::Unknown => "unknown",
        }
    }

    /// Parses the file-format spelling.
    pub fn parse(s: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.as_str() == s)
    }

    /// One bit per operation so a rule's operation list is a single AND at decision time.
    pub(crate) fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a rule or a decision says should happen to a call.
///
/// Ordered from most to least permissive so `max` is "the stricter of".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How rules that all match one call are ranked; a property of the policy file, never of the caller.
///
/// In both, every matching deny overrides the rest, and toolgate's fail-closed caps (unknown operations, shell
/// strings, a partial ask, a deny beneath) apply the same way; they differ only between allow and ask rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precedence {
    /// toolgate's own: ask beats allow wherever the rules stand, so the outcome does not depend on order.
    #[default]
    Strictest,
    /// ToolFence's: of the matching allow and ask rules, the first in file order decides.
    FirstMatch,
}

impl Precedence {
    pub fn as_str(self) -> &'static str {
        match self {
            Precedence::Strictest => "strictest",
            Precedence::FirstMatch => "first_match",
        }
    }

    /// One sentence for `explain`.
    pub fn describe(self) -> &'static str {
        match self {
            Precedence::Strictest => {
                "any matching deny wins, then any matching ask, then any matching allow, whatever their order"
            }
            Precedence::FirstMatch => {
                "any matching deny wins; otherwise the first matching rule in file order decides (ToolFence's order)"
            }
        }
    }

    pub fn is_strictest(&self) -> bool {
        *self == Precedence::Strictest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_through_serde_and_parse() {
        for op in Operation::ALL {
            let json = serde_json::to_value(op).unwrap();
            assert_eq!(json, serde_json::Value::String(op.as_str().to_owned()));
            assert_eq!(Operation::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operation::parse("fs.exec"), None);
    }

    #[test]
    fn effects_order_from_permissive_to_strict() {
        assert!(Effect::Allow < Effect::Ask && Effect::Ask < Effect::Deny);
    }
}
