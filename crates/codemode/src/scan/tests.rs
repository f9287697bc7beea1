//! The scan against programs that name their tools plainly, and against every way a program can reach `call`
//! under a name the scan cannot see (each must come out `dynamic`).

use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

fn assert_plain(program: &str, expected: &[&str]) {
    let s = scan(program);
    assert!(!s.dynamic, "dynamic: {program}");
    let names: Vec<&str> = s.literal_names.iter().map(String::as_str).collect();
    assert_eq!(names, expected, "{program}");
}

fn assert_dynamic(program: &str) {
    assert!(scan(program).dynamic, "not dynamic: {program}");
}

#[test]
fn literal_names_in_every_quote_style() {
    assert_plain(
        r#"const a = await call("files__read_text_file", {path: "/x"});
           const b = await call('tracker__list_issues');
           const c = await call(`mcp__files__list_directory`, {path: a.dir});
           return [a, b, c].map(x => x.length / 2);"#,
        &[
            "files__read_text_file",
            "mcp__files__list_directory",
            "tracker__list_issues",
        ],
    );
}

#[test]
fn calls_in_comments_strings_templates_and_regexes_are_not_literal_calls() {
    assert_plain(
        r#"// call("in_line_comment")
           /* call("in_block_comment") */
           const s = 'call("in_string")' + "call('in_double')";
           const t = `call("in_template")`;
           const r = /call\("in_regex"\)[/'"`]/g;
           const q = x / 2 / call("real");
           if (ok) /call("after_control_head")/.test(s);
           return `${await call("in_substitution")} done`;"#,
        &["in_substitution", "real"],
    );
}

#[test]
fn scan_is_not_fooled_by_a_regex_that_looks_like_a_string() {
    // If `/"/` were read as a division and a string, `call(name)` would be hidden inside that string.
    assert_dynamic(r#"if (1) /"/; call(name); x = "/";"#);
    assert_dynamic(r#"x = a ? /'/ : 0; call(name); y = '/'"#);
}

#[test]
fn a_slash_after_a_closing_brace_is_dynamic() {
    // A block (`case 1: {}`, or `{}` after a line break) reads `/"/` as a regex, an object literal as a division.
    assert_dynamic("switch (1) { case 1: {} /\"/; call(name); x = \"/ \" }");
    assert_dynamic("let a = 1\n{}\n/\"/; call(name); x = \"/\"");
    assert_dynamic("x = {} / 2");
}

#[test]
fn nested_regex_classes_do_not_end_the_regex_early() {
    assert_dynamic(r#"x = /[[a]/]"/v; call(name); y = "/"#);
    assert_plain(r#"x = /[a-z/]+/g.test(await call("t"))"#, &["t"]);
}

#[test]
fn comments_end_at_every_line_terminator() {
    assert_dynamic("// comment\u{2028}call(name)");
    assert_dynamic("// comment\u{2029}call(name)");
    assert_dynamic("// comment\rcall(name)");
}

#[test]
fn computed_names_and_concatenation_are_dynamic() {
    assert_dynamic("await call(name)");
    assert_dynamic(r#"await call("files__" + op)"#);
    assert_dynamic(r#"await call(`files__${op}`)"#);
    assert_dynamic(r#"await call(...["files__read"])"#);
    assert_dynamic(r#"await call(("files__read"))"#);
}

#[test]
fn escapes_in_the_literal_are_dynamic() {
    assert_dynamic(r#"await call("files__re\x61d")"#);
    assert_dynamic(r#"await call("files__re\u0061d")"#);
    assert_dynamic(r"await call(`files__re\u0061d`)");
    assert_dynamic("await call(\"files__read\\\nx\")");
}

#[test]
fn aliasing_or_passing_call_is_dynamic() {
    assert_dynamic(r#"const c = call; await c("x")"#);
    assert_dynamic(r#"const {call: c} = globalThis; await c("x")"#);
    assert_dynamic(r#"[call].map(f => f("x"))"#);
    assert_dynamic(r#"call.apply(null, ["x"])"#);
    assert_dynamic(r#"call.bind(null)("x")"#);
    assert_dynamic(r#"call?.("x")"#);
    assert_dynamic("call`x`");
    assert_dynamic(r#"function call(n) { return n } call("x")"#);
    assert_dynamic(r#"foo.call(null, "x")"#);
}

#[test]
fn reaching_the_global_object_is_dynamic() {
    assert_dynamic(r#"globalThis.call("x")"#);
    assert_dynamic(r#"globalThis["call"]("x")"#);
    assert_dynamic(r#"globalThis["ca" + "ll"]("x")"#);
    assert_dynamic(r#"this["call"]("x")"#);
    assert_dynamic(r#"this.call("x")"#);
    assert_dynamic(r#"const g = globalThis; g[k]("x")"#);
    assert_dynamic(r#"self.call("x")"#);
    assert_dynamic(r#"Reflect.get(o, "ca" + "ll")"#);
    assert_dynamic(r#"with (o) { x("y") }"#);
    assert_dynamic(r#"o["call"]"#);
    assert_plain(
        r#"return globalThis.JSON.stringify(await call("x"))"#,
        &["x"],
    );
}

#[test]
fn code_built_from_strings_is_dynamic() {
    assert_dynamic(r#"eval('call("x")')"#);
    assert_dynamic(r#"(0, eval)("1")"#);
    assert_dynamic(r#"Function('return this')()"#);
    assert_dynamic(r#"[].constructor.constructor("return this")()"#);
    assert_dynamic(r#"(async () => {}).constructor("x")"#);
    assert_dynamic(r#"({}).__proto__"#);
    assert_dynamic(r#"import("os")"#);
    assert_dynamic(r#"require("fs")"#);
    assert_dynamic(r#"setTimeout("call('x')", 0)"#);
}

#[test]
fn escapes_in_identifiers_are_dynamic() {
    assert_dynamic(r#"\u0063all("x")"#);
    assert_dynamic(r#"c\u{61}ll("x")"#);
    assert_dynamic(r#"glob\u0061lThis.x"#);
}

#[test]
fn unterminated_or_unbalanced_text_is_dynamic() {
    assert_dynamic(r#"call("x""#);
    assert_dynamic("/* call(\"x\")");
    assert_dynamic("`abc");
    assert_dynamic("x = /abc");
    assert_dynamic(r#"call("x")) }"#);
    assert_dynamic(r#"{ call("x")"#);
}

#[test]
fn white_space_of_any_kind_does_not_hide_call() {
    assert_plain("call\u{a0}(\"x\")", &["x"]);
    assert_plain("call\u{2003}( /* c */ \"x\" )", &["x"]);
    assert_dynamic("call\u{feff}(name)");
}

#[test]
fn an_empty_or_plain_program_is_not_dynamic() {
    assert_plain("", &[]);
    assert_plain("return 1 + 2", &[]);
    assert_plain("const o = {a: 1}; return o.a / 2", &[]);
}

proptest! {
    #[test]
    fn scan_never_panics_and_ends_on_any_text(text in ".{0,400}") {
        let _ = scan(&text);
    }

    #[test]
    fn scan_never_panics_on_javascript_shaped_noise(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("call"), Just("("), Just(")"), Just("{"), Just("}"), Just("["), Just("]"), Just("/"),
                Just("\""), Just("'"), Just("`"), Just("${"), Just("\\"), Just("//"), Just("/*"), Just("*/"),
                Just("\n"), Just("x"), Just("1"), Just("."), Just("?."), Just("=>"), Just("if"), Just(" "),
                Just("\u{2028}"), Just("é"),
            ],
            0..120,
        )
    ) {
        let program: String = parts.concat();
        let _ = scan(&program);
        // Whatever the text before it leaves open (a comment, a string, a template, a regex, a bracket), a
        // computed call on the next line is either code, so dynamic, or inside something unterminated, so unsure.
        let hidden = format!("{program}\ncall(name)");
        prop_assert!(scan(&hidden).dynamic, "{}", hidden);
    }
}

#[test]
fn a_megabyte_of_nested_brackets_scans_in_linear_time() {
    let program = format!("{}{}", "([{`${".repeat(50_000), "x");
    let started = std::time::Instant::now();
    assert_dynamic(&program);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

fn arguments_of(program: &str) -> Vec<Option<serde_json::Value>> {
    scan(program)
        .calls
        .into_iter()
        .map(|c| c.arguments)
        .collect()
}

#[test]
fn literal_arguments_are_read_as_the_engine_sends_them() {
    use serde_json::json;
    let got = arguments_of(
        r#"await call("shell_run", {program: "/bin/sh", args: ["-c", 'id -u > pwned.txt'],});
           await call("read_file", {"path": `src/lib.rs`, n: 12, deep: {a: [true, false, null, {}]}});
           await call("git_status");
           await call("x", {a: 1, a: 2})"#,
    );
    assert_eq!(
        got,
        vec![
            Some(json!({"program": "/bin/sh", "args": ["-c", "id -u > pwned.txt"]})),
            Some(json!({"path": "src/lib.rs", "n": 12, "deep": {"a": [true, false, null, {}]}})),
            Some(json!({})),
            Some(json!({"a": 2})),
        ]
    );
}

#[test]
fn arguments_that_are_not_a_plain_literal_are_computed() {
    for program in [
        r#"call("shell_run", args)"#,
        r#"call("shell_run", {program: p})"#,
        r#"call("shell_run", {program})"#,
        r#"call("shell_run", {...base, program: "ls"})"#,
        r#"call("shell_run", {[k]: "ls"})"#,
        r#"call("shell_run", {__proto__: {program: "ls"}})"#,
        r#"call("shell_run", {"__proto__": {program: "ls"}})"#,
        r#"call("shell_run", {program: "l" + "s"})"#,
        r#"call("shell_run", {program: `${p}`})"#,
        r#"call("shell_run", {program: "\x6cs"})"#,
        r#"call("shell_run", {n: -1})"#,
        r#"call("shell_run", {n: 1.50})"#,
        r#"call("shell_run", {n: 0x10})"#,
        r#"call("shell_run", {n: 1e3})"#,
        r#"call("shell_run", {n: 010})"#,
        r#"call("shell_run", {n: 99999999999999999})"#,
        r#"call("shell_run", {a: [1,,2]})"#,
        r#"call("shell_run", {a: undefined})"#,
        r#"call("shell_run", {get program() { return "rm" }})"#,
        r#"call("shell_run", {program: "ls"}, extra)"#,
        r#"call("shell_run", {program: "ls"}.x)"#,
        r#"call("shell_run", null)"#,
        r#"call("shell_run",)"#,
        "call(\"shell_run\", {program: `a\r\nb`})",
    ] {
        assert_eq!(arguments_of(program), vec![None], "{program}");
        assert!(scan(program).computes_arguments(), "{program}");
    }
}

#[test]
fn deep_literals_are_computed_not_recursed_without_bound() {
    let deep = format!("call(\"x\", {}{})", "{a: ".repeat(200), "}".repeat(200));
    assert_eq!(arguments_of(&deep), vec![None]);
}

/// A JSON value and a JavaScript literal that writes it, in the styles programs use (bare or quoted keys, any
/// quote, spacing, trailing commas).
fn literal_source() -> BoxedStrategy<(serde_json::Value, String)> {
    use serde_json::Value;
    let text = "[a-z0-9 ./_-]{0,8}";
    let leaf = prop_oneof![
        text.prop_map(|s| (Value::String(s.clone()), format!("{s:?}"))),
        text.prop_map(|s| (Value::String(s.clone()), format!("'{s}'"))),
        text.prop_map(|s| (Value::String(s.clone()), format!("`{s}`"))),
        (0u32..1_000_000).prop_map(|n| (Value::from(n), n.to_string())),
        any::<bool>().prop_map(|b| (Value::Bool(b), b.to_string())),
        Just((Value::Null, "null".to_owned())),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..4), any::<bool>()).prop_map(
                |(items, trailing)| {
                    let src: Vec<String> = items.iter().map(|(_, s)| s.clone()).collect();
                    let comma = if trailing && !src.is_empty() { "," } else { "" };
                    let value = Value::Array(items.into_iter().map(|(v, _)| v).collect());
                    (value, format!("[{}{comma}]", src.join(", ")))
                }
            ),
            object(inner),
        ]
    })
    .boxed()
}

fn object(
    inner: BoxedStrategy<(serde_json::Value, String)>,
) -> impl Strategy<Value = (serde_json::Value, String)> {
    let key = "[a-z][a-z0-9_]{0,5}";
    (
        prop::collection::vec((key, any::<bool>(), inner), 0..4),
        any::<bool>(),
    )
        .prop_map(|(entries, trailing)| {
            let mut map = serde_json::Map::new();
            let mut src = Vec::new();
            for (k, quoted, (v, s)) in entries {
                src.push(if quoted {
                    format!("{k:?}: {s}")
                } else {
                    format!("{k}: {s}")
                });
                map.insert(k, v);
            }
            let comma = if trailing && !src.is_empty() { "," } else { "" };
            (
                serde_json::Value::Object(map),
                format!("{{{}{comma}}}", src.join(", ")),
            )
        })
}

proptest! {
    #[test]
    fn a_literal_is_read_as_the_value_it_writes((value, src) in object(literal_source())) {
        let program = format!("const r = await call(\"t\", {src});\nreturn r;");
        let s = scan(&program);
        prop_assert!(!s.dynamic, "{}", program);
        prop_assert_eq!(s.calls.len(), 1);
        prop_assert_eq!(s.calls[0].arguments.as_ref(), Some(&value), "{}", program);
    }
}
