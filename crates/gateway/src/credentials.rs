//! Credential grants at call time: which of a server's credentials (`config::Credential`) a caller's request
//! carries, or that it may not reach the server at all. For each header or variable a server's credentials set,
//! the caller gets the credential granted to its identity, else to its profile, else to everyone; when all of
//! them are granted to others, the request is refused with `CREDENTIAL_NOT_GRANTED` (an env credential is in
//! the server's one process, so a caller not granted it may not call that server).
//!
//! Header credentials go on the caller's requests to their server only (`upstream::with_call_headers`, which
//! the link checks against its own server); the names of the credentials used go into the call's records,
//! never the values. What an upstream sends back is scrubbed of its credentials' values before it goes
//! anywhere (`scrub`), so a server that echoes its token or prints its environment does not hand it to the
//! agent. A reload replaces the whole table (`Stages::set_credentials`): rotated values apply from the next
//! request on.

use std::collections::HashMap;

use config::{Credential, CredentialTarget};
use serde_json::Value;

use crate::outcome::{CallError, CallOutcome, Refusal, RefusalCode};
use crate::pipeline::context::CallContext;

/// Secrets shorter than this are not scrubbed from answers: replacing every occurrence of a few characters
/// would mangle answers and protects nothing.
const MIN_SCRUBBED: usize = 8;

/// What a caller's request to one server carries.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Use {
    /// Header name (lower case) and value, for an HTTP server.
    pub headers: Vec<(String, String)>,
    /// The names of the credentials in play, for the records.
    pub names: Vec<String>,
}

/// Every server's credentials, and the values to scrub from each server's answers.
#[derive(Default)]
pub(crate) struct Credentials {
    by_server: HashMap<String, Vec<Credential>>,
    scrubbed: HashMap<String, Vec<String>>,
}

