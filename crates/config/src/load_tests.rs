use super::*;
use crate::model::{HookCommand, HookStage, Protocol, SandboxLimits, ServerKind, Transport};
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;
use std::time::Duration;

fn env(k: &str) -> Option<String> {
    match k {
        "NOTES_DIR" => Some("/home/u/notes".into()),
        "TRACKER_TOKEN" => Some("tok-123".into()),
        "PATH" => Some("/usr/bin:/bin".into()),
        _ => None,
    }
}

fn json(text: &str) -> Result<Config> {
    parse_str(
        text,
        Format::Json,
        Path::new("client.json"),
        &env,
        &Overrides::default(),
    )
}

#[test]
fn claude_desktop_file_is_accepted_unchanged() {
    let cfg = json(
        r#"{
          "mcpServers": {
            "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${NOTES_DIR}"] },
            "tracker": { "type": "http", "url": "https://mcp.example.com/mcp",
                         "headers": { "Authorization": "Bearer ${TRACKER_TOKEN}" } }
          },
          "globalShortcut": "Ctrl+Space"
        }"#,
    )
    .unwrap();
    assert_eq!(cfg.servers.len(), 2);
    assert_eq!(
        cfg.servers[0].transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-filesystem".into(),
                "/home/u/notes".into()
            ],
            env: BTreeMap::new(),
            cwd: None,
        }
    );
    assert_eq!(
        cfg.servers[1].transport,
        Transport::Http {
            url: "https://mcp.example.com/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer tok-123".into())]),
            sse: false,
        }
    );
    assert_eq!(
        cfg.warnings,
        vec!["ignoring top-level key \"globalShortcut\": Claude Desktop's setting: not used by toolgate".to_owned()]
    );
}

#[test]
fn missing_variable_stops_startup_naming_it() {
    let e =
        json(r#"{"mcpServers":{"a":{"command":"x","env":{"K":"${UNSET_SECRET}"}}}}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mcpServers.a.env.K in client.json references ${UNSET_SECRET}, which is not set in toolgate's \
         environment; set UNSET_SECRET in the \"env\" block of toolgate's entry in the client's config \
         (clients pass servers only a few variables), or write ${UNSET_SECRET:-default}"
    );
}

#[test]
fn unknown_key_in_server_entry_is_an_error_naming_it() {
    let e = json(r#"{"mcpServers":{"a":{"command":"x","argz":[]}}}"#).unwrap_err();
    assert!(
        e.to_string().starts_with("unknown key mcpServers.a.argz"),
        "{e}"
    );
}

#[test]
fn misspelt_toolgate_key_is_an_error_not_a_warning() {
    let e = json(r#"{"prefixtools": false}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown key prefixtools (did you mean prefixTools?)"
    );
}

#[test]
fn hooks_keep_their_order_expand_variables_and_remember_where_they_came_from() {
    let cfg = json(
        r#"{"hooks": {
              "pre": [{"command": "${NOTES_DIR}/check", "args": ["--tool", "${NOTES_DIR}"], "timeout_seconds": 2,
                       "tools": ["fx__*"]},
                      {"command": "second", "arguments": true, "writable": ["${NOTES_DIR}/out"],
                       "network": false}],
              "post": [{"command": "log"}]}}"#,
    )
    .unwrap();
    let from = |key: &str| Provenance::File {
        path: PathBuf::from("client.json"),
        key: key.into(),
    };
    assert_eq!(
        cfg.hooks.pre[0],
        HookCommand {
            stage: HookStage::Pre,
            index: 0,
            command: "/home/u/notes/check".into(),
            args: vec!["--tool".into(), "/home/u/notes".into()],
            timeout: Duration::from_secs(2),
            tools: vec!["fx__*".into()],
            arguments: false,
            writable: Vec::new(),
            network: true,
            from: from("hooks.pre[0]"),
        }
    );
    assert_eq!(
        (cfg.hooks.pre[1].index, cfg.hooks.pre[1].arguments),
        (1, true)
    );
    assert_eq!(
        (&cfg.hooks.pre[1].writable, cfg.hooks.pre[1].network),
        (&vec![PathBuf::from("/home/u/notes/out")], false)
    );
    assert_eq!(cfg.hooks.pre[1].timeout, crate::model::DEFAULT_HOOK_TIMEOUT);
    assert_eq!(
        (cfg.hooks.post[0].stage, &cfg.hooks.post[0].from),
        (HookStage::Post, &from("hooks.post[0]"))
    );
}

