//! A small JavaScript lexer, enough to tell code from comments, strings, template literals and regular
//! expression literals, so the scan sees `call` only where the engine would. It is not a parser: it keeps no
//! grammar beyond what telling a regex from a division needs (the token before a `/`, which `(` opened a control
//! head, which `{` opened a block), and where it cannot tell, or the text is not valid JavaScript (an unterminated
//! string, comment or template, an escape in an identifier), it says `unsure` instead of guessing.

/// One token, with only what the scan needs.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// An identifier or keyword, as written (only escape-free identifiers are kept as names).
    Ident(String),
    /// A punctuator: single characters, and `=>`, `?.`, `++`, `--`.
    Punct(&'static str),
    /// A string literal: its value, or `None` when it has an escape (its value is not what it looks like).
    Str(Option<String>),
    /// A template literal: its value when it has neither escapes nor substitutions, else `None`.
    Template(Option<String>),
    /// A numeric literal, as written.
    Number(String),
    Regex,
}

/// The tokens of a program and whether the lexer met something it could not read with certainty.
#[derive(Debug, Default)]
pub(super) struct Lexed {
    pub tokens: Vec<Tok>,
    pub unsure: bool,
}

/// What an open bracket was, so its closing one can say what may follow.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    /// `(` after `if`, `while`, `for` or `with`: a regex may follow its `)`.
    ControlParen,
    Paren,
    Bracket,
    /// `{` opening a block: a regex may follow its `}`.
    Block,
    /// `{` opening an object literal (an expression): a division follows its `}`.
    Object,
    /// `${` in a template: its `}` resumes the template.
    Substitution,
}

/// Keywords after which an expression, so a regex, may start.
const BEFORE_EXPRESSION: [&str; 15] = [
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
    "extends",
];

pub(super) fn lex(program: &str) -> Lexed {
    let mut lx = Lexer {
        chars: program.chars().collect(),
        at: 0,
        out: Lexed::default(),
        stack: Vec::new(),
        regex_ok: true,
    };
    lx.run();
    lx.out
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    out: Lexed,
    stack: Vec<Open>,
    /// Whether a `/` here starts a regex (after an operator, an opening bracket, a block, or nothing).
    regex_ok: bool,
}

