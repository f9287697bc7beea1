//! Glob matching for canonical paths and for tool names. Pure string work: no filesystem access.
//!
//! Path globs are segment-aware: `*` and `?` never cross `/`, a whole segment `**` spans zero or more
//! segments (so `/ws/**` also matches `/ws` itself), and `\` escapes the next character. Dotfiles get no special
//! treatment: `*` matches `.env`. Character classes are not supported; `[` is literal. Tool-name globs have no
//! separator: `*` matches any run of characters, including `__`.

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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(char),
    One,
    Star,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    AnyDepth,
    Lit(String),
    /// `*lit`, `lit*`, `*lit*`: the common shapes, matched without the general wildcard loop.
    Suffix(String),
    Prefix(String),
    Contains(String),
    Wild(Vec<Tok>),
}

/// A compiled path glob.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    segs: Vec<Seg>,
    #[cfg_attr(not(test), allow(dead_code))]
    case: PathCase,
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
        let mut segs = Vec::new();
        for raw in split_unescaped(text) {
            if raw.is_empty() {
                // Leading `/` and doubled slashes: canonical paths have no empty segments to match.
                continue;
            }
            if raw == "**" {
                if segs.last() != Some(&Seg::AnyDepth) {
                    segs.push(Seg::AnyDepth);
                }
                continue;
            }
            let toks = tokens(&raw)?;
            if toks.iter().all(|t| matches!(t, Tok::Lit(_))) {
                segs.push(Seg::Lit(
                    toks.iter()
                        .filter_map(|t| match t {
                            Tok::Lit(c) => Some(*c),
                            _ => None,
                        })
                        .collect(),
                ));
            } else {
                segs.push(specialise(toks));
            }
        }
        Ok(PathGlob { segs, case })
    }

    /// The last literal segment, which every matching path must contain: the key `index.rs` files the rule under.
    pub(crate) fn anchor(&self) -> Option<&str> {
        self.segs.iter().rev().find_map(|s| match s {
            Seg::Lit(l) => Some(l.as_str()),
            _ => None,
        })
    }

    /// The literal suffix of the final segment (`**/*.pem` → `.pem`), which the last segment of every matching path
    /// ends with; a second index key for patterns without a literal segment.
    pub(crate) fn final_suffix(&self) -> Option<&str> {
        match self.segs.last() {
            Some(Seg::Suffix(x)) if !x.is_empty() => Some(x.as_str()),
            _ => None,
        }
    }

    /// Matches a canonical path already split by [`split_path`] (and folded when the case policy says so), so
    /// one call's paths are split once for all rules.
    pub(crate) fn matches_parts(&self, parts: &[&str]) -> bool {
        match_segs(&self.segs, parts)
    }

    /// Matches a canonical absolute path, applying this glob's case policy.
    #[cfg(test)]
    pub(crate) fn matches(&self, path: &str) -> bool {
        match self.case {
            PathCase::Sensitive => self.matches_parts(&split_path(path)),
            PathCase::Insensitive => self.matches_parts(&split_path(&path.to_lowercase())),
        }
    }
}

/// Splits a canonical path into its non-empty segments.
pub(crate) fn split_path(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// Splits on `/` but keeps `\/` inside a segment (escapes are resolved later by `tokens`).
fn split_unescaped(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let last = out.last_mut();
                if let Some(seg) = last {
                    seg.push('\\');
                    if let Some(n) = chars.next() {
                        seg.push(n);
                    }
                }
            }
            '/' => out.push(String::new()),
            other => {
                if let Some(seg) = out.last_mut() {
                    seg.push(other);
                }
            }
        }
    }
    out
}

fn tokens(raw: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => toks.push(Tok::Lit(n)),
                None => return Err("pattern ends with a lone `\\`".to_owned()),
            },
            '*' => {
                if toks.last() == Some(&Tok::Star) {
                    // `a**b` would silently act like `a*b`; make the author say what they mean.
                    return Err("`**` must be a whole path segment".to_owned());
                }
                toks.push(Tok::Star);
            }
            '?' => toks.push(Tok::One),
            other => toks.push(Tok::Lit(other)),
        }
    }
    Ok(toks)
}

