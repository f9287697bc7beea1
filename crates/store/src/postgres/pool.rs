//! The PostgreSQL connections of one `PostgresStore`: a small bounded pool, each connection driven on the
//! store's own runtime, and a blocking facade (`Tx`) the sync store methods run their statements through.
//!
//! The trait is sync and its callers include tokio workers, so no statement blocks inside a runtime: each
//! connection's I/O runs on the store's private runtime (two threads, nothing else on them), and the caller waits
//! for the answer by parking its own thread (`block_on`) with a deadline. A connection that fails, or whose
//! answer did not come before the deadline, is discarded, and the next caller opens a fresh one; while the
//! database cannot be reached every call fails with `Error::Unavailable` (fail closed), and calls succeed again
//! once it answers. Statements are prepared once per connection. This module knows no table.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement, Transaction};

use crate::error::{Error, Result};

/// How one handle reaches the database: how many connections it holds, and how long it waits. A team's replicas
/// share the server's connection slots, so each holds few; the deadlines make a database that stopped answering
/// an error (calls fail closed) rather than a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgOptions {
    /// Most connections one handle holds at once (a gateway's calls rarely overlap by more than the default).
    pub pool_size: usize,
    /// How long opening a connection may take before the database counts as gone.
    pub connect_timeout: Duration,
    /// The server's own limit on one statement (`statement_timeout`), so a wedged lock surfaces as an error.
    pub statement_timeout: Duration,
}

impl PgOptions {
    /// 8 connections, 5 s to connect, 15 s a statement.
    pub const DEFAULT: Self = Self {
        pool_size: 8,
        connect_timeout: Duration::from_secs(5),
        statement_timeout: Duration::from_secs(15),
    };

    /// How long a caller waits for one answer, or for a free connection: the statement timeout and a margin, so
    /// a server that stopped answering (a cut network) ends the wait too.
    pub(crate) fn answer_timeout(&self) -> Duration {
        self.statement_timeout + ANSWER_MARGIN
    }
}

impl Default for PgOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a caller waits beyond the statement timeout for its answer.
const ANSWER_MARGIN: Duration = Duration::from_secs(5);

/// One pooled connection and the statements prepared on it.
struct PgConn {
    client: Client,
    prepared: RefCell<HashMap<String, Statement>>,
}

struct Slots {
    idle: Vec<PgConn>,
    open: usize,
}

/// The runtime that drives every connection of one handle; shut down without waiting when the handle goes, so
/// dropping a store on a tokio worker is safe.
pub(crate) struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    fn new() -> Result<Self> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolgate-pg")
            .enable_all()
            .build()
            .map(|rt| Self(Some(rt)))
            .map_err(Error::Io)
    }

    pub(crate) fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.0.as_ref().map(tokio::runtime::Runtime::handle)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A bounded set of connections to one database.
pub(crate) struct Pool {
    config: tokio_postgres::Config,
    options: PgOptions,
    slots: Mutex<Slots>,
    freed: Condvar,
    runtime: Runtime,
}

impl std::fmt::Debug for Pool {
    /// Never prints the configuration: it holds the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool(..)")
    }
}

