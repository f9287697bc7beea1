//! What a deny rule means for an operation that reaches beneath a path: a listing discloses names, a diff of a
//! directory discloses content, a move relocates everything beneath. Pure pattern arithmetic over the rule's path
//! glob text; no matching of real paths happens here.
//!
//! The answer over-approximates on purpose (fail closed): a segment with any metacharacter is taken to match any
//! name, so a pattern such as `**/*.pem` counts as possibly denying something beneath every directory.
//!
//! What each scope makes of a deny rule `G` and the directory `D` (see `decide.rs` for the effects):
//! - `Whole`: every path directly beneath `D` is denied by `G` (`D` lies inside a denied tree). Listing or reading
//!   it is denied.
//! - `Unnamed`: `G` may deny a path beneath `D` whose last name the pattern does not spell out (`secret/**`,
//!   `*.pem`): a recursive listing would show names nobody has seen. It asks.
//! - `Named`: `G` may deny a path beneath `D` whose last name the pattern spells out (`**/.env`): a recursive
//!   listing shows only that a name the policy itself spells exists there; content disclosure still asks.
//! - A one-level listing (`Children`) shows only names directly in `D`: a pattern reaches it only through a rest
//!   of one name (`*.pem` unnamed, `.env` or `secret/**` named), or as a whole denied tree. A wild segment is
//!   matched against `D`'s own names, which are known.
//! - For a move, only patterns anchored to the source count: `**/.env` denies the moved `.env` wherever it lands,
//!   while `./secret/**` no longer matches once `secret/` moved away, so any reach of such a pattern denies.

use crate::action::Scope;
use crate::glob::split_path;

/// How a deny pattern reaches beneath a directory, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    None,
    Named,
    Unnamed,
    Whole,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seg<'a> {
    /// `**`: any number of segments.
    Any,
    /// `*`: any one name.
    Star,
    /// Another segment with metacharacters: matched against the directory's own names, taken to match any one
    /// name beneath it, but not every name.
    Wild(&'a str),
    Literal(&'a str),
}

fn classify(seg: &str) -> Seg<'_> {
    if seg == "**" {
        Seg::Any
    } else if seg == "*" {
        Seg::Star
    } else if seg.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        Seg::Wild(seg)
    } else {
        Seg::Literal(seg)
    }
}

/// How `pattern` (an absolute path glob, variables substituted, case-folded like `dir`) reaches beneath `dir`
/// for an operation of `scope`.
pub(crate) fn reach(pattern: &str, dir: &str, scope: Scope) -> Reach {
    let segs: Vec<Seg<'_>> = pattern
        .split('/')
        .filter(|s| !s.is_empty())
        .map(classify)
        .collect();
    let parts = split_path(dir);
    // Positions in `segs` reachable after consuming every part of `dir`, each with whether the consumed prefix
    // was made of `**` only (such a pattern matches the same names wherever the tree is moved).
    let mut states: Vec<(usize, bool)> = closure(&segs, vec![(0, true)]);
    for part in &parts {
        let mut next = Vec::new();
        for &(i, floating) in &states {
            match segs.get(i) {
                Some(Seg::Any) => next.push((i, floating)),
                Some(Seg::Star) => next.push((i + 1, false)),
                Some(Seg::Wild(w)) if wild_matches(w, part) => next.push((i + 1, false)),
                Some(Seg::Literal(l)) if l == part => next.push((i + 1, false)),
                _ => {}
            }
        }
        states = closure(&segs, next);
        if states.is_empty() {
            return Reach::None;
        }
    }
    states
        .iter()
        .filter(|&&(_, floating)| !(scope == Scope::Moved && floating))
        .map(|&(i, _)| {
            let rest = &segs[i..];
            if scope != Scope::Children {
                return rest_reach(rest);
            }
            // A one-level listing shows names directly in the directory: the rest must match one name (a
            // trailing `**` may match none), and what it reaches is that one name.
            let names: Vec<&Seg<'_>> = rest.iter().filter(|s| **s != Seg::Any).collect();
            match names.as_slice() {
                [] => rest_reach(rest),
                [Seg::Literal(_)] => Reach::Named,
                [_] => Reach::Unnamed,
                _ => Reach::None,
            }
        })
        .max()
        .unwrap_or(Reach::None)
}

