//! The approval lifecycle checked against a plain in-memory model over random operation
//! sequences: every result and every effective status must agree.

use proptest::prelude::*;
use store::{ApprovalStatus, Error, Timestamp};

use crate::support::{snapshot, Env, MINUTE, T0};

#[derive(Debug, Clone)]
enum Op {
    Create { ttl_min: i64 },
    Approve(usize),
    Reject(usize),
    Consume(usize),
    Advance { min: i64 },
    ExpireDue,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1i64..5).prop_map(|ttl_min| Op::Create { ttl_min }),
        (0usize..6).prop_map(Op::Approve),
        (0usize..6).prop_map(Op::Reject),
        (0usize..6).prop_map(Op::Consume),
        (0i64..3).prop_map(|min| Op::Advance { min }),
        Just(Op::ExpireDue),
    ]
}

/// The model's view of one request.
#[derive(Debug, Clone, Copy)]
struct M {
    stored: ApprovalStatus,
    expires: Timestamp,
}

impl M {
    fn effective(self, now: Timestamp) -> ApprovalStatus {
        match self.stored {
            ApprovalStatus::Pending | ApprovalStatus::Approved if now >= self.expires => {
                ApprovalStatus::Expired
            }
            s => s,
        }
    }
}

/// What a transition should return, as a comparable token.
fn expect(m: M, now: Timestamp, from: ApprovalStatus) -> Result<(), String> {
    match m.effective(now) {
        s if s == from => Ok(()),
        ApprovalStatus::Expired => Err("expired".into()),
        s => Err(format!("invalid:{s}")),
    }
}

fn token<T>(r: &Result<T, Error>) -> Result<(), String> {
    match r {
        Ok(_) => Ok(()),
        Err(Error::Expired) => Err("expired".into()),
        Err(Error::InvalidTransition(s)) => Err(format!("invalid:{s}")),
        Err(e) => Err(format!("other:{e}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn lifecycle_matches_model(ops in prop::collection::vec(op(), 1..40)) {
        let env = Env::new();
        let mut s = env.store();
        let mut now = T0;
        let mut ids: Vec<String> = Vec::new();
        let mut model: Vec<M> = Vec::new();
        for op in ops {
            match op {
                Op::Create { ttl_min } => {
                    let expires = now.plus_millis(ttl_min * MINUTE);
                    let a = s.create_request("t", &snapshot(), now, expires).unwrap();
                    ids.push(a.id);
                    model.push(M { stored: ApprovalStatus::Pending, expires });
                }
                Op::Approve(i) | Op::Reject(i) | Op::Consume(i) if i < ids.len() => {
                    let (from, to, got) = match op {
                        Op::Approve(_) => (ApprovalStatus::Pending, ApprovalStatus::Approved,
                                           token(&s.approve(&ids[i], "a", now))),
                        Op::Reject(_) => (ApprovalStatus::Pending, ApprovalStatus::Rejected,
                                          token(&s.reject(&ids[i], "a", now))),
                        _ => (ApprovalStatus::Approved, ApprovalStatus::Consumed,
                              token(&s.consume(&ids[i], now))),
                    };
                    let want = expect(model[i], now, from);
                    if want.is_ok() {
                        model[i].stored = to;
                    }
                    prop_assert_eq!(got, want);
                }
                Op::Approve(_) | Op::Reject(_) | Op::Consume(_) => {}
                Op::Advance { min } => now = now.plus_millis(min * MINUTE),
                Op::ExpireDue => {
                    let mut want = 0;
                    for m in &mut model {
                        if m.effective(now) == ApprovalStatus::Expired
                            && m.stored != ApprovalStatus::Expired
                        {
                            m.stored = ApprovalStatus::Expired;
                            want += 1;
                        }
                    }
                    prop_assert_eq!(s.expire_due(now).unwrap(), want);
                }
            }
            for (id, m) in ids.iter().zip(&model) {
                prop_assert_eq!(s.get_request(id, now).unwrap().status, m.effective(now));
            }
        }
    }
}
