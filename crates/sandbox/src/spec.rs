//! What the caller asks for: the command, its environment and which isolation layers to use.
//!
//! This is plain data; validation happens in `run`. Nothing here resolves programs or inspects the system.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How much the caller wants one isolation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerMode {
    /// Do not try.
    Off,
    /// Try; run anyway if the machine does not support it (reported as unavailable/failed).
    BestEffort,
    /// Try; refuse to run if it cannot be activated.
    Required,
}

impl LayerMode {
    pub(crate) fn wanted(self) -> bool {
        self != LayerMode::Off
    }
}

/// Resource limits applied to the command (and inherited by its descendants) when the rlimits layer is on.
/// `None` leaves the inherited limit alone; core dumps are always disabled by this layer.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rlimits {
    /// RLIMIT_CPU, in seconds of CPU time.
    pub cpu_seconds: Option<u64>,
    /// RLIMIT_AS, in bytes of address space.
    pub address_space_bytes: Option<u64>,
    /// RLIMIT_FSIZE, the largest file the command may write.
    pub file_size_bytes: Option<u64>,
    /// RLIMIT_NOFILE.
    pub open_files: Option<u64>,
    /// RLIMIT_NPROC. The kernel counts every process of the user (in its user namespace, when the run has one)
    /// and does not apply it to root.
    pub processes: Option<u64>,
}

/// Which isolation layers to apply. The process group/session is not optional and therefore not listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LayerRequest {
    /// New user + PID namespace, so that descendants that call `setsid` still die with the tree.
    pub pid_namespace: LayerMode,
    /// New (empty) network namespace: no interface but a down loopback.
    pub no_network: LayerMode,
    /// Landlock: writes allowed only beneath `writable_paths`; reads and execution everywhere but beneath
    /// `protected_paths` and, with `private_tmp` (unless `shared_tmp_readable`), the shared temporary directory.
    pub landlock: LayerMode,
    /// Directories (or files) the command may write beneath when Landlock is active.
    pub writable_paths: Vec<PathBuf>,
    /// Paths the command may neither read nor write (the state root, the config file). Absolute. When any is
    /// given, Landlock is required whatever `landlock` says, and a writable path that contains or lies inside
    /// one refuses the run.
    pub protected_paths: Vec<PathBuf>,
    /// Give the command a fresh temporary directory of its own (`TMPDIR`, `TMP`, `TEMP`), writable, removed
    /// after the run; the shared temporary directory is then neither writable nor readable (unless
    /// `shared_tmp_readable`).
    pub private_tmp: bool,
    /// With `private_tmp`, leave the shared temporary directory readable (never writable, protected paths in it
    /// still excluded). For the operator's own programs (hooks), which may live there; off for commands the
    /// agent chose, since the shared directory holds other programs' files.
    pub shared_tmp_readable: bool,
    /// Seccomp filter for a command without network: no socket but IPv4/IPv6 ones (which the network namespace
    /// confines), no unix socket but connected stream pairs, no io_uring. Keeps commands away from host services
    /// on unix sockets (a container daemon, an SSH agent, D-Bus) and netlink.
    pub socket_filter: LayerMode,
    /// Apply `limits` with setrlimit.
    pub rlimits: LayerMode,
    /// The limits used by the rlimits layer.
    pub limits: Rlimits,
    /// PR_SET_NO_NEW_PRIVS: setuid binaries cannot raise privileges.
    pub no_new_privs: LayerMode,
}

impl Default for LayerRequest {
    /// Containment that costs nothing and breaks nothing: PID namespace and no_new_privs, best effort.
    fn default() -> Self {
        Self {
            pid_namespace: LayerMode::BestEffort,
            no_network: LayerMode::Off,
            landlock: LayerMode::Off,
            writable_paths: Vec::new(),
            protected_paths: Vec::new(),
            private_tmp: false,
            shared_tmp_readable: false,
            socket_filter: LayerMode::Off,
            rlimits: LayerMode::Off,
            limits: Rlimits::default(),
            no_new_privs: LayerMode::BestEffort,
        }
    }
}

/// What the command reads on standard input. A run here is one-shot (it returns once the tree is gone); a
/// long-lived child talking over its standard streams would be one more variant, with a handle of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Stdin {
    /// Nothing: end of file at once.
    #[default]
    Null,
    /// These bytes, then end of file. Written while the command runs, never past its deadline; a command that
    /// does not read them is not waited for.
    Bytes(Vec<u8>),
}

/// One command to run. The child inherits no environment: `env` is all it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// Absolute path of the executable (no PATH search happens here).
    pub program: PathBuf,
    /// Arguments after argv[0].
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment of the child.
    pub env: BTreeMap<String, String>,
    /// Wall-clock limit; past it the tree gets SIGTERM, then SIGKILL after `kill_grace`.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL on timeout.
    pub kill_grace: Duration,
    /// Isolation layers.
    pub layers: LayerRequest,
    /// Standard input.
    pub stdin: Stdin,
}

impl CommandSpec {
    /// A spec with default layers, an empty environment, a 30 s timeout and a 2 s kill grace.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            timeout: Duration::from_secs(30),
            kill_grace: Duration::from_secs(2),
            layers: LayerRequest::default(),
            stdin: Stdin::Null,
        }
    }

    /// Builder-style argument list.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Builder-style single environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Builder-style standard input: `bytes`, then end of file.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Stdin::Bytes(bytes.into());
        self
    }

    /// Builder-style timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}
