//! The shape of this crate, checked: no file of the core over 500 lines (test files aside), no production
//! function over 100 lines, no import circle of more than 4 files. `scripts/shape` runs these with their
//! output. The checker itself (`shape`) is tested first, on small sources made for each rule, so a check that
//! passes is one that could have failed.

use crate::shape::{circles, long_files, long_functions, production, read_sources, Source};
use pretty_assertions::assert_eq;

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 100;
const MAX_CIRCLE_FILES: usize = 4;

fn src(path: &str, text: &str) -> Source {
    Source {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// A function `name` of exactly `lines` lines whose body starts with `inner`.
fn function(name: &str, lines: usize, inner: &str) -> String {
    let mut f = format!("fn {name}() {{\n{inner}\n");
    f.push_str(&"    step();\n".repeat(lines - 2 - inner.lines().count().max(1)));
    f.push_str("}\n");
    f
}

fn crate_sources() -> Vec<Source> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    read_sources(&dir).unwrap()
}

#[test]
fn a_file_over_the_limit_is_found_and_test_files_are_not() {
    let lines = |n: usize| "x\n".repeat(n);
    let sources = [
        src("big.rs", &lines(501)),
        src("edge.rs", &lines(500)),
        src("a/tests.rs", &lines(900)),
        src("a_tests.rs", &lines(900)),
        src("testkit.rs", &lines(900)),
    ];
    assert_eq!(long_files(&sources, 500), vec![("big.rs".to_owned(), 501)]);
}

#[test]
fn a_function_over_the_limit_is_found_and_one_at_the_limit_is_not() {
    let text = format!(
        "{}{}",
        function("at_limit", 100, ""),
        function("over", 101, "")
    );
    let found = long_functions(&[src("f.rs", &text)], 100);
    assert_eq!(
        found,
        vec![("f.rs".to_owned(), "over".to_owned(), 101, 101)]
    );
    // A declaration without a body is no function to measure, and does not swallow the next one.
    let text = format!(
        "trait T {{\n    fn declared(&self) -> [u8; 2];\n}}\n{}",
        function("long", 120, "")
    );
    let found = long_functions(&[src("t.rs", &text)], 100);
    assert_eq!(found, vec![("t.rs".to_owned(), "long".to_owned(), 4, 120)]);
}

#[test]
fn braces_in_literals_and_comments_neither_end_nor_extend_a_function() {
    // Every closing brace in here is text, not code: the function must still measure 102 lines.
    let tricky = r####"    let a = "}}"; let b = '}'; let c = '\''; let d = r#"}"#; let e = b'}';
    // }
    /* } /* nested } */ } */
    let f: &'static str = "\"}"; let g = br"}"; let h = '\u{7d}';"####;
    let found = long_functions(&[src("f.rs", &function("tricky", 102, tricky))], 100);
    assert_eq!(
        found,
        vec![("f.rs".to_owned(), "tricky".to_owned(), 1, 102)]
    );
    // An opening brace in text does not make a short function run on into the next one.
    let text = format!(
        "{}{}",
        function("short", 10, "let s = \"{{\"; let c = '{';"),
        function("next", 20, "")
    );
    let found = long_functions(&[src("f.rs", &text)], 15);
    assert_eq!(found, vec![("f.rs".to_owned(), "next".to_owned(), 11, 20)]);
}

#[test]
fn functions_in_cfg_test_items_are_not_production_code() {
    let text = format!(
        "#[cfg(test)]\n#[path = \"x}}.rs\"]\nmod tests {{\n{}}}\n#[cfg(test)]\nfn setup();\n{}",
        function("test_only", 150, ""),
        function("production", 130, "")
    );
    let found = long_functions(&[src("m.rs", &text)], 100);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].1.as_str(), found[0].3), ("production", 130));
    // Lines are kept where they were.
    assert_eq!(production(&text).lines().count(), text.lines().count());
}

