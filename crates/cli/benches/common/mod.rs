//! What the bench binaries share: their command-line options, the runtime they drive toolgate from, and the
//! percentile they report. Each bench uses a subset.

#![allow(dead_code)]

/// The value after `name` on the bench's command line.
pub fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

/// The value after `name`, as a number, or `default`.
pub fn number(name: &str, default: usize) -> usize {
    arg(name).and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// The nearest-rank percentile `p` of `sorted`.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Two worker threads: the client side of a bench, beside the toolgate process it measures.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The `toolgate` binary this bench was built with.
pub fn toolgate() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// `toolgate serve --config <config> <extra…>`, initialised as a 2025-11-25 client.
pub async fn serve(config: &str, extra: &[&str]) -> test_support::StdioClient {
    let mut args = vec!["serve", "--config", config];
    args.extend_from_slice(extra);
    let client =
        test_support::StdioClient::spawn(&toolgate(), &args, &[], std::collections::HashMap::new())
            .unwrap();
    client
        .initialize("2025-11-25", serde_json::json!({}))
        .await
        .unwrap();
    client
}
