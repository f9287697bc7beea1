//! `search_tools`: a ranked search over a catalog's names, titles, descriptions and parameter names, whose hits
//! are compact signatures a model can call from.

use serde_json::Value;

/// One tool as search sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDoc {
    /// The name a program calls it by.
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: String,
    pub score: f64,
    /// A TypeScript-like declaration of the call: `name(args: {path: string; head?: number})`.
    pub signature: String,
    pub description: String,
}

/// The index over one catalog; rebuilt when the catalog changes.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    docs: Vec<ToolDoc>,
}

impl SearchIndex {
    pub fn build(docs: Vec<ToolDoc>) -> Self {
        Self { docs }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The best `limit` hits for `query`, best first; ties by name.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let _ = (query, limit);
        Vec::new()
    }
}
