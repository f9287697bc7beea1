//! `search_tools`: a ranked search over a catalog's names, titles, descriptions and parameter names, whose hits
//! are compact signatures a model can call from.
//!
//! Ranking is BM25F: each field's term frequency is length-normalised and weighted (the name highest), then
//! saturated once per term, so a word repeated across fields does not outrank a rarer word. A query word that no
//! tool has matches the words it begins (`dir` → `directory`) at a discount. The inverted index is built once per
//! catalog (the gateway rebuilds it when a catalog changes), so a search touches only the postings of its words.
//! Ties are broken by name, so the same query over the same catalog always gives the same list. This module does
//! not decide what a client may see: the gateway builds the index over the tools it offers to programs.

mod signature;
mod tokenize;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// One tool as search sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDoc {
    /// The name a program calls it by.
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: String,
    pub score: f64,
    /// A TypeScript-like declaration of the call: `name(args: {path: string; head?: number})`.
    pub signature: String,
    /// The description's first sentence, at most [`DESCRIPTION_CHARS`] characters.
    pub description: String,
}

/// How much of a description a hit carries: enough to choose, not the whole manual.
pub const DESCRIPTION_CHARS: usize = 200;

/// The fields of a tool, with their weight and length normalisation (BM25F's `w_f` and `b_f`).
const FIELDS: [(f64, f64); 4] = [
    (3.0, 0.5),  // name
    (2.0, 0.75), // title
    (1.0, 0.75), // description
    (1.5, 0.5),  // parameter names
];
/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// How much a word a query word only begins counts, against the word itself.
const PREFIX_WEIGHT: f64 = 0.5;
/// Query words shorter than this do not match by prefix (`a` would match half the catalog).
const PREFIX_MIN: usize = 3;
/// Words one prefix may expand to, so a short prefix stays cheap.
const PREFIX_TERMS: usize = 16;
/// Distinct query words used, so a pasted wall of text costs no more than a long question.
const QUERY_WORDS: usize = 32;

/// The index over one catalog; rebuilt when the catalog changes.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    docs: Vec<Entry>,
    /// Document indexes in name order, for ties and for the empty query.
    by_name: Vec<u32>,
    /// Each document's rank in name order.
    name_rank: Vec<u32>,
    /// Term → its postings: (document, weighted normalised term frequency).
    postings: HashMap<String, Posting>,
    /// Every term in order, for prefix matches.
    vocabulary: BTreeMap<String, ()>,
}

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    signature: String,
    description: String,
}

#[derive(Debug, Clone, Default)]
struct Posting {
    idf: f64,
    docs: Vec<(u32, f64)>,
}

