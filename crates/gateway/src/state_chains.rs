//! The audit witness as the state keeps it: adopting a log written before its witness existed, reading the
//! witness from the store, and verifying the other replicas' chains — replicas that share a store each write an
//! audit log of their own (`audit-CHAIN.jsonl` beside the others in the namespace), each witnessed under its
//! chain's name in the store. Nothing here writes an audit event.

use crate::error::Error;
use crate::state::State;
use audit::{AuditLog, Head, VerifyReport, Witness};
use std::path::PathBuf;
use store::{StateStore, Timestamp};

impl State {
    /// The other replicas' audit chains this namespace's store witnesses, each verified from its log in this
    /// namespace's directory against its own witness: the chain's name, its log's path, and the report (a log
    /// kept on another machine is missing here, and verifies as cut short of its head).
    pub fn verify_other_chains(&self) -> Result<Vec<(String, PathBuf, VerifyReport)>, Error> {
        let own = self.audit_log().path().to_path_buf();
        let chains = self
            .store(|s| s.audit_chains())
            .map_err(Error::AuditWitness)?;
        let mut out = Vec::new();
        for c in chains {
            let log = AuditLog::for_chain(self.namespace().dir(), &c.chain);
            if log.path() == own || !(c.chain.is_empty() || audit::valid_chain(&c.chain)) {
                continue;
            }
            let witness = Witness {
                head: c.head.map(|h| Head {
                    seq: h.seq,
                    hash: h.hash,
                }),
                anchors: c.anchors.into_iter().map(|a| a.hash).collect(),
            };
            let report = log.verify_with(&witness).map_err(Error::AuditRead)?;
            out.push((c.chain, log.path().to_path_buf(), report));
        }
        Ok(out)
    }
}

/// The first time a state database meets a log (one written before the witness existed), the log is witnessed as
/// it is if its chain verifies: its anchor and its end become the witness. One full read, once. A log that does
/// not verify is left unwitnessed; the start check and `audit verify` report it.
pub(crate) fn adopt(audit: &AuditLog, store: &dyn StateStore) -> Option<Head> {
    let report = audit.verify().ok().filter(VerifyReport::is_ok)?;
    let head = report.head?;
    let now = Timestamp::now();
    let adopted = (|| {
        if let Some(a) = &report.anchor {
            store.record_audit_anchor(&a.hash, a.next_seq, &a.prev, now)?;
        }
        store.advance_audit_head(
            &store::AuditHead {
                seq: head.seq,
                hash: head.hash.clone(),
            },
            now,
        )
    })();
    match adopted {
        Ok(()) => Some(head),
        Err(e) => {
            tracing::warn!("cannot record the audit log's witness: {e}");
            None
        }
    }
}

pub(crate) fn database_witness(s: &dyn StateStore) -> Result<Witness, store::Error> {
    let head = s.audit_head()?.map(|h| Head {
        seq: h.seq,
        hash: h.hash,
    });
    let anchors = s.audit_anchors()?.into_iter().map(|a| a.hash).collect();
    Ok(Witness { head, anchors })
}
