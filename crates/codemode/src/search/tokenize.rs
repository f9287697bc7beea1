//! The one tokenizer of search, used for the catalog and for queries alike: it splits `server__tool`,
//! snake_case, kebab-case, camelCase / PascalCase and letter–digit boundaries, lowercases, and folds simple
//! English plurals, so `listDirectories` finds `list_directory`. It does not stem beyond plurals: a wrong stem
//! merges words a model meant apart.

/// The terms of `text`, in order (duplicates kept: term frequency counts them).
pub(crate) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        split_run(run, &mut out);
    }
    out
}

/// Splits one alphanumeric run at case and digit boundaries: `HTTPServer2Go` → `http`, `server`, `2`, `go`.
fn split_run(run: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = run.chars().collect();
    let mut start = 0;
    for i in 1..=chars.len() {
        let boundary = match (chars.get(i - 1), chars.get(i), chars.get(i + 1)) {
            (_, None, _) => true,
            (Some(a), Some(b), next) => {
                (a.is_lowercase() && b.is_uppercase())
                    || (a.is_numeric() != b.is_numeric())
                    // The last capital of an acronym starts the next word: `HTTPServer` → `HTTP` | `Server`.
                    || (a.is_uppercase()
                        && b.is_uppercase()
                        && next.is_some_and(|c| c.is_lowercase()))
            }
            (None, Some(_), _) => false,
        };
        if boundary {
            if let Some(word) = chars.get(start..i) {
                if !word.is_empty() {
                    let lower: String = word.iter().flat_map(|c| c.to_lowercase()).collect();
                    out.push(singular(lower));
                }
            }
            start = i;
        }
    }
}

/// Folds a simple plural to its singular: `directories` → `directory`, `files` → `file`, `matches` → `match`.
/// Short words and words ending in `ss`, `us`, `is` are left alone (`class`, `status`, `this`).
fn singular(word: String) -> String {
    let n = word.len();
    if n <= 3 || !word.is_ascii() {
        return word;
    }
    if let Some(stem) = word.strip_suffix("ies") {
        if n > 4 {
            return format!("{stem}y");
        }
    }
    for suffix in ["sses", "shes", "ches", "xes", "zes"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            return format!("{stem}{}", &suffix[..suffix.len() - 2]);
        }
    }
    if word.ends_with('s') && !["ss", "us", "is"].iter().any(|s| word.ends_with(s)) {
        return word[..n - 1].to_owned();
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn t(s: &str) -> Vec<String> {
        tokens(s)
    }

    #[test]
    fn splits_every_naming_style() {
        assert_eq!(t("files__read_text_file"), ["file", "read", "text", "file"]);
        assert_eq!(t("listDirectoryTree"), ["list", "directory", "tree"]);
        assert_eq!(t("HTTPServer2Go"), ["http", "server", "2", "go"]);
        assert_eq!(t("get-issue-comments"), ["get", "issue", "comment"]);
        assert_eq!(
            t("mcp__tracker__delete_issue"),
            ["mcp", "tracker", "delete", "issue"]
        );
        assert_eq!(t("sha256sum"), ["sha", "256", "sum"]);
        assert_eq!(t(""), Vec::<String>::new());
        assert_eq!(t("__--  "), Vec::<String>::new());
    }

    #[test]
    fn folds_simple_plurals_and_leaves_the_rest() {
        assert_eq!(
            t("directories files matches boxes"),
            ["directory", "file", "match", "box"]
        );
        assert_eq!(
            t("class status this gas is"),
            ["class", "status", "this", "gas", "is"]
        );
        assert_eq!(t("Résumés"), ["résumés"]);
    }
}