/// Recognises `*lit`, `lit*` and `*lit*`, which cover nearly all real patterns (`*.rs`, `test_*`, `*secret*`).
fn specialise(toks: Vec<Tok>) -> Seg {
    let lit = |ts: &[Tok]| {
        ts.iter()
            .map(|t| match t {
                Tok::Lit(c) => Some(*c),
                _ => None,
            })
            .collect::<Option<String>>()
    };
    let n = toks.len();
    let starts = toks.first() == Some(&Tok::Star);
    let ends = n > 1 && toks.last() == Some(&Tok::Star);
    let shaped = match (starts, ends) {
        (true, true) => lit(&toks[1..n - 1]).map(Seg::Contains),
        (true, false) => lit(&toks[1..]).map(Seg::Suffix),
        (false, true) => lit(&toks[..n - 1]).map(Seg::Prefix),
        (false, false) => None,
    };
    shaped.unwrap_or(Seg::Wild(toks))
}

/// One non-`**` segment against one path segment.
fn seg_matches(seg: &Seg, part: &str) -> bool {
    match seg {
        Seg::Lit(l) => l == part,
        Seg::Suffix(x) => part.ends_with(x.as_str()),
        Seg::Prefix(x) => part.starts_with(x.as_str()),
        Seg::Contains(x) => part.contains(x.as_str()),
        Seg::Wild(toks) => wild_match(toks, part),
        Seg::AnyDepth => false,
    }
}

/// Segment matching with the classic single-backtrack wildcard algorithm: `**` plays the role of `*` and every
/// other segment consumes exactly one path segment. O(segments × parts) even for many `**`, so a hostile path
/// cannot make a pattern like `**/a/**/b/**/c` explode.
fn match_segs(segs: &[Seg], parts: &[&str]) -> bool {
    let (mut s, mut p) = (0usize, 0usize);
    let mut backtrack: Option<(usize, usize)> = None;
    while p < parts.len() {
        match segs.get(s) {
            Some(Seg::AnyDepth) => {
                backtrack = Some((s, p));
                s += 1;
            }
            Some(seg) if seg_matches(seg, parts[p]) => {
                s += 1;
                p += 1;
            }
            _ => match backtrack {
                Some((bs, bp)) => {
                    s = bs + 1;
                    p = bp + 1;
                    backtrack = Some((bs, bp + 1));
                }
                None => return false,
            },
        }
    }
    segs[s.min(segs.len())..]
        .iter()
        .all(|seg| *seg == Seg::AnyDepth)
}

/// Iterative wildcard match with single-star backtracking over char boundaries: linear in practice, no
/// allocation, no recursion.
fn wild_match(toks: &[Tok], text: &str) -> bool {
    let (mut t, mut c) = (0usize, 0usize);
    let mut backtrack: Option<(usize, usize)> = None;
    while c < text.len() {
        let Some(ch) = text[c..].chars().next() else {
            break;
        };
        match toks.get(t) {
            Some(Tok::Star) => {
                backtrack = Some((t, c));
                t += 1;
            }
            Some(Tok::One) => {
                t += 1;
                c += ch.len_utf8();
            }
            Some(Tok::Lit(l)) if *l == ch => {
                t += 1;
                c += ch.len_utf8();
            }
            _ => match backtrack {
                Some((bt, bc)) => {
                    let skipped = text[bc..].chars().next().map_or(1, char::len_utf8);
                    t = bt + 1;
                    c = bc + skipped;
                    backtrack = Some((bt, c));
                }
                None => return false,
            },
        }
    }
    toks[t.min(toks.len())..]
        .iter()
        .all(|tok| *tok == Tok::Star)
}

/// Escapes glob metacharacters so a substituted value (a workspace path) is matched literally.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A compiled tool-name glob (`*` and `?` only, no separators, case-sensitive).
#[derive(Debug, Clone)]
pub(crate) struct NameGlob {
    toks: Vec<Tok>,
    literal: Option<String>,
}

impl NameGlob {
    pub(crate) fn new(pattern: &str) -> Result<NameGlob, String> {
        let toks = tokens(pattern)?;
        let literal = toks
            .iter()
            .map(|t| match t {
                Tok::Lit(c) => Some(*c),
                _ => None,
            })
            .collect::<Option<String>>();
        Ok(NameGlob { toks, literal })
    }

