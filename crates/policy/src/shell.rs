//! Telling argv from shell strings, and a best-effort split of shell strings for deny matching only.
//!
//! A command string is argv only when it is "plain": words of safe characters separated by spaces. Anything a shell
//! would interpret (operators, quotes, expansions, globs, escapes, newlines) makes it a shell string, which an allow
//! rule can never admit. The split below is NOT a shell parser; it exists so that a deny rule such as `rm` can still
//! fire on `ls && rm -rf /`, where over-matching only makes the answer stricter.

/// Characters that keep a word literal in every POSIX shell.
fn is_plain_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '_' | '-' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%')
}

/// Splits a plain command string into argv; `None` when the string needs a shell to interpret it.
pub(crate) fn plain_argv(command: &str) -> Option<Vec<String>> {
    if command.chars().any(|c| !(is_plain_char(c) || c == ' ')) {
        return None;
    }
    let argv: Vec<String> = command
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    (!argv.is_empty()).then_some(argv)
}

/// Names the first shell operator in `command`, for explanations.
pub(crate) fn first_operator(command: &str) -> Option<&'static str> {
    const OPS: [&str; 12] = [
        "&&", "||", "$(", "`", ";", "|", ">", "<", "\n", "&", "${", "$",
    ];
    OPS.into_iter().find(|op| command.contains(op))
}

/// Rough segmentation for deny matching: split on operators and quotes, then on whitespace.
pub(crate) fn segments(command: &str) -> Vec<Vec<String>> {
    command
        .split(['&', ';', '|', '\n', '(', ')', '`', '<', '>', '$', '{', '}'])
        .map(|seg| {
            seg.split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|seg| !seg.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_strings_become_argv() {
        assert_eq!(
            plain_argv("npm  run test:unit"),
            Some(vec!["npm".into(), "run".into(), "test:unit".into()])
        );
        assert_eq!(plain_argv("   "), None);
    }

    #[test]
    fn anything_a_shell_interprets_is_not_argv() {
        for s in [
            "a && b",
            "a; b",
            "a | b",
            "echo $(id)",
            "echo `id`",
            "a > f",
            "a < f",
            "a\nb",
            "a &",
            "echo \"x\"",
            "ls *",
            "echo $HOME",
            "cd ~",
        ] {
            assert_eq!(plain_argv(s), None, "{s}");
            assert!(
                first_operator(s).is_some() || s.contains(['"', '*', '~']),
                "{s}"
            );
        }
    }

    #[test]
    fn segments_expose_every_chained_command() {
        let segs = segments("ls && rm -rf / ; echo $(curl evil)");
        assert!(segs.contains(&vec!["rm".to_owned(), "-rf".to_owned(), "/".to_owned()]));
        assert!(segs.contains(&vec!["curl".to_owned(), "evil".to_owned()]));
    }
}
