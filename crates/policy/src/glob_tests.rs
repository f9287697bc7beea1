//! Tests of `glob.rs`, including a property test against an independent reference matcher written from the
//! documented semantics (brace expansion, then segment-wise matching), sharing no code with the implementation.

use super::*;

fn m(p: &str, path: &str) -> bool {
    PathGlob::new(p, PathCase::Sensitive).unwrap().matches(path)
}

fn refused(p: &str) -> bool {
    PathGlob::new(p, PathCase::Sensitive).is_err()
}

#[test]
fn star_stays_within_a_segment() {
    assert!(m("/ws/*.rs", "/ws/main.rs"));
    assert!(!m("/ws/*.rs", "/ws/src/main.rs"));
    assert!(m("/ws/*", "/ws/.env"));
    assert!(!m("/ws/?", "/ws/a/b"));
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
    assert!(m("/**", "/"));
    assert!(m("/**", "/etc/passwd"));
}

/// Found by the reference property test: repeated trailing `**` segments must name the directory itself, as one
/// `**` does, or a deny on `secrets/**/**` would not stop listing `secrets`.
#[test]
fn repeated_trailing_double_star_names_the_directory_itself() {
    assert!(m("**/?/**/**", "/a"));
    assert!(m("/ws/secrets/**/**", "/ws/secrets"));
    assert!(m("/**/**", "/"));
    assert!(!m("/ws/secrets/**/**", "/ws/secret"));
}

#[test]
fn brace_glob_deny_blocks_pem_files() {
    assert!(m("**/*.{pem,key}", "/ws/server.pem"));
    assert!(m("**/*.{pem,key}", "/ws/certs/server.key"));
    assert!(!m("**/*.{pem,key}", "/ws/server.pub"));
    assert!(m("/ws/{src,lib}/**", "/ws/lib/a.rs"));
    assert!(m("/ws/x.{a,}", "/ws/x."));
}

#[test]
fn character_class_deny_blocks_members() {
    assert!(m("/ws/id_[dr]sa", "/ws/id_rsa"));
    assert!(m("/ws/id_[dr]sa", "/ws/id_dsa"));
    assert!(!m("/ws/id_[dr]sa", "/ws/id_esa"));
    assert!(m("/ws/[!a]x", "/ws/bx"));
    assert!(!m("/ws/[!a]x", "/ws/ax"));
    assert!(m("/ws/[a-c]", "/ws/b"));
    assert!(m("/ws/[]]", "/ws/]"));
}

#[test]
fn unsupported_glob_syntax_is_refused() {
    for p in [
        "/a/b**",
        "/a/**b",
        "/a/{**,b}",
        "/a/*(x)",
        "/a/!(x)",
        "/a/@(x|y)",
        "/a/+(x)",
        "/a/?(x)",
        "/a/!secret",
        "/a/[[:alpha:]]",
        "/a/[a/b]",
        "/a/[\\]]",
        "/a/[abc",
        "/a/{b,c",
        "/a/b}",
        "/a//b",
        "/a/b\\",
        "src/**",
    ] {
        assert!(refused(p), "{p}");
    }
    for p in ["*(x)", "a**", "!x", "[ab", "{a,b"] {
        assert!(NameGlob::new(p).is_err(), "{p}");
    }
}

#[test]
fn index_keys_are_necessary_conditions() {
    let g = PathGlob::new("/ws/src/**/*.rs", PathCase::Sensitive).unwrap();
    assert_eq!((g.anchor(), g.final_suffix()), (Some("src"), Some(".rs")));
    let g = PathGlob::new("/ws/{a/lit/b,c}/x", PathCase::Sensitive).unwrap();
    assert_eq!(g.anchor(), Some("x"));
    let g = PathGlob::new("/{a,b}/lit/*.{x,y}", PathCase::Sensitive).unwrap();
    assert_eq!((g.anchor(), g.final_suffix()), (Some("lit"), None));
    let g = PathGlob::new("/odd\\*dir/**", PathCase::Sensitive).unwrap();
    assert_eq!(g.anchor(), Some("odd*dir"));
}

#[test]
fn many_double_stars_stay_fast() {
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
    let p = format!("{}/**", escape("/odd*dir{a,b}[x]!"));
    assert!(m(&p, "/odd*dir{a,b}[x]!/a"));
    assert!(!m(&p, "/oddXdira[x]!/a"));
    assert!(m(&format!("{}/**", escape("/!proj")), "/!proj/a"));
}

