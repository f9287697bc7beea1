//! What is PostgreSQL's own, against a real server: the private cluster of `test_support::postgres`, one per test
//! process, with one database migrated for the contract suite (`url`). Separate processes racing on one approval,
//! a server restarted under a store, wake-ups across handles, migrations and the checks at open.

mod migrate;
mod replicas;

use std::sync::OnceLock;

use test_support::postgres::Cluster;

/// The database every contract case of this process uses (each case in a namespace of its own), migrated.
pub fn url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let cluster = Cluster::shared();
        cluster.create_database("contract");
        let url = cluster.url("contract");
        store::PostgresStore::migrate(&url).unwrap();
        url
    })
    .clone()
}

/// A fresh, migrated database in the shared cluster.
pub fn fresh_database(name: &str) -> String {
    let cluster = Cluster::shared();
    let db = format!("{name}_{}", std::process::id());
    cluster.create_database(&db);
    let url = cluster.url(&db);
    store::PostgresStore::migrate(&url).unwrap();
    url
}
