//! Starting workers off the async threads, on one thread that lives as long as the process.
//!
//! Forking and waiting for the exec blocks for a moment, so it does not belong on an async thread; but the
//! sandbox ties a worker's life to the thread that started it (`PR_SET_PDEATHSIG`, so a worker never outlives
//! toolgate), and a pooled blocking thread exits after a few idle seconds, which would kill every worker it had
//! started mid-run. One dedicated thread, started on first use and never ending, serves every spawn instead.
//! The same thread reaps the workers of finished runs, so an answer does not wait for that. This module does
//! not choose what to start.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use sandbox::{Piped, PipedSpec};
use tokio::sync::oneshot;

enum Request {
    Spawn(PipedSpec, oneshot::Sender<sandbox::Result<Piped>>),
    /// A worker whose run is over: killed at once, reaped here, so the run's answer does not wait for it.
    Dispose(Piped),
}

fn spawner() -> Result<&'static Mutex<mpsc::Sender<Request>>, String> {
    static SPAWNER: OnceLock<Result<Mutex<mpsc::Sender<Request>>, String>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Request>();
            std::thread::Builder::new()
                .name("codemode-spawner".into())
                .spawn(move || {
                    for request in rx {
                        match request {
                            // A run dropped meanwhile drops the worker here, which kills it.
                            Request::Spawn(spec, reply) => {
                                let _ = reply.send(sandbox::spawn_piped(&spec));
                            }
                            Request::Dispose(worker) => drop(worker),
                        }
                    }
                })
                .map(|_| Mutex::new(tx))
                .map_err(|e| format!("the worker spawner thread did not start: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Starts a worker on the spawner thread.
pub(super) async fn spawn(spec: PipedSpec) -> Result<Piped, String> {
    let (tx, rx) = oneshot::channel();
    spawner()?
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(Request::Spawn(spec, tx))
        .map_err(|_| "the worker spawner thread is gone".to_owned())?;
    match rx.await {
        Ok(Ok(worker)) => Ok(worker),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the worker spawner thread is gone".to_owned()),
    }
}

/// Ends a worker whose run is over: its tree is killed now, and reaped on the spawner thread (or here, when that
/// thread is gone).
pub(super) fn dispose(worker: Piped) {
    worker.signal_kill();
    if let Ok(spawner) = spawner() {
        let sent = spawner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Request::Dispose(worker));
        // A send that failed hands the worker back, and dropping it here reaps it.
        drop(sent);
    }
}