/// `lib.rs` and a file per module, each importing the next of `ring` (a circle when the last imports the first).
fn ring(names: &[&str], closed: bool) -> Vec<Source> {
    let mut sources = vec![src("lib.rs", "")];
    for (i, name) in names.iter().enumerate() {
        let next = match names.get(i + 1) {
            Some(n) => format!("use crate::{n}::Thing;\n"),
            None if closed => format!("fn f() {{ crate::{}::call(); }}\n", names[0]),
            None => String::new(),
        };
        sources.push(src(&format!("{name}.rs"), &next));
    }
    sources
}

#[test]
fn a_circle_of_five_files_is_found_and_one_of_four_is_not() {
    let five = circles(&ring(&["a", "b", "c", "d", "e"], true), 4);
    assert_eq!(five.len(), 1);
    let files: Vec<&str> = five[0].iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(files, ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs"]);
    assert_eq!(
        five[0][4].1,
        vec!["a.rs".to_owned()],
        "the edge that closes it"
    );
    assert!(circles(&ring(&["a", "b", "c", "d"], true), 4).is_empty());
    assert!(circles(&ring(&["a", "b", "c", "d", "e"], false), 4).is_empty());
}

#[test]
fn use_groups_and_nested_paths_name_their_files_and_text_names_none() {
    let sources = [
        src("lib.rs", ""),
        src(
            "a.rs",
            "use crate::{b::X, c::{self, d::Y}};\n// crate::e::f\nfn g() { \"crate::e\"; }\n",
        ),
        src("b.rs", "pub(crate) fn x() {}\n"),
        src(
            "c/mod.rs",
            "fn k() { crate::testkit::setup(); }\n#[cfg(test)]\nuse crate::e::Z;\n",
        ),
        src("c/d.rs", ""),
        src("e.rs", ""),
        src("testkit.rs", "use crate::a::X;\n"),
    ];
    let graph = crate::shape::import_graph(&sources);
    let to = |f: &str| graph[f].iter().map(String::as_str).collect::<Vec<_>>();
    assert_eq!(to("a.rs"), ["b.rs", "c/d.rs", "c/mod.rs"]);
    assert_eq!(to("c/mod.rs"), Vec::<&str>::new());
    assert!(!graph.contains_key("testkit.rs"));
}

#[test]
fn no_core_file_is_over_500_lines() {
    let over = long_files(&crate_sources(), MAX_FILE_LINES);
    report_over("file", &over);
}

#[test]
fn no_production_function_is_over_100_lines() {
    let over = long_functions(&crate_sources(), MAX_FN_LINES);
    let named: Vec<(String, usize)> = over
        .iter()
        .map(|(f, name, line, n)| (format!("{f}::{name} (line {line})"), *n))
        .collect();
    let key =
        |(label, _): &(String, usize)| label.split(" (line").next().unwrap_or(label).to_owned();
    let keyed: Vec<(String, usize)> = named.iter().map(|x| (key(x), x.1)).collect();
    for (label, n) in &named {
        eprintln!("{label}: {n} lines");
    }
    report_over("function", &keyed);
}

/// Fails naming every item over its limit: split or shorten it where it lives.
fn report_over<T: std::fmt::Debug>(what: &str, over: &[T]) {
    eprintln!("{what}s over the limit: {over:#?}");
    assert!(over.is_empty(), "{what}s over the limit: {over:#?}");
}

#[test]
fn no_import_circle_of_more_than_4_files() {
    let found = circles(&crate_sources(), MAX_CIRCLE_FILES);
    for circle in &found {
        eprintln!("an import circle of {} files:", circle.len());
        for (file, to) in circle {
            eprintln!("  {file} -> {}", to.join(", "));
        }
    }
    assert!(
        found.is_empty(),
        "an import circle of more than {MAX_CIRCLE_FILES} files (listed above): the stages reach each other \
         through ports (`stages`, `client`, `pipeline::context`), never through the gateway or a session"
    );
}
