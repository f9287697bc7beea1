use super::*;

fn ctx() -> Context {
    Context {
        workspace: "/w*s".into(),
        home: Some("/home/u".into()),
    }
}

#[test]
fn variables_are_substituted_and_escaped() {
    assert_eq!(
        substitute("${workspace}/**", &ctx(), "r").unwrap(),
        "/w\\*s/**"
    );
    assert_eq!(
        substitute("~/.ssh/**", &ctx(), "r").unwrap(),
        "/home/u/.ssh/**"
    );
    assert_eq!(
        substitute_as("${workspace}/run*", &ctx(), "r", false).unwrap(),
        "/w*s/run*"
    );
    assert_eq!(substitute_as("~/x", &ctx(), "r", false).unwrap(), "~/x");
    assert!(matches!(
        substitute("${wrkspace}/x", &ctx(), "r"),
        Err(Error::UnknownVariable { .. })
    ));
}

#[test]
fn net_fields_need_net_operations() {
    let mut spec = RuleSpec::new("r", Effect::Allow);
    spec.methods = vec!["GET".into()];
    assert!(matches!(
        Rule::compile(spec.clone(), &ctx(), PathCase::Sensitive),
        Err(Error::NetFields { .. })
    ));
    spec.hosts = vec!["a.com".into()];
    spec.operations = vec![Operation::FsRead];
    assert!(matches!(
        Rule::compile(spec, &ctx(), PathCase::Sensitive),
        Err(Error::NetFields { .. })
    ));
}

#[test]
fn command_prefix_is_by_token() {
    let p = CommandPattern {
        tokens: vec!["npm".into(), "run".into(), "test".into()],
        prefix: true,
    };
    let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
    assert!(p.matches(&argv("npm run test")));
    assert!(p.matches(&argv("npm run test --watch")));
    assert!(!p.matches(&argv("npm run test-evil")));
    assert!(!p.matches(&argv("npm run test:unit")));
}

#[test]
fn deny_side_matching_looks_through_wrappers() {
    let p = CommandPattern {
        tokens: vec!["rm".into(), "-rf".into()],
        prefix: true,
    };
    let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
    let loosely = |s: &str| expand_argv(&argv(s)).runs.iter().any(|r| p.matches_run(r));
    for hit in [
        "/bin/rm -rf /",
        "sudo rm -rf /",
        "sudo -u root env A=1 /usr/bin/rm -rf x",
        "timeout 5 nice -n 3 rm -rf y",
    ] {
        assert!(loosely(hit), "{hit}");
        assert!(!p.matches(&argv(hit)) || hit.starts_with("rm"), "{hit}");
    }
    assert!(!loosely("echo rm -rf"));
}
