//! The shape checks of this crate's sources, run by `shape_tests`: how long each file is, how long each
//! production function is, and which files import each other in a circle. Plain code over the text: comments
//! and literals are blanked first (so a brace or a `crate::` in them counts for nothing), then `#[cfg(test)]`
//! items; functions are measured by matching their braces, and circles are the strongly connected components of
//! the graph of `crate::` paths between files. It reads source text; it does not compile or expand macros.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One source file, its path relative to `src/` (`pipeline/mod.rs`).
pub(crate) struct Source {
    pub path: String,
    pub text: String,
}

/// Every `.rs` file beneath `dir`, sorted by path.
pub(crate) fn read_sources(dir: &Path) -> std::io::Result<Vec<Source>> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let p = entry?.path();
            if p.is_dir() {
                pending.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .into_owned();
                out.push(Source {
                    path: rel,
                    text: std::fs::read_to_string(&p)?,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Test files, which the limits do not apply to: `*_tests.rs`, `tests.rs`, `testkit.rs`.
pub(crate) fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with("_tests.rs") || name == "tests.rs" || name == "testkit.rs"
}

/// Files (tests aside) longer than `max` lines, with their length.
pub(crate) fn long_files(sources: &[Source], max: usize) -> Vec<(String, usize)> {
    sources
        .iter()
        .filter(|s| !is_test_file(&s.path))
        .map(|s| (s.path.clone(), s.text.lines().count()))
        .filter(|(_, n)| *n > max)
        .collect()
}

/// Production functions (outside test files and `#[cfg(test)]` items) longer than `max` lines, from the line of
/// `fn` to that of its closing brace: `(path, name, first line, lines)`.
pub(crate) fn long_functions(
    sources: &[Source],
    max: usize,
) -> Vec<(String, String, usize, usize)> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| !is_test_file(&s.path)) {
        let code: Vec<char> = production(&s.text).chars().collect();
        let line_of = |i: usize| code[..i].iter().filter(|c| **c == '\n').count() + 1;
        let mut i = 0;
        while let Some(at) = find_word(&code, i, "fn") {
            i = at + 2;
            let Some((name, after)) = ident(&code, skip_space(&code, i)) else {
                continue;
            };
            let Some(open) = body_start(&code, after) else {
                continue;
            };
            let Some(close) = matching(&code, open) else {
                continue;
            };
            let lines = line_of(close) - line_of(at) + 1;
            if lines > max {
                out.push((s.path.clone(), name, line_of(at), lines));
            }
        }
    }
    out
}

/// The import circles (strongly connected components of the `crate::` path graph between production files)
/// of more than `max` files, each as its files and the edges among them, sorted.
pub(crate) fn circles(sources: &[Source], max: usize) -> Vec<Vec<(String, Vec<String>)>> {
    let graph = import_graph(sources);
    components(&graph)
        .into_iter()
        .filter(|c| c.len() > max)
        .map(|c| {
            let members: BTreeSet<&String> = c.iter().collect();
            c.iter()
                .map(|f| {
                    let to = graph[f].iter().filter(|t| members.contains(t)).cloned();
                    (f.clone(), to.collect())
                })
                .collect()
        })
        .collect()
}

/// Each production file and the files its `crate::` paths name (the longest prefix that is a module file).
pub(crate) fn import_graph(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let files: BTreeMap<String, &str> = sources
        .iter()
        .map(|s| (module_of(&s.path), s.path.as_str()))
        .collect();
    let mut graph = BTreeMap::new();
    for s in sources.iter().filter(|s| !is_test_file(&s.path)) {
        let code: Vec<char> = production(&s.text).chars().collect();
        let mut to = BTreeSet::new();
        let mut i = 0;
        while let Some(at) = find_word(&code, i, "crate") {
            i = at + 5;
            if code.get(i..i + 2) != Some(&[':', ':']) {
                continue;
            }
            for path in use_tree(&code, i + 2).0 {
                let target = (1..=path.len())
                    .rev()
                    .find_map(|n| files.get(&path[..n].join("::")))
                    .filter(|f| !is_test_file(f) && **f != s.path);
                if let Some(f) = target {
                    to.insert((*f).to_owned());
                }
            }
        }
        graph.insert(s.path.clone(), to);
    }
    graph
}

