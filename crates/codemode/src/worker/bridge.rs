//! The bridge: the only globals the worker adds to the engine — `call`, `recall`, `saveFile`, `readFile` and
//! `console` — and the table of requests waiting for the parent's reply.
//!
//! Each of the four functions turns its arguments into JSON text (the engine's own serialiser, which a program
//! cannot replace by reassigning `JSON`), sends one request line and returns a promise that only the parent's
//! reply settles. No engine object ever leaves the worker, and what comes back is parsed from text into fresh
//! values, so a program that pollutes prototypes or hooks a returned value changes nothing but its own view.
//! `console` lines are sent as they come, cut with a note at the log limit. This module does not run the
//! program or read replies (`engine` does).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rquickjs::function::{Opt, Rest};
use rquickjs::{Coerced, Ctx, Exception, FromJs, Function, Object, Promise, Value};

use super::lines;
use super::protocol::FromWorker;

/// The bridge's state, shared by the functions it installs and the engine loop.
pub(crate) struct Bridge<'js> {
    next_id: u64,
    /// Requests sent and not answered: their promise's resolve and reject functions.
    pending: HashMap<u64, (Function<'js>, Function<'js>)>,
    log_left: usize,
    log_truncated: bool,
    line_bytes: usize,
    /// Set once the program's promise has settled: serialising its value or its error may still run its code
    /// (`toJSON`, getters), which must not make a request after the end.
    closed: bool,
}

pub(crate) type Shared<'js> = Rc<RefCell<Bridge<'js>>>;

impl<'js> Bridge<'js> {
    pub(crate) fn new(log_bytes: usize, line_bytes: usize) -> Shared<'js> {
        Rc::new(RefCell::new(Self {
            next_id: 0,
            pending: HashMap::new(),
            log_left: log_bytes,
            log_truncated: false,
            line_bytes,
            closed: false,
        }))
    }

    /// Refuses every request from now on.
    pub(crate) fn close(&mut self) {
        self.closed = true;
    }

    /// Whether some request still waits for its reply.
    pub(crate) fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Takes request `id`'s resolve and reject functions, or `None` when no such request is waiting.
    pub(crate) fn take(&mut self, id: u64) -> Option<(Function<'js>, Function<'js>)> {
        self.pending.remove(&id)
    }
}

/// The parent is gone or the channel broke: nothing can answer the program any more, so the worker ends now.
fn channel_lost() -> ! {
    std::process::exit(3)
}

/// Sends one request and returns the promise its reply settles.
fn request<'js>(
    ctx: &Ctx<'js>,
    bridge: &Shared<'js>,
    what: &str,
    make: impl FnOnce(u64) -> FromWorker,
) -> rquickjs::Result<Promise<'js>> {
    if bridge.borrow().closed {
        return Err(Exception::throw_message(
            ctx,
            &format!("{what}: the program has already ended"),
        ));
    }
    let (promise, resolve, reject) = ctx.promise()?;
    let mut b = bridge.borrow_mut();
    let id = b.next_id + 1;
    let line = lines::encode(&make(id));
    if line.len() > b.line_bytes {
        let limit = b.line_bytes;
        drop(b);
        return Err(Exception::throw_range(
            ctx,
            &format!(
                "{what}: its arguments are {} bytes, over the limit of {limit}",
                line.len()
            ),
        ));
    }
    if lines::write_line(&line).is_err() {
        channel_lost();
    }
    b.next_id = id;
    b.pending.insert(id, (resolve, reject));
    Ok(promise)
}

/// A value as JSON, through the engine's serialiser; `undefined` (and what serialises to nothing) as `None`.
fn to_json<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> rquickjs::Result<Option<serde_json::Value>> {
    let Some(text) = ctx.json_stringify(value)? else {
        return Ok(None);
    };
    let text = text.to_string()?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Exception::throw_type(ctx, &format!("not plain JSON: {e}")))
}

fn string_arg<'js>(ctx: &Ctx<'js>, value: &Value<'js>, what: &str) -> rquickjs::Result<String> {
    match value.as_string() {
        Some(s) => s.to_string(),
        None => Err(Exception::throw_type(
            ctx,
            &format!("{what} must be a string"),
        )),
    }
}

fn call<'js>(
    ctx: Ctx<'js>,
    bridge: &Shared<'js>,
    name: Value<'js>,
    args: Opt<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    let name = string_arg(&ctx, &name, "call(name, arguments): name")?;
    let arguments = match args.0 {
        None => serde_json::Value::Object(Default::default()),
        Some(v) if v.is_undefined() || v.is_null() => serde_json::Value::Object(Default::default()),
        Some(v) => to_json(&ctx, v)?.unwrap_or(serde_json::Value::Null),
    };
    if !arguments.is_object() {
        return Err(Exception::throw_type(
            &ctx,
            "call(name, arguments): arguments must be an object",
        ));
    }
    request(&ctx, bridge, "call", |id| FromWorker::Call {
        id,
        name,
        arguments,
    })
}