impl SearchIndex {
    pub fn build(docs: Vec<ToolDoc>) -> Self {
        let fields: Vec<[Vec<String>; 4]> = docs.iter().map(doc_fields).collect();
        let mut average = [0.0f64; 4];
        for f in &fields {
            for (sum, terms) in average.iter_mut().zip(f) {
                *sum += terms.len() as f64;
            }
        }
        let n = docs.len().max(1) as f64;
        for sum in &mut average {
            *sum = (*sum / n).max(1.0);
        }

        let mut postings: HashMap<String, Posting> = HashMap::new();
        for (index, f) in fields.iter().enumerate() {
            let mut weighted: BTreeMap<&str, f64> = BTreeMap::new();
            for (field, terms) in f.iter().enumerate() {
                let (weight, b) = FIELDS[field];
                let norm = 1.0 - b + b * terms.len() as f64 / average[field];
                for term in terms {
                    *weighted.entry(term.as_str()).or_default() += weight / norm;
                }
            }
            for (term, tf) in weighted {
                // Looked up before inserting, so a term already seen costs no new key.
                match postings.get_mut(term) {
                    Some(posting) => posting.docs.push((index as u32, tf)),
                    None => {
                        let docs = vec![(index as u32, tf)];
                        postings.insert(term.to_owned(), Posting { idf: 0.0, docs });
                    }
                }
            }
        }
        for posting in postings.values_mut() {
            let df = posting.docs.len() as f64;
            posting.idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        }
        let vocabulary = postings.keys().map(|t| (t.clone(), ())).collect();

        let mut by_name: Vec<u32> = (0..docs.len() as u32).collect();
        by_name.sort_by(|a, b| docs[*a as usize].name.cmp(&docs[*b as usize].name));
        let mut name_rank = vec![0u32; docs.len()];
        for (rank, index) in by_name.iter().enumerate() {
            name_rank[*index as usize] = rank as u32;
        }
        let docs = docs
            .into_iter()
            .map(|d| Entry {
                signature: signature::signature(&d.name, &d.input_schema),
                description: short_description(&d.description),
                name: d.name,
            })
            .collect();
        Self {
            docs,
            by_name,
            name_rank,
            postings,
            vocabulary,
        }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The best `limit` hits for `query`, best first; ties by name. A query with no words lists tools by name.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let words = query_words(query);
        if words.is_empty() {
            return self
                .by_name
                .iter()
                .take(limit)
                .map(|i| self.hit(*i, 0.0))
                .collect();
        }

        let mut scores = vec![0.0f64; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for word in &words {
            if let Some(posting) = self.postings.get(word) {
                accumulate(posting, 1.0, &mut scores, &mut touched);
            } else if word.chars().count() >= PREFIX_MIN {
                let longer = self
                    .vocabulary
                    .range::<str, _>((
                        std::ops::Bound::Excluded(word.as_str()),
                        std::ops::Bound::Unbounded,
                    ))
                    .take_while(|(t, ())| t.starts_with(word.as_str()))
                    .take(PREFIX_TERMS);
                for (term, ()) in longer {
                    if let Some(posting) = self.postings.get(term) {
                        accumulate(posting, PREFIX_WEIGHT, &mut scores, &mut touched);
                    }
                }
            }
        }

        let order = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then_with(|| self.name_rank[*a as usize].cmp(&self.name_rank[*b as usize]))
        };
        if touched.len() > limit && limit > 0 {
            touched.select_nth_unstable_by(limit - 1, order);
            touched.truncate(limit);
        }
        touched.truncate(limit);
        touched.sort_unstable_by(order);
        touched
            .into_iter()
            .map(|i| self.hit(i, scores[i as usize]))
            .collect()
    }

    fn hit(&self, index: u32, score: f64) -> Hit {
        let entry = &self.docs[index as usize];
        Hit {
            name: entry.name.clone(),
            score,
            signature: entry.signature.clone(),
            description: entry.description.clone(),
        }
    }
}

/// Adds one term's contribution (BM25 saturation over the already weighted, normalised frequency).
fn accumulate(posting: &Posting, factor: f64, scores: &mut [f64], touched: &mut Vec<u32>) {
    for (doc, tf) in &posting.docs {
        let slot = &mut scores[*doc as usize];
        if *slot == 0.0 {
            touched.push(*doc);
        }
        *slot += factor * posting.idf * tf * (K1 + 1.0) / (K1 + tf);
    }
}

/// A tool's four fields as terms: name, title, description, parameter names (one level of nesting).
fn doc_fields(doc: &ToolDoc) -> [Vec<String>; 4] {
    let mut params = Vec::new();
    parameter_names(&doc.input_schema, 0, &mut params);
    [
        tokenize::tokens(&doc.name),
        doc.title
            .as_deref()
            .map(tokenize::tokens)
            .unwrap_or_default(),
        tokenize::tokens(&doc.description),
        params,
    ]
}

fn parameter_names(schema: &Value, depth: usize, out: &mut Vec<String>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in properties {
        out.extend(tokenize::tokens(key));
        if depth == 0 {
            parameter_names(value, 1, out);
            if let Some(items) = value.get("items") {
                parameter_names(items, 1, out);
            }
        }
    }
}

/// The first sentence of `text`, whitespace collapsed, at most [`DESCRIPTION_CHARS`] characters.
fn short_description(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = collapsed
        .char_indices()
        .take(DESCRIPTION_CHARS)
        .find(|(at, c)| matches!(c, '.' | '!' | '?') && collapsed[at + 1..].starts_with(' '))
        .map(|(at, _)| at + 1);
    match end {
        Some(end) => collapsed[..end].to_owned(),
        None => signature::cut(&collapsed, DESCRIPTION_CHARS),
    }
}

#[cfg(test)]
mod tests;

/// The distinct words of a query, in order, at most `QUERY_WORDS`: a wall of query text costs what a short
/// query costs once it is split.
pub(crate) fn query_words(query: &str) -> Vec<String> {
    let mut words = tokenize::tokens(query);
    let mut seen = std::collections::HashSet::new();
    words.retain(|w| seen.insert(w.clone()));
    words.truncate(QUERY_WORDS);
    words
}
