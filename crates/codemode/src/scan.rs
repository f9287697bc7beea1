//! The static scan of a program before it runs: which tool names it writes as string literals in
//! `call("…")`, and for each such call its arguments when they are a plain JSON literal (`args`), or that they
//! are computed. Those calls are checked before it starts (deny stops the program; asks are approved once for
//! the run, each for exactly the arguments written, or — computed — for any); any other name a program uses
//! at run time runs only under an allow rule.
//!
//! The scan reads tokens, not text (`lex`): a `call("x")` inside a comment, a string, a template or a regex is
//! not a call. It reports `dynamic` whenever the program may call a tool in a way it cannot name: `call` used
//! other than as `call(<plain literal>, …)` (aliased, passed, `call.apply`, `x.call`, tagged, spread, shadowed),
//! a literal with an escape, a way to the global object or to code built from strings (`globalThis`, `this`,
//! `eval`, `Function`, `constructor`, …), the string `"call"`, or anything the lexer could not read with
//! certainty. When unsure it says dynamic: the flag costs a program only its pre-approval, while a missed one
//! would misstate what the program does. It never decides anything; the gateway checks each call again at run
//! time whatever the scan said.

mod args;
mod lex;

use lex::Tok;
use serde_json::Value;
use std::collections::BTreeSet;

/// What a program says about the tools it will call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Names written as string literals in `call("…")`, sorted.
    pub literal_names: BTreeSet<String>,
    /// Each `call("…", …)` with a literal name, in program order.
    pub calls: Vec<LiteralCall>,
    /// Whether the program calls tools in a way the scan cannot name (a computed name, `call` aliased).
    pub dynamic: bool,
}

/// One `call` whose name is a string literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiteralCall {
    pub name: String,
    /// The arguments when they are a plain JSON literal, as the engine will send them (`call("x")` sends
    /// `{}`); `None` when they are computed, so the call may send anything.
    pub arguments: Option<Value>,
}

impl Scan {
    /// Whether some literal call's arguments are computed.
    pub fn computes_arguments(&self) -> bool {
        self.calls.iter().any(|c| c.arguments.is_none())
    }
}

/// Names that reach the global object (where `call` lives) or build code from strings, so any use of them can
/// reach `call` under a name the scan cannot see.
const REACHES_CALL: [&str; 17] = [
    "eval",
    "Function",
    "AsyncFunction",
    "GeneratorFunction",
    "AsyncGeneratorFunction",
    "constructor",
    "__proto__",
    "__defineGetter__",
    "__lookupGetter__",
    "import",
    "require",
    "with",
    "setTimeout",
    "setInterval",
    "Reflect",
    "Proxy",
    "arguments",
];

/// Names of the global object: harmless only as `globalThis.<plain name>`.
const GLOBAL_OBJECT: [&str; 6] = ["globalThis", "global", "window", "self", "this", "frames"];

/// Scans `program`.
pub fn scan(program: &str) -> Scan {
    let lexed = lex::lex(program);
    let tokens = &lexed.tokens;
    let mut out = Scan {
        dynamic: lexed.unsure,
        ..Scan::default()
    };
    for (i, tok) in tokens.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|p| tokens.get(p));
        let next = |k: usize| tokens.get(i + k);
        match tok {
            Tok::Ident(name) if name == "call" => match (prev, next(1), next(2), next(3)) {
                (Some(Tok::Punct("." | "?.")), ..) => out.dynamic = true,
                (
                    _,
                    Some(Tok::Punct("(")),
                    Some(Tok::Str(Some(n)) | Tok::Template(Some(n))),
                    Some(Tok::Punct(close @ (")" | ","))),
                ) => {
                    out.literal_names.insert(n.clone());
                    let arguments = match *close {
                        ")" => Some(Value::Object(Default::default())),
                        _ => literal_arguments(tokens, i + 4),
                    };
                    out.calls.push(LiteralCall {
                        name: n.clone(),
                        arguments,
                    });
                }
                _ => out.dynamic = true,
            },
            Tok::Ident(name) if REACHES_CALL.contains(&name.as_str()) => out.dynamic = true,
            Tok::Ident(name) if GLOBAL_OBJECT.contains(&name.as_str()) => {
                let plain_member = matches!(
                    (next(1), next(2)),
                    (Some(Tok::Punct(".")), Some(Tok::Ident(member)))
                        if member != "call"
                            && !REACHES_CALL.contains(&member.as_str())
                            && !GLOBAL_OBJECT.contains(&member.as_str())
                );
                if !plain_member {
                    out.dynamic = true;
                }
            }
            Tok::Str(Some(s)) | Tok::Template(Some(s)) if s == "call" => out.dynamic = true,
            _ => {}
        }
    }
    out
}

/// The arguments of a call whose second argument starts at `tokens[at]`: an object literal that is the last
/// argument (a trailing comma allowed), else computed.
fn literal_arguments(tokens: &[Tok], at: usize) -> Option<Value> {
    if tokens.get(at)? != &Tok::Punct("{") {
        return None;
    }
    let (value, next) = args::literal(tokens, at)?;
    match (tokens.get(next)?, tokens.get(next + 1)) {
        (Tok::Punct(")"), _) | (Tok::Punct(","), Some(Tok::Punct(")"))) => Some(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
