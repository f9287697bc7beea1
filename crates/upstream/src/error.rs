//! Why a call to an upstream did not produce a result.

use serde_json::Value;

pub type Result<T, E = CallError> = std::result::Result<T, E>;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The upstream answered with a JSON-RPC error; the object is forwarded as it came.
    #[error("upstream error: {0}")]
    Rpc(Value),
    #[error("upstream {server} is not running ({why})")]
    Unavailable { server: String, why: String },
    #[error("upstream {server} did not answer within {secs} s")]
    Timeout { server: String, secs: u64 },
    #[error("the request was cancelled")]
    Cancelled,
    #[error("upstream {server} sent a response of {len} bytes, over the limit of {max} bytes")]
    TooLarge {
        server: String,
        len: usize,
        max: usize,
    },
}
