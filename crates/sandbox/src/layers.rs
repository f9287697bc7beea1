//! Names and states of the isolation layers, the report the child sends back, and `probe()`.
//!
//! The child reports each layer it tried through a pipe as fixed 8-byte records (a write of at most PIPE_BUF
//! bytes is atomic, so records never interleave). This module decodes them; it does not set layers up.

use std::fmt;

use crate::spec::{LayerMode, LayerRequest};

/// One isolation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// User + PID namespace with an init process that takes the whole tree down with it.
    PidNamespace,
    /// Empty network namespace.
    NoNetwork,
    /// Landlock write confinement.
    Landlock,
    /// setrlimit limits.
    Rlimits,
    /// PR_SET_NO_NEW_PRIVS.
    NoNewPrivs,
    /// Seccomp filter refusing non-IP sockets, unix sockets but connected pairs, and io_uring.
    SocketFilter,
    /// A `/proc` of its own (in a private mount namespace), showing only the processes of its PID namespace.
    /// Asked for whenever the PID namespace is, with the same mode.
    OwnProc,
}

impl Layer {
    /// Every layer, in report order.
    pub const ALL: [Layer; 7] = [
        Layer::PidNamespace,
        Layer::NoNetwork,
        Layer::Landlock,
        Layer::Rlimits,
        Layer::NoNewPrivs,
        Layer::SocketFilter,
        Layer::OwnProc,
    ];

    /// Stable name used in reports and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::PidNamespace => "pid_namespace",
            Layer::NoNetwork => "no_network",
            Layer::Landlock => "landlock",
            Layer::Rlimits => "rlimits",
            Layer::NoNewPrivs => "no_new_privs",
            Layer::SocketFilter => "socket_filter",
            Layer::OwnProc => "own_proc",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Layer::PidNamespace => 1,
            Layer::NoNetwork => 2,
            Layer::Landlock => 3,
            Layer::Rlimits => 4,
            Layer::NoNewPrivs => 5,
            Layer::SocketFilter => 6,
            Layer::OwnProc => 7,
        }
    }

    fn from_code(code: u8) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.code() == code)
    }

    pub(crate) fn mode_in(self, request: &LayerRequest) -> LayerMode {
        match self {
            Layer::PidNamespace => request.pid_namespace,
            Layer::NoNetwork => request.no_network,
            Layer::Landlock => request.landlock,
            Layer::Rlimits => request.rlimits,
            Layer::NoNewPrivs => request.no_new_privs,
            Layer::SocketFilter => request.socket_filter,
            Layer::OwnProc => request.pid_namespace,
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened to one layer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum LayerState {
    /// In force for the command (in `probe()`: can be put in force).
    Active,
    /// The caller did not ask for it.
    NotRequested,
    /// The kernel or the machine does not offer it.
    Unavailable(String),
    /// It is offered but setting it up went wrong.
    Failed(String),
}

/// `active`, `off`, `unavailable (why)` or `failed (why)`: how `doctor` and the logs show a layer's state.
impl fmt::Display for LayerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerState::Active => f.write_str("active"),
            LayerState::NotRequested => f.write_str("off"),
            LayerState::Unavailable(why) => write!(f, "unavailable ({why})"),
            LayerState::Failed(why) => write!(f, "failed ({why})"),
        }
    }
}

/// One line of a [`LayerReport`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LayerEntry {
    /// The layer.
    pub layer: Layer,
    /// Its state.
    pub state: LayerState,
}

/// The state of every layer for one run (or for `probe()`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LayerReport {
    /// One entry per layer, in [`Layer::ALL`] order.
    pub entries: Vec<LayerEntry>,
}

impl LayerReport {
    /// Starting point before the child reports: requested layers are "not attempted" until a record says more.
    pub(crate) fn initial(request: &LayerRequest) -> Self {
        let entries = Layer::ALL
            .into_iter()
            .map(|layer| LayerEntry {
                layer,
                state: if layer.mode_in(request).wanted() {
                    LayerState::Unavailable("not attempted".into())
                } else {
                    LayerState::NotRequested
                },
            })
            .collect();
        Self { entries }
    }

