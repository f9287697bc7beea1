//! The accounting of shares: a property test against a plain model, and the refusal each bound gives.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
    Take(usize, u64),
    GiveBack(usize, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4usize, 0..400u64).prop_map(|(i, n)| Op::Take(i, n)),
        (0..4usize, 0..400u64).prop_map(|(i, n)| Op::GiveBack(i, n)),
    ]
}

proptest! {
    /// Whatever identities take and give back, in any order: no identity holds more than its share, all of
    /// them together never more than the ceiling, a refused charge changes nothing, and what is held is
    /// exactly what was taken and not yet given back (so a session's return frees room for everyone).
    #[test]
    fn quota_accounting_never_passes_a_share_or_the_ceiling(
        share in 1..1000u64,
        ceiling in 1..2000u64,
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let quota = Quota::new(share, ceiling);
        let ids = ["key:a", "key:b", "jwt:x#y", "local"];
        let mut model: HashMap<&str, u64> = HashMap::new();
        for op in ops {
            match op {
                Op::Take(i, n) => {
                    let mine = model.get(ids[i]).copied().unwrap_or(0);
                    let total: u64 = model.values().sum();
                    let fits = mine + n <= share.min(ceiling) && total + n <= ceiling;
                    let taken = quota.take(ids[i], n);
                    prop_assert_eq!(taken.is_ok(), fits, "take {} of {}", n, ids[i]);
                    match taken {
                        Ok(()) => *model.entry(ids[i]).or_default() += n,
                        Err(Exceeded::Identity { held, share: s }) => {
                            prop_assert_eq!(held, mine);
                            prop_assert_eq!(s, share.min(ceiling));
                        }
                        Err(Exceeded::Overall { held, ceiling: c }) => {
                            prop_assert_eq!(held, total);
                            prop_assert_eq!(c, ceiling);
                        }
                    }
                }
                Op::GiveBack(i, n) => {
                    quota.give_back(ids[i], n);
                    let mine = model.entry(ids[i]).or_default();
                    *mine -= n.min(*mine);
                }
            }
            for id in ids {
                let held = quota.held_by(id);
                prop_assert_eq!(held, model.get(id).copied().unwrap_or(0));
                prop_assert!(held <= share);
            }
            prop_assert_eq!(quota.held(), model.values().sum::<u64>());
            prop_assert!(quota.held() <= ceiling);
        }
    }
}

#[test]
fn a_full_share_refuses_its_identity_only() {
    let quota = Quota::new(10, 15);
    quota.take("key:a", 10).unwrap();
    assert_eq!(
        quota.take("key:a", 1),
        Err(Exceeded::Identity {
            held: 10,
            share: 10
        })
    );
    quota.take("key:b", 5).unwrap();
    assert_eq!(
        quota.take("key:b", 1),
        Err(Exceeded::Overall {
            held: 15,
            ceiling: 15
        })
    );
    quota.give_back("key:a", 10);
    quota.take("key:b", 5).unwrap();
}
