//! Landlock confinement, by raw syscalls.
//!
//! The ruleset is built in the parent (it needs `open` and allocation), and the child only calls
//! `landlock_restrict_self` on the prepared descriptor, which is async-signal-safe. Reads, listing and
//! execution are handled as well as writes, so that paths granted by no rule (the state root, the config file,
//! see `grants`) can be neither read nor written. Where the kernel has scoping (ABI 6), the command also cannot
//! signal processes outside its domain nor, when it runs without network, connect to abstract unix sockets
//! created outside it. Network rules
//! are not used (the network layer is a namespace instead).

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::grants::{Access, Rule};

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const ACCESS_EXECUTE: u64 = 1 << 0;
const ACCESS_WRITE_FILE: u64 = 1 << 1;
const ACCESS_READ_FILE: u64 = 1 << 2;
const ACCESS_READ_DIR: u64 = 1 << 3;
const ACCESS_REMOVE_DIR: u64 = 1 << 4;
const ACCESS_REMOVE_FILE: u64 = 1 << 5;
const ACCESS_MAKE_CHAR: u64 = 1 << 6;
const ACCESS_MAKE_DIR: u64 = 1 << 7;
const ACCESS_MAKE_REG: u64 = 1 << 8;
const ACCESS_MAKE_SOCK: u64 = 1 << 9;
const ACCESS_MAKE_FIFO: u64 = 1 << 10;
const ACCESS_MAKE_BLOCK: u64 = 1 << 11;
const ACCESS_MAKE_SYM: u64 = 1 << 12;
const ACCESS_REFER: u64 = 1 << 13;
const ACCESS_TRUNCATE: u64 = 1 << 14;

const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// Rights that apply to a regular file (the kernel rejects directory-only rights on a file rule).
const FILE_RIGHTS: u64 = ACCESS_EXECUTE | ACCESS_READ_FILE | ACCESS_WRITE_FILE | ACCESS_TRUNCATE;
/// What a read grant allows.
const READ_RIGHTS: u64 = ACCESS_EXECUTE | ACCESS_READ_FILE | ACCESS_READ_DIR;

/// `struct landlock_ruleset_attr` up to ABI 6. Older kernels accept it as long as the fields they do not know
/// are zero, which `prepare` ensures.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr`, which the kernel declares packed.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version, or the errno explaining why there is none.
pub(crate) fn abi_version() -> Result<i64, String> {
    // SAFETY: with a null attribute and size 0 this flag only queries the ABI version; no memory is touched.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        Err(format!(
            "landlock unsupported: {}",
            std::io::Error::last_os_error()
        ))
    } else {
        Ok(v)
    }
}

fn handled_rights(abi: i64) -> u64 {
    let mut rights = READ_RIGHTS
        | ACCESS_WRITE_FILE
        | ACCESS_REMOVE_DIR
        | ACCESS_REMOVE_FILE
        | ACCESS_MAKE_CHAR
        | ACCESS_MAKE_DIR
        | ACCESS_MAKE_REG
        | ACCESS_MAKE_SOCK
        | ACCESS_MAKE_FIFO
        | ACCESS_MAKE_BLOCK
        | ACCESS_MAKE_SYM;
    if abi >= 2 {
        rights |= ACCESS_REFER;
    }
    if abi >= 3 {
        rights |= ACCESS_TRUNCATE;
    }
    rights
}

/// Why a ruleset could not be built: the kernel lacks Landlock, or a rule could not be added.
pub(crate) enum PrepareError {
    Unavailable(String),
    Failed(String),
}

/// Builds a ruleset that handles every read and write right and grants what `rules` say (plus writing to
/// `/dev/null`, which ordinary programs do). Signals never leave the domain; abstract unix sockets do not either
/// when `scope_sockets` (a command without network). Returns the ruleset descriptor for the child to enforce.
pub(crate) fn prepare(rules: &[Rule], scope_sockets: bool) -> Result<OwnedFd, PrepareError> {
    let abi = abi_version().map_err(PrepareError::Unavailable)?;
    let handled = handled_rights(abi);
    let attr = RulesetAttr {
        handled_access_fs: handled,
        handled_access_net: 0,
        scoped: match (abi >= 6, scope_sockets) {
            (false, _) => 0,
            (true, false) => SCOPE_SIGNAL,
            (true, true) => SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET,
        },
    };
    // SAFETY: `attr` is a valid, initialised struct whose size we pass; the kernel copies it and returns a new fd.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(PrepareError::Unavailable(format!(
            "landlock_create_ruleset: {}",
            std::io::Error::last_os_error()
        )));
    }
    let fd =
        i32::try_from(fd).map_err(|_| PrepareError::Failed("descriptor out of range".into()))?;
    // SAFETY: the syscall just returned this descriptor and nothing else owns it.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
    let dev_null = Rule {
        path: "/dev/null".into(),
        access: Access::ReadWrite,
    };
    for rule in rules.iter().chain([&dev_null]) {
        let rights = match rule.access {
            Access::Read => READ_RIGHTS,
            Access::ReadWrite => handled,
            Access::ListOnly => ACCESS_READ_DIR,
        };
        match add_rule(&ruleset, &rule.path, rights & handled) {
            // An entry that vanished or cannot be opened since it was listed is simply not granted: denied.
            Err(AddError::Open(e))
                if rule.access != Access::ReadWrite
                    && matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EACCES)) => {}
            Err(AddError::Open(e)) => {
                return Err(PrepareError::Failed(format!(
                    "open {}: {e}",
                    rule.path.display()
                )))
            }
            Err(AddError::Failed(why)) => return Err(PrepareError::Failed(why)),
            Ok(()) => {}
        }
    }
    Ok(ruleset)
}

