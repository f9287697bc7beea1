//! Starting workers off the async threads, on one thread that lives as long as the process.
//!
//! Forking and waiting for the exec blocks for a moment, so it does not belong on an async thread; but the
//! sandbox ties a worker's life to the thread that started it (`PR_SET_PDEATHSIG`, so a worker never outlives
//! toolgate), and a pooled blocking thread exits after a few idle seconds, which would kill every worker it had
//! started mid-run. One dedicated thread, started on first use and never ending, serves every spawn instead.
//! This module does not choose what to start.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use sandbox::{Piped, PipedSpec};
use tokio::sync::oneshot;

type Request = (PipedSpec, oneshot::Sender<sandbox::Result<Piped>>);

fn spawner() -> Result<&'static Mutex<mpsc::Sender<Request>>, String> {
    static SPAWNER: OnceLock<Result<Mutex<mpsc::Sender<Request>>, String>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Request>();
            std::thread::Builder::new()
                .name("codemode-spawner".into())
                .spawn(move || {
                    for (spec, reply) in rx {
                        // A run dropped meanwhile drops the worker here, which kills it.
                        let _ = reply.send(sandbox::spawn_piped(&spec));
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
        .send((spec, tx))
        .map_err(|_| "the worker spawner thread is gone".to_owned())?;
    match rx.await {
        Ok(Ok(worker)) => Ok(worker),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the worker spawner thread is gone".to_owned()),
    }
}