impl Pool {
    /// A pool for `url` (`postgres://user:password@host:port/db`) under `options`; opens nothing yet.
    pub(crate) fn new(url: &str, options: PgOptions) -> Result<Self> {
        Ok(Self {
            config: config(url, &options)?,
            options,
            slots: Mutex::new(Slots {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
            runtime: Runtime::new()?,
        })
    }

    pub(crate) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection: an idle one, a new one while fewer than `pool_size` are open, or the next one freed.
    fn get(&self) -> Result<Conn<'_>> {
        let deadline = Instant::now() + self.options.answer_timeout();
        let mut slots = self.slots();
        loop {
            while let Some(conn) = slots.idle.pop() {
                if !conn.client.is_closed() {
                    return Ok(Conn::new(self, conn));
                }
                slots.open -= 1;
            }
            if slots.open < self.options.pool_size {
                slots.open += 1;
                drop(slots);
                return match connect(&self.runtime, &self.config) {
                    Ok(client) => Ok(Conn::new(
                        self,
                        PgConn {
                            client,
                            prepared: RefCell::default(),
                        },
                    )),
                    Err(e) => {
                        self.slots().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Unavailable(
                    "every connection to the state database stayed busy".into(),
                ));
            }
            slots = self
                .freed
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Runs `f` on a connection outside any transaction (reads).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.get()?;
        let out = {
            let pg = conn.pg()?;
            let mut tx = Tx {
                inner: Inner::Plain(&pg.client),
                prepared: &pg.prepared,
                changed: 0,
                wait: self.options.answer_timeout(),
            };
            f(&mut tx)
        };
        conn.settle(&out);
        out
    }

    /// Runs `f` in one transaction and commits it; `after(changed)` runs inside it just before the commit, with
    /// the number of rows `f` changed. Any error rolls everything back.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T>,
        after: impl FnOnce(&mut Tx<'_>) -> Result<()>,
    ) -> Result<(T, u64)> {
        let mut conn = self.get()?;
        let out = conn.transaction(f, after);
        conn.settle(&out);
        out
    }
}

/// A connection lent by the pool; given back (or discarded, when broken) when dropped.
struct Conn<'p> {
    pool: &'p Pool,
    conn: Option<PgConn>,
    broken: bool,
}

impl<'p> Conn<'p> {
    fn new(pool: &'p Pool, conn: PgConn) -> Self {
        Self {
            pool,
            conn: Some(conn),
            broken: false,
        }
    }

    fn pg(&mut self) -> Result<&mut PgConn> {
        self.conn
            .as_mut()
            .ok_or_else(|| Error::Unavailable("connection already given back".into()))
    }

    /// A connection whose last answer was a failure to reach the database is not lent again.
    fn settle<T>(&mut self, out: &Result<T>) {
        if matches!(out, Err(Error::Unavailable(_))) {
            self.broken = true;
        }
    }

    fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T>,
        after: impl FnOnce(&mut Tx<'_>) -> Result<()>,
    ) -> Result<(T, u64)> {
        let wait = self.pool.options.answer_timeout();
        let PgConn { client, prepared } = self.pg()?;
        let begun = answer(client.transaction(), wait)?;
        let mut tx = Tx {
            inner: Inner::Transaction(begun),
            prepared,
            changed: 0,
            wait,
        };
        let out = f(&mut tx).and_then(|out| after(&mut tx).map(|()| out));
        let changed = tx.changed;
        let Inner::Transaction(begun) = tx.inner else {
            return Err(Error::Unavailable("transaction lost".into()));
        };
        match out {
            Ok(out) => {
                answer(begun.commit(), wait)?;
                Ok((out, changed))
            }
            Err(e) => {
                // Ended explicitly, so the connection is clean when it goes back to the pool; one that lost the
                // database is discarded anyway.
                if !matches!(e, Error::Unavailable(_)) {
                    let _ = answer(begun.rollback(), wait);
                }
                Err(e)
            }
        }
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let mut slots = self.pool.slots();
        if self.broken || conn.client.is_closed() {
            slots.open -= 1;
        } else {
            slots.idle.push(conn);
        }
        drop(slots);
        self.pool.freed.notify_one();
    }
}

enum Inner<'c> {
    Plain(&'c Client),
    Transaction(Transaction<'c>),
}

/// Statements on one connection, inside a transaction or not, answered synchronously. `changed` counts the rows
/// `execute` reported, so a caller knows whether anything was written.
pub(crate) struct Tx<'c> {
    inner: Inner<'c>,
    prepared: &'c RefCell<HashMap<String, Statement>>,
    pub(crate) changed: u64,
    /// How long each answer may take.
    wait: Duration,
}

/// Statement parameters.
pub(crate) type Params<'a> = [&'a (dyn ToSql + Sync)];

impl Tx<'_> {
    fn statement(&self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.prepared.borrow().get(sql) {
            return Ok(s.clone());
        }
        let statement = match &self.inner {
            Inner::Plain(c) => answer(c.prepare(sql), self.wait)?,
            Inner::Transaction(t) => answer(t.prepare(sql), self.wait)?,
        };
        self.prepared
            .borrow_mut()
            .insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Every row `sql` returns.
    pub(crate) fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        let s = self.statement(sql)?;
        match &self.inner {
            Inner::Plain(c) => answer(c.query(&s, params), self.wait),
            Inner::Transaction(t) => answer(t.query(&s, params), self.wait),
        }
    }

