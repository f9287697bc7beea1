//! What the pipeline is told about one governed request besides the request itself: its trace id, where it came
//! from, whether the client wants progress, and its cancellation. It holds no transport: a front end (a stdio
//! session today, an HTTP request or a code-mode run later) builds one per request.

use crate::outbox::Stream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Where a governed request came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A client's request.
    Client,
    /// `toolgate_resume` of an approved call, which re-enters after the approval stage under the trace id and
    /// tool name of the call that was held.
    Resume,
}

/// One governed request's context.
#[derive(Clone, Debug)]
pub(crate) struct CallContext {
    /// One id from first sight through approval, resume and execution.
    pub trace_id: String,
    pub origin: Origin,
    /// The stream of the client request this call answers: what the call sends its client besides the answer
    /// (that it is waiting for approval, the approval question itself) goes there.
    pub stream: Stream,
    /// The client's progress token, when it asked for progress (a held call reports that it is waiting).
    pub progress: Option<Value>,
    pub cancel: CancellationToken,
}

impl CallContext {
    /// A client's request with these params (its progress token is read from `_meta`), answered on `stream`.
    pub(crate) fn client(stream: Stream, params: &Value, cancel: &CancellationToken) -> Self {
        Self {
            trace_id: crate::ids::trace_id(),
            origin: Origin::Client,
            stream,
            progress: params.pointer("/_meta/progressToken").cloned(),
            cancel: cancel.clone(),
        }
    }

    /// The context an approved call runs in when it is resumed: the held call's trace.
    pub(crate) fn resumed(&self, trace_id: &str) -> Self {
        Self {
            trace_id: trace_id.to_owned(),
            origin: Origin::Resume,
            stream: self.stream.clone(),
            progress: self.progress.clone(),
            cancel: self.cancel.clone(),
        }
    }
}
