//! Questions a tool or prompt asks its caller before it can answer, in the caller's era: a legacy caller is sent
//! each question as a server→client request during the call; a 2026-07-28 caller gets `resultType:
//! "input_required"` with the unanswered questions keyed by name, and retries with `inputResponses` (and the
//! `requestState` it was given, which must be one this server issued: anything else is tampering).
//!
//! The state is kept in this process (a set of issued tokens), which is enough for a fixture; a real server
//! would sign it.

use crate::fixture::{lock, Server};
use jsonrpc::error_object;
use serde_json::{json, Map, Value};

/// One question: the key the answer comes back under, and the request that asks it.
struct Question {
    key: &'static str,
    method: &'static str,
    params: Value,
}

fn elicit(key: &'static str, message: &str, field: &str) -> Question {
    Question {
        key,
        method: "elicitation/create",
        params: json!({"message": message, "requestedSchema": {"type": "object",
                       "properties": {field: {"type": "string"}}, "required": [field]}}),
    }
}

fn sample(key: &'static str, prompt: &str, max_tokens: u64) -> Question {
    Question {
        key,
        method: "sampling/createMessage",
        params: json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                       "maxTokens": max_tokens}),
    }
}

fn roots(key: &'static str) -> Question {
    Question {
        key,
        method: "roots/list",
        params: json!({}),
    }
}

/// What gathering produced: every answer, or the result that asks a modern caller for the missing ones.
enum Gathered {
    Answers(Map<String, Value>),
    Ask(Value),
}

fn invalid(message: impl Into<String>) -> Value {
    error_object(jsonrpc::INVALID_PARAMS, message, None)
}

impl Server {
    /// A fresh `requestState` for `tool` at `round`, remembered as issued.
    fn issue_state(&self, tool: &str, round: u32) -> String {
        let n = self
            .next_state
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = format!("{tool}.{round}.{n}.{}", std::process::id());
        lock(&self.states).insert(state.clone());
        state
    }

    /// The round the caller's `requestState` names: 0 without one; an error for one this server did not issue
    /// for `tool`.
    fn state_round(&self, tool: &str, params: &Value) -> Result<u32, Value> {
        let Some(state) = params.get("requestState") else {
            return Ok(0);
        };
        let state = state.as_str().unwrap_or_default();
        if !lock(&self.states).contains(state) {
            return Err(invalid("requestState failed its integrity check"));
        }
        state
            .strip_prefix(tool)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|rest| rest.split('.').next())
            .and_then(|round| round.parse().ok())
            .ok_or_else(|| invalid("requestState belongs to another request"))
    }

    /// Gets the answers to `questions`. `state` is the `requestState` to hand a modern caller along with the
    /// questions still open.
    async fn gather(
        &self,
        params: &Value,
        questions: Vec<Question>,
        modern: bool,
        state: Option<String>,
    ) -> Result<Gathered, Value> {
        let mut answers = Map::new();
        if !modern {
            for q in questions {
                let answer = self.ask(q.method, q.params).await?;
                answers.insert(q.key.into(), answer);
            }
            return Ok(Gathered::Answers(answers));
        }
        let given = match params.get("inputResponses") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(invalid("inputResponses must be an object")),
        };
        let mut open = Map::new();
        for q in questions {
            match given.get(q.key) {
                Some(Value::Object(answer)) => {
                    answers.insert(q.key.into(), Value::Object(answer.clone()));
                }
                Some(_) => {
                    return Err(invalid(format!(
                        "inputResponses.{} must be an object",
                        q.key
                    )))
                }
                None => {
                    open.insert(
                        q.key.into(),
                        json!({"method": q.method, "params": q.params}),
                    );
                }
            }
        }
        if open.is_empty() {
            return Ok(Gathered::Answers(answers));
        }
        let mut ask = json!({"resultType": "input_required", "inputRequests": open});
        if let Some(state) = state {
            ask["requestState"] = state.into();
        }
        Ok(Gathered::Ask(ask))
    }

    /// Gathers in one round; a tool with `stateful` set hands out a `requestState` and insists on it back.
    async fn one_round(
        &self,
        tool: &str,
        params: &Value,
        questions: Vec<Question>,
        modern: bool,
        stateful: bool,
    ) -> Result<Result<Map<String, Value>, Value>, Value> {
        let round = self.state_round(tool, params)?;
        if stateful && modern && round == 0 && params.get("inputResponses").is_some() {
            return Err(invalid(
                "inputResponses without the requestState they answer",
            ));
        }
        let state = (stateful && modern).then(|| self.issue_state(tool, 1));
        Ok(match self.gather(params, questions, modern, state).await? {
            Gathered::Answers(a) => Ok(a),
            Gathered::Ask(ask) => Err(ask),
        })
    }
}

