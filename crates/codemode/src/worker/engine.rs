//! The engine: one QuickJS-ng runtime with a memory limit, a stack limit and an interrupt handler (the
//! engine's own time budget), one context with the standard built-ins and the bridge's globals, and the loop
//! that runs the program to its end.
//!
//! The program is the body of an async function, compiled by the engine's `AsyncFunction` constructor (so it
//! cannot close the wrapper early). The loop runs pending jobs; when none is left and the program's promise is
//! still pending, it blocks on the next reply if a request is waiting, and otherwise ends the run, since nothing
//! can settle the promise any more. Once the promise settles, the end is sent and the worker exits at once:
//! a promise that settles after `return` runs no further call. The runtime is never freed (the process exits
//! with it), so objects the bridge keeps for pending requests need no cleanup.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::promise::PromiseState;
use rquickjs::{Coerced, Context, Ctx, Exception, FromJs, Function, Promise, Runtime, Value};

use super::bridge::{self, Bridge, Shared};
use super::lines::{self, LineReader};
use super::protocol::{
    self, FromWorker, Reply, ToWorker, WorkerEnd, WorkerLimits, MAX_PROGRAM_LINE,
};

/// Sends the end and exits; the runtime is left to the process's exit.
fn finish(end: WorkerEnd) -> ! {
    let code = i32::from(lines::send(&FromWorker::Done { end }).is_err());
    std::process::exit(code)
}

fn failed(message: impl Into<String>) -> WorkerEnd {
    WorkerEnd::Failed {
        message: message.into(),
    }
}

fn limit(limit: &str, message: impl Into<String>) -> WorkerEnd {
    WorkerEnd::Limit {
        limit: limit.to_owned(),
        message: message.into(),
    }
}

/// Runs the worker after its `start` line: build, lock down, report, run. Never returns.
pub(crate) fn serve(
    limits: WorkerLimits,
    filter: Option<Vec<Vec<u64>>>,
    input: &mut LineReader,
) -> ! {
    let Ok(runtime) = Runtime::new() else {
        finish(failed("the engine could not be created"))
    };
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
    let fired = Rc::new(Cell::new(false));
    {
        let (deadline, fired) = (Rc::clone(&deadline), Rc::clone(&fired));
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let over = deadline.get().is_some_and(|d| Instant::now() >= d);
            if over {
                fired.set(true);
            }
            over
        })));
    }
    let Ok(context) = Context::full(&runtime) else {
        finish(failed("the engine's context could not be created"))
    };
    context.with(|ctx| {
        let bridge = Bridge::new(limits.log_bytes, limits.line_bytes);
        if let Err(e) = bridge::install(&ctx, &bridge) {
            finish(failed(format!("the bridge could not be installed: {e}")));
        }
        // The C library reads the time zone file on first use; do it now, while files can still be opened.
        let _ = ctx.eval::<(), _>("new Date(0).getTimezoneOffset(); new Date(0).toString();");

        let layers = lock_down(filter);
        if lines::send(&FromWorker::Ready { layers }).is_err() {
            std::process::exit(3);
        }
        let program = match input.next(MAX_PROGRAM_LINE) {
            Ok(ToWorker::Run { program }) => program,
            Ok(other) => finish(failed(format!("expected the program, got {other:?}"))),
            // The parent refused to go on (a required layer is missing) or is gone.
            Err(_) => std::process::exit(0),
        };
        deadline.set(Some(
            Instant::now() + Duration::from_millis(limits.budget_ms),
        ));
        finish(drive(&ctx, &bridge, input, &limits, &fired, &program))
    })
}