/// `pipeline/mod.rs` → `pipeline`, `hooks/command.rs` → `hooks::command`, `lib.rs` → ``.
fn module_of(path: &str) -> String {
    let m = path.strip_suffix(".rs").unwrap_or(path);
    let m = m.strip_suffix("/mod").unwrap_or(m);
    if m == "lib" {
        return String::new();
    }
    m.replace('/', "::")
}

/// The paths a `use` tree starting at `i` names (`a::b`, `{a::B, c::{D, E}}`), and where it ends.
fn use_tree(code: &[char], i: usize) -> (Vec<Vec<String>>, usize) {
    let mut i = skip_space(code, i);
    if code.get(i) == Some(&'{') {
        let mut paths = Vec::new();
        i += 1;
        loop {
            i = skip_space(code, i);
            match code.get(i) {
                None => return (paths, i),
                Some('}') => return (paths, i + 1),
                Some(',') => i += 1,
                Some(_) => {
                    let (more, end) = use_tree(code, i);
                    if end == i {
                        i += 1;
                    } else {
                        i = end;
                    }
                    paths.extend(more);
                }
            }
        }
    }
    let Some((first, mut end)) = ident(code, i) else {
        return (Vec::new(), i);
    };
    let mut path = vec![first];
    while code.get(end..end + 2) == Some(&[':', ':']) {
        let next = skip_space(code, end + 2);
        if code.get(next) == Some(&'{') {
            let (rest, after) = use_tree(code, next);
            let paths = rest.into_iter().map(|r| [path.clone(), r].concat());
            let mut paths: Vec<Vec<String>> = paths.collect();
            paths.push(path);
            return (paths, after);
        }
        match ident(code, next) {
            Some((seg, after)) => {
                path.push(seg);
                end = after;
            }
            None => break,
        }
    }
    (vec![path], end)
}