    /// The state of one layer.
    pub fn state(&self, layer: Layer) -> &LayerState {
        self.entries
            .iter()
            .find(|e| e.layer == layer)
            .map(|e| &e.state)
            .unwrap_or(&LayerState::NotRequested)
    }

    pub(crate) fn set(&mut self, layer: Layer, state: LayerState) {
        if let Some(entry) = self.entries.iter_mut().find(|e| e.layer == layer) {
            entry.state = state;
        }
    }

    /// The first layer that was required but is not active, with the reason.
    pub(crate) fn first_unmet(&self, request: &LayerRequest) -> Option<(Layer, String)> {
        self.entries.iter().find_map(|e| {
            if e.layer.mode_in(request) != LayerMode::Required {
                return None;
            }
            match &e.state {
                LayerState::Active => None,
                LayerState::NotRequested => Some((e.layer, "not requested".into())),
                LayerState::Unavailable(r) | LayerState::Failed(r) => Some((e.layer, r.clone())),
            }
        })
    }
}

/// Record kinds sent by the child.
pub(crate) const REC_LAYER: u8 = 1;
pub(crate) const REC_EXIT: u8 = 2;
/// Layer record statuses.
pub(crate) const ST_ACTIVE: u8 = 0;
pub(crate) const ST_UNAVAILABLE: u8 = 1;
pub(crate) const ST_FAILED: u8 = 2;
pub(crate) const RECORD_LEN: usize = 8;

/// Builds one record; used by the child, so it must not allocate.
pub(crate) fn encode(kind: u8, layer: u8, status: u8, value: i32) -> [u8; RECORD_LEN] {
    let v = value.to_le_bytes();
    [kind, layer, status, 0, v[0], v[1], v[2], v[3]]
}

/// What the child said: layer outcomes and, with a PID namespace, the command's raw wait status.
#[derive(Debug, Default)]
pub(crate) struct ChildReport {
    pub layers: Vec<(Layer, LayerState)>,
    pub wait_status: Option<i32>,
}

pub(crate) fn decode(bytes: &[u8]) -> ChildReport {
    let mut report = ChildReport::default();
    for rec in bytes.chunks_exact(RECORD_LEN) {
        let value = i32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
        match rec[0] {
            REC_LAYER => {
                let Some(layer) = Layer::from_code(rec[1]) else {
                    continue;
                };
                let why = || std::io::Error::from_raw_os_error(value).to_string();
                let state = match rec[2] {
                    ST_ACTIVE => LayerState::Active,
                    ST_UNAVAILABLE => LayerState::Unavailable(why()),
                    _ => LayerState::Failed(why()),
                };
                report.layers.push((layer, state));
            }
            REC_EXIT => report.wait_status = Some(value),
            _ => {}
        }
    }
    report
}

/// Which layers this machine can provide, found by actually setting each one up in a throw-away child.
/// Used by `toolgate doctor`; `Active` here means "can be made active".
pub fn probe() -> LayerReport {
    crate::run::probe_layers()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&encode(
            REC_LAYER,
            Layer::NoNetwork.code(),
            ST_UNAVAILABLE,
            libc::EPERM,
        ));
        bytes.extend_from_slice(&encode(REC_EXIT, 0, 0, 256));
        let report = decode(&bytes);
        assert_eq!(report.wait_status, Some(256));
        assert_eq!(report.layers.len(), 1);
        assert_eq!(report.layers[0].0, Layer::NoNetwork);
        assert!(matches!(report.layers[0].1, LayerState::Unavailable(_)));
    }

    #[test]
    fn required_but_inactive_is_unmet() {
        let request = LayerRequest {
            no_network: LayerMode::Required,
            ..LayerRequest::default()
        };
        let mut report = LayerReport::initial(&request);
        assert_eq!(
            report.first_unmet(&request).map(|u| u.0),
            Some(Layer::NoNetwork)
        );
        report.set(Layer::NoNetwork, LayerState::Active);
        assert_eq!(report.first_unmet(&request), None);
    }
}
