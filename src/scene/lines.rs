//! JSON path → line, so that validation errors (not only syntax errors) can name the line.

use std::collections::HashMap;

/// Maps every value's path (`scene.world.size[0]`, `scene.boids`) to the line it starts on.
/// Tolerant: stops quietly on malformed text (serde reports that with its own line).
pub fn json_lines(text: &str) -> HashMap<String, usize> {
    let mut p = LineScan {
        b: text.as_bytes(),
        i: 0,
        line: 1,
        out: HashMap::new(),
    };
    p.ws();
    p.value("scene".to_string(), 0);
    p.out
}

struct LineScan<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
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
    fn value(&mut self, path: String, depth: usize) -> Option<()> {
        if depth > 64 {
            return None;
        }
        self.out.entry(path.clone()).or_insert(self.line);
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
                    self.value(format!("{path}.{key}"), depth + 1)?;
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
                    self.value(format!("{path}[{k}]"), depth + 1)?;
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
