//! The thread piped children are started from: one thread that lives as long as the process.
//!
//! The sandbox ties a child's life to the thread that started it (`PR_SET_PDEATHSIG`, so nothing it starts
//! outlives toolgate, even killed with SIGKILL), and a pooled blocking thread (tokio's) exits after a few idle
//! seconds, which would kill every child it had started. Forking and waiting for the exec also blocks for a
//! moment, which does not belong on an async thread. So one dedicated thread, started on first use and never
//! ending, serves every spawn of a long-lived child (code mode's workers, upstream servers), and reaps the
//! children callers are done with, so that nobody waits for it. This module does not choose what to start.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::piped::{spawn_piped, Piped, PipedSpec};

/// What the caller is told once its child started or did not.
pub type Reply = Box<dyn FnOnce(Result<Piped>) + Send>;

enum Request {
    Spawn(PipedSpec, Reply),
    /// A child the caller is done with: already killed, reaped here.
    Dispose(Piped),
}

fn keeper() -> Result<&'static Mutex<mpsc::Sender<Request>>> {
    static KEEPER: OnceLock<std::result::Result<Mutex<mpsc::Sender<Request>>, String>> =
        OnceLock::new();
    KEEPER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Request>();
            std::thread::Builder::new()
                .name("sandbox-keeper".into())
                .spawn(move || {
                    for request in rx {
                        match request {
                            // A caller that went away meanwhile drops the child in `reply`, which kills it.
                            Request::Spawn(spec, reply) => reply(spawn_piped(&spec)),
                            Request::Dispose(child) => drop(child),
                        }
                    }
                })
                .map(|_| Mutex::new(tx))
                .map_err(|e| format!("the sandbox keeper thread did not start: {e}"))
        })
        .as_ref()
        .map_err(|e| Error::Setup(std::io::Error::other(e.clone())))
}

/// Starts `spec` on the keeper thread; `reply` gets the child (or why it did not start), on that thread.
/// `Err` when the keeper thread is gone (then `reply` is never called).
pub fn spawn_kept(spec: PipedSpec, reply: Reply) -> Result<()> {
    keeper()?
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(Request::Spawn(spec, reply))
        .map_err(|_| Error::Setup(std::io::Error::other("the sandbox keeper thread is gone")))
}

/// Ends a child the caller is done with: its tree is killed now and reaped on the keeper thread (or here,
/// when that thread is gone).
pub fn dispose(child: Piped) {
    child.signal_kill();
    if let Ok(keeper) = keeper() {
        let sent = keeper
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Request::Dispose(child));
        // A send that failed hands the child back, and dropping it here reaps it.
        drop(sent);
    }
}