/// Why one rule was not added: its path could not be opened, or the kernel refused the rule.
enum AddError {
    Open(std::io::Error),
    Failed(String),
}

fn add_rule(ruleset: &OwnedFd, path: &Path, rights: u64) -> Result<(), AddError> {
    use std::os::fd::AsRawFd;
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| AddError::Failed(format!("{} contains NUL", path.display())))?;
    // SAFETY: `c_path` is a valid NUL-terminated string; O_PATH opens without reading.
    let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(AddError::Open(std::io::Error::last_os_error()));
    }
    // SAFETY: `open` just returned this descriptor and nothing else owns it.
    let path_fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let is_dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
    let rule = PathBeneathAttr {
        allowed_access: if is_dir { rights } else { rights & FILE_RIGHTS },
        parent_fd: path_fd.as_raw_fd(),
    };
    // SAFETY: both descriptors are open for the duration of the call and `rule` is a valid packed struct.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0u32,
        )
    };
    if r < 0 {
        return Err(AddError::Failed(format!(
            "landlock_add_rule for {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Grants reading beneath `path` in a prepared ruleset, from the child between fork and exec (a mount made
/// there, such as the command's own /proc, which the parent could not name). Async-signal-safe: open, one
/// syscall, close. Returns the errno on failure.
pub(crate) fn grant_read_in_child(
    ruleset_fd: libc::c_int,
    path: &std::ffi::CStr,
) -> Result<(), i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL)
    };
    // SAFETY: `path` is NUL-terminated; the descriptor is closed before returning.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY,
        );
        if fd < 0 {
            return Err(errno());
        }
        let rule = PathBeneathAttr {
            allowed_access: READ_RIGHTS,
            parent_fd: fd,
        };
        let r = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset_fd,
            RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0u32,
        );
        let err = errno();
        libc::close(fd);
        if r < 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// Enforces a prepared ruleset on the calling process. Async-signal-safe: one syscall, no allocation.
/// The caller must already have set no_new_privs. Returns the errno on failure.
pub(crate) fn restrict_self(ruleset_fd: libc::c_int) -> Result<(), i32> {
    // SAFETY: plain syscall on a descriptor the parent prepared; no memory is passed.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0u32) };
    if r < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL))
    } else {
        Ok(())
    }
}

/// `LANDLOCK_ACCESS_FS_IOCTL_DEV` (ABI 5).
const ACCESS_IOCTL_DEV: u64 = 1 << 15;
/// `LANDLOCK_ACCESS_NET_BIND_TCP` and `LANDLOCK_ACCESS_NET_CONNECT_TCP` (ABI 4).
const ACCESS_NET_TCP: u64 = (1 << 0) | (1 << 1);

/// Confines the calling process to nothing: every filesystem right this kernel knows is handled and no rule
/// grants any, so no path can be opened, listed, executed or created; where the ABI has them, TCP bind and
/// connect are handled too, and signals and abstract unix sockets stay inside the domain. For a process that
/// needs no file at all (the code-mode worker after its engine is up). `Err((unavailable, why))`.
pub(crate) fn restrict_to_nothing() -> Result<(), (bool, String)> {
    let abi = abi_version().map_err(|why| (true, why))?;
    let mut fs = handled_rights(abi);
    if abi >= 5 {
        fs |= ACCESS_IOCTL_DEV;
    }
    let attr = RulesetAttr {
        handled_access_fs: fs,
        handled_access_net: if abi >= 4 { ACCESS_NET_TCP } else { 0 },
        scoped: if abi >= 6 {
            SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
        } else {
            0
        },
    };
    // SAFETY: `attr` is a valid, initialised struct whose size we pass; the kernel copies it and returns a new fd.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        let why = std::io::Error::last_os_error();
        return Err((false, format!("landlock_create_ruleset: {why}")));
    }
    let fd = i32::try_from(fd).map_err(|_| (false, "descriptor out of range".to_owned()))?;
    // SAFETY: the syscall just returned this descriptor and nothing else owns it.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: prctl with constant arguments; Landlock needs no_new_privs when unprivileged.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        let why = std::io::Error::last_os_error();
        return Err((false, format!("no_new_privs: {why}")));
    }
    use std::os::fd::AsRawFd;
    restrict_self(ruleset.as_raw_fd()).map_err(|e| {
        let why = std::io::Error::from_raw_os_error(e);
        (false, format!("landlock_restrict_self: {why}"))
    })
}
