//! A private PostgreSQL cluster for tests: a real server from the distribution's packages, made with `initdb` in
//! a temporary directory and started with `pg_ctl`, listening on a free port of 127.0.0.1 only and on a unix
//! socket inside that directory, with a random password for its one role.
//!
//! PostgreSQL refuses to run as root, so under root the cluster runs as the `toolgate-pg` system user, which
//! `scripts/test` creates (as it installs PostgreSQL when its binaries are missing). A missing installation is a
//! failure that says so, never a skipped test. A cluster is stopped and its directory removed when dropped; one
//! kept for a whole test process (`shared`) is stopped by a watchdog once that process is gone. Not for
//! production: fsync is off.

// A cluster that cannot be made stops the test that needs it, saying why: these are fixture failures.
#![allow(clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The user a cluster runs as when the tests run as root.
pub const PG_USER: &str = "toolgate-pg";
/// The role the tests connect as.
const ROLE: &str = "toolgate";
/// Starts of a new cluster tried, each on a port of its own, before its start counts as failed.
const START_ATTEMPTS: usize = 5;

/// A running cluster; see the module doc.
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    password: String,
    /// The user to run the server's commands as, under root.
    run_as: Option<(u32, u32)>,
    /// Whether commits are synced as a production server's are; tests run without, a benchmark with.
    durable: bool,
}

/// The directory of `initdb`, `pg_ctl` and `psql`: `TOOLGATE_PG_BIN`, or the newest `/usr/lib/postgresql/*/bin`.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOOLGATE_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, and TOOLGATE_PG_BIN is unset): \
             scripts/test installs it from the distribution's packages (apt-get install postgresql)"
        ),
    }
}

fn unique_dir() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir().join(format!(
        "toolgate-pg-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn run_as() -> Option<(u32, u32)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    match nix::unistd::User::from_name(PG_USER) {
        Ok(Some(user)) => Some((user.uid.as_raw(), user.gid.as_raw())),
        _ => panic!(
            "the tests run as root and PostgreSQL refuses root: run scripts/test, which creates the {PG_USER} \
             user the private cluster runs as (useradd --system {PG_USER})"
        ),
    }
}

impl Cluster {
    /// Makes and starts a fresh cluster, with syncing off (tests).
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// Makes and starts a fresh cluster; `durable` keeps PostgreSQL's own defaults for syncing commits (fsync,
    /// synchronous_commit, full_page_writes), as a benchmark against SQLite's synced commits needs.
    pub fn start_with(durable: bool) -> Self {
        let bin = bin_dir();
        let run_as = run_as();
        let dir = unique_dir();
        std::fs::create_dir(&dir).expect("create the cluster directory");
        if let Some((uid, gid)) = run_as {
            nix::unistd::chown(&dir, Some(uid.into()), Some(gid.into())).expect("chown");
        }
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .expect("random bytes");
        let password: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut cluster = Self {
            bin,
            port: crate::free_port(),
            dir,
            password,
            run_as,
            durable,
        };
        let pwfile = cluster.dir.join("pw");
        std::fs::write(&pwfile, &cluster.password).expect("write the password file");
        if let Some((uid, gid)) = run_as {
            nix::unistd::chown(&pwfile, Some(uid.into()), Some(gid.into())).expect("chown");
        }
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                path(&data),
                "-U",
                ROLE,
                "--auth=scram-sha-256",
                "--pwfile",
                path(&pwfile),
                "-N",
                "-E",
                "UTF8",
            ],
        );
        // A port taken between the check and the start is given up for another (the data does not name it).
        for attempt in 1.. {
            match cluster.try_resume() {
                Ok(()) => break,
                Err(why) if attempt < START_ATTEMPTS && why.contains("Address already in use") => {
                    cluster.port = crate::free_port()
                }
                Err(why) => panic!("{why}"),
            }
        }
        cluster
    }

    /// One cluster for the whole test process, made on first use.
    pub fn shared() -> &'static Cluster {
        static SHARED: OnceLock<Cluster> = OnceLock::new();
        SHARED.get_or_init(|| {
            let cluster = Self::start();
            cluster.watch_process();
            cluster
        })
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The URL of database `db`, password included.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{ROLE}:{}@127.0.0.1:{}/{db}",
            self.password, self.port
        )
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password of its role (`toolgate`).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Creates an empty database.
    pub fn create_database(&self, db: &str) {
        let status = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.url("postgres"))
            .args(["-c", &format!("CREATE DATABASE \"{db}\"")])
            .stdout(Stdio::null())
            .status()
            .expect("run psql");
        assert!(status.success(), "CREATE DATABASE {db} failed");
    }

    /// Stops the server (fast shutdown: connections are cut), keeping its data.
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &["-D", path(&self.data()), "-m", "fast", "-w", "stop"],
        );
    }

    /// Starts the server again on the same port.
    pub fn resume(&self) {
        if let Err(why) = self.try_resume() {
            panic!("{why}");
        }
    }

    fn try_resume(&self) -> Result<(), String> {
        let mut options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c max_connections=300",
            self.port,
            self.dir.display()
        );
        if !self.durable {
            options.push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        }
        let log = self.dir.join("log");
        // The log read on a failure is this start's alone.
        let _ = std::fs::remove_file(&log);
        self.try_run(
            "pg_ctl",
            &[
                "-D",
                path(&self.data()),
                "-l",
                path(&log),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )
    }

    /// `tool` of the server's, run as the cluster's user.
    fn command(&self, tool: &str) -> Command {
        let mut command = Command::new(self.bin.join(tool));
        command.stdout(Stdio::null()).current_dir(&self.dir);
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::process::CommandExt::uid(&mut command, uid);
            std::os::unix::process::CommandExt::gid(&mut command, gid);
        }
        command
    }

    fn run(&self, tool: &str, args: &[&str]) {
        if let Err(why) = self.try_run(tool, args) {
            panic!("{why}");
        }
    }

    /// `tool` with `args`; on a failure, what it and the server's log said.
    fn try_run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let mut command = self.command(tool);
        command.args(args);
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("run {tool}: {e}"));
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{tool} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        ))
    }

    /// A watchdog that stops the server and removes its directory once this process is gone, however it ends.
    // Never waited for: it outlives this process by design, and init reaps it.
    #[allow(clippy::zombie_processes)]
    fn watch_process(&self) {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
             kill -QUIT \"$(head -n 1 '{data}/postmaster.pid')\" 2>/dev/null; sleep 1; rm -rf '{dir}'",
            pid = std::process::id(),
            data = self.data().display(),
            dir = self.dir.display(),
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the cluster's watchdog");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-D", path(&self.data()), "-m", "immediate", "-w", "stop"])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}
