//! How far a read-only git's output reaches: the content or the names of files beneath the directory it runs in,
//! or beneath its path operands. It does not parse argv (see `git.rs`) and decides nothing (see `beneath.rs`).
//!
//! A revision or an object id reaches every file of the repository's history: `git show <blob-id>` prints a file
//! by its hash, `git log -p` every change ever made. Which operands are revisions git finds out by looking at
//! the repository, toolgate cannot, so any operand before `--` that is not unmistakably a path counts as one and
//! the call reads the whole tree beneath the directory git runs in.

use crate::action::Scope;

/// What a read-only subcommand's output can show of the files beneath what it reads.
pub(super) fn disclosure(sub: &str, args: &[String]) -> Scope {
    match sub {
        // Commit, tag and ref names only; revisions are never file paths here.
        "rev-parse" | "describe" | "merge-base" | "branch" | "tag" | "remote" => Scope::Exact,
        "stash" if !args.iter().any(|a| a == "show") => Scope::Exact,
        // `status -v` prints the staged diff.
        "status" if args.iter().take_while(|a| *a != "--").any(is_verbose) => Scope::ContentBeneath,
        // Names, object ids and commit subjects; never the content of a file.
        "status" | "ls-files" | "ls-tree" | "rev-list" | "shortlog" | "stash" => {
            Scope::NamesBeneath
        }
        _ => Scope::ContentBeneath,
    }
}

fn is_verbose(arg: &String) -> bool {
    arg == "--verbose" || (arg.starts_with('-') && !arg.starts_with("--") && arg.contains('v'))
}

/// Subcommands whose output is limited to their path operands whatever revisions they are given: each revision
/// must be a commit (anything else is an error), and a commit's changes are filtered by the paths.
const COMMITS_ONLY: [&str; 5] = ["log", "whatchanged", "shortlog", "blame", "annotate"];

/// Whether the output of a read-only `sub` with these `operands` (the first `before_dashdash` written before
/// `--`) reaches past its path operands to the whole tree of the directory git runs in.
///
/// It does when no operand is a path, and when an operand git may take as an object other than a commit is given
/// to a subcommand that prints such an object whatever the paths say (`show <blob-id> -- a.rs` prints the blob,
/// as do `diff`, `grep` and `cat-file`). The log family also reaches past its paths with `--follow` (a file's
/// history under earlier names) and `-L` (whose value names a file).
pub(super) fn whole_tree(
    sub: &str,
    args: &[String],
    operands: &[String],
    before_dashdash: usize,
) -> bool {
    let (before, after) = operands.split_at(before_dashdash.min(operands.len()));
    let has_path = !after.is_empty() || before.iter().any(|o| is_plain_path(o));
    // cat-file's operands are object names only, whatever they look like.
    if !has_path || sub == "cat-file" {
        return true;
    }
    let options = args.iter().take_while(|a| *a != "--");
    if COMMITS_ONLY.contains(&sub) {
        let log_family = matches!(sub, "log" | "whatchanged" | "shortlog");
        return log_family
            && options.into_iter().any(|a| {
                a == "--follow" || (a.starts_with('-') && !a.starts_with("--") && a.contains('L'))
            });
    }
    before
        .iter()
        .any(|o| !is_plain_path(o) && !names_a_commit(o))
}

/// Forms that can only name a commit: `HEAD` and `@` (git refuses to point them at anything else), and a
/// revision followed by `~N` or `^N` (a parent, which is a commit or an error).
fn names_a_commit(rev: &str) -> bool {
    if matches!(rev, "HEAD" | "@") {
        return true;
    }
    let stem = rev.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.len() > 1 && (stem.ends_with('~') || stem.ends_with('^'))
}

/// Whether git can only read `operand` (written before `--`) as a path: a ref name may not start with `/` or
/// with a `.` component, so `/x`, `.`, `./x`, `..` and `../x` are never revisions.
pub(super) fn is_plain_path(operand: &str) -> bool {
    operand.starts_with('/')
        || matches!(operand, "." | "..")
        || operand.starts_with("./")
        || operand.starts_with("../")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn content_names_and_nothing() {
        for (sub, args, scope) in [
            ("show", "HEAD", Scope::ContentBeneath),
            ("cat-file", "-p abc", Scope::ContentBeneath),
            ("grep", "foo", Scope::ContentBeneath),
            ("status", "-sb", Scope::NamesBeneath),
            ("status", "-sv", Scope::ContentBeneath),
            ("status", "--verbose", Scope::ContentBeneath),
            ("ls-tree", "-r HEAD", Scope::NamesBeneath),
            ("stash", "show", Scope::NamesBeneath),
            ("stash", "list", Scope::Exact),
            ("rev-parse", "HEAD", Scope::Exact),
        ] {
            assert_eq!(disclosure(sub, &words(args)), scope, "{sub} {args}");
        }
    }

    #[test]
    fn revisions_that_may_be_blobs_reach_the_whole_tree() {
        let whole = |sub: &str, args: &str| {
            let args = words(args);
            let at = args.iter().position(|a| a == "--");
            let operands: Vec<String> = args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .cloned()
                .collect();
            let before = at.map_or(operands.len(), |at| {
                args[..at].iter().filter(|a| !a.starts_with('-')).count()
            });
            whole_tree(sub, &args, &operands, before)
        };
        for (sub, args) in [
            ("show", "HEAD"),
            ("show", "0123abcd -- src"),
            ("diff", "v1 v2 -- src"),
            ("grep", "main -- src"),
            ("cat-file", "-p 0123abcd"),
            ("cat-file", "-p ./0123abcd -- ."),
            ("log", "-p"),
            ("log", "-p --follow -- src/a.rs"),
            ("log", "-L1,5:secret/key.txt -- src"),
            ("diff", "a.rs"),
        ] {
            assert!(whole(sub, args), "{sub} {args}");
        }
        for (sub, args) in [
            ("show", "HEAD -- src"),
            ("diff", "HEAD~1 -- src"),
            ("diff", "main^ ./src"),
            ("log", "-p main -- src"),
            ("blame", "v1 -- a.rs"),
            ("diff", "--cached -- ."),
        ] {
            assert!(!whole(sub, args), "{sub} {args}");
        }
    }

    #[test]
    fn only_dot_and_slash_forms_are_plain_paths() {
        for p in [".", "..", "./a", "../a", "/etc/x"] {
            assert!(is_plain_path(p), "{p}");
        }
        for p in ["a.rs", "HEAD", "0123abcd", "src/a.rs", "~/x", ".x"] {
            assert!(!is_plain_path(p), "{p}");
        }
    }
}
