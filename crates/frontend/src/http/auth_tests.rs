//! The authenticator against the attacks on bearer tokens: wrong or misplaced keys, forged JWTs (`alg: none`,
//! HMAC signed with a public key, an unknown key), and tokens for another issuer, audience or time.

use super::*;
use base64::Engine;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;
use std::path::PathBuf;

const ED_DER: &[u8] = include_bytes!("../../../test-support/keys/ed25519.der");
const OTHER_ED_DER: &[u8] = include_bytes!("../../../test-support/keys/other-ed25519.der");
const RSA_DER: &[u8] = include_bytes!("../../../test-support/keys/rsa.der");
const RSA_PUB_PEM: &str = include_str!("../../../test-support/keys/rsa.pub.pem");
const ISS: &str = "https://idp.example";
const AUD: &str = "https://toolgate.example/mcp";

fn jwks_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-support/keys/jwks.json")
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

fn auth_with(jwks_file: PathBuf) -> Authenticator {
    Authenticator::new(&HttpAuth {
        api_keys: vec![ApiKey {
            name: "ci".into(),
            sha256: digest("secret-ci-key"),
            profile: Some("review".into()),
        }],
        jwt: Some(JwtAuth {
            jwks_file,
            issuer: ISS.into(),
            audience: AUD.into(),
            profile_claim: Some("toolgate_profile".into()),
            profile: Some("readonly".into()),
        }),
        resource: Some(AUD.into()),
        authorization_servers: vec![ISS.into()],
    })
    .unwrap()
}

