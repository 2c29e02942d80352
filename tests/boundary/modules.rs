//! What every file under src/ names in the crate: its module path, its `use` trees and inline
//! paths, resolved from the crate root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::tokens::{lex, Tok, Token};

/// A path into the crate, resolved from the crate root, where a file names it.
#[derive(Debug)]
pub struct Ref {
    pub path: Vec<String>,
    /// `use path::*`.
    pub glob: bool,
    pub line: usize,
}

impl Ref {
    /// The unit (the top-level module) the path leads into.
    pub fn top(&self) -> Option<&str> {
        unit_of(&self.path)
    }
}

/// The unit a module path belongs to: its top-level module.
pub fn unit_of(path: &[String]) -> Option<&str> {
    path.first().map(String::as_str)
}

pub struct FileInfo {
    pub file: PathBuf,
    pub module: Vec<String>,
    pub refs: Vec<Ref>,
    /// External crates named (first segments that are not the crate's), with lines.
    pub external: Vec<(String, usize)>,
    pub lines: Vec<String>,
}

pub struct Crate {
    pub files: Vec<FileInfo>,
    pub modules: BTreeSet<Vec<String>>,
}

impl Crate {
    pub fn load() -> Crate {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let src = root.join("src");
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        paths.sort();
        assert!(!paths.is_empty(), "no sources under {}", src.display());
        let modules: BTreeSet<Vec<String>> = paths.iter().map(|p| module_path(&src, p)).collect();
        let files = paths
            .iter()
            .map(|p| {
                let text = std::fs::read_to_string(p).unwrap();
                let rel = p.strip_prefix(root).unwrap_or(p);
                analyse(rel, &module_path(&src, p), &text, &modules)
            })
            .collect();
        Crate { files, modules }
    }

    pub fn top_modules(&self) -> BTreeSet<&str> {
        self.modules.iter().filter_map(|m| unit_of(m)).collect()
    }

    /// Top-level module → the other top-level modules it depends on.
    pub fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let tops = self.top_modules();
        let mut g: BTreeMap<String, BTreeSet<String>> = tops
            .iter()
            .map(|t| (t.to_string(), BTreeSet::new()))
            .collect();
        for f in &self.files {
            let Some(own) = unit_of(&f.module) else {
                continue; // the crate root declares modules; it is none of them
            };
            for r in &f.refs {
                if let Some(t) = r.top() {
                    if t != own && tops.contains(t) {
                        g.get_mut(own).unwrap().insert(t.to_string());
                    }
                }
            }
        }
        g
    }

    /// File → the other files it imports from, each named by its module path (`a::b`), within
    /// one top-level module. A path leads to the deepest module that holds it; a file and its
    /// parent module's file (`a/b.rs` and `a/mod.rs`) are not counted: the parent declares
    /// its children, and a child may use what its parent holds.
    pub fn file_graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &self.files {
            if f.module.is_empty() {
                continue;
            }
            let own = f.module.join("::");
            let edges = g.entry(own.clone()).or_default();
            for r in &f.refs {
                let Some(depth) = (1..=r.path.len())
                    .rev()
                    .find(|&d| self.modules.contains(&r.path[..d]))
                else {
                    continue;
                };
                let to = &r.path[..depth];
                let nested = |a: &[String], b: &[String]| a.len() <= b.len() && b[..a.len()] == *a;
                if to.first() != f.module.first() || nested(to, &f.module) || nested(&f.module, to)
                {
                    continue;
                }
                edges.insert(to.join("::"));
            }
        }
        g
    }

    /// `file:line: code` for every reference from `module`'s files that `pick` selects.
    pub fn evidence(&self, module: &str, pick: impl Fn(&Ref) -> bool) -> Vec<String> {
        let mut out = Vec::new();
        for f in self
            .files
            .iter()
            .filter(|f| unit_of(&f.module) == Some(module))
        {
            let mut seen = BTreeSet::new();
            for r in f.refs.iter().filter(|r| pick(r)) {
                if seen.insert(r.line) {
                    out.push(f.quote(r.line));
                }
            }
        }
        out
    }

    pub fn external_evidence(&self, module: &str, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for f in self
            .files
            .iter()
            .filter(|f| unit_of(&f.module) == Some(module))
        {
            let mut seen = BTreeSet::new();
            for (_, line) in f.external.iter().filter(|(n, _)| n == name) {
                if seen.insert(*line) {
                    out.push(f.quote(*line));
                }
            }
        }
        out
    }
}