/// Strongly connected components (Tarjan's), each sorted, larger than one file or not.
fn components(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, (n, n));
        w.stack.push(v);
        w.on_stack.insert(v);
        let graph = w.graph;
        for t in graph.get(v).into_iter().flatten() {
            let reach = match w.index.get(t.as_str()) {
                None => {
                    visit(w, t);
                    w.index[t.as_str()].1
                }
                Some(&(idx, _)) if w.on_stack.contains(t.as_str()) => idx,
                Some(_) => continue,
            };
            if let Some(e) = w.index.get_mut(v) {
                e.1 = e.1.min(reach);
            }
        }
        let (idx, low) = w.index[v];
        if idx == low {
            let mut comp = Vec::new();
            while let Some(t) = w.stack.pop() {
                w.on_stack.remove(t);
                comp.push(t.to_owned());
                if t == v {
                    break;
                }
            }
            comp.sort();
            w.out.push(comp);
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

/// The text with comments and the insides of string and char literals blanked, then every `#[cfg(test)]` item;
/// newlines are kept, so lines still count as in the file.
pub(crate) fn production(text: &str) -> String {
    let code = blank_literals(text);
    let mut chars: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= chars.len() {
        if chars[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let end = item_end(&chars, i + marker.len());
        for c in &mut chars[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    chars.into_iter().collect()
}

/// Where the item after an attribute ends: past further attributes, at its `;` or its closing brace.
fn item_end(code: &[char], mut i: usize) -> usize {
    loop {
        i = skip_space(code, i);
        if code.get(i) == Some(&'#') {
            match code[i..]
                .iter()
                .position(|c| *c == '[')
                .and_then(|o| matching(code, i + o))
            {
                Some(close) => i = close + 1,
                None => return code.len(),
            }
            continue;
        }
        break;
    }
    while i < code.len() {
        match code[i] {
            ';' => return i + 1,
            '{' => return matching(code, i).map_or(code.len(), |c| c + 1),
            _ => i += 1,
        }
    }
    code.len()
}

/// Comments and literal contents as spaces (newlines kept): what is left is code.
fn blank_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for x in &mut out[from..to.min(c.len())] {
            if *x != '\n' {
                *x = ' ';
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        let end = match (c[i], c.get(i + 1).copied()) {
            ('/', Some('/')) => c[i..]
                .iter()
                .position(|x| *x == '\n')
                .map_or(c.len(), |o| i + o),
            ('/', Some('*')) => block_comment_end(&c, i),
            ('"', _) => string_end(&c, i + 1),
            ('r', Some('"' | '#')) if raw_prefix(&c, i) => match raw_string_end(&c, i + 1) {
                Some(e) => e,
                None => {
                    i += 1;
                    continue;
                }
            },
            ('\'', _) => match char_end(&c, i) {
                Some(e) => e,
                None => {
                    i += 1;
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        blank(&mut out, i, end);
        i = end;
    }
    out.into_iter().collect()
}

/// Whether the `r` at `i` starts a raw string (`r"`, `br"`), not the end of an identifier.
fn raw_prefix(c: &[char], i: usize) -> bool {
    let before = |n: usize| i.checked_sub(n).and_then(|p| c.get(p));
    !is_ident_char(before(1)) || (before(1) == Some(&'b') && !is_ident_char(before(2)))
}

fn block_comment_end(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i + 1 < c.len() {
        match (c[i], c[i + 1]) {
            ('/', '*') => {
                depth += 1;
                i += 2;
            }
            ('*', '/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    c.len()
}

/// Past the closing quote of a string whose contents start at `i`.
fn string_end(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    c.len()
}

/// Past a raw string `r#…"…"#…` whose hashes start at `i`; `None` if it is not one (`r#ident`).
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let hashes = c[i..].iter().take_while(|x| **x == '#').count();
    if c.get(i + hashes) != Some(&'"') {
        return None;
    }
    let closing: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let from = i + hashes + 1;
    let at = c[from..]
        .windows(closing.len())
        .position(|w| w == closing.as_slice());
    Some(at.map_or(c.len(), |o| from + o + closing.len()))
}

/// Past a char literal at `i` (`'a'`, `'\n'`, `'\u{1F}'`); `None` for a lifetime or label (`'a`).
fn char_end(c: &[char], i: usize) -> Option<usize> {
    match (c.get(i + 1), c.get(i + 2)) {
        // The escaped character is at `i + 2` (itself a quote in `'\''`): the closing quote comes after it.
        (Some('\\'), _) => c
            .get(i + 3..)?
            .iter()
            .position(|x| *x == '\'')
            .map(|o| i + 3 + o + 1),
        (Some(_), Some('\'')) => Some(i + 3),
        _ => None,
    }
}

fn is_ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// The next `word` at or after `i` that stands alone (not part of a longer identifier).
fn find_word(code: &[char], mut i: usize, word: &str) -> Option<usize> {
    let w: Vec<char> = word.chars().collect();
    while i + w.len() <= code.len() {
        if code[i..i + w.len()] == w[..]
            && !is_ident_char(i.checked_sub(1).and_then(|p| code.get(p)))
            && !is_ident_char(code.get(i + w.len()))
        {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn skip_space(code: &[char], mut i: usize) -> usize {
    while code.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// The identifier at `i`, and where it ends.
fn ident(code: &[char], i: usize) -> Option<(String, usize)> {
    let starts = code.get(i).is_some_and(|c| c.is_alphabetic() || *c == '_');
    if !starts {
        return None;
    }
    let len = code[i..]
        .iter()
        .take_while(|c| is_ident_char(Some(c)))
        .count();
    Some((code[i..i + len].iter().collect(), i + len))
}

/// The `{` that opens a function's body after its name at `i`, or `None` when a `;` ends it first (a
/// declaration without a body). Braces inside the signature's parentheses or brackets do not count.
fn body_start(code: &[char], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < code.len() {
        match code[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            '{' if depth == 0 => return Some(i),
            ';' if depth == 0 => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The bracket that closes the one opened at `open` (`{`, `[` or `(`), in blanked code.
fn matching(code: &[char], open: usize) -> Option<usize> {
    let (o, c) = match code.get(open)? {
        '{' => ('{', '}'),
        '[' => ('[', ']'),
        '(' => ('(', ')'),
        _ => return None,
    };
    let mut depth = 0usize;
    for (i, x) in code.iter().enumerate().skip(open) {
        if *x == o {
            depth += 1;
        } else if *x == c {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}