    /// The one row `sql` returns, if any.
    pub(crate) fn opt(&self, sql: &str, params: &Params<'_>) -> Result<Option<Row>> {
        let mut rows = self.query(sql, params)?;
        if rows.len() > 1 {
            return Err(Error::Corrupt(format!(
                "{} rows where one was expected",
                rows.len()
            )));
        }
        Ok(rows.pop())
    }

    /// The one row `sql` returns.
    pub(crate) fn one(&self, sql: &str, params: &Params<'_>) -> Result<Row> {
        self.opt(sql, params)?
            .ok_or_else(|| Error::Corrupt("no row where one was expected".into()))
    }

    /// Runs statements given as one text (schema changes), uncounted.
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        match &self.inner {
            Inner::Plain(c) => answer(c.batch_execute(sql), self.wait),
            Inner::Transaction(t) => answer(t.batch_execute(sql), self.wait),
        }
    }

    /// Runs a write; returns (and counts) the rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64> {
        let s = self.statement(sql)?;
        let n = match &self.inner {
            Inner::Plain(c) => answer(c.execute(&s, params), self.wait)?,
            Inner::Transaction(t) => answer(t.execute(&s, params), self.wait)?,
        };
        self.changed += n;
        Ok(n)
    }
}

/// Column `idx` of `row`; a value of another type is a corrupt row, never a panic.
pub(crate) fn col<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    idx: usize,
) -> Result<T> {
    row.try_get(idx)
        .map_err(|e| Error::Corrupt(format!("column {idx}: {e}")))
}

/// Parses a store URL; the message never repeats the URL, which may hold a password.
pub(crate) fn config(url: &str, options: &PgOptions) -> Result<tokio_postgres::Config> {
    let mut config: tokio_postgres::Config =
        url.parse().map_err(|e| Error::StoreUrl(format!("{e}")))?;
    config
        .connect_timeout(options.connect_timeout)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .application_name("toolgate")
        .options(format!(
            "-c statement_timeout={} -c idle_in_transaction_session_timeout=60000",
            options.statement_timeout.as_millis()
        ));
    Ok(config)
}

/// Opens one connection on `runtime`, its I/O driven there until it closes.
pub(crate) fn connect(runtime: &Runtime, config: &tokio_postgres::Config) -> Result<Client> {
    let handle = runtime
        .handle()
        .ok_or_else(|| Error::Unavailable("the store is shutting down".into()))?;
    let config = config.clone();
    let wait = connect_timeout(&config);
    let task = handle.spawn(async move {
        let (client, connection) = tokio::time::timeout(wait, config.connect(NoTls))
            .await
            .map_err(|_| Error::Unavailable("connecting timed out".into()))?
            .map_err(pg_error)?;
        tokio::spawn(connection);
        Ok::<_, Error>(client)
    });
    match block_on(task, Instant::now() + wait + Duration::from_secs(1)) {
        Some(Ok(out)) => out,
        Some(Err(e)) => Err(Error::Unavailable(format!("connecting failed: {e}"))),
        None => Err(Error::Unavailable("connecting timed out".into())),
    }
}

/// How long connecting under `config` may take (its `connect_timeout`).
pub(crate) fn connect_timeout(config: &tokio_postgres::Config) -> Duration {
    config
        .get_connect_timeout()
        .copied()
        .unwrap_or(PgOptions::DEFAULT.connect_timeout)
}

/// Waits for one answer of the database, at most `wait`.
fn answer<T>(
    fut: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    wait: Duration,
) -> Result<T> {
    block_on(fut, Instant::now() + wait)
        .ok_or_else(|| Error::Unavailable(format!("no answer within {} s", wait.as_secs())))?
        .map_err(pg_error)
}

/// A statement the server refused is the statement's error; anything else (a closed connection, a socket
/// error) means the database cannot be reached now.
pub(crate) fn pg_error(e: tokio_postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        return Error::Postgres(format!("{} ({})", db.message(), db.code().code()));
    }
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if e.is_closed() || io {
        return Error::Unavailable(e.to_string());
    }
    Error::Postgres(e.to_string())
}

/// Polls `fut` on this thread, parking between wake-ups, until it is ready or `deadline` passes (then `None`,
/// and the future is dropped).
pub(crate) fn block_on<F: Future>(fut: F, deadline: Instant) -> Option<F::Output> {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return Some(out);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::park_timeout(deadline - now);
    }
}
