//! Arguments checked against a tool's `inputSchema`: each schema compiled once per tool (and again only when
//! it changes), bounded in size and in regex work so a hostile upstream cannot make every call expensive. It
//! checks the shape of arguments; what they mean to the policy is `guard.rs`'s.

use super::Guard;
use jsonschema::{PatternOptions, Validator};
use serde_json::Value;
use std::sync::Arc;

/// Schemas larger than this are not compiled: a hostile upstream must not make every call expensive.
const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// Bounds the work of one regex `pattern` in a schema (backtracking steps).
const REGEX_BACKTRACK_LIMIT: usize = 100_000;

impl Guard {
    /// The first way `arguments` fail `schema`, as the agent is told it.
    pub(super) fn validate(
        &self,
        server: &str,
        tool: &str,
        schema: &Value,
        arguments: &Value,
    ) -> Result<(), String> {
        let key = format!("{server}__{tool}");
        let validator = {
            let mut cache = self.schemas.lock().unwrap_or_else(|p| p.into_inner());
            match cache.get(&key) {
                Some((cached, v)) if cached == schema => Arc::clone(v),
                _ => {
                    let v = Arc::new(compile(schema)?);
                    cache.insert(key, (schema.clone(), Arc::clone(&v)));
                    v
                }
            }
        };
        let first = validator.iter_errors(arguments).next().map(|e| {
            format!(
                "arguments do not match the tool's inputSchema at {:?}: {e}",
                e.instance_path().to_string()
            )
        });
        first.map_or(Ok(()), Err)
    }
}

/// A tool's `inputSchema` as a validator, or why it cannot be one.
pub(crate) fn compile(schema: &Value) -> Result<Validator, String> {
    let size = serde_json::to_vec(schema)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "the tool's inputSchema is {size} bytes, over the limit of {MAX_SCHEMA_BYTES}"
        ));
    }
    jsonschema::options()
        .with_pattern_options(PatternOptions::fancy_regex().backtrack_limit(REGEX_BACKTRACK_LIMIT))
        .build(schema)
        .map_err(|e| format!("the tool's inputSchema is not a valid JSON Schema: {e}"))
}

/// Builds what compiling the first schema of each draft MCP servers write would otherwise build while a call
/// waits: jsonschema checks a schema against its draft's meta-schema, whose validator it builds once per process
/// (2020-12, the protocol's default and the one a schema without `$schema` is read as, and draft-07, which the
/// TypeScript SDK's schemas name). Called on a thread of its own as the gateway starts (`crate::warm`).
pub(crate) fn prepare() {
    for draft in PREPARED_DRAFTS {
        if let Err(e) = compile(&probe(draft)) {
            tracing::debug!(draft, error = %e, "meta-schema not built ahead");
        }
    }
}

/// The drafts `prepare` builds the meta-schema validators of.
const PREPARED_DRAFTS: [&str; 2] = [
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema#",
];

/// A small schema of `draft`, compiled only to make jsonschema build that draft's meta-schema validator.
fn probe(draft: &str) -> Value {
    serde_json::json!({"$schema": draft, "type": "object", "properties": {"a": {"type": "string"}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_draft_prepared_ahead_compiles_so_its_meta_schema_is_built() {
        for draft in PREPARED_DRAFTS {
            assert!(compile(&probe(draft)).is_ok(), "{draft}");
        }
    }
}
