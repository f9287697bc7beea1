//! Glob matching for canonical paths and for tool names, on `globset`. Pure string work: no filesystem access.
//!
//! Path globs follow gitignore: `*` and `?` never cross `/`, `[abc]` / `[!a-c]` are character classes, `{a,b}` is
//! an alternation, a whole-segment `**` spans zero or more segments (so `/ws/**` also matches `/ws` itself), and
//! `\` escapes the next character. Dotfiles get no special treatment: `*` matches `.env`. Tool-name globs use the
//! same syntax with no separator: `*` matches any run of characters, including `__`.
//!
//! Syntax that other glob dialects give a meaning and this one does not is refused when the rule loads, never read
//! literally: a deny rule that quietly matches nothing would be fail-open. Refused: `**` that is not a whole
//! segment, extglob groups (`*(…)`, `!(…)`, `@(…)`, `+(…)`, `?(…)`), a leading `!` (gitignore negation), POSIX
//! classes (`[[:alpha:]]`), `/` or `\` inside a class, empty path segments, and unbalanced `[`, `{`, `}`.

use globset::{Candidate, Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

/// How path patterns compare letters. Part of the policy file (`path_case`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathCase {
    /// Default: bytes must match exactly, as on Linux filesystems.
    #[default]
    Sensitive,
    /// Letters are folded on both sides, for case-insensitive filesystems (macOS, Windows shares).
    Insensitive,
}

/// One `/`-separated piece of a pattern, as the scanner saw it.
#[derive(Debug, Default)]
struct Segment {
    /// The unescaped text when the segment has no wildcard, class or alternation.
    literal: Option<String>,
    /// The unescaped text after a single leading `*` when that is the segment's only wildcard (`*.pem`).
    suffix: Option<String>,
    any_depth: bool,
}

