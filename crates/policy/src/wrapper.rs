//! Programs that run other programs: a table of wrappers (`env`, `sudo`, `sh -c`, `timeout`, `xargs`, `find -exec`,
//! …) and how each one names the command it runs, so deny rules see through them and allow rules know when a
//! command is more than it looks.
//!
//! Each wrapper's options are parsed as its own getopt would (clusters, attached values, unambiguous long-option
//! abbreviations, `--`). A wrapper whose options are not all understood, and a program that runs code toolgate
//! cannot read (`awk` programs, `python -c`, `sh script.sh`, `parallel`, `git -c`), make the command *opaque*:
//! `decide.rs` never allows an opaque command by a prefix rule or by the default. This is not a shell parser; shell
//! strings still go through `shell::segments`, which over-splits so that deny rules only get stricter.

use crate::shell;
use programs::{
    env, find, flock, git, interpreter, pid_mode_or, shell_program, su, sudo, watch, xargs,
};

mod programs;

/// One command the argv would run: the argv itself, or one found inside a wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) argv: Vec<String>,
    /// More arguments are supplied at run time (`xargs`, `find -exec … {}`), so only the stated tokens are known.
    pub(crate) open: bool,
}

/// Every command an argv runs (itself first) and whether part of it is hidden from toolgate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Runs {
    pub(crate) runs: Vec<Run>,
    pub(crate) opaque: bool,
}

impl Runs {
    /// True when the command runs nothing but itself, visibly: the only shape a prefix allow rule may admit.
    pub(crate) fn is_leaf(&self) -> bool {
        self.runs.len() == 1 && !self.opaque
    }
}

/// Bounds so a hostile argv (`env env env …`, many `-exec`) cannot make expansion expensive; past them the command
/// is opaque.
const MAX_RUNS: usize = 64;
const MAX_DEPTH: usize = 16;

/// Expands a structured argv.
pub(crate) fn expand_argv(argv: &[String]) -> Runs {
    let mut out = Runs::default();
    expand(argv, false, 0, &mut out);
    out
}

/// Expands every segment of a shell string (already split roughly by `shell::segments`).
pub(crate) fn expand_segments(segments: &[Vec<String>]) -> Runs {
    let mut out = Runs::default();
    for seg in segments {
        expand(seg, false, 0, &mut out);
    }
    out
}

fn expand(argv: &[String], open: bool, depth: usize, out: &mut Runs) {
    let Some((program, args)) = argv.split_first() else {
        return;
    };
    if out.runs.len() >= MAX_RUNS || depth > MAX_DEPTH {
        out.opaque = true;
        return;
    }
    out.runs.push(Run {
        argv: argv.to_vec(),
        open,
    });
    match inner(basename(program), args) {
        Inner::Leaf => {}
        Inner::Argv(cmd, more) => expand(&cmd, open || more, depth + 1, out),
        Inner::Many(cmds) => {
            for cmd in cmds {
                expand(&cmd, true, depth + 1, out);
            }
        }
        Inner::Script(script) => script_runs(&script, open, depth, out),
        Inner::Scripts(scripts) => {
            for script in scripts {
                script_runs(&script, open, depth, out);
            }
        }
        Inner::Hidden(script) => {
            out.opaque = true;
            if let Some(s) = script {
                script_runs(&s, open, depth, out);
            }
        }
        Inner::Unparsed => {
            // Options we do not understand may take values, so every later word may start the command: trying
            // each one can only make a deny stricter.
            out.opaque = true;
            for k in 0..args.len() {
                expand(&args[k..], true, depth + 1, out);
            }
        }
    }
}

/// A shell script: plain argv is seen through exactly; anything needing a shell is opaque, and its rough segments
/// still feed deny rules.
fn script_runs(script: &str, open: bool, depth: usize, out: &mut Runs) {
    match shell::plain_argv(script) {
        Some(argv) => expand(&argv, open, depth + 1, out),
        None => {
            out.opaque = true;
            for seg in shell::segments(script) {
                expand(&seg, true, depth + 1, out);
            }
        }
    }
}

pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// What a program runs.
enum Inner {
    /// Nothing else (as far as the table knows).
    Leaf,
    /// This argv; `true` when the wrapper appends arguments at run time.
    Argv(Vec<String>, bool),
    /// Several commands with run-time arguments (`find -exec a ; -exec b ;`).
    Many(Vec<Vec<String>>),
    /// A shell script string.
    Script(String),
    /// Several readings of one script, every one of which deny rules should see.
    Scripts(Vec<String>),
    /// Code toolgate cannot read; a script it can roughly split for deny rules, when there is one.
    Hidden(Option<String>),
    /// A wrapper with options toolgate does not understand.
    Unparsed,
}

/// How a wrapper's getopt reads its options.
#[derive(Default)]
struct Spec {
    short_flags: &'static str,
    short_values: &'static str,
    /// Short options whose value may only be attached (`-i{}`, `-d=permanent`).
    short_optional: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    long_optional: &'static [&'static str],
}

/// Options that were given, by their canonical name (short letter or full long name), with their values.
type Given = Vec<(String, Option<String>)>;

/// Parses leading options until the first operand or `--`. `None`: an option the spec does not know.
fn options(args: &[String], spec: &Spec) -> Option<(Given, usize)> {
    let mut given = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            return Some((given, i + 1));
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let all = spec
                .long_flags
                .iter()
                .chain(spec.long_values)
                .chain(spec.long_optional);
            // getopt_long accepts any unambiguous prefix of a long option.
            let exact = all.clone().find(|l| **l == name);
            let mut prefixed = all.filter(|l| l.starts_with(name));
            let full = match exact {
                Some(l) => *l,
                None => match (prefixed.next(), prefixed.next()) {
                    (Some(l), None) if !name.is_empty() => *l,
                    _ => return None,
                },
            };
            if spec.long_values.contains(&full) {
                let value = match value {
                    Some(v) => v,
                    None => {
                        i += 1;
                        args.get(i)?.clone()
                    }
                };
                given.push((full.to_owned(), Some(value)));
            } else if spec.long_flags.contains(&full) && value.is_some() {
                return None;
            } else {
                given.push((full.to_owned(), value));
            }
            i += 1;
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return Some((given, i));
        };
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            if spec.short_flags.contains(c) {
                given.push((c.to_string(), None));
            } else if spec.short_values.contains(c) {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i)?.clone()
                } else {
                    rest.to_owned()
                };
                given.push((c.to_string(), Some(value)));
                break;
            } else if spec.short_optional.contains(c) {
                given.push((c.to_string(), (!rest.is_empty()).then(|| rest.to_owned())));
                break;
            } else {
                return None;
            }
        }
        i += 1;
    }
    Some((given, i))
}

fn has(given: &Given, names: &[&str]) -> bool {
    given.iter().any(|(n, _)| names.contains(&n.as_str()))
}

fn value<'a>(given: &'a Given, names: &[&str]) -> Option<&'a str> {
    given
        .iter()
        .rev()
        .find(|(n, _)| names.contains(&n.as_str()))
        .and_then(|(_, v)| v.as_deref())
}

/// The command after the options and `operands` fixed operands; `Leaf` when there is none.
fn after(args: &[String], spec: &Spec, operands: usize) -> Inner {
    match options(args, spec) {
        None => Inner::Unparsed,
        Some((_, at)) => command_at(args, at + operands),
    }
}

fn command_at(args: &[String], at: usize) -> Inner {
    match args.get(at..) {
        Some(cmd) if !cmd.is_empty() => Inner::Argv(cmd.to_vec(), false),
        _ => Inner::Leaf,
    }
}

/// Skips `NAME=VALUE` words (environment assignments before the command).
fn skip_assignments(args: &[String], mut at: usize) -> usize {
    while args.get(at).is_some_and(|a| {
        a.split_once('=')
            .is_some_and(|(n, _)| !n.is_empty() && !n.starts_with('-'))
    }) {
        at += 1;
    }
    at
}

