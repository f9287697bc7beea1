//! Code mode's settings and the parts of a toolscript-mcp config file toolgate reads: `"mode"`,
//! `sandbox.timeoutSeconds` (5 … 86,400 s), `sandbox.node` (accepted, does not apply: toolgate runs programs in
//! its own engine), and a top-level `"policy"` list of `{match, action}` entries, translated by the policy crate
//! into toolgate rules over the configured servers' tools once the servers are known. It does not decide what a
//! mode shows or run anything.

use crate::error::{ConfigError, Result};
use crate::load::{check_range, Validator};
use crate::model::{Mode, Provenance, Setting};
use serde_json::Value;
use std::time::Duration;

/// `sandbox.timeoutSeconds`: the bounds toolscript-mcp documents.
const TIMEOUT_SECONDS: (u64, u64) = (5, 86_400);

/// `"code"` or `"direct"`; anything else is refused, so a misspelt mode never silently lists every tool.
pub(crate) fn parse_mode(key: &str, value: &Value) -> Result<Mode> {
    match value.as_str() {
        Some("code") => Ok(Mode::Code),
        Some("direct") => Ok(Mode::Direct),
        _ => Err(ConfigError::invalid(
            key,
            format!("{value} is not one of \"code\", \"direct\""),
        )),
    }
}

impl Validator<'_> {
    pub(crate) fn mode(&mut self, value: &Value) -> Result<()> {
        self.config.mode = Setting {
            value: parse_mode("mode", value)?,
            from: self.provenance("mode"),
        };
        Ok(())
    }

    /// The code-mode keys of `"sandbox"`.
    pub(crate) fn code_sandbox(&mut self, timeout: Option<u64>, node: Option<Value>) -> Result<()> {
        if let Some(seconds) = timeout {
            let (lo, hi) = TIMEOUT_SECONDS;
            check_range("sandbox.timeoutSeconds", seconds, lo, hi)?;
            self.config.code.timeout = Setting {
                value: Duration::from_secs(seconds),
                from: self.provenance("sandbox.timeoutSeconds"),
            };
        }
        if node.is_some() {
            self.config.warnings.push(
                "sandbox.node does not apply: toolgate runs programs in its own engine, in its own locked-down \
                 worker, not in Node"
                    .to_owned(),
            );
        }
        Ok(())
    }

    /// Translates a toolscript-mcp `"policy"` list, kept as written, into the structured policy the policy stage
    /// compiles; runs once the servers are known, since the rules cover only their tools.
    pub(crate) fn toolscript_policy(&mut self) -> Result<()> {
        let Some(list) = &self.config.policy.toolscript else {
            return Ok(());
        };
        let servers: Vec<&str> = self
            .config
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .chain(self.config.disabled.iter().map(|d| d.name.as_str()))
            .collect();
        let structured = policy::translate_toolscript(list, &servers).map_err(|e| match e {
            policy::Error::Parse { key, message } => ConfigError::invalid(key, message),
            other => ConfigError::invalid("policy", other.to_string()),
        })?;
        self.config.policy.policy = Some(structured);
        Ok(())
    }
}

/// Where the mode came from when the command line gave one.
pub(crate) fn flag_mode(mode: Mode) -> Setting<Mode> {
    Setting {
        value: mode,
        from: Provenance::Flag("--mode"),
    }
}

#[cfg(test)]
#[path = "code_tests.rs"]
mod tests;
