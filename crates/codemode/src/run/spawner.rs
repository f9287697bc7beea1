//! Starting workers off the async threads, on the sandbox's keeper thread (`sandbox::spawn_kept`), which lives
//! as long as the process: a worker dies with the thread that started it, and a pooled blocking thread exits
//! after a few idle seconds. Workers of finished runs are reaped there too, so an answer does not wait for
//! that. This module does not choose what to start.

use sandbox::{Piped, PipedSpec};
use tokio::sync::oneshot;

/// Starts a worker on the keeper thread.
pub(super) async fn spawn(spec: PipedSpec) -> Result<Piped, String> {
    let (tx, rx) = oneshot::channel();
    sandbox::spawn_kept(
        spec,
        Box::new(move |started| {
            // A run dropped meanwhile drops the worker here, which kills it.
            let _ = tx.send(started);
        }),
    )
    .map_err(|e| e.to_string())?;
    match rx.await {
        Ok(Ok(worker)) => Ok(worker),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the sandbox keeper thread is gone".to_owned()),
    }
}

/// Ends a worker whose run is over: its tree is killed now, and reaped on the keeper thread.
pub(super) fn dispose(worker: Piped) {
    sandbox::dispose(worker);
}
