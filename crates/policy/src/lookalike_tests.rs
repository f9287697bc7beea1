use super::*;
use proptest::prelude::*;

/// The definition the fast finder must match: every name compared with every other, first match wins.
fn brute_force(tools: &[(String, String)]) -> Vec<(String, PoisonFlag)> {
    let mut out = Vec::new();
    let skeletons: Vec<String> = tools.iter().map(|(_, t)| skeleton(t)).collect();
    for (i, (server, tool)) in tools.iter().enumerate() {
        let other = tools.iter().enumerate().find_map(|(j, (s2, t2))| {
            if i == j || t2 == tool {
                return None;
            }
            if skeletons[j] == skeletons[i] {
                return Some(format!("homoglyph of `{s2}__{t2}`"));
            }
            (s2 != server && within_one_edit(tool, t2))
                .then(|| format!("one edit away from `{s2}__{t2}`"))
        });
        if let Some(detail) = other {
            out.push((
                format!("{server}__{tool}"),
                PoisonFlag {
                    code: PoisonCode::LookalikeName,
                    field: "name".to_owned(),
                    detail,
                },
            ));
        }
    }
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(s, t)| ((*s).to_owned(), (*t).to_owned()))
        .collect()
}

#[test]
fn homoglyph_and_one_edit_lookalikes_are_flagged() {
    let tools = pairs(&[
        ("a", "read_file"),
        ("b", "rеad_file"), // Cyrillic е
        ("c", "read_files"),
        ("a", "read_filez"),
        ("d", "read_file"),
        ("e", "list_dir"),
    ]);
    let flags = lookalike_flags(&tools);
    let got: Vec<(&str, &str)> = flags
        .iter()
        .map(|(k, f)| (k.as_str(), f.detail.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a__read_file", "homoglyph of `b__rеad_file`"),
            ("b__rеad_file", "homoglyph of `a__read_file`"),
            ("c__read_files", "one edit away from `a__read_file`"),
            ("a__read_filez", "one edit away from `c__read_files`"),
            ("d__read_file", "homoglyph of `b__rеad_file`"),
        ]
    );
    assert_eq!(flags, brute_force(&tools));
}

#[test]
fn same_server_one_edit_is_not_a_lookalike() {
    let tools = pairs(&[("a", "get_item"), ("a", "get_items"), ("b", "list")]);
    assert!(lookalike_flags(&tools).is_empty());
}

/// Names from a small alphabet (with homoglyphs, invisibles and repeated letters) so that skeleton matches,
/// substitutions, insertions and runs of one letter all occur often.
fn name() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(vec![
            'a', 'а', 'b', 'l', '1', 'I', 'o', '0', '_', '\u{200b}', 'é',
        ]),
        0..5,
    )
    .prop_map(|c| c.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn lookalikes_match_the_brute_force_reference(
        tools in proptest::collection::vec((proptest::sample::select(vec!["s", "t", "u"]), name()), 0..24)
    ) {
        let tools: Vec<(String, String)> = tools.into_iter().map(|(s, t)| (s.to_owned(), t)).collect();
        prop_assert_eq!(lookalike_flags(&tools), brute_force(&tools));
    }
}
