//! What every contained start prepares before it starts the child, for commands run to completion (`run`) and
//! piped children (`piped`) alike: the layer report so far, the filesystem layers, the compiled socket filter,
//! the pipe the child reports its layers on, the child's plan (its layers, limits and report descriptor), and
//! how it starts (`starter`): the launcher's handoff, or the command a fork of this process execs after
//! `child::setup`; for the probe, a child that exits once the layers are up instead.
//! This module does not start anything (`launch` does) or decide which layers a caller asks for.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::child::{self, ChildPlan, LimitList, PlanLayers};
use crate::error::{Error, Result};
use crate::filesystem;
use crate::launch::{self, wire::Handoff, Launch, Starter};
use crate::layers::{Layer, LayerReport, LayerState};
use crate::seccomp;
use crate::spec::{LayerMode, LayerRequest};

pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// This process's hard limit: a limit above it would make setrlimit fail for an unprivileged user, so the
/// command gets the lower of the two (a limit is a ceiling; it never raises anything).
fn hard_limit(resource: libc::__rlimit_resource_t) -> libc::rlim_t {
    let mut current = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes one struct we own.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return libc::RLIM_INFINITY;
    }
    current.rlim_max
}

fn limit_list(request: &LayerRequest) -> (LimitList, usize) {
    let l = &request.limits;
    let mut list: LimitList = [(libc::RLIMIT_CORE, 0); 5];
    let mut n = 0;
    for (res, value) in [
        (libc::RLIMIT_CPU, l.cpu_seconds),
        (libc::RLIMIT_AS, l.address_space_bytes),
        (libc::RLIMIT_FSIZE, l.file_size_bytes),
        (libc::RLIMIT_NOFILE, l.open_files),
        (libc::RLIMIT_NPROC, l.processes),
    ] {
        if let Some(v) = value {
            list[n] = (res, v.min(hard_limit(res)));
            n += 1;
        }
    }
    (list, n)
}

/// The layers `request` asks the child to set up, with this process as the one it must die with.
pub(crate) fn plan_layers(request: &LayerRequest) -> PlanLayers {
    let (limits, limit_count) = limit_list(request);
    PlanLayers {
        parent_pid: std::process::id() as libc::pid_t,
        pid_namespace: request.pid_namespace,
        no_network: request.no_network,
        rlimits: request.rlimits,
        limits,
        limit_count,
        no_new_privs: request.no_new_privs,
        landlock: request.landlock,
        socket_filter: request.socket_filter,
    }
}

/// The child's whole plan, in the process that forks it (toolgate, or the launcher).
pub(crate) fn child_plan(
    layers: PlanLayers,
    report_fd: RawFd,
    landlock_fd: RawFd,
    filter: seccomp::Programs,
) -> ChildPlan {
    // SAFETY: geteuid/getegid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    ChildPlan {
        layers,
        report_fd,
        landlock_fd,
        filter,
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        inherited_strings: inherited_strings(),
    }
}

/// Where this process's argument and environment strings lie (fields 48 to 51 of `/proc/self/stat`), read
/// once; zeros when they cannot be read.
fn inherited_strings() -> [(usize, usize); 2] {
    static REGIONS: std::sync::OnceLock<[(usize, usize); 2]> = std::sync::OnceLock::new();
    *REGIONS.get_or_init(|| {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return [(0, 0); 2];
        };
        // The command name (field 2) may hold spaces; the fields after it are numbered from 3.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return [(0, 0); 2];
        };
        let fields: Vec<usize> = rest
            .split_whitespace()
            .skip(48 - 3)
            .take(4)
            .filter_map(|f| f.parse().ok())
            .collect();
        match fields[..] {
            [a, b, e, f] => [(a, b), (e, f)],
            _ => [(0, 0); 2],
        }
    })
}

/// Compiles the seccomp programs when asked; records why not otherwise.
pub(crate) fn prepare_filter(
    request: &LayerRequest,
    layers: &mut LayerReport,
) -> seccomp::Programs {
    if !request.socket_filter.wanted() {
        return seccomp::Programs::default();
    }
    seccomp::socket_filter().unwrap_or_else(|why| {
        layers.set(Layer::SocketFilter, LayerState::Unavailable(why));
        seccomp::Programs::default()
    })
}

/// Refuses the run when a layer that the parent prepares was required and could not be prepared.
pub(crate) fn check_prepared(
    layers: &LayerReport,
    request: &LayerRequest,
    prepared: [(Layer, bool); 2],
) -> Result<()> {
    for (layer, ready) in prepared {
        if ready || layer.mode_in(request) != LayerMode::Required {
            continue;
        }
        let reason = match layers.state(layer) {
            LayerState::Unavailable(r) | LayerState::Failed(r) => r.clone(),
            LayerState::Active | LayerState::NotRequested => "not prepared".into(),
        };
        return Err(Error::RequiredLayerNotActive { layer, reason });
    }
    Ok(())
}

