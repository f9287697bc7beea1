//! How each wrapper that runs another program names it: one parser per wrapper, reading its options as its own
//! getopt does (`env`, `flock`, `xargs`, `find -exec`, `sudo`, `su`, `watch`, the shells, `git`, interpreters).

use super::{command_at, has, options, shell, skip_assignments, value, Inner, Spec};

/// Interpreters whose inline-code option runs code toolgate cannot read.
const INTERPRETERS: [(&str, &str); 8] = [
    ("python", "c"),
    ("perl", "eE"),
    ("ruby", "e"),
    ("node", "ep"),
    ("php", "rR"),
    ("lua", "e"),
    ("deno", ""),
    ("bun", ""),
];

pub(super) fn env(args: &[String]) -> Inner {
    let spec = Spec {
        short_flags: "i0v",
        short_values: "uCS",
        long_flags: &[
            "ignore-environment",
            "null",
            "debug",
            "list-signal-handling",
        ],
        long_values: &["unset", "chdir", "split-string"],
        long_optional: &["block-signal", "default-signal", "ignore-signal"],
        ..Spec::default()
    };
    // A lone `-` is `-i`.
    let skip = usize::from(args.first().is_some_and(|a| a == "-"));
    let Some((given, at)) = options(&args[skip..], &spec) else {
        return Inner::Unparsed;
    };
    let at = skip_assignments(args, skip + at);
    let rest = args.get(at..).unwrap_or_default();
    match value(&given, &["S", "split-string"]) {
        // `-S` splits its string into words (with its own quoting rules) that come before the remaining operands.
        Some(split) => match shell::plain_argv(split) {
            Some(mut argv) => {
                argv.extend(rest.iter().cloned());
                Inner::Argv(argv, false)
            }
            None => Inner::Hidden(Some(format!("{split} {}", rest.join(" ")))),
        },
        None => command_at(args, at),
    }
}

/// Programs that either act on existing processes (`-p PID`: nothing new runs) or run a command.
pub(super) fn pid_mode_or(
    args: &[String],
    program: &str,
    pid_options: &[&str],
    operands: usize,
) -> Inner {
    let spec = match program {
        "ionice" => Spec {
            short_flags: "tP",
            short_values: "cnpu",
            long_flags: &["ignore", "pgid"],
            long_values: &["class", "classdata", "pid", "uid"],
            ..Spec::default()
        },
        "taskset" => Spec {
            short_flags: "acp",
            long_flags: &["all-tasks", "cpu-list", "pid"],
            ..Spec::default()
        },
        _ => Spec {
            short_flags: "abdefimoprRv",
            short_values: "TPD",
            long_flags: &[
                "all-tasks",
                "batch",
                "deadline",
                "fifo",
                "ext",
                "idle",
                "max",
                "other",
                "pid",
                "rr",
                "reset-on-fork",
                "verbose",
            ],
            long_values: &["sched-runtime", "sched-period", "sched-deadline"],
            ..Spec::default()
        },
    };
    match options(args, &spec) {
        None => Inner::Unparsed,
        Some((given, _)) if has(&given, pid_options) => Inner::Leaf,
        Some((_, at)) => command_at(args, at + operands),
    }
}

pub(super) fn flock(args: &[String]) -> Inner {
    let spec = Spec {
        short_flags: "sxeunoF",
        short_values: "Ewc",
        long_flags: &[
            "shared",
            "exclusive",
            "unlock",
            "nonblock",
            "nb",
            "close",
            "no-fork",
            "verbose",
        ],
        long_values: &["conflict-exit-code", "timeout", "wait", "command"],
        ..Spec::default()
    };
    let Some((given, at)) = options(args, &spec) else {
        return Inner::Unparsed;
    };
    if let Some(script) = value(&given, &["c", "command"]) {
        return Inner::Script(script.to_owned());
    }
    // `flock FILE -c COMMAND` names the command after the lock file.
    match args.get(at + 1).map(String::as_str) {
        Some("-c" | "--command") => match args.get(at + 2) {
            Some(script) => Inner::Script(script.clone()),
            None => Inner::Unparsed,
        },
        Some(a) if a.starts_with("-c") || a.starts_with("--command=") => Inner::Unparsed,
        _ => command_at(args, at + 1),
    }
}