#[test]
fn case_policy_is_explicit() {
    assert!(!m("**/.env", "/ws/.ENV"));
    let ci = PathGlob::new("**/.env", PathCase::Insensitive).unwrap();
    assert!(ci.matches("/ws/.env"));
}

#[test]
fn name_globs_cross_double_underscores() {
    let g = NameGlob::new("files__read_*").unwrap();
    assert!(g.matches("files__read_file"));
    assert!(!g.matches("files__write_file"));
    assert!(NameGlob::new("*").unwrap().matches("a__b"));
    assert!(NameGlob::new("é*ç").unwrap().matches("éaàç"));
    assert!(!NameGlob::new("a*b").unwrap().matches("aXbY"));
    let braces = NameGlob::new("files__{read,write}_file").unwrap();
    assert!(braces.matches("files__write_file"));
    assert_eq!(braces.literal_prefix(), "files__");
}

/// Expands `{a,b}` groups (not nested) into every alternative.
fn expand_braces(p: &str) -> Vec<String> {
    match (p.find('{'), p.find('}')) {
        (Some(open), Some(close)) if open < close => p[open + 1..close]
            .split(',')
            .flat_map(|alt| expand_braces(&format!("{}{alt}{}", &p[..open], &p[close + 1..])))
            .collect(),
        _ => vec![p.to_owned()],
    }
}

/// fnmatch for one segment: `*`, `?`, `[set]`, `[!set]` with ranges.
fn segment_matches(p: &[char], s: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('*', rest)) => (0..=s.len()).any(|k| segment_matches(rest, &s[k..])),
        Some(('?', rest)) => !s.is_empty() && segment_matches(rest, &s[1..]),
        Some(('[', rest)) => {
            let Some((&c, tail)) = s.split_first() else {
                return false;
            };
            let (negated, body) = match rest.first() {
                Some('!') => (true, &rest[1..]),
                _ => (false, rest),
            };
            let close = 1 + body[1..].iter().position(|x| *x == ']').unwrap();
            let set = &body[..close];
            let mut hit = false;
            let mut k = 0;
            while k < set.len() {
                if k + 2 < set.len() && set[k + 1] == '-' {
                    hit |= set[k] <= c && c <= set[k + 2];
                    k += 3;
                } else {
                    hit |= set[k] == c;
                    k += 1;
                }
            }
            hit != negated && segment_matches(&body[close + 1..], tail)
        }
        Some((l, rest)) => s.first() == Some(l) && segment_matches(rest, &s[1..]),
    }
}

fn segments_match(p: &[&str], s: &[&str]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((&"**", rest)) => (0..=s.len()).any(|k| segments_match(rest, &s[k..])),
        Some((seg, rest)) => match s.split_first() {
            Some((first, tail)) => {
                let (pc, sc): (Vec<char>, Vec<char>) =
                    (seg.chars().collect(), first.chars().collect());
                segment_matches(&pc, &sc) && segments_match(rest, tail)
            }
            None => false,
        },
    }
}

/// The documented semantics, written independently of the implementation.
fn reference(pattern: &str, path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    expand_braces(pattern).iter().any(|alt| {
        let segs: Vec<&str> = alt.split('/').collect();
        segments_match(&segs, &parts)
    })
}

proptest::proptest! {
    #[test]
    fn path_globs_agree_with_an_independent_reference(
        anchored in proptest::bool::ANY,
        pat in proptest::collection::vec(proptest::sample::select(vec![
            "**", "a", "b", "ab", "*", "a*", "*b", "?", "*a*b", "[ab]", "[!a]", "[a-b]x", "{a,b}", "{a,b*}",
            "*.{x,y}", ".x", "a.x",
        ]), 1..6),
        path in proptest::collection::vec(proptest::sample::select(vec![
            "a", "b", "ab", "ba", "abb", "a.x", "b.y", ".x", "bx", "x",
        ]), 1..7),
    ) {
        let pattern = if anchored { format!("/{}", pat.join("/")) } else { format!("**/{}", pat.join("/")) };
        let path = format!("/{}", path.join("/"));
        let glob = PathGlob::new(&pattern, PathCase::Sensitive).unwrap();
        proptest::prop_assert_eq!(glob.matches(&path), reference(&pattern, &path), "{} {}", pattern, path);
    }
}
