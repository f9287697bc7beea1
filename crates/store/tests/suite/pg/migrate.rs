//! The schema's versions and the checks a store makes when it opens.

use store::{Error, PostgresStore, POSTGRES_SCHEMA_VERSION};

use crate::support::Env;

#[test]
fn a_database_never_migrated_is_refused_with_the_command_that_migrates_it() {
    let cluster = test_support::postgres::Cluster::shared();
    let db = format!("unmigrated_{}", std::process::id());
    cluster.create_database(&db);
    let url = cluster.url(&db);
    let env = Env::new();
    let e = PostgresStore::open(&url, &env.namespace()).unwrap_err();
    assert!(
        matches!(e, Error::SchemaBehind { found: 0, needed } if needed == POSTGRES_SCHEMA_VERSION),
        "{e:?}"
    );
    assert!(e.to_string().contains("toolgate store migrate"), "{e}");
    assert!(matches!(
        PostgresStore::check_schema(&url),
        Err(Error::SchemaBehind { .. })
    ));
    let first = PostgresStore::migrate(&url).unwrap();
    assert_eq!((first.from, first.to), (0, POSTGRES_SCHEMA_VERSION));
    let again = PostgresStore::migrate(&url).unwrap();
    assert_eq!(
        (again.from, again.to),
        (POSTGRES_SCHEMA_VERSION, POSTGRES_SCHEMA_VERSION)
    );
    assert_eq!(
        PostgresStore::check_schema(&url).unwrap(),
        POSTGRES_SCHEMA_VERSION
    );
    PostgresStore::open(&url, &env.namespace()).unwrap();
}

#[test]
fn a_replica_with_another_seal_key_is_refused() {
    let url = super::fresh_database("keys");
    let (one, other) = (Env::new(), Env::new());
    // The same workspace (so the same namespace) under two state roots, each with a key of its own.
    let elsewhere = store::Namespace::open(&other.state_root, &one.workspace).unwrap();
    PostgresStore::open(&url, &one.namespace()).unwrap();
    let e = PostgresStore::open(&url, &elsewhere).unwrap_err();
    assert!(matches!(e, Error::SealKeyMismatch), "{e:?}");
    assert!(e.to_string().contains("approval.key"), "{e}");
    // With the key copied, the replica is welcome.
    std::fs::copy(
        one.state_root.join("approval.key"),
        other.state_root.join("approval.key"),
    )
    .unwrap();
    PostgresStore::open(&url, &elsewhere).unwrap();
}

#[test]
fn a_database_that_is_not_there_fails_closed_without_the_password_in_the_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://toolgate:s3cret-pw@127.0.0.1:{port}/none");
    let env = Env::new();
    let e = PostgresStore::open(&url, &env.namespace()).unwrap_err();
    assert!(matches!(e, Error::Unavailable(_)), "{e:?}");
    assert!(!e.to_string().contains("s3cret-pw"), "{e}");
    let e =
        PostgresStore::open("postgres://toolgate:s3cret-pw@[::1", &env.namespace()).unwrap_err();
    assert!(matches!(e, Error::StoreUrl(_)), "{e:?}");
    assert!(!e.to_string().contains("s3cret-pw"), "{e}");
}
