use super::*;
use crate::keys::near_miss;
use crate::load::{load, Overrides};
use crate::model::Config;
use pretty_assertions::assert_eq;
use std::path::Path;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn env(k: &str) -> Option<String> {
    let v = match k {
        "HOME" => "/home/me",
        "USER" => "me",
        "PATH" => "/usr/bin:/bin",
        "GITHUB_TOKEN" | "DOCS_API_KEY" | "FIGMA_OAUTH_TOKEN" | "FIGMA_KEY"
        | "CONTEXT7_API_KEY" | "TRACKER_TOKEN" => "s3cr3t",
        "NOTES_DIR" => "/home/me/notes",
        _ => return None,
    };
    Some(v.to_owned())
}

fn load_corpus(file: &str) -> Config {
    let overrides = Overrides {
        workspace: Some(PathBuf::from("/srv/project")),
        ..Overrides::default()
    };
    load(&corpus().join(file), &env, &overrides)
        .unwrap_or_else(|e| panic!("{file} does not load: {e}"))
}

fn server<'a>(config: &'a Config, name: &str) -> &'a ServerConfig {
    config
        .servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

fn stdio_env(s: &ServerConfig) -> &BTreeMap<String, String> {
    match &s.transport {
        Transport::Stdio { env, .. } => env,
        other => panic!("not stdio: {other:?}"),
    }
}

/// Every client's file in the corpus loads unchanged, and starts at least one server.
#[test]
fn client_config_files_are_accepted_unchanged() {
    let files = [
        "claude_desktop_config.json",
        "claude_code.mcp.json",
        "cursor/mcp.json",
        "vscode/.vscode/mcp.json",
        "codex_config.toml",
        "cline_mcp_settings.json",
        "toolscript.json",
    ];
    for file in files {
        let config = load_corpus(file);
        assert!(!config.servers.is_empty(), "{file}: no server");
    }
    // The list above is the whole corpus: a file added there is loaded here too.
    let mut on_disk = Vec::new();
    let mut dirs = vec![corpus()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "json" || e == "toml") {
                on_disk.push(path.strip_prefix(corpus()).unwrap().display().to_string());
            }
        }
    }
    on_disk.sort();
    let mut listed: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn codex_timeouts_enabled_and_tool_lists_are_honoured() {
    let config = load_corpus("codex_config.toml");
    let docs = server(&config, "docs");
    assert_eq!(docs.startup_timeout, Some(Duration::from_secs(20)));
    assert_eq!(docs.request_timeout, Some(Duration::from_millis(45_500)));
    assert!(docs.tools.allows("search"));
    // disabled_tools wins over enabled_tools; anything not enabled is off.
    assert!(!docs.tools.allows("fetch_page"));
    assert!(!docs.tools.allows("delete_everything"));
    assert_eq!(
        stdio_env(docs),
        &BTreeMap::from([
            ("DOCS_API_KEY".to_owned(), "s3cr3t".to_owned()),
            ("DOCS_LANG".to_owned(), "en".to_owned()),
        ])
    );
    assert_eq!(
        docs.notes,
        vec![
            "env_vars: NOT_SET_ANYWHERE is not set in toolgate's environment; not passed"
                .to_owned()
        ]
    );
    assert_eq!(
        server(&config, "legacy").startup_timeout,
        Some(Duration::from_secs(15))
    );
    let Transport::Http { headers, sse, .. } = &server(&config, "figma").transport else {
        panic!("figma is HTTP");
    };
    assert!(!sse);
    assert_eq!(
        headers.keys().collect::<Vec<_>>(),
        ["Authorization", "X-Figma-Key", "X-Figma-Region"]
    );
    assert_eq!(config.disabled.len(), 1);
    assert_eq!(config.disabled[0].name, "off");
    assert!(config.disabled[0].reason.contains("enabled = false"));
}

#[test]
fn cursor_env_file_is_read_relative_to_the_config_and_env_wins() {
    let config = load_corpus("cursor/mcp.json");
    let notes = server(&config, "notes");
    assert_eq!(
        stdio_env(notes),
        &BTreeMap::from([
            ("NOTES_LOG_LEVEL".to_owned(), "debug".to_owned()),
            ("NOTES_TITLE".to_owned(), "My notes".to_owned()),
            ("NOTES_USER".to_owned(), "me".to_owned()),
        ])
    );
    let Transport::Stdio { args, .. } = &notes.transport else {
        panic!("stdio");
    };
    assert_eq!(
        args,
        &[
            "/srv/project/tools/notes-server.js",
            "--root",
            "/home/me/notes"
        ]
    );
}

#[test]
fn vscode_input_reference_leaves_the_server_unstarted_with_its_reason() {
    let path = corpus().join("vscode/.vscode/mcp.json");
    // No workspace given: `${workspaceFolder}` is the folder holding .vscode, as VS Code means it.
    let config = load(&path, &env, &Overrides::default()).unwrap();
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["playwright", "github"]);
    assert_eq!(config.disabled.len(), 1);
    assert_eq!(config.disabled[0].name, "perplexity");
    assert!(
        config.disabled[0].reason.starts_with(
            "servers.perplexity.env.PERPLEXITY_API_KEY references ${input:perplexity-key}"
        ),
        "{}",
        config.disabled[0].reason
    );
    let playwright = server(&config, "playwright");
    let Transport::Stdio { cwd, env, .. } = &playwright.transport else {
        panic!("stdio");
    };
    let folder = corpus().join("vscode");
    assert_eq!(cwd.as_deref(), Some(folder.as_path()));
    assert_eq!(
        env.get("PLAYWRIGHT_BROWSERS_PATH").map(String::as_str),
        Some("0")
    );
    assert!(
        playwright.notes[0].starts_with("dev: "),
        "{:?}",
        playwright.notes
    );
}