pub(super) fn xargs(args: &[String]) -> Inner {
    let spec = Spec {
        short_flags: "0oprtx",
        short_values: "aEdILnPs",
        short_optional: "eil",
        long_flags: &[
            "null",
            "interactive",
            "no-run-if-empty",
            "open-tty",
            "verbose",
            "exit",
            "show-limits",
        ],
        long_values: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_optional: &["eof", "replace", "max-lines"],
    };
    match options(args, &spec) {
        None => Inner::Unparsed,
        Some((_, at)) => match args.get(at..) {
            Some(cmd) if !cmd.is_empty() => Inner::Argv(cmd.to_vec(), true),
            // Without a command xargs runs `echo`.
            _ => Inner::Leaf,
        },
    }
}

pub(super) fn find(args: &[String]) -> Inner {
    let mut cmds = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if matches!(arg.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let end = args[start..]
                .iter()
                .position(|a| a == ";" || a == "+")
                .map_or(args.len(), |p| start + p);
            cmds.push(args[start..end].to_vec());
            i = end;
        }
        i += 1;
    }
    if cmds.is_empty() {
        Inner::Leaf
    } else {
        Inner::Many(cmds)
    }
}

pub(super) fn sudo(args: &[String]) -> Inner {
    let spec = Spec {
        short_flags: "AbBEeHiKklnNPSsVvh",
        short_values: "CDgprtTUuR",
        long_flags: &[
            "askpass",
            "background",
            "bell",
            "edit",
            "set-home",
            "login",
            "remove-timestamp",
            "reset-timestamp",
            "list",
            "non-interactive",
            "preserve-groups",
            "stdin",
            "shell",
            "version",
            "validate",
            "help",
        ],
        long_values: &[
            "close-from",
            "chdir",
            "group",
            "host",
            "prompt",
            "chroot",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "user",
            "login-class",
        ],
        long_optional: &["preserve-env"],
        ..Spec::default()
    };
    let Some((given, at)) = options(args, &spec) else {
        return Inner::Unparsed;
    };
    if has(&given, &["e", "edit"]) {
        // sudoedit runs the user's editor as root on the named files.
        return Inner::Hidden(None);
    }
    let at = skip_assignments(args, at);
    if at >= args.len() {
        // No command: an interactive root shell (`-s`, `-i`) or housekeeping (`-k`, `-v`, `-l`).
        return if has(&given, &["s", "i", "shell", "login"]) {
            Inner::Hidden(None)
        } else {
            Inner::Leaf
        };
    }
    if has(&given, &["l", "list"]) {
        return Inner::Leaf;
    }
    // With `-s`/`-i` sudo quotes the argv into `$SHELL -c`, so the words are still one argv.
    command_at(args, at)
}

pub(super) fn su(args: &[String]) -> Inner {
    let spec = Spec {
        short_flags: "flmpP",
        short_values: "cgGsw",
        long_flags: &["login", "preserve-environment", "pty", "fast"],
        long_values: &[
            "command",
            "session-command",
            "group",
            "supp-group",
            "shell",
            "whitelist-environment",
        ],
        ..Spec::default()
    };
    // su's getopt permutes: options may follow the user name.
    let mut given = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let Some((g, at)) = options(&args[i..], &spec) else {
            return Inner::Unparsed;
        };
        given.extend(g);
        if args[i..i + at].last().is_some_and(|a| a == "--") {
            break;
        }
        i += at + 1;
    }
    match value(&given, &["c", "command", "session-command"]) {
        Some(script) => Inner::Script(script.to_owned()),
        // An interactive shell as another user, or `su - user args…` passing words to the shell.
        None => Inner::Hidden(None),
    }
}

