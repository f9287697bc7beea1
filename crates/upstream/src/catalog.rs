//! What one upstream offers, as it last said: its era, identity, capabilities and every list, unedited, plus the
//! lists it could not give and why (an optional list the server does not implement is empty, not fatal).

use crate::era::Era;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Catalog {
    pub era: Option<Era>,
    /// `serverInfo` from `initialize`, or `_meta["io.modelcontextprotocol/serverInfo"]` from `server/discover`.
    pub server_info: Value,
    pub capabilities: Value,
    pub instructions: Option<String>,
    pub tools: Vec<Value>,
    pub resources: Vec<Value>,
    pub resource_templates: Vec<Value>,
    pub prompts: Vec<Value>,
    /// Lists the server declared but could not give, by list method (`prompts/list` → why). Each counts as empty.
    pub list_errors: BTreeMap<&'static str, String>,
}

impl Catalog {
    /// Whether the server declared a capability (`tools`, `resources`, `prompts`, `completions`, `logging`).
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|c| !c.is_null())
    }
}