fn line_end(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// JavaScript's white space: Unicode's, and the byte-order mark.
fn space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

fn ident_part(c: char) -> bool {
    // Every non-ASCII character that is not white space is taken as part of a name: JavaScript's punctuators
    // are all ASCII, so this never hides one, and an odd name is never `call`.
    c == '_' || c == '$' || c.is_ascii_alphanumeric() || (!c.is_ascii() && !space(c))
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn push(&mut self, tok: Tok, regex_ok: bool) {
        self.out.tokens.push(tok);
        self.regex_ok = regex_ok;
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                c if space(c) => self.at += 1,
                '/' if self.peek(1) == Some('/') => self.line_comment(),
                '/' if self.peek(1) == Some('*') => self.block_comment(),
                // Whether a `}` ends a block or an object literal takes a parser to know (`case 1: {}`, a block
                // after a line break), and the two read a `/` after it differently: rare in real programs, so
                // not guessed at.
                '/' if self.out.tokens.last() == Some(&Tok::Punct("}")) => {
                    self.out.unsure = true;
                    if self.regex_ok {
                        self.regex();
                    } else {
                        self.punct('/');
                    }
                }
                '/' if self.regex_ok => self.regex(),
                '\'' | '"' => self.string(c),
                '`' => {
                    self.at += 1;
                    self.template(false);
                }
                c if c.is_ascii_digit() => self.number(),
                '.' if self.peek(1).is_some_and(|d| d.is_ascii_digit()) => self.number(),
                '\\' => self.ident(),
                c if ident_part(c) => self.ident(),
                _ => self.punct(c),
            }
        }
        if !self.stack.is_empty() {
            self.out.unsure = true;
        }
    }

    fn line_comment(&mut self) {
        while self.peek(0).is_some_and(|c| !line_end(c)) {
            self.at += 1;
        }
    }

    fn block_comment(&mut self) {
        self.at += 2;
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some('*'), Some('/')) => {
                    self.at += 2;
                    return;
                }
                (Some(_), _) => self.at += 1,
                (None, _) => {
                    self.out.unsure = true;
                    return;
                }
            }
        }
    }

    fn regex(&mut self) {
        self.at += 1;
        // Classes nest under the `v` flag (`[[a]/]`); counting depth errs towards an unterminated regex, which
        // is unsure, never towards ending the regex early.
        let mut class = 0usize;
        loop {
            match self.peek(0) {
                None => {
                    self.out.unsure = true;
                    return;
                }
                Some(c) if line_end(c) => {
                    self.out.unsure = true;
                    return;
                }
                Some('\\') => self.at += 2,
                Some('[') => {
                    class += 1;
                    self.at += 1;
                }
                Some(']') => {
                    class = class.saturating_sub(1);
                    self.at += 1;
                }
                Some('/') if class == 0 => {
                    self.at += 1;
                    break;
                }
                Some(_) => self.at += 1,
            }
        }
        while self.peek(0).is_some_and(ident_part) {
            self.at += 1;
        }
        self.push(Tok::Regex, false);
    }

    fn string(&mut self, quote: char) {
        self.at += 1;
        let mut value = String::new();
        let mut escaped = false;
        loop {
            match self.peek(0) {
                None => {
                    self.out.unsure = true;
                    return;
                }
                Some('\n' | '\r') => {
                    self.out.unsure = true;
                    return;
                }
                Some('\\') => {
                    escaped = true;
                    self.at += 2;
                }
                Some(c) if c == quote => {
                    self.at += 1;
                    break;
                }
                Some(c) => {
                    value.push(c);
                    self.at += 1;
                }
            }
        }
        self.push(Tok::Str((!escaped).then_some(value)), false);
    }

    /// Reads template text from just after a backtick or a substitution's `}`.
    /// The part after a substitution is never plain: the template as a whole had one.
    fn template(&mut self, resumed: bool) {
        let mut value = String::new();
        let mut plain = !resumed;
        loop {
            match self.peek(0) {
                None => {
                    self.out.unsure = true;
                    return;
                }
                Some('\\') => {
                    plain = false;
                    self.at += 2;
                }
                Some('`') => {
                    self.at += 1;
                    self.push(Tok::Template(plain.then_some(value)), false);
                    return;
                }
                Some('$') if self.peek(1) == Some('{') => {
                    self.at += 2;
                    self.push(Tok::Template(None), true);
                    self.stack.push(Open::Substitution);
                    return;
                }
                Some(c) => {
                    value.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn number(&mut self) {
        let start = self.at;
        while let Some(c) = self.peek(0) {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                let exponent = matches!(c, 'e' | 'E');
                self.at += 1;
                if exponent && matches!(self.peek(0), Some('+' | '-')) {
                    self.at += 1;
                }
            } else {
                break;
            }
        }
        let text = self.chars[start..self.at].iter().collect();
        self.push(Tok::Number(text), false);
    }

    fn ident(&mut self) {
        let mut name = String::new();
        while let Some(c) = self.peek(0) {
            if c == '\\' {
                // `\u0063all` is `call` to the engine: a name written with escapes is not read, only flagged.
                self.out.unsure = true;
                self.at += 2;
            } else if ident_part(c) {
                name.push(c);
                self.at += 1;
            } else {
                break;
            }
        }
        let regex_ok = BEFORE_EXPRESSION.contains(&name.as_str());
        self.push(Tok::Ident(name), regex_ok);
    }

    fn punct(&mut self, c: char) {
        let two = (c, self.peek(1).unwrap_or(' '));
        let tok: &'static str = match two {
            ('=', '>') => "=>",
            ('+', '+') => "++",
            ('-', '-') => "--",
            ('?', '.') if !self.peek(2).is_some_and(|d| d.is_ascii_digit()) => "?.",
            _ => match c {
                '(' => "(",
                ')' => ")",
                '[' => "[",
                ']' => "]",
                '{' => "{",
                '}' => "}",
                '.' => ".",
                ',' => ",",
                ';' => ";",
                ':' => ":",
                '=' => "=",
                '?' => "?",
                _ => "op",
            },
        };
        self.at += if tok.len() == 2 { 2 } else { 1 };
        match tok {
            "(" => {
                let control = matches!(
                    self.out.tokens.last(),
                    Some(Tok::Ident(k)) if matches!(k.as_str(), "if" | "while" | "for" | "with")
                );
                self.stack.push(if control {
                    Open::ControlParen
                } else {
                    Open::Paren
                });
                self.push(Tok::Punct(tok), true);
            }
            "{" => {
                let block = match self.out.tokens.last() {
                    None => true,
                    Some(Tok::Punct(p)) => matches!(*p, ";" | "{" | "}" | ")" | "=>"),
                    Some(Tok::Ident(k)) => {
                        !BEFORE_EXPRESSION.contains(&k.as_str()) || k == "else" || k == "do"
                    }
                    Some(_) => false,
                };
                self.stack
                    .push(if block { Open::Block } else { Open::Object });
                self.push(Tok::Punct(tok), true);
            }
            ")" | "]" | "}" => {
                let open = self.stack.pop();
                match (tok, open) {
                    ("}", Some(Open::Substitution)) => self.template(true),
                    (")", Some(Open::ControlParen)) | ("}", Some(Open::Block)) => {
                        self.push(Tok::Punct(tok), true)
                    }
                    (")", Some(Open::Paren))
                    | ("}", Some(Open::Object))
                    | ("]", Some(Open::Bracket)) => self.push(Tok::Punct(tok), false),
                    _ => {
                        // A closing bracket that does not match what is open: not JavaScript.
                        self.out.unsure = true;
                        self.push(Tok::Punct(tok), false);
                    }
                }
            }
            "[" => {
                self.stack.push(Open::Bracket);
                self.push(Tok::Punct(tok), true);
            }
            "++" | "--" => self.push(Tok::Punct(tok), false),
            _ => self.push(Tok::Punct(tok), true),
        }
    }
}