pub(crate) fn merge(layers: &mut LayerReport, report: &crate::layers::ChildReport) {
    for (layer, state) in &report.layers {
        layers.set(*layer, state.clone());
    }
}

/// What every contained start prepares before it starts the child, in one place for commands run to completion
/// and piped children alike: the layer report so far, the filesystem layers (the Landlock ruleset, the private
/// directory), the pipe the child reports its layers on, and how the child starts and sets them up.
pub(crate) struct Prelude {
    pub layers: LayerReport,
    pub prepared: filesystem::Prepared,
    pub report_read: OwnedFd,
    pub report_write: OwnedFd,
    /// Starts `program` with `args` in `cwd`, with `env` alone (plus the private directory's variables),
    /// stdout and stderr piped; the caller chooses stdin.
    pub starter: Starter,
}

/// Prepares the layers `request` asks for, refusing when a required one cannot be set up, and the start of
/// `program` under them.
pub(crate) fn prelude(
    request: &LayerRequest,
    program: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Prelude> {
    let mut layers = LayerReport::initial(request);
    let prepared = filesystem::prepare(request, cwd, &mut layers)?;
    let filter = prepare_filter(request, &mut layers);
    check_prepared(
        &layers,
        request,
        [
            (Layer::Landlock, prepared.landlock_fd.is_some()),
            (Layer::SocketFilter, !filter.is_empty()),
        ],
    )?;
    let mut env = env.clone();
    prepared.apply_env(&mut env);
    let (report_read, report_write) = pipe()?;
    let target = Target::Command {
        program,
        args,
        env: &env,
        cwd,
    };
    let landlock_fd = prepared.landlock_fd.as_ref().map(AsRawFd::as_raw_fd);
    let starter = starter(
        request,
        target,
        report_write.as_raw_fd(),
        landlock_fd,
        filter,
    )?;
    Ok(Prelude {
        layers,
        prepared,
        report_read,
        report_write,
        starter,
    })
}

/// What a start runs once its layers are up.
pub(crate) enum Target<'a> {
    /// `program` with `args` in `cwd`, with `env` alone.
    Command {
        program: &'a Path,
        args: &'a [String],
        env: &'a BTreeMap<String, String>,
        cwd: &'a Path,
    },
    /// Nothing: the child exits once the layers are up (`probe`).
    Probe,
}

/// How a child that sets `request`'s layers up and then runs `target` starts: through the launcher when there is
/// one, else as a fork of this process.
pub(crate) fn starter(
    request: &LayerRequest,
    target: Target<'_>,
    report_fd: RawFd,
    landlock_fd: Option<RawFd>,
    filter: seccomp::Programs,
) -> Result<Starter> {
    if let Some(launcher) = launch::launcher() {
        return Ok(Starter::Launch(Launch {
            launcher,
            handoff: handoff(request, &target, landlock_fd, &filter)?.encode(),
            report_fd,
            landlock_fd,
        }));
    }
    let plan = child_plan(
        plan_layers(request),
        report_fd,
        landlock_fd.unwrap_or(-1),
        filter,
    );
    let probe = matches!(target, Target::Probe);
    let mut command = match target {
        Target::Command {
            program,
            args,
            env,
            cwd,
        } => {
            let mut command = Command::new(program);
            command.args(args).env_clear().envs(env).current_dir(cwd);
            command
        }
        // Never exec'd: the child exits before.
        Target::Probe => Command::new("/"),
    };
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: `child::setup` only performs async-signal-safe syscalls on data prepared in `plan`, and `_exit` is
    // async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            child::setup(&plan)?;
            if probe {
                libc::_exit(0);
            }
            Ok(())
        });
    }
    Ok(Starter::Fork(command))
}

/// The launcher's handoff for one start: argv[0] is the program's path, as `Command` gives it.
fn handoff(
    request: &LayerRequest,
    target: &Target<'_>,
    landlock_fd: Option<RawFd>,
    filter: &seccomp::Programs,
) -> Result<Handoff> {
    use std::os::unix::ffi::OsStrExt;
    let c = |bytes: &[u8]| {
        CString::new(bytes).map_err(|_| Error::InvalidSpec("argument contains NUL".into()))
    };
    let mut handoff = Handoff {
        layers: plan_layers(request),
        landlock: landlock_fd.is_some(),
        socket_filter: !filter.is_empty(),
        probe: true,
        cwd: c"/".into(),
        program: c"/".into(),
        argv: Vec::new(),
        envp: Vec::new(),
    };
    let Target::Command {
        program,
        args,
        env,
        cwd,
    } = *target
    else {
        return Ok(handoff);
    };
    handoff.probe = false;
    handoff.cwd = c(cwd.as_os_str().as_bytes())?;
    handoff.program = c(program.as_os_str().as_bytes())?;
    handoff.argv.push(handoff.program.clone());
    for arg in args {
        handoff.argv.push(c(arg.as_bytes())?);
    }
    handoff.envp = env
        .iter()
        .map(|(k, v)| c(format!("{k}={v}").as_bytes()))
        .collect::<Result<_>>()?;
    Ok(handoff)
}