/// The worker's own layers, with the filter decoded from the start line.
fn lock_down(filter: Option<Vec<Vec<u64>>>) -> Vec<(String, String)> {
    let decoded = filter.map(|words| sandbox::WorkerFilter::from_words(&words));
    let usable = match &decoded {
        Some(Ok(f)) => Some(f),
        _ => None,
    };
    sandbox::lock_down_worker(usable)
        .into_iter()
        .map(|(layer, state)| {
            let state = match (&decoded, layer) {
                (Some(Err(why)), sandbox::WorkerLayer::SyscallAllowlist) => {
                    sandbox::LayerState::Failed(why.clone())
                }
                _ => state,
            };
            (layer.as_str().to_owned(), protocol::state_text(&state))
        })
        .collect()
}

fn drive<'js>(
    ctx: &Ctx<'js>,
    bridge: &Shared<'js>,
    input: &mut LineReader,
    limits: &WorkerLimits,
    fired: &Cell<bool>,
    program: &str,
) -> WorkerEnd {
    let promise = match start(ctx, program) {
        Ok(p) => p,
        Err(e) => {
            bridge.borrow_mut().close();
            return thrown(ctx, fired, e);
        }
    };
    loop {
        // One job at a time, checking the program's promise before each: once it has settled no further job
        // runs, so a callback queued before `return` cannot make a call after it.
        while !fired.get() && promise.state() == PromiseState::Pending && ctx.execute_pending_job()
        {
        }
        if fired.get() {
            return out_of_time();
        }
        if promise.state() != PromiseState::Pending {
            bridge.borrow_mut().close();
        }
        match promise.state() {
            PromiseState::Resolved => return returned(ctx, &promise, limits),
            PromiseState::Rejected => {
                let _ = promise.result::<Value>();
                let reason = ctx.catch();
                return thrown(ctx, fired, reason);
            }
            PromiseState::Pending => {}
        }
        if !bridge.borrow().waiting() {
            return WorkerEnd::Threw {
                message: "the program's promise never settles: it awaits something that no call, recall, \
                          saveFile or readFile will resolve"
                    .to_owned(),
            };
        }
        match input.next(limits.line_bytes) {
            Ok(ToWorker::Reply { id, reply }) => {
                if let Err(end) = settle(ctx, bridge, id, reply) {
                    return end;
                }
            }
            Ok(other) => return failed(format!("expected a reply, got {other:?}")),
            Err(lines::LineError::Closed) => std::process::exit(0),
            Err(e) => return failed(e.to_string()),
        }
    }
}

/// Compiles the program as an async function's body and starts it.
fn start<'js>(ctx: &Ctx<'js>, program: &str) -> Result<Promise<'js>, Value<'js>> {
    let catch = |_| ctx.catch();
    let constructor: Function = ctx
        .eval("(async function () {}).constructor")
        .map_err(catch)?;
    let function: Function = constructor.call((program,)).map_err(catch)?;
    function.call(()).map_err(catch)
}

fn out_of_time() -> WorkerEnd {
    limit(
        "wall_clock",
        "the program ran out of time and was stopped by the engine",
    )
}

/// Settles request `id`'s promise with the parent's reply.
fn settle<'js>(
    ctx: &Ctx<'js>,
    bridge: &Shared<'js>,
    id: u64,
    reply: Reply,
) -> Result<(), WorkerEnd> {
    let Some((resolve, reject)) = bridge.borrow_mut().take(id) else {
        return Err(failed(format!(
            "a reply to request {id}, which is not waiting"
        )));
    };
    let settled = match reply {
        Reply::Value { value } => match ctx.json_parse(value.to_string()) {
            Ok(v) => resolve.call::<_, ()>((v,)),
            Err(_) => {
                let e = ctx.catch();
                reject.call::<_, ()>((e,))
            }
        },
        Reply::Error { code, message } => {
            let error = Exception::from_message(ctx.clone(), &message).and_then(|e| {
                e.as_object().set("code", code)?;
                Ok(e)
            });
            match error {
                Ok(e) => reject.call::<_, ()>((e,)),
                Err(_) => {
                    let e = ctx.catch();
                    reject.call::<_, ()>((e,))
                }
            }
        }
    };
    // Settling only queues jobs; it fails only when the engine is out of memory, which the program then meets.
    if settled.is_err() {
        let _ = ctx.catch();
    }
    Ok(())
}

