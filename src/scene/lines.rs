//! JSON path → line, so that validation errors (not only syntax errors) can name the line.

use std::collections::{HashMap, HashSet};

/// The line each of the `wanted` paths (`scene.world.size[0]`, `scene.boids`) starts on, for
/// those in the text. One pass over the text with one path buffer: the memory taken is the
/// deepest path's length and the answers, however many values the text holds (a path per
/// value would be quadratic in a long key over a long array). Tolerant: stops quietly on
/// malformed text (serde reports that with its own line).
pub fn json_lines(text: &str, wanted: &HashSet<&str>) -> HashMap<String, usize> {
    let mut p = LineScan {
        b: text.as_bytes(),
        i: 0,
        line: 1,
        path: String::from("scene"),
        wanted,
        out: HashMap::new(),
    };
    p.ws();
    if !wanted.is_empty() {
        p.value(0);
    }
    p.out
}

struct LineScan<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    /// The path of the value being read.
    path: String,
    wanted: &'a HashSet<&'a str>,
    out: HashMap<String, usize>,
}

impl LineScan<'_> {
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => return,
            }
            self.i += 1;
        }
    }
    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'\\' => self.i += 2,
                b'"' => {
                    let s = String::from_utf8_lossy(&self.b[start..self.i]).into_owned();
                    self.i += 1;
                    return Some(s);
                }
                b'\n' => {
                    self.line += 1;
                    self.i += 1
                }
                _ => self.i += 1,
            }
        }
        None
    }
    /// Reads the value at the cursor, whose path is `self.path`.
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > 64 {
            return None;
        }
        if self.wanted.contains(self.path.as_str()) && !self.out.contains_key(&self.path) {
            self.out.insert(self.path.clone(), self.line);
        }
        match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                loop {
                    self.ws();
                    match *self.b.get(self.i)? {
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        b',' => {
                            self.i += 1;
                            continue;
                        }
                        _ => {}
                    }
                    let key = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return None;
                    }
                    self.i += 1;
                    self.ws();
                    let len = self.path.len();
                    self.path.push('.');
                    self.path.push_str(&key);
                    let r = self.value(depth + 1);
                    self.path.truncate(len);
                    r?;
                }
            }
            b'[' => {
                self.i += 1;
                let mut k = 0;
                loop {
                    self.ws();
                    match *self.b.get(self.i)? {
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        b',' => {
                            self.i += 1;
                            continue;
                        }
                        _ => {}
                    }
                    let len = self.path.len();
                    use std::fmt::Write;
                    let _ = write!(self.path, "[{k}]");
                    let r = self.value(depth + 1);
                    self.path.truncate(len);
                    r?;
                    k += 1;
                }
            }
            b'"' => self.string().map(|_| ()),
            _ => {
                let start = self.i;
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                        break;
                    }
                    self.i += 1;
                }
                // Nothing consumed (e.g. `[1, }`): malformed, stop rather than loop.
                (self.i > start).then_some(())
            }
        }
    }
}