fn recall<'js>(
    ctx: Ctx<'js>,
    bridge: &Shared<'js>,
    n: Value<'js>,
) -> rquickjs::Result<Promise<'js>> {
    let n = n
        .as_number()
        .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= f64::from(u32::MAX))
        .ok_or_else(|| {
            Exception::throw_type(&ctx, "recall(n): n must be a call number (1, 2, …)")
        })?;
    request(&ctx, bridge, "recall", |id| FromWorker::Recall {
        id,
        n: n as u32,
    })
}

fn save_file<'js>(
    ctx: Ctx<'js>,
    bridge: &Shared<'js>,
    name: Value<'js>,
    data: Opt<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    let name = string_arg(&ctx, &name, "saveFile(name, data): name")?;
    let data = match data.0 {
        Some(v) if v.is_string() => string_arg(&ctx, &v, "data")?,
        Some(v) => to_json(&ctx, v)?
            .unwrap_or(serde_json::Value::Null)
            .to_string(),
        None => String::new(),
    };
    request(&ctx, bridge, "saveFile", |id| FromWorker::Save {
        id,
        name,
        data,
    })
}

fn read_file<'js>(
    ctx: Ctx<'js>,
    bridge: &Shared<'js>,
    path: Value<'js>,
) -> rquickjs::Result<Promise<'js>> {
    let path = string_arg(&ctx, &path, "readFile(path): path")?;
    request(&ctx, bridge, "readFile", |id| FromWorker::Read { id, path })
}

/// One `console` line: strings as they are, objects as JSON where they can be, anything else as `String(x)`.
fn render<'js>(ctx: &Ctx<'js>, args: Rest<Value<'js>>) -> rquickjs::Result<String> {
    let mut parts = Vec::with_capacity(args.0.len());
    for value in args.0 {
        if let Some(s) = value.as_string() {
            parts.push(s.to_string()?);
            continue;
        }
        if value.is_object() {
            if let Ok(Some(s)) = ctx.json_stringify(value.clone()) {
                parts.push(s.to_string()?);
                continue;
            }
            // A cycle or a throwing toJSON: fall back to String(x), clearing what the serialiser threw.
            let _ = ctx.catch();
        }
        parts.push(Coerced::<String>::from_js(ctx, value)?.0);
    }
    Ok(parts.join(" "))
}

fn log<'js>(ctx: Ctx<'js>, bridge: &Shared<'js>, args: Rest<Value<'js>>) -> rquickjs::Result<()> {
    if bridge.borrow().log_truncated {
        return Ok(());
    }
    let text = render(&ctx, args)?;
    let mut b = bridge.borrow_mut();
    let needed = text.len() + 1;
    let message = if needed <= b.log_left {
        b.log_left -= needed;
        FromWorker::Log {
            text,
            truncated: false,
        }
    } else {
        let mut cut = b.log_left;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        b.log_left = 0;
        b.log_truncated = true;
        FromWorker::Log {
            text: text[..cut].to_owned(),
            truncated: true,
        }
    };
    if lines::send(&message).is_err() {
        channel_lost();
    }
    Ok(())
}

/// Installs the bridge's globals in `ctx`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, bridge: &Shared<'js>) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let b = Rc::clone(bridge);
    let f = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, name: Value<'js>, args: Opt<Value<'js>>| call(ctx, &b, name, args),
    )?;
    globals.set("call", f.with_name("call")?)?;
    let b = Rc::clone(bridge);
    let f = Function::new(ctx.clone(), move |ctx: Ctx<'js>, n: Value<'js>| {
        recall(ctx, &b, n)
    })?;
    globals.set("recall", f.with_name("recall")?)?;
    let b = Rc::clone(bridge);
    let f = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, name: Value<'js>, data: Opt<Value<'js>>| {
            save_file(ctx, &b, name, data)
        },
    )?;
    globals.set("saveFile", f.with_name("saveFile")?)?;
    let b = Rc::clone(bridge);
    let f = Function::new(ctx.clone(), move |ctx: Ctx<'js>, path: Value<'js>| {
        read_file(ctx, &b, path)
    })?;
    globals.set("readFile", f.with_name("readFile")?)?;

    let console = Object::new(ctx.clone())?;
    for level in ["log", "info", "warn", "error", "debug"] {
        let b = Rc::clone(bridge);
        let f = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            log(ctx, &b, args)
        })?;
        console.set(level, f.with_name(level)?)?;
    }
    globals.set("console", console)?;
    Ok(())
}
