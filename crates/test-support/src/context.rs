//! Runs one context task both ways against running toolgates and counts what would enter a model's context:
//! with direct tool calls, the whole `tools/call` result of every call; in code mode, one `search_tools` result
//! plus the `run_code` result — whole on both sides (`content`, `structuredContent` and every other field), and
//! for a client that keeps only text items, those alone, also on both sides. Both ways must give the same
//! answer, or the task fails.
//!
//! It measures characters, not time, and knows code mode's wire only through `search_params`, `run_params` and
//! `returned` below.

use crate::client::StdioClient;
use crate::tasks::{same_answer, ContextTask};
use serde_json::{json, Value};

/// What one task cost each way.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Characters of every direct `tools/call` result, whole, as the client receives it.
    pub direct: usize,
    /// Only the text items of those results: what a client that drops `structuredContent` would keep.
    pub direct_text: usize,
    /// Characters of the `search_tools` result.
    pub search: usize,
    /// Characters of the `run_code` result, whole.
    pub run: usize,
    /// Only the text items of the `search_tools` and `run_code` results.
    pub code_text: usize,
    /// Characters of the program, which the model writes (its output, counted apart).
    pub program: usize,
    /// The answer both ways agreed on.
    pub answer: Value,
}

impl Measured {
    /// What code mode puts in the context: the search step and the run's result.
    pub fn code(&self) -> usize {
        self.search + self.run
    }
}

/// `search_tools` arguments for `query`.
pub fn search_params(query: &str) -> Value {
    json!({"name": "search_tools", "arguments": {"query": query}})
}

/// `run_code` arguments for `program`.
pub fn run_params(program: &str) -> Value {
    json!({"name": "run_code", "arguments": {"code": program}})
}

/// The value a program returned, from a `run_code` result.
pub fn returned(result: &Value) -> Option<&Value> {
    result.pointer("/structuredContent/result")
}

fn chars(v: &Value) -> usize {
    v.to_string().chars().count()
}

fn text_chars(result: &Value) -> usize {
    result["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["text"].as_str())
                .map(|t| t.chars().count())
                .sum()
        })
        .unwrap_or(0)
}

/// Runs `task` through `direct` (a toolgate in direct mode) and `code` (the same upstreams, in code mode).
pub async fn measure(
    direct: &StdioClient,
    code: &StdioClient,
    task: &ContextTask,
) -> Result<Measured, String> {
    let mut structured = Vec::new();
    let (mut all, mut text) = (0, 0);
    for (name, arguments) in &task.direct {
        let params = json!({"name": name, "arguments": arguments});
        let result = direct
            .request("tools/call", params)
            .await
            .map_err(|e| format!("{}: direct {name}: {e}", task.name))?;
        if result["isError"] == true {
            return Err(format!("{}: direct {name} failed: {result}", task.name));
        }
        all += chars(&result);
        text += text_chars(&result);
        structured.push(result["structuredContent"].clone());
    }
    let expected = (task.answer)(&structured);
    let search = code
        .request("tools/call", search_params(task.query))
        .await
        .map_err(|e| format!("{}: search_tools: {e}", task.name))?;
    // The search step must find what the program calls, or a model could not have written it from there.
    let found = search.to_string();
    if let Some((missing, _)) = task
        .direct
        .iter()
        .find(|(name, _)| !found.contains(name.as_str()))
    {
        return Err(format!(
            "{}: search_tools({:?}) did not find {missing}: {search}",
            task.name, task.query
        ));
    }
    let run = code
        .request("tools/call", run_params(&task.program))
        .await
        .map_err(|e| format!("{}: run_code: {e}", task.name))?;
    let got = returned(&run)
        .ok_or_else(|| format!("{}: run_code returned no value: {run}", task.name))?;
    if !same_answer(got, &expected) {
        return Err(format!(
            "{}: the program's answer differs from the direct calls'.\nprogram: {got}\ndirect:  {expected}",
            task.name
        ));
    }
    Ok(Measured {
        direct: all,
        direct_text: text,
        search: chars(&search),
        run: chars(&run),
        code_text: text_chars(&search) + text_chars(&run),
        program: task.program.chars().count(),
        answer: expected,
    })
}
