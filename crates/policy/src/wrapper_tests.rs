//! Tests of `wrapper.rs`: each wrapper's command is found, unknown options make the command opaque.

use super::*;

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_owned).collect()
}

fn runs(argv: &[&str]) -> Runs {
    expand_argv(&argv.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
}

/// True when some run starts with `rm` and carries `-rf` right after it (or is open).
fn runs_rm(r: &Runs) -> bool {
    r.runs
        .iter()
        .any(|run| run.argv.first().is_some_and(|p| basename(p) == "rm"))
}

#[test]
fn every_wrapper_in_the_table_is_seen_through() {
    for argv in [
        vec!["env", "-S", "rm -rf /"],
        vec!["env", "--split-string=rm -rf /"],
        vec!["env", "-i", "-u", "HOME", "A=1", "B=2", "rm", "-rf", "/"],
        vec!["env", "-", "rm", "x"],
        vec!["env", "--ign", "rm", "x"],
        vec!["sh", "-c", "rm -rf /"],
        vec!["bash", "-ec", "rm -rf /"],
        vec!["dash", "-o", "errexit", "-c", "rm x"],
        vec!["zsh", "-c", "echo hi; rm -rf /"],
        vec!["nice", "-n", "5", "rm", "x"],
        vec!["nice", "-5", "rm", "x"],
        vec!["nohup", "rm", "x"],
        vec!["timeout", "-s", "KILL", "5", "rm", "x"],
        vec!["timeout", "--kill-after=1", "5", "rm", "x"],
        vec!["stdbuf", "-oL", "rm", "x"],
        vec!["ionice", "-c3", "rm", "x"],
        vec!["taskset", "0x1", "rm", "x"],
        vec!["chrt", "-f", "10", "rm", "x"],
        vec!["chrt", "10", "rm", "x"],
        vec!["flock", "/tmp/l", "rm", "x"],
        vec!["flock", "-w", "3", "/tmp/l", "-c", "rm -rf /"],
        vec!["flock", "-c", "rm -rf /", "/tmp/l"],
        vec!["setsid", "-f", "rm", "x"],
        vec!["xargs", "-0", "-n1", "rm"],
        vec!["xargs", "-I{}", "rm", "{}"],
        vec!["find", ".", "-exec", "rm", "{}", ";"],
        vec!["find", ".", "-execdir", "rm", "{}", "+"],
        vec!["find", ".", "-name", "x", "-ok", "rm", "{}", ";"],
        vec!["find", ".", "-okdir", "rm", "{}", ";"],
        vec!["time", "-p", "rm", "x"],
        vec!["command", "rm", "x"],
        vec!["exec", "-a", "name", "rm", "x"],
        vec!["busybox", "rm", "x"],
        vec!["busybox", "sh", "-c", "rm x"],
        vec!["sudo", "-u", "root", "rm", "x"],
        vec!["sudo", "-E", "HOME=/", "rm", "x"],
        vec!["sudo", "--user=root", "rm", "x"],
        vec!["doas", "-u", "root", "rm", "x"],
        vec!["su", "-c", "rm -rf /", "root"],
        vec!["su", "root", "--command=rm x"],
        vec!["watch", "-n", "1", "rm", "x"],
        vec!["watch", "-x", "rm", "x"],
        vec!["parallel", "rm", ":::", "a", "b"],
        vec!["eval", "rm", "x"],
        vec!["/usr/bin/env", "/bin/rm", "x"],
        vec![
            "sudo", "env", "A=1", "timeout", "5", "nice", "sh", "-c", "rm -rf /",
        ],
        vec!["strace", "-f", "-o", "/dev/null", "rm", "x"],
        vec!["sudo", "--frobnicate", "rm", "x"],
        vec!["timeout", "5", "git", "-c", "alias.x=!rm -rf /", "x"],
        vec!["git", "-c", "core.pager=rm -rf /", "log"],
    ] {
        assert!(runs_rm(&runs(&argv)), "{argv:?}");
    }
}

#[test]
fn options_with_values_are_not_taken_for_the_command() {
    // `-u rm` is the user named `rm`; the command is `ls`.
    let r = runs(&["sudo", "-u", "rm", "ls"]);
    assert_eq!(r.runs.last().map(|x| x.argv.clone()), Some(words("ls")));
    assert!(!r.opaque);
    let r = runs(&["timeout", "5", "ls"]);
    assert_eq!(r.runs.len(), 2);
    assert!(r.is_leaf() || r.runs[1].argv == words("ls"));
}

#[test]
fn unknown_wrapper_options_make_the_command_opaque() {
    for argv in [
        vec!["env", "--frob", "rm"],
        vec!["timeout", "-Z", "5", "ls"],
        vec!["xargs", "--bogus", "ls"],
        vec!["nice", "--frob", "ls"],
    ] {
        assert!(runs(&argv).opaque, "{argv:?}");
    }
    // getopt accepts unambiguous abbreviations (`--k` is `--kill-after`); an ambiguous one (`--i`: ignore-environment
    // or ignore-signal) is unknown.
    assert!(!runs(&["timeout", "--k", "1", "5", "ls"]).opaque);
    assert!(runs(&["env", "--i", "ls"]).opaque);
}

#[test]
fn programs_running_unreadable_code_are_opaque() {
    for argv in [
        vec!["awk", "BEGIN{system(\"rm -rf /\")}"],
        vec!["gawk", "-f", "x.awk"],
        vec!["sh", "script.sh"],
        vec!["bash"],
        vec!["sh", "-c", "rm $(cat list)"],
        vec!["python3", "-c", "import os"],
        vec!["perl", "-e", "system 1"],
        vec!["node", "-e", "x"],
        vec!["git", "-c", "core.pager=sh", "log"],
        vec!["git", "grep", "-Osh", "x"],
        vec!["git", "rebase", "--exec", "rm x"],
        vec!["su", "root"],
        vec!["sudo", "-s"],
        vec!["sudo", "-e", "/etc/passwd"],
        vec!["env", "-S", "rm \"$X\""],
        vec!["parallel", "echo", ":::", "a"],
    ] {
        assert!(runs(&argv).opaque, "{argv:?}");
    }
}

#[test]
fn plain_commands_are_leaves() {
    for argv in [
        vec!["ls", "-la"],
        vec!["find", ".", "-name", "*.rs"],
        vec!["git", "status"],
        vec!["python3", "script.py"],
        vec!["xargs"],
        vec!["nice"],
        vec!["ionice", "-p", "1"],
        vec!["taskset", "-p", "1"],
        vec!["command", "-v", "rm"],
        vec!["sudo", "-k"],
    ] {
        assert!(runs(&argv).is_leaf(), "{argv:?}");
    }
}

#[test]
fn hostile_nesting_is_bounded() {
    let mut argv = vec!["env"; 10_000];
    argv.push("rm");
    let r = runs(&argv);
    assert!(r.opaque);
    assert!(r.runs.len() <= MAX_RUNS);
    let many: Vec<&str> = std::iter::repeat_n(["-exec", "rm", ";"], 500)
        .flatten()
        .collect();
    let mut find = vec!["find", "."];
    find.extend(many);
    assert!(runs(&find).runs.len() <= MAX_RUNS);
}
