//! A credential's secret: where it comes from (`value`, with `${VAR}` expanded, or `valueFile`, read whole) and
//! whether the header or the environment it goes to can carry it. Messages name the key, never the value.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{CredentialTarget, SecretSource};
use crate::error::{ConfigError, Result};
use crate::expand::{expand, Vars};

/// The largest secret, in bytes (a file larger than this is not a credential).
const MAX_SECRET_BYTES: u64 = 64 * 1024;

pub(super) fn secret(
    at: &str,
    value: Option<Value>,
    file: Option<Value>,
    vars: &Vars,
) -> Result<(String, SecretSource)> {
    match (value, file) {
        (Some(v), None) => {
            let key = format!("{at}.value");
            let s = v
                .as_str()
                .ok_or_else(|| ConfigError::invalid(&key, "must be a string"))?;
            Ok((expand(s, &key, vars)?, SecretSource::Value))
        }
        (None, Some(f)) => {
            let key = format!("{at}.valueFile");
            let s = f
                .as_str()
                .ok_or_else(|| ConfigError::invalid(&key, "must be a path"))?;
            let path = PathBuf::from(expand(s, &key, vars)?);
            let path = match path.is_absolute() {
                true => path,
                false => vars.origin.parent().unwrap_or(Path::new(".")).join(path),
            };
            Ok((read_secret(&key, &path)?, SecretSource::File(path)))
        }
        _ => Err(ConfigError::invalid(
            at,
            "give exactly one of \"value\" or \"valueFile\"",
        )),
    }
}

/// A secret file's content, less one trailing line break (as `echo` and editors write it).
fn read_secret(key: &str, path: &Path) -> Result<String> {
    let fail = |why: String| ConfigError::invalid(key, format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_SECRET_BYTES {
        return Err(fail(format!(
            "must be a file of at most {MAX_SECRET_BYTES} bytes"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let text = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    Ok(text.to_owned())
}

/// A value the header or the environment can carry; the message names the key, never the value.
pub(super) fn check_value(at: &str, target: &CredentialTarget, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(ConfigError::invalid(at, "the secret is empty"));
    }
    let ok = match target {
        CredentialTarget::Header(_) => value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b)),
        CredentialTarget::Env(_) => !value.contains('\0'),
    };
    match ok {
        true => Ok(()),
        false => Err(ConfigError::invalid(
            at,
            match target {
                CredentialTarget::Header(_) => {
                    "the secret is not a valid header value (visible ASCII, spaces and tabs only)"
                }
                CredentialTarget::Env(_) => "the secret holds a NUL byte",
            },
        )),
    }
}
