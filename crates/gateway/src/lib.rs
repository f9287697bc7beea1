//! The gateway: the only stage that knows the order of the pipeline. It holds client sessions in either protocol
//! era, routes each request to its owner, merges upstream catalogs into one view, forwards calls with id,
//! progress-token and cancellation remapping, relays upstream requests to clients that can answer them, and
//! fits every result to the era of the client that reads it.
//!
//! Front ends (the `frontend` crate) drive sessions through the transport-neutral API exported here (`Session`,
//! `RequestMeta`, `Drain`, `Outgoing`, `Stream`). This crate reads and writes no transport: it never writes to
//! stdout, which the stdio front end owns for protocol bytes only.

#![deny(clippy::print_stdout)]

mod adapt;
mod admin;
mod aggregate;
mod approval;
mod bridge;
mod calls;
mod canon;
mod client;
mod codemode;
mod contract;
mod correlate;
mod credentials;
mod cursor;
mod elicit;
mod error;
mod errors;
mod front;
mod fsdirs;
mod gateway;
mod guard;
mod hooks;
mod ids;
mod intrinsics;
mod launch;
mod live;
mod methods;
#[cfg(test)]
mod modern_flow_tests;
mod names;
mod options;
mod outbox;
mod outcome;
mod outside_witness;
mod own;
mod pins;
mod pipeline;
#[cfg(test)]
mod pipeline_flow_tests;
mod profiles;
mod progress;
mod rate;
#[cfg(test)]
mod rate_tests;
mod rebuild;
mod record;
#[cfg(test)]
mod relay_flow_tests;
mod relayed;
mod reload;
#[cfg(test)]
mod reload_tests;
mod requester;
mod route;
mod session;
#[cfg(test)]
mod session_flow_tests;
#[cfg(test)]
mod shape;
#[cfg(test)]
mod shape_tests;
mod snapshot;
mod spellings;
mod stages;
mod state;
mod state_chains;
mod status;
mod task_calls;
mod tasks;
#[cfg(test)]
mod tasks_flow_tests;
#[cfg(test)]
mod testkit;
mod toolhub;
mod wakeups;
mod warm;
mod wire;
mod write_behind;

pub use aggregate::{Aggregate, Held, Naming, Route, Spelled};
pub use bridge::Holder;
pub use canon::canonicalise;
pub use codemode::{CodeOptions, RUN_TOOL, SEARCH_TOOL};
pub use error::Error;
pub use front::{FramingError, RequestMeta};
pub use gateway::{Gateway, Options};
pub use guard::{Guard, Verdict};
pub use hooks::{command_hooks, CallHook, CommandHook, HookCall, HookDecision, HookOutcome};
pub use jsonrpc::{Id, Message};
pub use names::{expose, is_portable};
pub use outbox::{Drain, Outgoing, Stream};
pub use outside_witness::OutsideWitness;
pub use own::{Surface, OWN_SERVER};
pub use pins::{Item as PinItem, PinStatus, PinView};
pub use profiles::check_profiles;
pub use rate::rate_limited_total;
pub use reload::{Applied, Reload};
pub use session::{Session, MAX_IN_FLIGHT, SUPPORTED_VERSIONS};
pub use state::{state_root, State};
pub use status::AuditHealth;
