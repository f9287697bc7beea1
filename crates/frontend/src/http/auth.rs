//! Who is calling over HTTP: the bearer token of one request, checked against the configured static API keys
//! (by SHA-256 digest, in constant time) and JWTs (against the keys of the JWKS file, asymmetric algorithms
//! only), turned into a `Principal` (an identity for the audit log and the profile its sessions run under) or a
//! `Rejection` (401 with `WWW-Authenticate`).
//!
//! Only `Authorization: Bearer` is read: a token in the query string, a cookie or another scheme is never looked
//! at. A rejection says only that the token is invalid; why is logged at debug level. The JWKS file is read at
//! start and again at each reload (`auth_live`). It does not decide whether the profile exists or fits the
//! served mode: opening the session under it does (`Session::open_as`), and the front end answers 403 then.

use crate::http::HttpError;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use config::{ApiKey, HttpAuth, JwtAuth};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where the protected resource metadata is served (RFC 9728 §3), and its path-suffixed form for `/mcp`.
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
pub(crate) const METADATA_MCP_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 30;

/// The signature algorithms a token may use: asymmetric only. An HMAC algorithm would let anyone who knows a
/// public key from the JWKS sign with it as the secret; `none` signs nothing.
const ASYMMETRIC: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The caller of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Principal {
    /// `key:<name>` or `jwt:<iss>#<sub>`; `None` when no authentication is configured.
    pub identity: Option<String>,
    /// The profile the caller's sessions run under; `None`: the profile `serve` applies.
    pub profile: Option<String>,
    /// Which authentication (counted by reloads, `auth_live`) let the caller in.
    pub generation: u64,
}

impl Principal {
    pub(crate) fn anonymous() -> Self {
        Self::default()
    }
}

/// Why a request is not let in, as its HTTP answer: 401 with the challenge. (A caller whose profile cannot be
/// served is answered 403 where its session is opened.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub status: StatusCode,
    /// The `WWW-Authenticate` value of a 401.
    pub challenge: Option<String>,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let why = "authentication required: send a valid bearer token";
        let body = crate::http::reply::error_body(jsonrpc::INVALID_REQUEST, why);
        let mut response = (self.status, body).into_response();
        if let Some(value) = self.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// One verification key of the JWKS, with the algorithms it may verify.
struct VerifyKey {
    /// The key as the file gave it (canonical JSON): a reload compares keys by it.
    jwk: String,
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

/// The JWT settings with the JWKS file's keys.
struct Jwt {
    settings: JwtAuth,
    keys: Vec<VerifyKey>,
}

pub(crate) struct Authenticator {
    /// 0 at start, one more at each reload that replaces it.
    pub(crate) generation: u64,
    api_keys: Vec<ApiKey>,
    jwt: Option<Jwt>,
    resource: Option<String>,
    authorization_servers: Vec<String>,
}

/// The callers a reload of the authentication revoked (`Authenticator::revoked_by`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Revoked {
    /// `key:<name>` identities.
    pub keys: std::collections::BTreeSet<String>,
    /// Every `jwt:` identity.
    pub jwt: bool,
    /// The authentication that revoked them: a caller let in by it or a later one is not revoked.
    pub generation: u64,
}

impl Revoked {
    /// Whether `principal`, let in before this revocation, lost its credential by it.
    pub(crate) fn revokes(&self, principal: &Principal) -> bool {
        principal.generation < self.generation && self.covers(&principal.identity)
    }

    /// Whether the caller `identity` was revoked.
    pub(crate) fn covers(&self, identity: &Option<String>) -> bool {
        match identity {
            Some(id) => self.keys.contains(id) || (self.jwt && id.starts_with("jwt:")),
            None => false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty() && !self.jwt
    }
}

/// What was wrong with a presented token; logged, never told to the caller.
enum Invalid {
    NoMatch,
    Jwt(String),
}

impl Invalid {
    fn reason(&self) -> &str {
        match self {
            Invalid::NoMatch => "no API key matches and it is no JWT",
            Invalid::Jwt(why) => why,
        }
    }
}

impl Authenticator {
    /// Loads what `auth` names (the JWKS file); an error says what is wrong with it.
    pub(crate) fn new(auth: &HttpAuth) -> Result<Self, HttpError> {
        let jwt = auth
            .jwt
            .as_ref()
            .map(|settings| {
                Ok::<_, HttpError>(Jwt {
                    keys: load_jwks(&settings.jwks_file)?,
                    settings: settings.clone(),
                })
            })
            .transpose()?;
        Ok(Self {
            generation: 0,
            api_keys: auth.api_keys.clone(),
            jwt,
            resource: auth.resource.clone(),
            authorization_servers: auth.authorization_servers.clone(),
        })
    }

    /// Whether anybody can authenticate at all (a non-loopback bind needs this).
    pub(crate) fn configured(&self) -> bool {
        !self.api_keys.is_empty() || self.jwt.is_some()
    }