/// Whether one wild segment (`*.pem`) matches a name of the directory's own path, which is known; a segment
/// that does not compile is taken to match (fail closed).
fn wild_matches(segment: &str, name: &str) -> bool {
    globset::Glob::new(segment).map_or(true, |g| g.compile_matcher().is_match(name))
}

/// Adds the positions after each `**` (it may match nothing), without duplicates.
fn closure(segs: &[Seg<'_>], mut states: Vec<(usize, bool)>) -> Vec<(usize, bool)> {
    let mut i = 0;
    while i < states.len() {
        let (at, floating) = states[i];
        if segs.get(at) == Some(&Seg::Any) && !states.contains(&(at + 1, floating)) {
            states.push((at + 1, floating));
        }
        i += 1;
    }
    states.sort_unstable();
    states.dedup();
    states
}

/// What the rest of a pattern, after the directory, matches beneath it.
fn rest_reach(rest: &[Seg<'_>]) -> Reach {
    match rest.last() {
        // The pattern ends at the directory itself: nothing beneath (the path's own check handles it).
        None => Reach::None,
        Some(_) if rest.iter().all(|s| matches!(s, Seg::Any | Seg::Star)) => Reach::Whole,
        Some(Seg::Literal(_)) => Reach::Named,
        Some(_) => Reach::Unnamed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pattern: &str, dir: &str) -> Reach {
        reach(pattern, dir, Scope::NamesBeneath)
    }

    #[test]
    fn a_denied_tree_is_whole_beneath_its_root() {
        assert_eq!(r("/ws/secret/**", "/ws/secret"), Reach::Whole);
        assert_eq!(r("/ws/secret/*", "/ws/secret"), Reach::Whole);
        assert_eq!(r("/ws/secret/**", "/ws/secret/deeper"), Reach::Whole);
    }

    #[test]
    fn ancestors_of_denied_names_are_reached() {
        assert_eq!(r("/ws/secret/**", "/ws"), Reach::Unnamed);
        assert_eq!(r("/ws/secret/key.txt", "/ws"), Reach::Named);
        assert_eq!(r("**/.env", "/ws/src"), Reach::Named);
        assert_eq!(r("**/*.pem", "/ws/src"), Reach::Unnamed);
        assert_eq!(r("/ws/*/*.pem", "/ws/src"), Reach::Unnamed);
        assert_eq!(r("/ws/*/**", "/ws/src"), Reach::Whole);
        assert_eq!(r("/ws/secret/**", "/ws/public"), Reach::None);
        assert_eq!(r("/home/u/.ssh/**", "/ws"), Reach::None);
        assert_eq!(r("/ws/a", "/ws/a"), Reach::None);
    }

    #[test]
    fn a_one_level_listing_is_reached_only_by_names_directly_in_it() {
        let c = |p: &str, d: &str| reach(p, d, Scope::Children);
        assert_eq!(c("**/*.pem", "/ws"), Reach::Unnamed);
        assert_eq!(c("**/.env", "/ws"), Reach::Named);
        assert_eq!(c("**/.env/**", "/ws"), Reach::Named);
        assert_eq!(c("/ws/secret/**", "/ws"), Reach::Named);
        assert_eq!(c("/ws/a/secret/**", "/ws"), Reach::None);
        assert_eq!(c("**/*.pem/**", "/ws"), Reach::Unnamed);
        assert_eq!(c("/ws/secret/**", "/ws/secret"), Reach::Whole);
    }

    #[test]
    fn moves_escape_only_anchored_patterns() {
        assert_eq!(reach("**/.env", "/ws/conf", Scope::Moved), Reach::None);
        assert_eq!(reach("**/.git/**", "/ws/src", Scope::Moved), Reach::None);
        assert_eq!(
            reach("/ws/a/secret/**", "/ws/a", Scope::Moved),
            Reach::Unnamed
        );
        assert_eq!(
            reach("**/secret/*.key", "/ws/secret", Scope::Moved),
            Reach::Unnamed
        );
        assert_eq!(reach("/ws/a/.env", "/ws/a", Scope::Moved), Reach::Named);
    }
}
