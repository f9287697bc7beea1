//! Ranking, ties, the empty query, prefixes and hit shape of the search index.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn doc(name: &str, description: &str, schema: Value) -> ToolDoc {
    ToolDoc {
        name: name.to_owned(),
        title: None,
        description: description.to_owned(),
        input_schema: schema,
    }
}

fn catalog() -> SearchIndex {
    SearchIndex::build(vec![
        doc(
            "files__read_text_file",
            "Read the complete contents of a file as text. Handles various encodings.",
            json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string"}, "head": {"type": "number"}, "tail": {"type": "number"}}}),
        ),
        doc(
            "files__list_directory",
            "Get a detailed listing of all files and directories in a specified path.",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        ),
        doc(
            "tracker__delete_issue",
            "Delete an issue for good.",
            json!({"type": "object", "properties": {"issueId": {"type": "string"}}}),
        ),
        doc(
            "tracker__listIssues",
            "List the issues of a project, filtered by state.",
            json!({"type": "object", "properties": {"state": {"enum": ["open", "closed"]},
                "filter": {"type": "object", "properties": {"assigneeLogin": {"type": "string"}}}}}),
        ),
    ])
}

fn names(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

#[test]
fn name_words_rank_above_description_words() {
    let index = catalog();
    assert_eq!(
        names(&index.search("list issues", 10)),
        [
            "tracker__listIssues",
            "tracker__delete_issue",
            "files__list_directory"
        ]
    );
    assert_eq!(
        names(&index.search("read file", 1)),
        ["files__read_text_file"]
    );
}

#[test]
fn camel_snake_plural_and_parameter_names_all_match() {
    let index = catalog();
    assert_eq!(
        names(&index.search("directories", 10)),
        ["files__list_directory"]
    );
    assert_eq!(
        names(&index.search("assignee", 10)),
        ["tracker__listIssues"]
    );
    assert_eq!(
        names(&index.search("issue_id", 10))[0],
        "tracker__delete_issue"
    );
}

#[test]
fn a_word_no_tool_has_matches_the_words_it_begins() {
    let index = catalog();
    assert_eq!(names(&index.search("dir", 10)), ["files__list_directory"]);
    assert!(index.search("zz", 10).is_empty());
    assert!(index.search("nothing matches this", 10).is_empty());
}

#[test]
fn the_empty_query_lists_tools_by_name() {
    let index = catalog();
    assert_eq!(
        names(&index.search("  __ ", 3)),
        [
            "files__list_directory",
            "files__read_text_file",
            "tracker__delete_issue"
        ]
    );
    assert!(index.search("", 0).is_empty());
}

#[test]
fn ties_are_broken_by_name_whatever_the_catalog_order() {
    let same = |name: &str| doc(name, "Fetch a page.", json!({}));
    let forward = SearchIndex::build(vec![same("b__fetch"), same("a__fetch"), same("c__fetch")]);
    let backward = SearchIndex::build(vec![same("c__fetch"), same("a__fetch"), same("b__fetch")]);
    for index in [forward, backward] {
        assert_eq!(names(&index.search("fetch", 2)), ["a__fetch", "b__fetch"]);
        assert_eq!(
            names(&index.search("fetch", 10)),
            ["a__fetch", "b__fetch", "c__fetch"]
        );
    }
}

#[test]
fn hits_carry_a_signature_and_the_first_sentence() {
    let index = catalog();
    let hit = &index.search("read text", 1)[0];
    assert_eq!(
        hit,
        &Hit {
            name: "files__read_text_file".to_owned(),
            score: hit.score,
            signature: "files__read_text_file(args: {path: string; head?: number; tail?: number})"
                .to_owned(),
            description: "Read the complete contents of a file as text.".to_owned(),
        }
    );
    assert!(hit.score > 0.0);
}

#[test]
fn a_long_description_is_cut_to_its_limit() {
    let long = "word ".repeat(500);
    let index = SearchIndex::build(vec![doc("t", &long, json!({}))]);
    let hit = &index.search("", 1)[0];
    assert_eq!(hit.description.chars().count(), DESCRIPTION_CHARS + 1);
    assert!(hit.description.ends_with('…'));
}

#[test]
fn a_wall_of_query_text_costs_a_bounded_search() {
    let index = catalog();
    let wall: String = (0..100_000).map(|i| format!("w{i} ")).collect();
    let query = format!("directory {wall}");
    let words = super::query_words(&query);
    assert_eq!(words.len(), super::QUERY_WORDS);
    assert_eq!(words[0], "directory");
    assert!(index.search(&query, 10).len() <= 1);
}