    /// The callers this authenticator let in whom `next` would not let in as they were: each API key that
    /// `next` no longer has with the same name, digest and profile, and every JWT caller when the JWT settings
    /// changed or a key of the JWKS left it or changed (which key verified a session's token is not kept, so
    /// none of them is presumed still valid). A key only added revokes nobody.
    pub(crate) fn revoked_by(&self, next: &Authenticator) -> Revoked {
        let keys = self
            .api_keys
            .iter()
            .filter(|k| !next.api_keys.contains(k))
            .map(|k| format!("key:{}", k.name))
            .collect();
        let jwt = match (&self.jwt, &next.jwt) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(now), Some(then)) => {
                // Which file the keys come from does not matter, the keys in it do.
                let (a, b) = (&now.settings, &then.settings);
                (&a.issuer, &a.audience, &a.profile_claim, &a.profile)
                    != (&b.issuer, &b.audience, &b.profile_claim, &b.profile)
                    || now
                        .keys
                        .iter()
                        .any(|k| !then.keys.iter().any(|t| t.jwk == k.jwk))
            }
        };
        Revoked {
            keys,
            jwt,
            generation: next.generation,
        }
    }

    /// The caller of one request: `Principal::anonymous()` when no auth is configured; otherwise a valid bearer
    /// (API key or JWT) or a `Rejection` that becomes 401 with `WWW-Authenticate: Bearer resource_metadata="…"`.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Rejection> {
        if !self.configured() {
            return Ok(Principal::anonymous());
        }
        let metadata = self.metadata_url(headers);
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            // None, or several: which one counts would be a guess, so none does.
            return Err(challenge(&metadata, false));
        };
        let Some(token) = bearer(value) else {
            return Err(challenge(&metadata, false));
        };
        match self.verify(token) {
            Ok(principal) => Ok(Principal {
                generation: self.generation,
                ..principal
            }),
            Err(why) => {
                tracing::debug!(reason = why.reason(), "refused a bearer token");
                Err(challenge(&metadata, true))
            }
        }
    }

    fn verify(&self, token: &str) -> Result<Principal, Invalid> {
        if let Some(key) = match_api_key(&self.api_keys, token) {
            return Ok(Principal {
                identity: Some(format!("key:{}", key.name)),
                profile: key.profile.clone(),
                generation: 0,
            });
        }
        match &self.jwt {
            Some(jwt) if token.split('.').count() == 3 => jwt.verify(token),
            _ => Err(Invalid::NoMatch),
        }
    }

    /// The protected resource's identifier: as configured, else the endpoint's URL as this request reached it
    /// (its `Host` was validated before authentication).
    pub(crate) fn resource(&self, headers: &HeaderMap) -> String {
        match &self.resource {
            Some(r) => r.clone(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("localhost");
                format!("http://{host}/mcp")
            }
        }
    }

    /// Where the protected resource metadata is (RFC 9728 §3.1: the well-known path inserted between the
    /// resource's host and its path).
    pub(crate) fn metadata_url(&self, headers: &HeaderMap) -> String {
        let resource = self.resource(headers);
        let (origin, path) = split_origin(&resource);
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }

    /// The protected resource metadata document, `None` when no authentication is configured (nothing is
    /// protected, so nothing is advertised).
    pub(crate) fn metadata(&self, headers: &HeaderMap) -> Option<Value> {
        let servers = &self.authorization_servers;
        if !self.configured() {
            return None;
        }
        let mut doc = serde_json::json!({
            "resource": self.resource(headers),
            "bearer_methods_supported": ["header"],
        });
        if !servers.is_empty() {
            doc["authorization_servers"] = serde_json::json!(servers);
        }
        Some(doc)
    }
}

