//! How the gateway starts an upstream: with the options and sinks every upstream shares, through the connector a
//! caller gave for its name (an in-process server, in tests) or else over the transport its entry names. Kept
//! by the `Gateway` so that a reload starts added and changed servers exactly as start-up started the first ones.
//!
//! It does not decide which servers start or stop; `reload` compares the entries and asks.

use config::ServerConfig;
use std::collections::HashMap;
use std::sync::Arc;
use upstream::{Connector, Sinks, Upstream};

pub(crate) struct Launcher {
    pub(crate) opts: upstream::Options,
    pub(crate) sinks: Sinks,
    /// Connectors by server name, used instead of the entry's transport.
    pub(crate) links: HashMap<String, Arc<dyn Connector>>,
}

impl Launcher {
    /// Starts supervising `server`; it comes up (or fails, and says why in its status) in the background.
    pub(crate) fn start(&self, server: &ServerConfig) -> Arc<Upstream> {
        match self.links.get(&server.name) {
            Some(link) => Upstream::start_linked(
                server.clone(),
                self.opts.clone(),
                self.sinks.clone(),
                Arc::clone(link),
            ),
            None => Upstream::start(server.clone(), self.opts.clone(), self.sinks.clone()),
        }
    }
}