/// The program's value as JSON, within the result limit.
fn returned<'js>(ctx: &Ctx<'js>, promise: &Promise<'js>, limits: &WorkerLimits) -> WorkerEnd {
    let value: Value = match promise.result() {
        Some(Ok(v)) => v,
        _ => return failed("the program's promise resolved without a value"),
    };
    if value.is_undefined() {
        return WorkerEnd::Returned {
            value: serde_json::Value::Null,
        };
    }
    let text = match ctx.json_stringify(value) {
        Ok(Some(s)) => s.to_string(),
        Ok(None) => {
            return WorkerEnd::Returned {
                value: serde_json::Value::Null,
            }
        }
        Err(e) => Err(e),
    };
    let text = match text {
        Ok(t) => t,
        Err(_) => {
            let reason = describe(ctx, ctx.catch());
            if is_out_of_memory(&reason) {
                return limit("memory", memory_message(limits));
            }
            return WorkerEnd::Threw {
                message: format!("the returned value cannot be serialised as JSON: {reason}"),
            };
        }
    };
    if text.len() > limits.result_bytes {
        return limit("output", too_long(text.len(), limits));
    }
    match serde_json::from_str(&text) {
        Ok(value) => WorkerEnd::Returned { value },
        Err(e) => WorkerEnd::Threw {
            message: format!("the returned value cannot be serialised as JSON: {e}"),
        },
    }
}

fn thrown<'js>(ctx: &Ctx<'js>, fired: &Cell<bool>, reason: Value<'js>) -> WorkerEnd {
    if fired.get() {
        return out_of_time();
    }
    let message = describe(ctx, reason);
    if is_out_of_memory(&message) {
        return limit(
            "memory",
            format!("the program ran out of memory ({message})"),
        );
    }
    WorkerEnd::Threw { message }
}

fn too_long(len: usize, limits: &WorkerLimits) -> String {
    format!(
        "the returned value is {len} bytes, over the limit of {}; return less, or saveFile it",
        limits.result_bytes
    )
}

fn memory_message(limits: &WorkerLimits) -> String {
    format!(
        "the program ran out of memory (limit {} bytes)",
        limits.memory_bytes
    )
}

/// QuickJS reports an exhausted heap as an `InternalError` with this message.
fn is_out_of_memory(message: &str) -> bool {
    message.contains("out of memory")
}

/// A thrown value as text: `Name: message` for errors, else its string form.
fn describe<'js>(ctx: &Ctx<'js>, reason: Value<'js>) -> String {
    if let Some(e) = reason.as_exception() {
        let name: Option<String> = e.get("name").ok();
        let message = e.message().unwrap_or_default();
        let message = match name {
            Some(n) if !n.is_empty() => format!("{n}: {message}"),
            _ => message,
        };
        return match e.stack().as_deref().and_then(program_line) {
            Some(line) => format!("{message} (line {line})"),
            None => message,
        };
    }
    match Coerced::<String>::from_js(ctx, reason) {
        Ok(s) => s.0,
        Err(_) => {
            let _ = ctx.catch();
            "a value that cannot be shown".to_owned()
        }
    }
}

/// The program's line a stack names first. The engine compiles the program as the body of
/// `(async function anonymous(\n) {\n…`, so its first line is the source's third.
fn program_line(stack: &str) -> Option<u32> {
    let (_, rest) = stack.split_once("<input>:")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse::<u32>()
        .ok()?
        .checked_sub(2)
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::program_line;

    #[test]
    fn stack_lines_are_counted_from_the_program() {
        assert_eq!(program_line("    at anonymous (<input>:5:17)\n"), Some(3));
        assert_eq!(
            program_line("    at f (<input>:3:1)\n    at anonymous (<input>:9:2)"),
            Some(1)
        );
        assert_eq!(program_line("    at <eval> (native)"), None);
        assert_eq!(program_line("<input>:1:1"), None);
    }
}