fn said(answer: &Value, pointer: &str) -> String {
    answer
        .pointer(pointer)
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

fn text(s: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": s.into()}]})
}

pub(super) fn tools() -> Vec<Value> {
    [
        (
            "test_input_required_result_elicitation",
            "Asks the user's name, then greets them.",
        ),
        (
            "test_input_required_result_sampling",
            "Asks the model a question, then returns its answer.",
        ),
        (
            "test_input_required_result_list_roots",
            "Asks the client's roots, then lists them.",
        ),
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation under a request state.",
        ),
        (
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a greeting and the roots at once.",
        ),
        (
            "test_input_required_result_multi_round",
            "Asks two questions, one round each.",
        ),
        (
            "test_input_required_result_tampered_state",
            "Asks for a confirmation; refuses a forged request state.",
        ),
        (
            "test_input_required_result_capabilities",
            "Asks only what the client declared it can answer.",
        ),
        (
            "test_missing_capability",
            "Needs the client's sampling capability.",
        ),
        (
            "test_streaming_elicitation",
            "Asks the user a question while it runs.",
        ),
    ]
    .into_iter()
    .map(|(name, description)| super::no_args(name, description))
    .collect()
}

/// `tools/call` for the tools in `tools()`; `None` for any other name.
pub(super) async fn call(
    server: &Server,
    name: &str,
    params: &Value,
    modern: bool,
) -> Option<Result<Value, Value>> {
    let confirm = || Question {
        key: "confirm",
        method: "elicitation/create",
        params: json!({"message": "Please confirm", "requestedSchema": {"type": "object",
                       "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}),
    };
    let caps = params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let done = |questions, stateful, finish: fn(&Map<String, Value>) -> Value| async move {
        Ok(
            match server
                .one_round(name, params, questions, modern, stateful)
                .await?
            {
                Ok(answers) => finish(&answers),
                Err(ask) => ask,
            },
        )
    };
    Some(match name {
        "test_input_required_result_elicitation" => {
            done(
                vec![elicit("user_name", "What is your name?", "name")],
                false,
                |a| {
                    text(format!(
                        "Hello, {}!",
                        said(&a["user_name"], "/content/name")
                    ))
                },
            )
            .await
        }
        "test_input_required_result_sampling" => {
            let q = sample("capital_question", "What is the capital of France?", 100);
            done(vec![q], false, |a| {
                text(format!(
                    "The model said: {}",
                    said(&a["capital_question"], "/content/text")
                ))
            })
            .await
        }
        "test_input_required_result_list_roots" => {
            done(vec![roots("client_roots")], false, |a| {
                text(format!("Roots: {}", a["client_roots"]["roots"]))
            })
            .await
        }
        "test_input_required_result_request_state" => {
            done(vec![confirm()], true, |_| text("state-ok: confirmed")).await
        }
        "test_input_required_result_tampered_state" => {
            done(vec![confirm()], true, |_| {
                text("state-ok: the request state was intact")
            })
            .await
        }
        "test_input_required_result_multiple_inputs" => {
            let qs = vec![
                elicit("user_name", "What is your name?", "name"),
                sample("greeting", "Generate a greeting", 50),
                roots("client_roots"),
            ];
            done(qs, true, |a| {
                text(format!(
                    "{} {} (roots: {})",
                    said(&a["greeting"], "/content/text"),
                    said(&a["user_name"], "/content/name"),
                    a["client_roots"]["roots"]
                ))
            })
            .await
        }
        "test_input_required_result_multi_round" => multi_round(server, name, params, modern).await,
        "test_input_required_result_capabilities" => {
            let mut qs = Vec::new();
            if !modern || caps.get("elicitation").is_some() {
                qs.push(elicit("user_name", "What is your name?", "name"));
            }
            if !modern || caps.get("sampling").is_some() {
                qs.push(sample("greeting", "Generate a greeting", 50));
            }
            done(qs, false, |a| text(format!("Answered: {}", a.len()))).await
        }
        // Needs sampling: a modern caller that did not declare it is refused with the missing capability.
        "test_missing_capability" => {
            if modern && caps.get("sampling").is_none() {
                return Some(Err(error_object(
                    jsonrpc::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "this tool needs the sampling capability",
                    Some(json!({"requiredCapabilities": {"sampling": {}}})),
                )));
            }
            let q = sample("summary", "Summarise the weather", 50);
            done(vec![q], false, |a| {
                text(said(&a["summary"], "/content/text"))
            })
            .await
        }
        // Asks mid-call: to a modern caller that is an `input_required` answer, never a request on the stream.
        "test_streaming_elicitation" => {
            done(vec![elicit("answer", "Continue?", "answer")], false, |a| {
                text(format!("Answer: {}", said(&a["answer"], "/content/answer")))
            })
            .await
        }
        _ => return None,
    })
}

/// Two questions, one per round; the state names the round reached.
async fn multi_round(
    server: &Server,
    tool: &str,
    params: &Value,
    modern: bool,
) -> Result<Value, Value> {
    let step1 = || elicit("step1", "Step 1: What is your name?", "name");
    let step2 = || elicit("step2", "Step 2: What is your favorite color?", "color");
    if !modern {
        let name = server.ask("elicitation/create", step1().params).await?;
        let color = server.ask("elicitation/create", step2().params).await?;
        return Ok(text(format!(
            "{} likes {}",
            said(&name, "/content/name"),
            said(&color, "/content/color")
        )));
    }
    let asking = |q: Question, round| {
        json!({"resultType": "input_required", "requestState": server.issue_state(tool, round),
               "inputRequests": {q.key: {"method": q.method, "params": q.params}}})
    };
    let round = server.state_round(tool, params)?;
    if round == 0 {
        return Ok(asking(step1(), 1));
    }
    let question = if round == 1 { step1() } else { step2() };
    let again = server.issue_state(tool, round);
    Ok(
        match server
            .gather(params, vec![question], true, Some(again))
            .await?
        {
            Gathered::Ask(ask) => ask,
            Gathered::Answers(_) if round == 1 => asking(step2(), 2),
            Gathered::Answers(a) => text(format!(
                "Your favorite color is {}.",
                said(&a["step2"], "/content/color")
            )),
        },
    )
}

/// `prompts/get` for `test_input_required_result_prompt`.
pub(super) async fn prompt(server: &Server, params: &Value, modern: bool) -> Result<Value, Value> {
    let q = elicit(
        "user_context",
        "What context should the prompt use?",
        "context",
    );
    match server
        .one_round(
            "test_input_required_result_prompt",
            params,
            vec![q],
            modern,
            false,
        )
        .await?
    {
        Ok(a) => Ok(
            json!({"messages": [{"role": "user", "content": {"type": "text",
                  "text": format!("Use this context: {}", said(&a["user_context"], "/content/context"))}}]}),
        ),
        Err(ask) => Ok(ask),
    }
}