fn auth() -> Authenticator {
    auth_with(jwks_path())
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn claims() -> Value {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": now() + 300})
}

fn signed(alg: Algorithm, kid: Option<&str>, der: &[u8], claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    let key = match alg {
        Algorithm::EdDSA => EncodingKey::from_ed_der(der),
        _ => EncodingKey::from_rsa_der(der),
    };
    encode(&header, claims, &key).unwrap()
}

fn ed(claims: &Value) -> String {
    signed(Algorithm::EdDSA, Some("ed-1"), ED_DER, claims)
}

fn bearer_headers(token: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    h
}

fn assert_invalid_token(result: Result<Principal, Rejection>) {
    let rejection = result.expect_err("the token must be refused");
    assert_eq!(rejection.status, StatusCode::UNAUTHORIZED);
    let challenge = rejection.challenge.unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
}

#[test]
fn no_auth_configured_is_anonymous() {
    let a = Authenticator::new(&HttpAuth::default()).unwrap();
    assert!(!a.configured());
    assert_eq!(
        a.authenticate(&HeaderMap::new()),
        Ok(Principal::anonymous())
    );
    assert!(a.metadata(&HeaderMap::new()).is_none());
}

#[test]
fn missing_bearer_is_401_with_resource_metadata() {
    let rejection = auth().authenticate(&HeaderMap::new()).unwrap_err();
    assert_eq!(rejection.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        rejection.challenge.as_deref(),
        Some("Bearer resource_metadata=\"https://toolgate.example/.well-known/oauth-protected-resource/mcp\"")
    );
    let response = rejection.into_response();
    assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
}

#[test]
fn wrong_api_key_is_401() {
    assert_invalid_token(auth().authenticate(&bearer_headers("secret-ci-kez")));
    assert_invalid_token(auth().authenticate(&bearer_headers("secret-ci-key-")));
}

#[test]
fn api_key_names_its_identity_and_profile() {
    let p = auth()
        .authenticate(&bearer_headers("secret-ci-key"))
        .unwrap();
    assert_eq!(p.identity.as_deref(), Some("key:ci"));
    assert_eq!(p.profile.as_deref(), Some("review"));
}

#[test]
fn api_key_in_another_scheme_or_cookie_is_not_accepted() {
    for value in [
        "Basic secret-ci-key",
        "secret-ci-key",
        "Bearer",
        "Bearer  ",
        "Token secret-ci-key",
    ] {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        assert_eq!(
            auth().authenticate(&h).unwrap_err().status,
            StatusCode::UNAUTHORIZED,
            "{value}"
        );
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::COOKIE,
        HeaderValue::from_static("access_token=secret-ci-key"),
    );
    assert_eq!(
        auth().authenticate(&h).unwrap_err().status,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn several_authorization_headers_are_401() {
    let mut h = bearer_headers("secret-ci-key");
    h.append(
        header::AUTHORIZATION,
        HeaderValue::from_static("Bearer secret-ci-key"),
    );
    assert_eq!(
        auth().authenticate(&h).unwrap_err().status,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn valid_jwts_name_issuer_and_subject() {
    let p = auth()
        .authenticate(&bearer_headers(&ed(&claims())))
        .unwrap();
    assert_eq!(p.identity.as_deref(), Some("jwt:https://idp.example#alice"));
    assert_eq!(p.profile.as_deref(), Some("readonly"));
    let rsa = signed(Algorithm::RS256, Some("rsa-1"), RSA_DER, &claims());
    assert!(auth().authenticate(&bearer_headers(&rsa)).is_ok());
    // Without a kid: the JWKS has exactly one EdDSA key, so it is the one meant.
    let no_kid = signed(Algorithm::EdDSA, None, ED_DER, &claims());
    assert!(auth().authenticate(&bearer_headers(&no_kid)).is_ok());
    let mut c = claims();
    c["aud"] = json!(["https://other.example", AUD]);
    c["toolgate_profile"] = json!("ops");
    let p = auth().authenticate(&bearer_headers(&ed(&c))).unwrap();
    assert_eq!(p.profile.as_deref(), Some("ops"));
}

/// The key-confusion attack: the RSA public key (which anyone may read) used as an HMAC secret, and an `oct`
/// key a careless JWKS carries.
#[test]
fn jwt_signed_with_hs256_from_public_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut set: Value =
        serde_json::from_str(&std::fs::read_to_string(jwks_path()).unwrap()).unwrap();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b"shared-secret");
    set["keys"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kty": "oct", "k": secret, "kid": "hmac-1", "alg": "HS256"}));
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, set.to_string()).unwrap();
    let a = auth_with(jwks);
    for (kid, secret) in [
        ("rsa-1", RSA_PUB_PEM.as_bytes()),
        ("hmac-1", b"shared-secret".as_slice()),
    ] {
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let mut header = Header::new(alg);
            header.kid = Some(kid.into());
            let token = encode(
                &header,
                &claims(),
                &EncodingKey::from_secret(secret).unwrap(),
            )
            .unwrap();
            assert_invalid_token(a.authenticate(&bearer_headers(&token)));
        }
    }
}

#[test]
fn jwt_alg_none_is_refused() {
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    for alg in ["none", "None", "NONE"] {
        let header = json!({"alg": alg, "typ": "JWT", "kid": "ed-1"});
        let token = format!("{}.{}.", b64(&header), b64(&claims()));
        assert_invalid_token(auth().authenticate(&bearer_headers(&token)));
        // A signature taken from a valid token does not help either.
        let valid = ed(&claims());
        let signature = valid.rsplit('.').next().unwrap();
        let token = format!("{}.{}.{signature}", b64(&header), b64(&claims()));
        assert_invalid_token(auth().authenticate(&bearer_headers(&token)));
    }
}

#[test]
fn expired_jwt_is_refused() {
    let mut c = claims();
    c["exp"] = json!(now() - 120);
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
    let mut c = claims();
    c.as_object_mut().unwrap().remove("exp");
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
}

#[test]
fn jwt_not_yet_valid_is_refused() {
    let mut c = claims();
    c["nbf"] = json!(now() + 600);
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
}

#[test]
fn jwt_for_another_audience_is_refused() {
    for aud in [
        json!("https://other.example/mcp"),
        json!([]),
        json!(["https://other.example"]),
    ] {
        let mut c = claims();
        c["aud"] = aud;
        assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
    }
    let mut c = claims();
    c.as_object_mut().unwrap().remove("aud");
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
}

#[test]
fn jwt_from_another_issuer_is_refused() {
    let mut c = claims();
    c["iss"] = json!("https://evil.example");
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
    let mut c = claims();
    c.as_object_mut().unwrap().remove("iss");
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
}

#[test]
fn jwt_signed_by_a_key_not_in_the_jwks_is_refused() {
    let token = signed(Algorithm::EdDSA, Some("ed-1"), OTHER_ED_DER, &claims());
    assert_invalid_token(auth().authenticate(&bearer_headers(&token)));
    // A kid the JWKS does not have, or one of a key of another algorithm.
    let token = signed(Algorithm::EdDSA, Some("ed-2"), ED_DER, &claims());
    assert_invalid_token(auth().authenticate(&bearer_headers(&token)));
    let token = signed(Algorithm::EdDSA, Some("rsa-1"), ED_DER, &claims());
    assert_invalid_token(auth().authenticate(&bearer_headers(&token)));
    // The RSA key is marked RS256 only.
    let token = signed(Algorithm::PS256, Some("rsa-1"), RSA_DER, &claims());
    assert_invalid_token(auth().authenticate(&bearer_headers(&token)));
}

#[test]
fn jwt_without_subject_or_with_a_bad_profile_claim_is_refused() {
    let mut c = claims();
    c.as_object_mut().unwrap().remove("sub");
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
    let mut c = claims();
    c["toolgate_profile"] = json!(["ops"]);
    assert_invalid_token(auth().authenticate(&bearer_headers(&ed(&c))));
}

#[test]
fn a_tampered_jwt_is_refused() {
    let token = ed(&claims());
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let mut c = claims();
    c["sub"] = json!("root");
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c.to_string());
    assert_invalid_token(auth().authenticate(&bearer_headers(&parts.join("."))));
}

#[test]
fn missing_or_malformed_jwks_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.json");
    let settings = |jwks_file: PathBuf| HttpAuth {
        jwt: Some(JwtAuth {
            jwks_file,
            issuer: ISS.into(),
            audience: AUD.into(),
            profile_claim: None,
            profile: None,
        }),
        ..HttpAuth::default()
    };
    let err = Authenticator::new(&settings(missing.clone()))
        .err()
        .unwrap();
    assert!(err.to_string().contains("absent.json"), "{err}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"keys\": 3}").unwrap();
    let err = Authenticator::new(&settings(bad)).err().unwrap();
    assert!(err.to_string().contains("bad.json"), "{err}");
    let only_hmac = dir.path().join("hmac.json");
    std::fs::write(&only_hmac, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).unwrap();
    let err = Authenticator::new(&settings(only_hmac)).err().unwrap();
    assert!(err.to_string().contains("no usable key"), "{err}");
}

