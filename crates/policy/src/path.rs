//! Path normalisation: lexical clean-up plus the caller's canonicaliser. This module never touches the filesystem.
//!
//! The caller owns symlink resolution (it is I/O). The crate resolves `.`/`..` lexically first, hands the result to
//! the caller's [`Canonicalise`], then cleans the answer again, so a canonicaliser that returns something odd cannot
//! smuggle a `..` past the matcher. Paths are `/`-separated strings; Windows paths are not supported.

use crate::action::UnknownReason;

/// The caller's path canonicaliser. It receives an absolute, lexically clean path and should resolve symlinks in
/// the deepest existing ancestor and re-append the rest, so a file about to be created still has an answer.
///
/// Returning `None` means "cannot resolve"; the call then becomes `unknown` and is denied.
pub trait Canonicalise {
    fn canonicalise(&self, path: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Canonicalise for F {
    fn canonicalise(&self, path: &str) -> Option<String> {
        self(path)
    }
}

/// A canonicaliser that trusts the lexical form: for tests, examples and callers without a filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lexical;

impl Canonicalise for Lexical {
    fn canonicalise(&self, path: &str) -> Option<String> {
        Some(path.to_owned())
    }
}

/// Values substituted into patterns and used to resolve relative paths. The caller provides them; nothing is read
/// from the environment.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// Canonical absolute workspace root: `${workspace}`, `./x` in permission strings, and relative call paths.
    pub workspace: String,
    /// Canonical absolute home directory: `~` and `${home}`. Without it, patterns using `~` fail to load.
    #[serde(default)]
    pub home: Option<String>,
}

/// Resolves `.` and `..` and collapses slashes in an absolute path. `..` at the root stays at the root, as the
/// kernel does. Returns `None` for relative input.
pub fn lexical_normalise(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// The path a `file:` URI names, read the one way common URI parsers agree on; `Ok(None)` when the scheme is not
/// `file` (in any case). Refused (`AmbiguousUri`) rather than guessed: a host other than empty or `localhost`
/// (some parsers take it as a share, some as the first directory), a relative form, a query or fragment,
/// backslashes, encoded separators or NUL, bad escapes, non-UTF-8, and `.`/`..` segments (some parsers resolve
/// them, encoded or not, and some pass them on).
pub fn file_uri_path(uri: &str) -> Result<Option<String>, UnknownReason> {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("file") {
        return Ok(None);
    }
    let ambiguous = Err(UnknownReason::AmbiguousUri);
    let path = match rest.strip_prefix("//") {
        Some(after) => {
            let (host, path) = after.split_at(after.find('/').unwrap_or(after.len()));
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) || path.is_empty() {
                return ambiguous;
            }
            path
        }
        None if rest.starts_with('/') => rest,
        None => return ambiguous,
    };
    if path.contains(['?', '#', '\\']) {
        return ambiguous;
    }
    let decoded = percent_decode(path).ok_or(UnknownReason::AmbiguousUri)?;
    let dot = decoded.split('/').any(|seg| seg == "." || seg == "..");
    if dot
        || decoded.contains(['\0', '\\'])
        || decoded.split('/').count() != path.split('/').count()
    {
        return ambiguous;
    }
    Ok(Some(decoded))
}

/// Percent-decodes; `None` for a `%` without two hex digits or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
            let (h, l) = (hex(bytes.get(i + 1))?, hex(bytes.get(i + 2))?);
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Why a raw path could not be turned into a canonical one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathError {
    NulByte,
    NoHome,
    Uncanonicalisable,
}

/// Raw call path → canonical absolute path: reject NUL, expand `~`, anchor relative paths at the workspace,
/// resolve `..` lexically, ask the canonicaliser, then normalise its answer once more.
pub(crate) fn normalise_path(
    raw: &str,
    ctx: &Context,
    canon: &dyn Canonicalise,
) -> Result<String, PathError> {
    if raw.contains('\0') {
        return Err(PathError::NulByte);
    }
    let absolute = if raw == "~" || raw.starts_with("~/") {
        let home = ctx.home.as_deref().ok_or(PathError::NoHome)?;
        format!("{home}/{}", raw.trim_start_matches('~'))
    } else if raw.starts_with('/') {
        raw.to_owned()
    } else {
        format!("{}/{raw}", ctx.workspace)
    };
    let lexical = lexical_normalise(&absolute).ok_or(PathError::Uncanonicalisable)?;
    let resolved = canon
        .canonicalise(&lexical)
        .ok_or(PathError::Uncanonicalisable)?;
    if resolved.contains('\0') {
        return Err(PathError::NulByte);
    }
    lexical_normalise(&resolved).ok_or(PathError::Uncanonicalisable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            workspace: "/ws".into(),
            home: Some("/home/u".into()),
        }
    }

    #[test]
    fn dotdot_is_resolved_before_matching() {
        assert_eq!(
            lexical_normalise("/ws/a/../../etc/passwd").as_deref(),
            Some("/etc/passwd")
        );
        assert_eq!(lexical_normalise("/../../x").as_deref(), Some("/x"));
        assert_eq!(lexical_normalise("//ws//./a/").as_deref(), Some("/ws/a"));
        assert_eq!(lexical_normalise("rel"), None);
    }

    #[test]
    fn relative_and_home_paths_are_anchored() {
        assert_eq!(
            normalise_path("src/../x", &ctx(), &Lexical),
            Ok("/ws/x".into())
        );
        assert_eq!(
            normalise_path("~/.ssh/id_rsa", &ctx(), &Lexical),
            Ok("/home/u/.ssh/id_rsa".into())
        );
        assert_eq!(
            normalise_path("a\0b", &ctx(), &Lexical),
            Err(PathError::NulByte)
        );
        let no_home = Context {
            workspace: "/ws".into(),
            home: None,
        };
        assert_eq!(
            normalise_path("~/x", &no_home, &Lexical),
            Err(PathError::NoHome)
        );
    }

    #[test]
    fn file_uris_are_read_one_way_or_refused() {
        let ok = |u: &str| file_uri_path(u).unwrap();
        assert_eq!(ok("file:///ws/a%20b").as_deref(), Some("/ws/a b"));
        assert_eq!(
            ok("file://localhost/abs/path").as_deref(),
            Some("/abs/path")
        );
        assert_eq!(ok("FILE://LocalHost/x").as_deref(), Some("/x"));
        assert_eq!(ok("file:/etc/passwd").as_deref(), Some("/etc/passwd"));
        assert_eq!(ok("https://x.org/"), None);
        for bad in [
            "file://server/share/x",
            "file:relative/x",
            "file:///ws/%2e%2e/etc/passwd",
            "file:///ws/../etc/passwd",
            "file:///ws/a%2Fb",
            "file:///ws/a%5C..%5Cb",
            "file:///ws/a\\b",
            "file:///ws/x?y",
            "file:///ws/x#y",
            "file:///ws/%00",
            "file:///ws/%zz",
            "file:///ws/%ff",
            "file://localhost",
        ] {
            assert_eq!(
                file_uri_path(bad),
                Err(UnknownReason::AmbiguousUri),
                "{bad}"
            );
        }
    }

    #[test]
    fn canonicaliser_answer_is_cleaned_again() {
        let sneaky = |_: &str| Some("/ws/../etc".to_owned());
        assert_eq!(
            normalise_path("/ws/link", &ctx(), &sneaky),
            Ok("/etc".into())
        );
        let refuses = |_: &str| None;
        assert_eq!(
            normalise_path("/ws/x", &ctx(), &refuses),
            Err(PathError::Uncanonicalisable)
        );
    }
}