impl Credentials {
    pub(crate) fn new(all: &[Credential]) -> Self {
        let mut by_server: HashMap<String, Vec<Credential>> = HashMap::new();
        let mut scrubbed: HashMap<String, Vec<String>> = HashMap::new();
        for c in all {
            by_server
                .entry(c.server.clone())
                .or_default()
                .push(c.clone());
            let secrets = scrubbed.entry(c.server.clone()).or_default();
            let value = c.secret.expose();
            // `Bearer <token>`: the token alone is what a server would echo.
            let token = value.rsplit(' ').next().unwrap_or(value);
            for s in [value, token] {
                if s.len() >= MIN_SCRUBBED && !secrets.iter().any(|x| x == s) {
                    secrets.push(s.to_owned());
                }
            }
        }
        // Longest first, so a value is replaced before a token inside it.
        for secrets in scrubbed.values_mut() {
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        Self {
            by_server,
            scrubbed,
        }
    }

    /// What a request of `identity` (a principal, or `local`) under `profile` to `server` carries; refused when a
    /// credential the server needs is granted only to others.
    pub(crate) fn for_call(
        &self,
        server: &str,
        identity: &str,
        profile: Option<&str>,
    ) -> Result<Use, Refusal> {
        let Some(all) = self.by_server.get(server) else {
            return Ok(Use::default());
        };
        let mut used = Use::default();
        let mut targets: Vec<&CredentialTarget> = Vec::new();
        for c in all {
            if !targets.contains(&&c.target) {
                targets.push(&c.target);
            }
        }
        for target in targets {
            let best = all
                .iter()
                .filter(|c| &c.target == target)
                .filter_map(|c| Some((c.grant.rank(identity, profile)?, c)))
                .max_by_key(|(rank, _)| *rank);
            let Some((_, c)) = best else {
                return Err(not_granted(server, target, identity));
            };
            if let CredentialTarget::Header(name) = &c.target {
                used.headers
                    .push((name.clone(), c.secret.expose().to_owned()));
            }
            used.names.push(c.name.clone());
        }
        used.names.sort();
        Ok(used)
    }

    /// What a request of `ctx`'s caller (its identity, or `local`, and its profile) to `server` carries.
    pub(crate) fn for_caller(&self, server: &str, ctx: &CallContext) -> Result<Use, Refusal> {
        let identity = crate::codemode::bounds::identity(ctx);
        self.for_call(server, &identity, ctx.guard.profile())
    }

    /// The headers the request of `ctx`'s caller to `server` carries (`None`: nothing to add), or its refusal.
    pub(crate) fn call_headers(
        &self,
        server: &str,
        ctx: &CallContext,
    ) -> Result<Option<upstream::CallHeaders>, Refusal> {
        let used = self.for_caller(server, ctx)?;
        Ok((!used.headers.is_empty()).then(|| upstream::CallHeaders::new(server, &used.headers)))
    }

    /// True when `server` has credentials whose values its answers are scrubbed of.
    pub(crate) fn scrubs(&self, server: &str) -> bool {
        self.scrubbed.get(server).is_some_and(|s| !s.is_empty())
    }

    /// Replaces every credential value of `server` in the strings of `value` (keys included) with
    /// `[credential]`; true when anything was replaced.
    pub(crate) fn scrub(&self, server: &str, value: &mut Value) -> bool {
        match self.scrubbed.get(server) {
            Some(secrets) if !secrets.is_empty() => scrub_value(value, secrets),
            _ => false,
        }
    }

    /// Scrubs whatever of `outcome` came from `server`: its result, its error, its input requests.
    pub(crate) fn scrub_outcome(&self, server: &str, outcome: &mut CallOutcome) {
        if !self.scrubs(server) {
            return;
        }
        match outcome {
            CallOutcome::Complete(v, _)
            | CallOutcome::InputRequired(v)
            | CallOutcome::Bridged { result: v, .. } => {
                self.scrub(server, v);
            }
            CallOutcome::Failed(CallError::Upstream(e)) => match e {
                upstream::CallError::Rpc(v) => {
                    self.scrub(server, v);
                }
                upstream::CallError::Unavailable { why, .. } => *why = self.scrub_text(server, why),
                _ => {}
            },
            CallOutcome::Failed(CallError::BadRequest(why)) => *why = self.scrub_text(server, why),
            CallOutcome::Refused(_) | CallOutcome::Held(_) | CallOutcome::Cancelled => {}
        }
    }

    /// An upstream's status as shown to agents and admins: its error, list errors and stderr scrubbed.
    pub(crate) fn scrub_status(&self, status: &mut upstream::Status) {
        if !self.scrubs(&status.server) {
            return;
        }
        let server = status.server.clone();
        let scrub = |s: &mut String| *s = self.scrub_text(&server, s);
        status.last_error.iter_mut().for_each(scrub);
        status.stderr_tail.iter_mut().for_each(scrub);
        status
            .list_errors
            .iter_mut()
            .for_each(|(_, why)| scrub(why));
    }

    /// `text` with every credential value of `server` replaced.
    pub(crate) fn scrub_text(&self, server: &str, text: &str) -> String {
        let mut out = text.to_owned();
        if let Some(secrets) = self.scrubbed.get(server) {
            scrub_str(&mut out, secrets);
        }
        out
    }
}

fn not_granted(server: &str, target: &CredentialTarget, identity: &str) -> Refusal {
    let what = match target {
        CredentialTarget::Header(h) => format!("the {h} header"),
        CredentialTarget::Env(e) => format!("its {e} variable"),
    };
    Refusal::new(
        RefusalCode::CredentialNotGranted,
        format!(
            "toolgate holds the credential server {server:?} needs ({what}), and it is not granted to \
             {identity} or its profile; an operator can grant it in the config's \"credentials\" section"
        ),
    )
}

const REPLACEMENT: &str = "[credential]";

fn scrub_value(value: &mut Value, secrets: &[String]) -> bool {
    match value {
        Value::String(s) => scrub_str(s, secrets),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |hit, v| scrub_value(v, secrets) | hit),
        Value::Object(map) => {
            let mut hit = false;
            let tainted: Vec<String> = map
                .keys()
                .filter(|k| secrets.iter().any(|s| k.contains(s.as_str())))
                .cloned()
                .collect();
            for key in tainted {
                if let Some(v) = map.remove(&key) {
                    let mut clean = key;
                    scrub_str(&mut clean, secrets);
                    map.insert(clean, v);
                    hit = true;
                }
            }
            map.values_mut()
                .fold(hit, |hit, v| scrub_value(v, secrets) | hit)
        }
        _ => false,
    }
}

fn scrub_str(s: &mut String, secrets: &[String]) -> bool {
    let mut hit = false;
    for secret in secrets {
        if s.contains(secret.as_str()) {
            *s = s.replace(secret.as_str(), REPLACEMENT);
            hit = true;
        }
    }
    hit
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
