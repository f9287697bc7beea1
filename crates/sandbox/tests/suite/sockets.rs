//! Host services behind sockets: with network off, a command reaches neither a unix socket listening outside
//! its workspace (a container daemon, an SSH agent, D-Bus), nor an abstract one, nor netlink; connected socket
//! pairs keep working. Each attack runs once without the layers first, so the test shows it would succeed.

use std::os::unix::net::UnixListener;
use std::path::Path;

use sandbox::{run, CommandSpec, Layer, LayerMode, LayerState, RunResult};

use crate::sh;

const PYTHON: &str = "/usr/bin/python3";

/// `python3 -c CODE` in `cwd`.
fn python(code: &str, cwd: &Path) -> CommandSpec {
    let mut spec = sh("", cwd);
    spec.program = PYTHON.into();
    spec.args = vec!["-c".into(), code.into()];
    spec
}

/// Runs `spec` with network off and the socket filter required (plus Landlock, as toolgate runs commands).
fn contained(mut spec: CommandSpec, workspace: &Path) -> RunResult {
    spec.layers.no_network = LayerMode::Required;
    spec.layers.socket_filter = LayerMode::Required;
    spec.layers.landlock = LayerMode::Required;
    spec.layers.writable_paths = vec![workspace.to_path_buf()];
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::SocketFilter), &LayerState::Active);
    r
}

fn connect_code(address: &str) -> String {
    format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({address})\nprint('connected')"
    )
}

#[test]
fn unix_socket_listening_outside_the_workspace_is_refused() {
    let host = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let path = host.path().join("daemon.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let code = connect_code(&format!("{:?}", path.display().to_string()));

    let open = run(&python(&code, workspace.path())).unwrap();
    assert_eq!(open.stdout.text, "connected\n", "control: {open:?}");
    assert!(listener.accept().is_ok());

    let r = contained(python(&code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "", "{r:?}");
    assert!(r.stderr.text.contains("PermissionError"), "{r:?}");
    assert!(listener.accept().is_err(), "the daemon saw a connection");
}

#[test]
fn abstract_unix_socket_of_the_host_is_unreachable() {
    use std::os::linux::net::SocketAddrExt;
    let workspace = tempfile::tempdir().unwrap();
    let name = format!("toolgate-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let code = connect_code(&format!("'\\0{name}'"));

    let open = run(&python(&code, workspace.path())).unwrap();
    assert_eq!(open.stdout.text, "connected\n", "control: {open:?}");
    assert!(listener.accept().is_ok());

    let r = contained(python(&code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "", "{r:?}");
    assert!(listener.accept().is_err(), "the listener saw a connection");
}

#[test]
fn netlink_and_other_socket_families_are_refused() {
    let workspace = tempfile::tempdir().unwrap();
    let code = "import socket\nfor fam, kind in [(socket.AF_NETLINK, socket.SOCK_RAW), \
                (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_UNIX, socket.SOCK_DGRAM)]:\n    \
                try:\n        socket.socket(fam, kind)\n        print('opened', fam)\n    \
                except PermissionError:\n        print('refused')";
    let r = contained(python(code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "refused\nrefused\nrefused\n", "{r:?}");
}

#[test]
fn connected_socketpairs_still_work_under_the_socket_filter() {
    let workspace = tempfile::tempdir().unwrap();
    let code = "import socket\nfor kind in [socket.SOCK_STREAM, socket.SOCK_SEQPACKET]:\n    \
                a, b = socket.socketpair(socket.AF_UNIX, kind)\n    a.send(b'ok')\n    \
                print(b.recv(2).decode())\nimport socket as s\ns.socket(s.AF_INET).close()\nprint('inet')";
    let r = contained(python(code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "ok\nok\ninet\n", "{r:?}");
}

#[test]
fn datagram_socketpair_that_could_be_pointed_at_host_sockets_is_refused() {
    let workspace = tempfile::tempdir().unwrap();
    let code =
        "import socket\ntry:\n    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n    \
                print('paired')\nexcept PermissionError:\n    print('refused')";
    let r = contained(python(code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "refused\n", "{r:?}");
}

#[test]
fn io_uring_that_would_bypass_the_socket_filter_is_refused() {
    let workspace = tempfile::tempdir().unwrap();
    // io_uring_setup(1, params): 425 on both x86-64 and aarch64.
    let code = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
                params = ctypes.create_string_buffer(120)\nr = libc.syscall(425, 1, params)\n\
                print(r, os.strerror(ctypes.get_errno()) if r < 0 else 'ring')";
    let r = contained(python(code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "-1 Function not implemented\n", "{r:?}");
}

#[test]
fn socketpair_type_flags_neither_smuggle_a_datagram_pair_nor_break_a_stream_pair() {
    let workspace = tempfile::tempdir().unwrap();
    // SOCK_NONBLOCK and SOCK_CLOEXEC ride in the type argument; the filter looks at the type without them.
    let code = "import socket\nflags = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC\n\
                for kind in [socket.SOCK_STREAM, socket.SOCK_SEQPACKET, socket.SOCK_DGRAM]:\n    \
                try:\n        socket.socketpair(socket.AF_UNIX, kind | flags)\n        print('paired')\n    \
                except PermissionError:\n        print('refused')";
    let open = run(&python(code, workspace.path())).unwrap();
    assert_eq!(open.stdout.text, "paired\npaired\npaired\n", "{open:?}");
    let r = contained(python(code, workspace.path()), workspace.path());
    assert_eq!(r.stdout.text, "paired\npaired\nrefused\n", "{r:?}");
}

#[test]
fn unix_family_with_high_bits_set_in_the_argument_is_still_refused() {
    let workspace = tempfile::tempdir().unwrap();
    // The kernel reads the family and type as `int`, so bits above 32 must not turn a refused call into an
    // allowed one: socket(AF_UNIX | 1 << 32, SOCK_STREAM) and socketpair(AF_UNIX, SOCK_DGRAM | 1 << 32).
    let code = "import ctypes, os, platform\nlibc = ctypes.CDLL(None, use_errno=True)\n\
                nr = {'x86_64': (41, 53), 'aarch64': (198, 199)}[platform.machine()]\n\
                fds = (ctypes.c_int * 2)()\n\
                for r in [libc.syscall(nr[0], ctypes.c_long(1 | 1 << 32), 1, 0), \
                libc.syscall(nr[1], 1, ctypes.c_long(2 | 1 << 32), 0, fds)]:\n    \
                print('opened' if r >= 0 else os.strerror(ctypes.get_errno()))";
    let open = run(&python(code, workspace.path())).unwrap();
    assert_eq!(open.stdout.text, "opened\nopened\n", "{open:?}");
    let r = contained(python(code, workspace.path()), workspace.path());
    assert_eq!(
        r.stdout.text, "Permission denied\nPermission denied\n",
        "{r:?}"
    );
}