#[test]
fn sse_and_http_entries_with_headers_load_and_the_deprecated_transport_is_named() {
    let config = load_corpus("claude_code.mcp.json");
    let linear = server(&config, "linear");
    assert!(matches!(
        linear.transport,
        Transport::Http { sse: true, .. }
    ));
    assert!(linear.notes[0].contains("deprecated"), "{:?}", linear.notes);
    let Transport::Http { headers, .. } = &server(&config, "sentry").transport else {
        panic!("http");
    };
    assert_eq!(headers["Authorization"], "Bearer ");
}

#[test]
fn other_clients_keys_are_accepted_and_reported() {
    let config = load_corpus("cline_mcp_settings.json");
    let notes = &server(&config, "weather").notes;
    let keys: Vec<_> = notes.iter().map(|n| n.split(':').next().unwrap()).collect();
    assert_eq!(keys, ["autoApprove", "timeout", "transportType"]);
}

#[test]
fn misspelt_tool_filter_key_is_refused_not_ignored() {
    let text = r#"{"mcpServers":{"a":{"command":"x","disabled_tool":["rm"]}}}"#;
    let e = crate::load::parse_str(
        text,
        crate::load::Format::Json,
        Path::new("c.json"),
        &env,
        &Overrides::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown key mcpServers.a.disabled_tool (did you mean disabled_tools?)"
    );
}

#[test]
fn near_misses_are_told_from_other_clients_keys() {
    assert!(near_miss("disabled_tools", "disabled_tool"));
    assert!(near_miss("enabled_tools", "EnabledTools"));
    assert!(near_miss("args", "argz"));
    assert!(!near_miss("args", "alwaysAllow"));
    assert!(!near_miss("env", "foo"));
}

#[test]
fn conflicting_timeouts_are_refused() {
    let e = crate::load::parse_str(
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 1\nstartup_timeout_ms = 1000\n",
        crate::load::Format::Toml,
        Path::new("c.toml"),
        &env,
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not both"), "{e}");
}

fn json_servers(text: &str) -> Result<Config> {
    crate::load::parse_str(
        text,
        crate::load::Format::Json,
        Path::new("/etc/tg/c.json"),
        &env,
        &Overrides::default(),
    )
}

#[test]
fn stdio_servers_are_contained_by_default_with_the_network_on() {
    let config = json_servers(r#"{"mcpServers":{"a":{"command":"x"}}}"#).unwrap();
    assert_eq!(server(&config, "a").sandbox, ServerSandbox::default());
    assert!(server(&config, "a").sandbox.enabled && server(&config, "a").sandbox.network);
}

#[test]
fn server_sandbox_section_is_read_with_relative_paths_from_the_config_folder() {
    let text = r#"{"mcpServers":{"a":{"command":"x","sandbox":{"network":false,
        "writable":["/srv/data","cache","${HOME}/notes"],"require":["landlock","no_network"]}}}}"#;
    let config = json_servers(text).unwrap();
    assert_eq!(
        server(&config, "a").sandbox,
        ServerSandbox {
            enabled: true,
            network: false,
            unix_sockets: false,
            writable: vec![
                PathBuf::from("/srv/data"),
                PathBuf::from("/etc/tg/cache"),
                PathBuf::from("/home/me/notes")
            ],
            require: vec!["landlock".into(), "no_network".into()],
        }
    );
}

#[test]
fn container_clients_get_unix_sockets_unless_told_otherwise() {
    let config = json_servers(
        r#"{"mcpServers":{"d":{"command":"/usr/bin/docker","args":["run","-i","img"]},
            "p":{"command":"podman","sandbox":{"unixSockets":false}}}}"#,
    )
    .unwrap();
    assert!(server(&config, "d").sandbox.unix_sockets);
    assert!(!server(&config, "p").sandbox.unix_sockets);
}

#[test]
fn server_sandbox_that_cannot_mean_what_it_says_is_refused() {
    for (text, why) in [
        (
            r#"{"command":"x","sandbox":{"require":["seatbelt"]}}"#,
            "not one of",
        ),
        (
            r#"{"command":"x","sandbox":{"require":["no_network"]}}"#,
            "contradicts",
        ),
        (
            r#"{"command":"x","sandbox":{"enabled":false,"require":["landlock"]}}"#,
            "contradicts",
        ),
        (
            r#"{"command":"x","sandbox":{"unixSockets":true,"require":["socket_filter"]}}"#,
            "contradicts",
        ),
        (
            r#"{"command":"x","sandbox":{"writeable":["/x"]}}"#,
            "writeable",
        ),
        (
            r#"{"url":"https://example.com/mcp","sandbox":{}}"#,
            "nothing to contain",
        ),
    ] {
        let e = json_servers(&format!(r#"{{"mcpServers":{{"a":{text}}}}}"#)).unwrap_err();
        assert!(e.to_string().contains(why), "{text}: {e}");
    }
}