const SHELLS: [&str; 9] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish",
];
const AWKS: [&str; 5] = ["awk", "gawk", "mawk", "nawk", "busybox-awk"];
/// Programs that run the rest of their argv after options toolgate does not model: opaque, and every later word
/// is tried as the start of the command.
const GENERIC_RUNNERS: [&str; 27] = [
    "strace",
    "ltrace",
    "chroot",
    "unshare",
    "nsenter",
    "prlimit",
    "runuser",
    "systemd-run",
    "script",
    "cgexec",
    "firejail",
    "bwrap",
    "valgrind",
    "catchsegv",
    "gdb",
    "fakeroot",
    "proot",
    "torsocks",
    "proxychains",
    "proxychains4",
    "unbuffer",
    "faketime",
    "numactl",
    "cpulimit",
    "trickle",
    "pkexec",
    "sg",
];

fn inner(program: &str, args: &[String]) -> Inner {
    match program {
        "env" => env(args),
        "nice" => {
            // Legacy `nice -5 cmd` / `nice --5 cmd`.
            let legacy = args
                .first()
                .is_some_and(|a| a.len() > 1 && a.trim_start_matches('-').parse::<i32>().is_ok());
            let spec = Spec {
                short_values: "n",
                long_values: &["adjustment"],
                ..Spec::default()
            };
            if legacy {
                after(&args[1..], &spec, 0)
            } else {
                after(args, &spec, 0)
            }
        }
        "nohup" => after(args, &Spec::default(), 0),
        "timeout" => after(
            args,
            &Spec {
                short_flags: "v",
                short_values: "ks",
                long_flags: &["preserve-status", "foreground", "verbose"],
                long_values: &["kill-after", "signal"],
                ..Spec::default()
            },
            1,
        ),
        "stdbuf" => after(
            args,
            &Spec {
                short_values: "ioe",
                long_values: &["input", "output", "error"],
                ..Spec::default()
            },
            0,
        ),
        "ionice" => pid_mode_or(args, "ionice", &["p", "P", "u", "pid", "pgid", "uid"], 0),
        "taskset" => pid_mode_or(args, "taskset", &["p", "pid"], 1),
        "chrt" => pid_mode_or(args, "chrt", &["p", "m", "pid", "max"], 1),
        "setsid" => after(
            args,
            &Spec {
                short_flags: "cfw",
                long_flags: &["ctty", "fork", "wait"],
                ..Spec::default()
            },
            0,
        ),
        "flock" => flock(args),
        "xargs" => xargs(args),
        "find" => find(args),
        "time" => after(
            args,
            &Spec {
                short_flags: "pvaq",
                short_values: "fo",
                long_flags: &["portability", "append", "verbose", "quiet"],
                long_values: &["format", "output"],
                ..Spec::default()
            },
            0,
        ),
        "command" => match options(
            args,
            &Spec {
                short_flags: "pvV",
                ..Spec::default()
            },
        ) {
            None => Inner::Unparsed,
            Some((given, _)) if has(&given, &["v", "V"]) => Inner::Leaf,
            Some((_, at)) => command_at(args, at),
        },
        "exec" => after(
            args,
            &Spec {
                short_flags: "cl",
                short_values: "a",
                ..Spec::default()
            },
            0,
        ),
        "builtin" => command_at(args, 0),
        "eval" => Inner::Script(args.join(" ")),
        "." | "source" => Inner::Hidden(None),
        "busybox" => match args.first() {
            Some(a) if a.starts_with('-') => Inner::Unparsed,
            Some(_) => command_at(args, 0),
            None => Inner::Leaf,
        },
        "sudo" => sudo(args),
        "doas" => match options(
            args,
            &Spec {
                short_flags: "nsL",
                short_values: "uC",
                ..Spec::default()
            },
        ) {
            None => Inner::Unparsed,
            Some((given, _)) if has(&given, &["C", "L"]) => Inner::Leaf,
            Some((_, at)) if at >= args.len() => Inner::Hidden(None),
            Some((_, at)) => command_at(args, at),
        },
        "su" => su(args),
        "watch" => watch(args),
        "parallel" | "sem" => Inner::Hidden(Some(args.join(" "))),
        "git" => git(args),
        p if SHELLS.contains(&p) => shell_program(args),
        p if AWKS.contains(&p) => Inner::Hidden(None),
        p if GENERIC_RUNNERS.contains(&p) => Inner::Unparsed,
        p => interpreter(p, args),
    }
}

#[cfg(test)]
#[path = "wrapper_tests.rs"]
mod tests;