/// Validates `text` against the supported syntax and describes its segments (for the index). `path`: `/` separates
/// segments and `**` must be a whole one; otherwise (tool names) there are no separators.
fn scan(text: &str, path: bool) -> Result<Vec<Segment>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut segments = Vec::new();
    // Per segment: the unescaped literal text, whether anything but a single leading `*` was special, and whether
    // the segment started with `*`.
    let (mut lit, mut meta, mut lead_star) = (String::new(), false, false);
    let mut seg_start = 0usize;
    // Inside a class: the first index at which `]` closes it (a `]` right after `[`, `[!` or `[^` is a member, as
    // in every glob dialect).
    let mut depth = 0usize;
    let mut class_closes_from: Option<usize> = None;
    let mut i = 0usize;
    let finish = |lit: &mut String, meta: bool, lead_star: bool, raw: &[char]| {
        let any_depth = raw == ['*', '*'];
        let literal = (!meta && !lead_star).then(|| lit.clone());
        let suffix = (!meta && lead_star && !lit.is_empty()).then(|| lit.clone());
        lit.clear();
        Segment {
            literal,
            suffix,
            any_depth,
        }
    };
    while let Some(&c) = chars.get(i) {
        if let Some(from) = class_closes_from {
            match c {
                ']' if i >= from => class_closes_from = None,
                '/' if path => return Err("`/` inside a character class".to_owned()),
                '\\' => return Err("`\\` inside a character class is not supported".to_owned()),
                '[' if matches!(chars.get(i + 1), Some(':' | '=' | '.')) => {
                    return Err("POSIX character classes (`[:alpha:]`) are not supported".to_owned())
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        let at_seg_start = i == seg_start;
        match c {
            '\\' => {
                let n = chars.get(i + 1).ok_or("pattern ends with a lone `\\`")?;
                lit.push(*n);
                i += 2;
                continue;
            }
            '/' if path => {
                if at_seg_start && i > 0 {
                    return Err("empty path segment (`//`)".to_owned());
                }
                // Segments inside an alternation are not necessary conditions, so they are never literal.
                let m = meta || depth > 0;
                segments.push(finish(&mut lit, m, lead_star, &chars[seg_start..i]));
                (meta, lead_star) = (depth > 0, false);
                seg_start = i + 1;
            }
            '!' if at_seg_start => {
                return Err(
                    "a leading `!` (negation) is not supported; write a separate rule".to_owned(),
                )
            }
            '*' if chars.get(i + 1) == Some(&'*') => {
                let whole = at_seg_start
                    && matches!(chars.get(i + 2), None | Some('/'))
                    && depth == 0
                    && path;
                if !whole {
                    return Err(if path {
                        "`**` must be a whole path segment".to_owned()
                    } else {
                        "`**` is not supported in tool names; `*` already matches any run"
                            .to_owned()
                    });
                }
                meta = true;
                i += 2;
                continue;
            }
            '*' | '?' | '+' | '@' | '!' if chars.get(i + 1) == Some(&'(') => {
                return Err(format!("extglob group `{c}(` is not supported"));
            }
            '*' if at_seg_start && depth == 0 => lead_star = true,
            '*' | '?' => meta = true,
            '[' => {
                let negated = matches!(chars.get(i + 1), Some('!' | '^'));
                class_closes_from = Some(i + if negated { 3 } else { 2 });
                meta = true;
            }
            '{' => {
                depth += 1;
                meta = true;
            }
            '}' => {
                depth = depth.checked_sub(1).ok_or("`}` without a matching `{`")?;
            }
            ',' if depth > 0 => {}
            other => lit.push(other),
        }
        i += 1;
    }
    if class_closes_from.is_some() {
        return Err("unclosed `[`".to_owned());
    }
    if depth > 0 {
        return Err("unclosed `{`".to_owned());
    }
    segments.push(finish(&mut lit, meta, lead_star, &chars[seg_start..]));
    Ok(segments)
}

fn glob(source: &str, path: bool, case: PathCase) -> Result<Glob, String> {
    GlobBuilder::new(source)
        .literal_separator(path)
        .backslash_escape(true)
        .empty_alternates(true)
        .case_insensitive(case == PathCase::Insensitive)
        .build()
        .map_err(|e| format!("pattern `{source}`: {e}"))
}

/// A compiled path glob.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    /// The pattern and, when it ends in `/**`, the pattern without it: a rule naming a directory's contents names
    /// the directory too, so a deny on `secrets/**` also stops listing or removing `secrets` itself. A set rather
    /// than matchers because globset answers common shapes (`**/*.pem`, `/ws/**`) without running a regex.
    matchers: GlobSet,
    anchor: Option<String>,
    suffix: Option<String>,
}

impl PathGlob {
    /// Compiles `pattern`, which must be absolute (start with `/`) or start with `**`.
    pub(crate) fn new(pattern: &str, case: PathCase) -> Result<PathGlob, String> {
        if pattern.contains('\0') {
            return Err("path pattern contains a NUL byte".to_owned());
        }
        if !(pattern.starts_with('/') || pattern.starts_with("**")) {
            return Err(format!(
                "path pattern `{pattern}` must be absolute or start with `${{workspace}}`, `~` or `**`"
            ));
        }
        let folded;
        let text = match case {
            PathCase::Sensitive => pattern,
            PathCase::Insensitive => {
                folded = pattern.to_lowercase();
                &folded
            }
        };
        // Canonical paths never end in `/`, so a trailing one would make the pattern match nothing.
        let text = if text.len() > 1 {
            text.strip_suffix('/').unwrap_or(text)
        } else {
            text
        };
        let segments = scan(text, true).map_err(|e| format!("path pattern `{pattern}`: {e}"))?;
        let mut set = GlobSetBuilder::new();
        set.add(glob(text, true, case)?);
        if segments.len() > 1 && segments.last().is_some_and(|s| s.any_depth) {
            // `a/**/**` names `a` as much as `a/**` does: strip every trailing `/**`.
            let mut dir = &text[..text.len() - 3];
            while let Some(shorter) = dir.strip_suffix("/**") {
                dir = shorter;
            }
            set.add(glob(if dir.is_empty() { "/" } else { dir }, true, case)?);
        }
        let matchers = set
            .build()
            .map_err(|e| format!("path pattern `{pattern}`: {e}"))?;
        let anchor = segments
            .iter()
            .rev()
            .find_map(|s| s.literal.clone().filter(|l| !l.is_empty()));
        let suffix = segments.last().and_then(|s| s.suffix.clone());
        Ok(PathGlob {
            matchers,
            anchor,
            suffix,
        })
    }

    /// The last literal segment, which every matching path must contain: the key `index.rs` files the rule under.
    pub(crate) fn anchor(&self) -> Option<&str> {
        self.anchor.as_deref()
    }

    /// The literal suffix of the final segment (`**/*.pem` → `.pem`), which the last segment of every matching path
    /// ends with; a second index key for patterns without a literal segment.
    pub(crate) fn final_suffix(&self) -> Option<&str> {
        self.suffix.as_deref()
    }

    /// Matches a canonical path prepared once per call (and folded when the case policy says so).
    pub(crate) fn matches_candidate(&self, path: &Candidate<'_>) -> bool {
        self.matchers.is_match_candidate(path)
    }

    /// Matches a canonical absolute path.
    #[cfg(test)]
    pub(crate) fn matches(&self, path: &str) -> bool {
        self.matches_candidate(&Candidate::new(path))
    }
}

/// Splits a canonical path into its non-empty segments.
pub(crate) fn split_path(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// Escapes glob metacharacters so a substituted value (a workspace path) is matched literally.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '*' | '?' | '\\' | '[' | ']' | '{' | '}' | ',' | '!' | '(' | ')'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A compiled tool-name glob (same syntax as paths, no separators, case-sensitive).
#[derive(Debug, Clone)]
pub(crate) struct NameGlob {
    matcher: GlobMatcher,
    literal: Option<String>,
    prefix: String,
}

impl NameGlob {
    pub(crate) fn new(pattern: &str) -> Result<NameGlob, String> {
        let segments =
            scan(pattern, false).map_err(|e| format!("tool pattern `{pattern}`: {e}"))?;
        let literal = segments.first().and_then(|s| s.literal.clone());
        let mut prefix = String::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            match c {
                '*' | '?' | '[' | '{' => break,
                '\\' => prefix.extend(chars.next()),
                other => prefix.push(other),
            }
        }
        Ok(NameGlob {
            matcher: glob(pattern, false, PathCase::Sensitive)?.compile_matcher(),
            literal,
            prefix,
        })
    }

    /// The characters before the first wildcard; every matching name starts with them.
    pub(crate) fn literal_prefix(&self) -> String {
        self.prefix.clone()
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        match &self.literal {
            Some(lit) => lit == name,
            None => self.matcher.is_match(name),
        }
    }
}

#[cfg(test)]
#[path = "glob_tests.rs"]
mod tests;
