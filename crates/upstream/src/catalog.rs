//! What one upstream offers, as it last said: its era, identity, capabilities and every list, unedited.

use crate::era::Era;
use serde_json::Value;

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
}

impl Catalog {
    /// Whether the server declared a capability (`tools`, `resources`, `prompts`, `completions`, `logging`).
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|c| !c.is_null())
    }
}