pub(super) fn watch(args: &[String]) -> Inner {
    let spec = Spec {
        short_flags: "bcCegptwxr",
        short_values: "nq",
        short_optional: "d",
        long_flags: &[
            "beep", "color", "no-color", "errexit", "chgexit", "precise", "no-title", "no-wrap",
            "exec", "no-rerun",
        ],
        long_values: &["interval", "equexit"],
        long_optional: &["differences"],
    };
    match options(args, &spec) {
        None => Inner::Unparsed,
        Some((_, at)) if at >= args.len() => Inner::Leaf,
        Some((given, at)) if has(&given, &["x", "exec"]) => command_at(args, at),
        // Without `-x`, watch joins its words and runs them with `sh -c`.
        Some((_, at)) => Inner::Script(args[at..].join(" ")),
    }
}

pub(super) fn shell_program(args: &[String]) -> Inner {
    let mut script_mode = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" || arg == "-" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                i += 1;
            }
        } else if let Some(cluster) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) {
            for c in cluster.chars() {
                match c {
                    'c' => script_mode = true,
                    // `-o OPTION` / `-O OPTION` take the next word.
                    'o' | 'O' => i += 1,
                    _ => {}
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    match (script_mode, args.get(i)) {
        // In a shell string split roughly (`sh -c 'rm -rf /'` → `sh -c rm -rf /`) the script's words are spread over
        // the following operands, so deny rules also see them joined.
        (true, Some(script)) if args.len() > i + 1 => {
            Inner::Scripts(vec![script.clone(), args[i..].join(" ")])
        }
        (true, Some(script)) => Inner::Script(script.clone()),
        // A script file, or commands read from stdin: nothing toolgate can read.
        _ => Inner::Hidden(None),
    }
}

/// Git options and subcommands that run programs named in configuration or arguments.
pub(super) fn git(args: &[String]) -> Inner {
    const RUNNERS: [&str; 8] = [
        "bisect",
        "submodule",
        "filter-branch",
        "difftool",
        "mergetool",
        "rebase",
        "daemon",
        "instaweb",
    ];
    let hidden = args.iter().any(|a| {
        [
            "-c",
            "--config-env",
            "--exec-path",
            "--upload-pack",
            "--receive-pack",
            "--exec",
            "-x",
            "-O",
            "--open-files-in-pager",
            "--ext-diff",
            "--textconv",
        ]
        .iter()
        .any(|o| a.starts_with(o))
    }) || args.iter().any(|a| RUNNERS.contains(&a.as_str()));
    if !hidden {
        return Inner::Leaf;
    }
    // `-c alias.x='!rm -rf /'`, `-c core.pager='rm …'`: configuration values that are commands still feed deny
    // rules, read as shell scripts.
    let commands: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "-c")
        .filter_map(|w| w[1].split_once('='))
        .map(|(_, value)| value.trim_start_matches('!'))
        .filter(|value| !value.is_empty())
        .collect();
    Inner::Hidden((!commands.is_empty()).then(|| commands.join(" ; ")))
}

pub(super) fn interpreter(program: &str, args: &[String]) -> Inner {
    let name = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let Some((_, letters)) = INTERPRETERS.iter().find(|(p, _)| *p == name) else {
        return Inner::Leaf;
    };
    let inline = args.iter().take_while(|a| a.starts_with('-')).any(|a| {
        a.strip_prefix('-')
            .is_some_and(|c| !c.starts_with('-') && c.chars().any(|ch| letters.contains(ch)))
            || matches!(a.as_str(), "--eval" | "--print" | "--command")
    });
    // `deno eval` / `bun -e` style subcommands.
    let eval_sub = matches!(args.first().map(String::as_str), Some("eval" | "-e"));
    if inline || eval_sub {
        Inner::Hidden(None)
    } else {
        Inner::Leaf
    }
}
