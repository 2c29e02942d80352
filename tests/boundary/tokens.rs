//! Rust source as tokens: identifiers, `::` and punctuation, with comments, strings,
//! character literals, numbers and lifetimes dropped (enough to find paths, not to parse Rust).

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

/// Rust source as identifiers, `::` and punctuation; comments, string, byte-string, raw-string
/// and character literals, numbers and lifetimes dropped. `$crate` is `crate`; `r#name` is
/// `name`.
pub fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let ident_start = |ch: char| ch == '_' || ch.is_alphabetic();
    let ident_char = |ch: char| ch == '_' || ch.is_alphanumeric();
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(&c, i + 1, &mut line);
        } else if (ch == 'r' || ch == 'b' || ch == 'c') && raw_or_byte_string(&c, i).is_some() {
            let (hashes, body) = raw_or_byte_string(&c, i).unwrap();
            i = match hashes {
                None => skip_string(&c, body, &mut line),
                Some(n) => skip_raw(&c, body, n, &mut line),
            };
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime / label ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (ident_char(c[i]) || c[i] == '.' && at(i + 1).is_ascii_digit()) {
                i += 1;
            }
        } else if ident_start(ch) || ch == '$' && ident_start(at(i + 1)) {
            if ch == '$' {
                i += 1;
            }
            if c[i] == 'r' && at(i + 1) == '#' && ident_start(at(i + 2)) {
                i += 2;
            }
            let s = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(c[s..i].iter().collect()),
                line,
            });
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    out
}

/// At `c[i]`: `r"`, `r#"`, `b"`, `br"`, `br#"`, `c"`, `cr#"`...: `Some((raw hashes or None for
/// an escaped string, index after the opening quote))`.
fn raw_or_byte_string(c: &[char], i: usize) -> Option<(Option<usize>, usize)> {
    let mut k = i;
    if c[k] == 'b' || c[k] == 'c' {
        k += 1;
    }
    let raw = c.get(k) == Some(&'r');
    if raw {
        k += 1;
    }
    let mut hashes = 0;
    while raw && c.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    if c.get(k) != Some(&'"') || k == i {
        return None;
    }
    if !raw && c[i] != 'b' && c[i] != 'c' {
        return None;
    }
    Some((raw.then_some(hashes), k + 1))
}

/// Skips an escaped string body from `i` (after the opening quote); returns the index after
/// the closing quote.
fn skip_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            '\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

/// Skips a raw string body closed by `"` and `hashes` `#`s.
fn skip_raw(c: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|h| c.get(i + h) == Some(&'#')) {
            return i + 1 + hashes;
        }
        if c[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    i
}