#[test]
fn hooks_in_toml_read_the_same() {
    let cfg = parse_str(
        "[[hooks.pre]]\ncommand = \"check\"\ntimeout_seconds = 3\n[[hooks.post]]\ncommand = \"log\"\n",
        Format::Toml,
        Path::new("toolgate.toml"),
        &env,
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        (cfg.hooks.pre[0].command.as_str(), cfg.hooks.pre[0].timeout),
        ("check", Duration::from_secs(3))
    );
    assert_eq!(cfg.hooks.post[0].command, "log");
}

#[test]
fn hook_mistakes_are_errors_that_name_the_key() {
    let message = |text: &str| json(text).unwrap_err().to_string();
    assert!(
        message(r#"{"hooks": {"pre": [{"command": "c", "timeout": 5}]}}"#)
            .starts_with("unknown key hooks.pre[0].timeout")
    );
    assert!(message(r#"{"hooks": {"during": []}}"#).starts_with("unknown key hooks.during"));
    assert!(
        message(r#"{"hooks": {"pre": [{"command": "c", "writable": ["out"]}]}}"#)
            .starts_with("hooks.pre[0].writable[0]: must be an absolute path")
    );
    assert!(message(r#"{"hooks": {"pre": [{"command": " "}]}}"#)
        .starts_with("hooks.pre[0].command: must not be empty"));
    assert!(
        message(r#"{"hooks": {"post": [{"command": "c", "timeout_seconds": 0}]}}"#)
            .starts_with("hooks.post[0].timeout_seconds")
    );
    assert!(
        message(r#"{"hooks": {"pre": [{"command": "c", "tools": []}]}}"#)
            .starts_with("hooks.pre[0].tools")
    );
    assert!(message(r#"{"hooks": {"pre": [{"command": "${UNSET_HOOK}"}]}}"#).starts_with(
        "hooks.pre[0].command in client.json references ${UNSET_HOOK}, which is not set in toolgate's environment"
    ));
    assert!(message(r#"{"Hooks": {}}"#).contains("did you mean hooks?"));
}

#[test]
fn approvals_section_sets_wait_expiry_and_elicitation() {
    let cfg =
        json(r#"{"approvals": {"wait_seconds": 0, "expire_seconds": 60, "elicitation": false}}"#)
            .unwrap();
    assert_eq!(cfg.approvals.wait.value, Duration::from_secs(0));
    assert_eq!(cfg.approvals.expire.value, Duration::from_secs(60));
    assert!(!cfg.approvals.elicitation.value);
    assert!(
        !cfg.approvals.elicitation_for_writes.value,
        "commands and writes are never decided through elicitation unless enabled"
    );
    assert!(json(r#"{"approvals": {"wait": 5}}"#).is_err());
}

#[test]
fn policy_sections_are_kept_as_written_for_the_policy_stage() {
    let cfg = json(
        r#"{"permissions": {"deny": ["Read(**/.env)"]}, "profile": "review",
                     "profiles": {"review": {}}, "policy": {"rules": []}}"#,
    )
    .unwrap();
    assert_eq!(
        cfg.policy.permissions,
        Some(serde_json::json!({"deny": ["Read(**/.env)"]}))
    );
    assert_eq!(cfg.policy.profiles, Some(serde_json::json!({"review": {}})));
    assert_eq!(cfg.profile.map(|p| p.value), Some("review".to_owned()));
    assert!(json(r#"{"permissions": ["Read(x)"]}"#).is_err());
}

#[test]
fn well_known_servers_are_recognised_by_package_not_tool_names() {
    let cfg = json(
        r#"{"mcpServers": {
            "a": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/x"]},
            "b": {"command": "uvx", "args": ["mcp-server-git", "--repository", "."]},
            "c": {"command": "/opt/bin/mcp-server-fetch"},
            "d": {"command": "node", "args": ["my-read_file-server.js"]},
            "e": {"command": "node", "args": ["server.js"], "kind": "filesystem"}
        }}"#,
    )
    .unwrap();
    let kinds: Vec<ServerKind> = cfg.servers.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        vec![
            ServerKind::Filesystem,
            ServerKind::Git,
            ServerKind::Fetch,
            ServerKind::Generic,
            ServerKind::Filesystem
        ]
    );
    assert!(json(r#"{"mcpServers": {"a": {"command": "x", "kind": "shell"}}}"#).is_err());
}

#[test]
fn server_names_must_be_simple() {
    for bad in ["", "a__b", "-a", "a-", "a.b", "a b", "ä"] {
        let text = format!(r#"{{"mcpServers":{{"{bad}":{{"command":"x"}}}}}}"#);
        assert!(json(&text).is_err(), "{bad:?} should be refused");
    }
    for good in ["a", "my-git", "jira_cloud", "s3"] {
        let text = format!(r#"{{"mcpServers":{{"{good}":{{"command":"x"}}}}}}"#);
        assert!(json(&text).is_ok(), "{good:?} should be accepted");
    }
}

#[test]
fn toolgate_as_its_own_upstream_is_refused() {
    let e =
        json(r#"{"mcpServers":{"loop":{"command":"/usr/local/bin/toolgate","args":["serve"]}}}"#)
            .unwrap_err();
    assert!(e.to_string().contains("toolgate itself"), "{e}");
    // The bundled fixture server is not a loop.
    assert!(
        json(r#"{"mcpServers":{"fx":{"command":"toolgate","args":["fixture-server"]}}}"#).is_ok()
    );
}

#[test]
fn toolscript_config_that_starts_toolscript_itself_is_refused() {
    for entry in [
        r#"{"command":"node","args":["/opt/toolscript-mcp/dist/host/main.js","--config","/c.json"]}"#,
        r#"{"command":"npx","args":["-y","toolscript-mcp@0.1.0"]}"#,
        r#"{"command":"npx","args":["-y","@yeeyon/toolscript-mcp"]}"#,
        r#"{"command":"/usr/local/bin/toolscript-mcp"}"#,
        r#"{"command":"toolfence","args":["wrap","--","x"]}"#,
    ] {
        let text = format!(r#"{{"mcpServers":{{"toolscript":{entry}}},"policy":[]}}"#);
        let e = json(&text).unwrap_err().to_string();
        assert!(e.contains("each copy would start the next"), "{entry}: {e}");
    }
    // Its servers' own scripts, and a config file beside toolscript-mcp's, are not toolscript-mcp.
    assert!(json(
        r#"{"mcpServers":{"files":{"command":"node","args":["/srv/fs/dist/index.js","/home/u/.config/toolscript-mcp/notes"]}}}"#
    )
    .is_ok());
}

#[test]
fn a_toolscript_file_without_a_mode_is_code_mode() {
    let cfg =
        json(r#"{"mcpServers":{"t":{"command":"t"}},"policy":[{"match":"*","action":"allow"}]}"#)
            .unwrap();
    assert_eq!(cfg.mode.value, crate::model::Mode::Code);
    let cfg = json(r#"{"mode":"direct","policy":[{"match":"*","action":"allow"}]}"#).unwrap();
    assert_eq!(cfg.mode.value, crate::model::Mode::Direct);
    // toolgate's own policy section says nothing about the mode.
    let cfg = json(r#"{"policy":{"default":"ask","rules":[]}}"#).unwrap();
    assert_eq!(cfg.mode.value, crate::model::Mode::Direct);
}

#[test]
fn vscode_mcp_json_with_comments_loads() {
    let cfg = json(
        "{\n  // VS Code writes these\n  \"servers\": {\n    \"git\": {\"command\": \"uvx\", \"args\": [\"mcp-server-git\",],},\n  },\n}",
    )
    .unwrap();
    assert_eq!(cfg.servers[0].name, "git");
}

#[test]
fn toolgate_under_another_name_is_refused_by_identity() {
    let dir = tempfile::tempdir().unwrap();
    let me = dir.path().join("gw");
    std::fs::write(&me, b"").unwrap();
    let me = std::fs::canonicalize(&me).unwrap();
    let overrides = Overrides {
        self_exe: Some(me.clone()),
        ..Overrides::default()
    };
    let text = format!(
        r#"{{"mcpServers":{{"x":{{"command":"{}"}}}}}}"#,
        me.display()
    );
    let e = parse_str(&text, Format::Json, Path::new("c.json"), &env, &overrides).unwrap_err();
    assert!(e.to_string().contains("toolgate itself"), "{e}");
}

#[test]
fn codex_toml_shape_and_toolgate_settings() {
    let cfg = parse_str(
        r#"
        separator = "-"
        prefix_tools = false
        [limits]
        page_size = 5
        [mcp_servers.git]
        command = "uvx"
        args = ["mcp-server-git"]
        protocol = "legacy"
        "#,
        Format::Toml,
        Path::new("t.toml"),
        &env,
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(cfg.separator.value, "-");
    assert!(!cfg.prefix_tools.value);
    assert_eq!(cfg.limits.page_size.value, 5);
    assert_eq!(
        cfg.limits.page_size.from,
        Provenance::File {
            path: "t.toml".into(),
            key: "limits.pageSize".into()
        }
    );
    assert_eq!(cfg.servers[0].protocol, Protocol::Legacy);
}

#[test]
fn disabled_servers_are_skipped_with_a_warning() {
    let cfg = json(r#"{"mcpServers":{"a":{"command":"x","disabled":true}}}"#).unwrap();
    assert!(cfg.servers.is_empty());
    assert_eq!(cfg.warnings.len(), 1);
}

#[test]
fn http_entries_are_validated() {
    assert!(json(r#"{"mcpServers":{"a":{"type":"http","url":"ftp://x"}}}"#).is_err());
    assert!(json(r#"{"mcpServers":{"a":{"url":"https://"}}}"#).is_err());
    assert!(json(r#"{"mcpServers":{"a":{"command":"x","url":"https://x"}}}"#).is_err());
}

#[test]
fn invalid_syntax_names_the_file_and_format() {
    let e = json("{").unwrap_err();
    assert!(
        e.to_string().starts_with("client.json: invalid JSON"),
        "{e}"
    );
}

#[test]
fn separator_must_keep_names_valid() {
    assert!(json(r#"{"separator": "."}"#).is_err());
    assert_eq!(json(r#"{"separator": "_"}"#).unwrap().separator.value, "_");
}

#[test]
fn workspace_flag_wins_over_file() {
    let overrides = Overrides {
        workspace: Some("/flag".into()),
        ..Overrides::default()
    };
    let cfg = parse_str(
        r#"{"workspace":"/file"}"#,
        Format::Json,
        Path::new("c.json"),
        &env,
        &overrides,
    )
    .unwrap();
    assert_eq!(
        cfg.workspace,
        Some(Setting {
            value: "/flag".into(),
            from: Provenance::Flag("--workspace")
        })
    );
}

#[test]
fn sandbox_section_names_layers_and_refuses_contradictions() {
    let cfg = json(r#"{"sandbox": {"require": ["landlock", "pid_namespace"]}}"#).unwrap();
    assert_eq!(
        cfg.sandbox.require,
        vec!["landlock".to_owned(), "pid_namespace".to_owned()]
    );
    assert!(json(r#"{"sandbox": {"require": ["seatbelt"]}}"#).is_err());
    assert!(json(r#"{"sandbox": {"require": ["no_network"], "network": true}}"#).is_err());
    assert!(json(r#"{"sandbox": {"requires": []}}"#).is_err());
    assert!(json(r#"{"sandbox": {"require": ["socket_filter"], "network": true}}"#).is_err());
}

#[test]
fn sandbox_limits_are_finite_by_default_and_cannot_be_switched_off() {
    let defaults = json(r#"{}"#).unwrap().sandbox.limits;
    assert_eq!(defaults, SandboxLimits::default());
    assert!(defaults.cpu_seconds > 0 && defaults.address_space_bytes > 0);
    assert!(defaults.file_size_bytes > 0 && defaults.processes > 0 && defaults.open_files > 0);
    let cfg = json(r#"{"sandbox": {"limits": {"cpuSeconds": 5, "processes": 64}}}"#).unwrap();
    assert_eq!(
        cfg.sandbox.limits,
        SandboxLimits {
            cpu_seconds: 5,
            processes: 64,
            ..SandboxLimits::default()
        }
    );
    for off in [
        r#"{"sandbox": {"limits": {"addressSpaceBytes": 0}}}"#,
        r#"{"sandbox": {"limits": {"processes": -1}}}"#,
        r#"{"sandbox": {"limits": {"memory": 1}}}"#,
    ] {
        assert!(json(off).is_err(), "{off}");
    }
}

#[test]
fn pins_new_tools_holds_by_default_and_accepts_only_known_words() {
    assert!(!json(r#"{"mcpServers": {}}"#).unwrap().pins_accept_new_tools);
    assert!(
        !json(r#"{"pins": {"newTools": "hold"}}"#)
            .unwrap()
            .pins_accept_new_tools
    );
    assert!(
        json(r#"{"pins": {"newTools": "accept"}}"#)
            .unwrap()
            .pins_accept_new_tools
    );
    let err = json(r#"{"pins": {"newTools": "allow"}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("pins.newTools"), "{err}");
}