/// Checks at start (and at a reload, against the profiles it brings) that sessions can run under every profile
/// an API key or the JWT settings name, so a key whose profile is missing, or sets the other mode, stops
/// `serve` (or the reload) instead of failing its first request. A profile a token's claim names is checked
/// when it is presented (403 if it cannot be served).
pub(crate) fn check_profiles(
    auth: &HttpAuth,
    check: impl Fn(&str) -> Result<(), gateway::Error>,
) -> Result<(), HttpError> {
    let named = auth
        .api_keys
        .iter()
        .filter_map(|k| Some((format!("API key {:?}", k.name), k.profile.as_deref()?)))
        .chain(
            auth.jwt
                .iter()
                .filter_map(|j| Some(("http.auth.jwt.profile".to_owned(), j.profile.as_deref()?))),
        );
    for (by, profile) in named {
        check(profile).map_err(|e| {
            HttpError::Auth(format!(
                "{by} names profile {profile:?}, which cannot be served: {e}"
            ))
        })?;
    }
    Ok(())
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the protected resource metadata (RFC 9728), 404 when no
/// authentication is configured.
pub(crate) async fn metadata_route(
    axum::extract::State(app): axum::extract::State<std::sync::Arc<crate::http::App>>,
    headers: HeaderMap,
) -> Response {
    match app.auth.load().metadata(&headers) {
        Some(doc) => crate::http::reply::json(StatusCode::OK, doc.to_string()),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `scheme://authority` and the path (empty for `/`) of a URL.
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => {
            let (origin, path) = url.split_at(after_scheme + i);
            (origin, path.trim_end_matches('/'))
        }
        None => (url, ""),
    }
}

fn challenge(metadata: &str, presented: bool) -> Rejection {
    let mut value = format!("Bearer resource_metadata=\"{metadata}\"");
    if presented {
        value.push_str(", error=\"invalid_token\"");
    }
    Rejection {
        status: StatusCode::UNAUTHORIZED,
        challenge: Some(value),
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme's case does not matter, RFC 9110 §11.1).
fn bearer(value: &HeaderValue) -> Option<&str> {
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// The key whose digest is the token's. Every digest is compared in full whatever matched before, so how long
/// the answer takes says nothing about which key, or how much of one, a guess matched.
fn match_api_key<'a>(keys: &'a [ApiKey], token: &str) -> Option<&'a ApiKey> {
    let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let mut found = None;
    for key in keys {
        let diff = key
            .sha256
            .iter()
            .zip(digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        // `black_box` keeps the compiler from turning the fold into an early exit.
        if std::hint::black_box(diff) == 0 {
            found = Some(key);
        }
    }
    found
}

impl Jwt {
    fn verify(&self, token: &str) -> Result<Principal, Invalid> {
        let bad = |why: &str| Invalid::Jwt(why.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|e| Invalid::Jwt(e.to_string()))?;
        if !ASYMMETRIC.contains(&header.alg) {
            return Err(bad("algorithm not accepted"));
        }
        let candidates: Vec<&VerifyKey> = self
            .keys
            .iter()
            .filter(|k| k.algorithms.contains(&header.alg))
            .collect();
        let key = match &header.kid {
            Some(kid) => candidates
                .into_iter()
                .find(|k| k.kid.as_deref() == Some(kid.as_str())),
            // Without a `kid`, only a JWKS with one key of the algorithm says which key is meant.
            None if candidates.len() == 1 => candidates.first().copied(),
            None => None,
        }
        .ok_or_else(|| bad("no key for this kid and algorithm"))?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = LEEWAY_SECS;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.set_issuer(&[self.settings.issuer.as_str()]);
        validation.set_audience(&[self.settings.audience.as_str()]);
        let data =
            jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key.key, &validation)
                .map_err(|e| Invalid::Jwt(e.to_string()))?;
        let claims = data.claims;
        let sub = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("no subject"))?;
        let profile = match &self.settings.profile_claim {
            Some(claim) => match claims.get(claim) {
                Some(Value::String(p)) => Some(p.clone()),
                Some(_) => return Err(bad("profile claim is not a string")),
                None => self.settings.profile.clone(),
            },
            None => self.settings.profile.clone(),
        };
        Ok(Principal {
            identity: Some(format!("jwt:{}#{sub}", self.settings.issuer)),
            profile,
            generation: 0,
        })
    }
}

/// The verification keys of a JWKS file. Symmetric (`oct`) keys are skipped: no HMAC algorithm is accepted.
fn load_jwks(path: &std::path::Path) -> Result<Vec<VerifyKey>, HttpError> {
    let fail = |why: String| HttpError::Jwks {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let set: JwkSet = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    let mut keys = Vec::new();
    for (i, jwk) in set.keys.iter().enumerate() {
        let algorithms = algorithms(jwk);
        if algorithms.is_empty() {
            tracing::warn!(key = i, file = %path.display(), "JWKS key skipped: no asymmetric algorithm it can verify");
            continue;
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|e| fail(format!("key {i}: {e}")))?;
        keys.push(VerifyKey {
            jwk: serde_json::to_string(jwk).map_err(|e| fail(format!("key {i}: {e}")))?,
            kid: jwk.common.key_id.clone(),
            algorithms,
            key,
        });
    }
    if keys.is_empty() {
        return Err(fail(
            "no usable key (RSA, EC P-256/P-384 or Ed25519)".to_owned(),
        ));
    }
    Ok(keys)
}

/// The asymmetric algorithms a JWK may verify: its own `alg` when it names one, else every algorithm of its
/// key type.
fn algorithms(jwk: &Jwk) -> Vec<Algorithm> {
    let of_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => ASYMMETRIC[..6].to_vec(),
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => Vec::new(),
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
            _ => Vec::new(),
        },
        // Symmetric keys, and key types this build does not know.
        _ => Vec::new(),
    };
    match jwk.common.key_algorithm {
        None => of_type,
        Some(named) => match named_algorithm(named) {
            Some(a) if of_type.contains(&a) => vec![a],
            _ => Vec::new(),
        },
    }
}

fn named_algorithm(named: KeyAlgorithm) -> Option<Algorithm> {
    Some(match named {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
