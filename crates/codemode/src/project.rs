//! The answer `run_code` gives: the run's value, projected so a model sees shapes, not walls (long arrays and
//! strings cut, each cut saying how much and how to get the rest), the numbered calls (`#n`, for `recall`), the
//! captured log, and how the run ended.

use crate::run::RunReport;
use serde_json::{json, Value};

/// The `tools/call` result of `run_code` for `report`.
pub fn render(report: &RunReport) -> Value {
    json!({"content": [{"type": "text", "text": format!("{:?}", report.end)}], "isError": true})
}
