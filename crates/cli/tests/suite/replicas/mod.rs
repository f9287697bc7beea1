//! A team's gateway end to end: three `toolgate serve --http` replicas on one private PostgreSQL cluster, behind
//! a real HAProxy (round robin, with and without affinity on `Mcp-Session-Id`), each replica with a state root of
//! its own as on separate machines — only `approval.key` is copied between them. HAProxy names the replica that
//! answered each request in `X-Replica`, so each flow checks where it ran: a call held on one replica released
//! by an approval given on another's machine and resumed on a third, in both eras; a replica killed with SIGKILL
//! while a call waits on it; the database restarted while a call waits; two replicas racing for one approval.
//! A modern client's call bridged to a 2025-era upstream is retried through whichever replica the balancer picks
//! and sent on to the one holding it (`bridged`); a task's methods likewise reach the replica whose upstream holds
//! it (`tasks`).
//! Everything started (cluster, replicas, balancer) is stopped when a test ends, also when it fails.

mod bridged;
mod flows;
mod report;
mod tasks;
mod team;