impl FileInfo {
    pub fn quote(&self, line: usize) -> String {
        let code = self.lines.get(line - 1).map(|l| l.trim()).unwrap_or("");
        format!("{}:{line}: {code}", self.file.display())
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` → `[a, b]`; `src/lib.rs`, `src/main.rs` → `[]`.
pub fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    let at_root = parts.is_empty();
    if !(stem == "mod" || at_root && (stem == "lib" || stem == "main")) {
        parts.push(stem.to_string());
    }
    parts
}

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

/// A path as written: segments, maybe starting with `crate`, `self`, `super` or `::`.
#[derive(Clone, Debug)]
struct Written {
    segs: Vec<String>,
    glob: bool,
    line: usize,
}

/// A name a `use` binds, and the path it binds it to.
type Bound = (String, Vec<String>);

/// One `use` tree flattened: every leaf path, and the names it binds (name → path).
fn parse_use(toks: &[Token], mut i: usize) -> (Vec<Written>, Vec<Bound>, usize) {
    let mut leaves = Vec::new();
    let mut binds = Vec::new();
    i = use_tree(toks, i, Vec::new(), &mut leaves, &mut binds);
    // Up to the `;`.
    while i < toks.len() && toks[i].tok != Tok::Punct(';') {
        i += 1;
    }
    (leaves, binds, i)
}

fn use_tree(
    toks: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<Written>,
    binds: &mut Vec<(String, Vec<String>)>,
) -> usize {
    let line = toks.get(i).map(|t| t.line).unwrap_or(0);
    if toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
        prefix.push("::".into());
        i += 1;
    }
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.tok) {
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        None | Some(Tok::Punct(';')) => return i,
                        _ => i = use_tree(toks, i, prefix.clone(), leaves, binds),
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                leaves.push(Written {
                    segs: prefix,
                    glob: true,
                    line,
                });
                return i + 1;
            }
            Some(Tok::Ident(name)) => {
                prefix.push(name.clone());
                i += 1;
                if toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    i += 1;
                    continue;
                }
                // A leaf: `self` stands for its parent.
                let mut path = prefix;
                if path.last().map(String::as_str) == Some("self") {
                    path.pop();
                }
                let mut bound = path.last().cloned();
                if let Some(Tok::Ident(kw)) = toks.get(i).map(|t| &t.tok) {
                    if kw == "as" {
                        bound = match toks.get(i + 1).map(|t| &t.tok) {
                            Some(Tok::Ident(a)) if a != "_" => Some(a.clone()),
                            _ => None,
                        };
                        i += 2;
                    }
                }
                if let Some(b) = bound {
                    binds.push((b, path.clone()));
                }
                leaves.push(Written {
                    segs: path,
                    glob: false,
                    line,
                });
                return i;
            }
            _ => return i,
        }
    }
}

/// What a file names, resolved.
pub fn analyse(
    file: &Path,
    module: &[String],
    src: &str,
    known: &BTreeSet<Vec<String>>,
) -> FileInfo {
    let toks = lex(src);
    // Pass 1: `use` items and inline module bodies. Every path written, with the module it is
    // written in; the names each module's `use`s bind.
    let mut written: Vec<(Vec<String>, Written)> = Vec::new();
    let mut binds: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut stack: Vec<(String, usize)> = Vec::new(); // inline `mod name {` and its depth
    let mut depth = 0usize;
    let here = |stack: &[(String, usize)]| -> Vec<String> {
        let mut m = module.to_vec();
        m.extend(stack.iter().map(|(n, _)| n.clone()));
        m
    };
    let ident = |k: usize| match toks.get(k).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let Some(name) = ident(i + 1) {
                    if toks.get(i + 2).map(|t| &t.tok) == Some(&Tok::Punct('{')) {
                        stack.push((name.to_string(), depth + 1));
                    }
                    i += 2;
                    continue;
                }
            }
            Tok::Ident(kw) if kw == "use" => {
                let (leaves, b, end) = parse_use(&toks, i + 1);
                let m = here(&stack);
                for l in leaves {
                    written.push((m.clone(), l));
                }
                binds.entry(m).or_default().extend(b);
                i = end + 1;
                continue;
            }
            Tok::Ident(first) => {
                // An inline path: starts here (not after `::`), goes on through `::` + name.
                let starts = i == 0 || toks[i - 1].tok != Tok::PathSep;
                let mut segs = vec![first.clone()];
                let mut k = i + 1;
                while toks.get(k).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    match ident(k + 1) {
                        Some(s) => {
                            segs.push(s.to_string());
                            k += 2;
                        }
                        None => break,
                    }
                }
                if starts && segs.len() > 1 {
                    written.push((
                        here(&stack),
                        Written {
                            segs,
                            glob: false,
                            line: toks[i].line,
                        },
                    ));
                    i = k;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Pass 2: resolve every path against the module it was written in.
    let mut refs = Vec::new();
    let mut external = Vec::new();
    for (m, w) in written {
        match resolve(&w.segs, &m, &binds, known, 0) {
            Resolved::Crate(path) => refs.push(Ref {
                path,
                glob: w.glob,
                line: w.line,
            }),
            Resolved::External(name) => external.push((name, w.line)),
            Resolved::Unknown => {}
        }
    }
    FileInfo {
        file: file.to_path_buf(),
        module: module.to_vec(),
        refs,
        external,
        lines: src.lines().map(String::from).collect(),
    }
}

enum Resolved {
    /// A path from the crate root.
    Crate(Vec<String>),
    /// A path into another crate (std, wgpu...): its name.
    External(String),
    /// `Self::`, a local item, a `super` past the root...
    Unknown,
}

fn resolve(
    segs: &[String],
    module: &[String],
    binds: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    known: &BTreeSet<Vec<String>>,
    depth: usize,
) -> Resolved {
    let Some(first) = segs.first() else {
        return Resolved::Unknown;
    };
    let rest = &segs[1..];
    let joined = |base: &[String], rest: &[String]| {
        let mut p = base.to_vec();
        p.extend_from_slice(rest);
        p
    };
    match first.as_str() {
        "::" => rest
            .first()
            .map_or(Resolved::Unknown, |n| Resolved::External(n.clone())),
        "crate" => Resolved::Crate(rest.to_vec()),
        "self" => Resolved::Crate(joined(module, rest)),
        "super" => {
            let ups = segs.iter().take_while(|s| *s == "super").count();
            if ups > module.len() {
                return Resolved::Unknown;
            }
            Resolved::Crate(joined(&module[..module.len() - ups], &segs[ups..]))
        }
        "Self" => Resolved::Unknown,
        _ => {
            // A name a `use` binds here (`use crate::bfs;`, `use x as y;`), unless it binds
            // itself (`use rayon;`).
            if let Some(target) = binds.get(module).and_then(|b| b.get(first)) {
                if depth < 8 && target[..] != segs[..1] {
                    return resolve(&joined(target, rest), module, binds, known, depth + 1);
                }
            }
            let child = joined(module, &segs[..1]);
            if known.contains(&child) {
                return Resolved::Crate(joined(module, segs));
            }
            Resolved::External(first.clone())
        }
    }
}