    /// The characters before the first wildcard; every matching name starts with them.
    pub(crate) fn literal_prefix(&self) -> String {
        self.toks
            .iter()
            .map_while(|t| match t {
                Tok::Lit(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        match &self.literal {
            Some(lit) => lit == name,
            None => wild_match(&self.toks, name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, path: &str) -> bool {
        PathGlob::new(p, PathCase::Sensitive).unwrap().matches(path)
    }

    #[test]
    fn star_stays_within_a_segment() {
        assert!(m("/ws/*.rs", "/ws/main.rs"));
        assert!(!m("/ws/*.rs", "/ws/src/main.rs"));
        assert!(m("/ws/*", "/ws/.env"));
    }

    #[test]
    fn double_star_spans_zero_or_more_segments() {
        assert!(m("/ws/**", "/ws"));
        assert!(m("/ws/**", "/ws/a/b/c"));
        assert!(m("**/.env", "/ws/.env"));
        assert!(m("**/.env", "/.env"));
        assert!(!m("**/.env", "/ws/.env.local"));
        assert!(m("/ws/**/x", "/ws/x"));
        assert!(m("/ws/**/x", "/ws/a/b/x"));
    }

    /// The obvious recursive definition, as a reference for the iterative matcher.
    fn reference(segs: &[Seg], parts: &[&str]) -> bool {
        match segs.split_first() {
            None => parts.is_empty(),
            Some((Seg::AnyDepth, rest)) => (0..=parts.len()).any(|k| reference(rest, &parts[k..])),
            Some((seg, rest)) => match parts.split_first() {
                Some((p, tail)) => {
                    let one = match seg {
                        Seg::Lit(l) => l == p,
                        Seg::AnyDepth => false,
                        // The general matcher, so the specialised shapes are checked against it too.
                        _ => wild_match(&tokens(&seg_text(seg)).unwrap(), p),
                    };
                    one && reference(rest, tail)
                }
                None => false,
            },
        }
    }

    fn seg_text(seg: &Seg) -> String {
        match seg {
            Seg::Suffix(x) => format!("*{x}"),
            Seg::Prefix(x) => format!("{x}*"),
            Seg::Contains(x) => format!("*{x}*"),
            Seg::Wild(toks) => toks
                .iter()
                .map(|t| match t {
                    Tok::Lit(c) => c.to_string(),
                    Tok::One => "?".to_owned(),
                    Tok::Star => "*".to_owned(),
                })
                .collect(),
            Seg::Lit(l) => l.clone(),
            Seg::AnyDepth => "**".to_owned(),
        }
    }

    proptest::proptest! {
        #[test]
        fn iterative_matcher_agrees_with_the_recursive_definition(
            pat in proptest::collection::vec(proptest::sample::select(vec!["**", "a", "b", "*", "a*", "?", "*b*", "*b", "a?b", "*a*b"]), 0..6),
            path in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "ab", "ba", "abb"]), 0..7),
        ) {
            let glob = PathGlob::new(&format!("/{}", pat.join("/")), PathCase::Sensitive).unwrap();
            let parts: Vec<&str> = path.clone();
            proptest::prop_assert_eq!(glob.matches_parts(&parts), reference(&glob.segs, &parts), "{:?} {:?}", pat, path);
        }
    }

    #[test]
    fn many_double_stars_stay_linear() {
        let deep = format!("/{}", vec!["a"; 400].join("/"));
        let start = std::time::Instant::now();
        assert!(!m("**/a/**/a/**/a/**/a/**/b", &deep));
        assert!(m("**/a/**/a/**/a/**/a/**", &deep));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn sibling_prefix_is_not_a_child() {
        assert!(!m("/ws/**", "/ws-evil/x"));
        assert!(!m("/ws/**", "/ws-evil"));
    }

    #[test]
    fn escapes_make_metacharacters_literal() {
        let p = format!("{}/**", escape("/odd*dir"));
        assert!(m(&p, "/odd*dir/a"));
        assert!(!m(&p, "/oddXdir/a"));
    }

    #[test]
    fn case_policy_is_explicit() {
        assert!(!m("**/.env", "/ws/.ENV"));
        let ci = PathGlob::new("**/.env", PathCase::Insensitive).unwrap();
        assert!(ci.matches("/ws/.ENV"));
    }

    #[test]
    fn relative_patterns_are_rejected() {
        assert!(PathGlob::new("src/**", PathCase::Sensitive).is_err());
        assert!(PathGlob::new("/a/b**", PathCase::Sensitive).is_err());
    }

    #[test]
    fn name_globs_cross_double_underscores() {
        let g = NameGlob::new("files__read_*").unwrap();
        assert!(g.matches("files__read_file"));
        assert!(!g.matches("files__write_file"));
        assert!(NameGlob::new("*").unwrap().matches("a__b"));
        assert!(NameGlob::new("é*ç").unwrap().matches("éaàç"));
        assert!(!NameGlob::new("a*b").unwrap().matches("aXbY"));
    }
}