#[test]
fn metadata_names_the_resource_and_its_servers() {
    let a = auth();
    let doc = a.metadata(&HeaderMap::new()).unwrap();
    assert_eq!(doc["resource"], AUD);
    assert_eq!(doc["authorization_servers"], json!([ISS]));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    let unconfigured = Authenticator::new(&HttpAuth {
        api_keys: vec![ApiKey {
            name: "k".into(),
            sha256: digest("k"),
            profile: None,
        }],
        ..HttpAuth::default()
    })
    .unwrap();
    let mut h = HeaderMap::new();
    h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8787"));
    assert_eq!(
        unconfigured.metadata_url(&h),
        "http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp"
    );
}

/// The JWKS with only its first key (`ed-1`), or with both, written to `dir`.
fn jwks_keeping(dir: &std::path::Path, keep: usize) -> PathBuf {
    let mut set: Value =
        serde_json::from_str(&std::fs::read_to_string(jwks_path()).unwrap()).unwrap();
    set["keys"].as_array_mut().unwrap().truncate(keep);
    let path = dir.join(format!("jwks-{keep}.json"));
    std::fs::write(&path, set.to_string()).unwrap();
    path
}

#[test]
fn a_reload_revokes_a_key_that_left_or_changed_and_nobody_for_a_key_only_added() {
    let before = auth();
    let same = auth();
    assert_eq!(before.revoked_by(&same), Revoked::default());
    let mut changed = HttpAuth {
        api_keys: vec![ApiKey {
            name: "ci".into(),
            sha256: digest("rotated-ci-key"),
            profile: Some("review".into()),
        }],
        ..HttpAuth::default()
    };
    changed.jwt = Some(JwtAuth {
        jwks_file: jwks_path(),
        issuer: ISS.into(),
        audience: AUD.into(),
        profile_claim: Some("toolgate_profile".into()),
        profile: Some("readonly".into()),
    });
    let mut rotated = Authenticator::new(&changed).unwrap();
    rotated.generation = 1;
    let revoked = before.revoked_by(&rotated);
    assert!(revoked.covers(&Some("key:ci".into())), "{revoked:?}");
    let let_in_by = |generation| Principal {
        identity: Some("key:ci".into()),
        profile: Some("review".into()),
        generation,
    };
    assert!(revoked.revokes(&let_in_by(0)));
    assert!(
        !revoked.revokes(&let_in_by(1)),
        "a caller the rotated key let in is not revoked"
    );
    assert!(!revoked.jwt, "the JWT settings and keys did not change");
    assert!(!revoked.covers(&Some("jwt:https://idp.example#alice".into())));
    assert!(!revoked.covers(&None));
    // A key that gets another profile is revoked too: its sessions run under the old one.
    changed.api_keys[0].sha256 = digest("secret-ci-key");
    changed.api_keys[0].profile = None;
    let reprofiled = Authenticator::new(&changed).unwrap();
    assert!(before
        .revoked_by(&reprofiled)
        .covers(&Some("key:ci".into())));
}

#[test]
fn a_jwks_key_removed_by_a_reload_revokes_every_jwt_caller_and_one_added_none() {
    let dir = tempfile::tempdir().unwrap();
    let one = auth_with(jwks_keeping(dir.path(), 1));
    let both = auth_with(jwks_keeping(dir.path(), 2));
    let added = one.revoked_by(&both);
    assert_eq!(added, Revoked::default(), "a key only added revokes nobody");
    let removed = both.revoked_by(&one);
    assert!(removed.jwt);
    assert!(removed.covers(&Some("jwt:https://idp.example#alice".into())));
    assert!(
        !removed.covers(&Some("key:ci".into())),
        "API keys are untouched"
    );
    // The removed key no longer verifies a token it signed.
    let rsa = signed(Algorithm::RS256, Some("rsa-1"), RSA_DER, &claims());
    assert!(both.authenticate(&bearer_headers(&rsa)).is_ok());
    assert_invalid_token(one.authenticate(&bearer_headers(&rsa)));
}
