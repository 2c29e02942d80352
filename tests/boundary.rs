//! DESIGN.md: the solver never imports the renderer and the renderer never advances the
//! physics; the `.bfs` format is the only contract between them. STYLE.md: a lower layer never
//! imports a higher one. Checked on the sources.
//!
//! Every file under src/ gets its module path (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`;
//! `lib.rs` and `main.rs` are the crate root and belong to no module). Its code is read as
//! tokens (comments, strings and character literals dropped) and every path into the crate
//! is resolved: `use` trees (grouped, nested, `self`, `as`, `pub use`), `crate::`, `super::`
//! and `self::` paths written inline, and names brought in by a `use` (`use crate::bfs;` then
//! `bfs::Writer`). That gives, for every top-level module, the set of top-level modules it
//! depends on, with the lines that make each dependency. Then:
//!
//! - no import circle between top-level modules;
//! - the rules in the tables below.
//!
//! A module named in a rule but absent from src/ makes no dependency, so the rules can name
//! modules that do not exist yet.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[path = "boundary/circles.rs"]
mod circles;
#[path = "boundary/modules.rs"]
mod modules;
#[path = "boundary/tokens.rs"]
mod tokens;

use circles::{a_cycle, strongly_connected};
use modules::{analyse, module_path, Crate};

// ---------------------------------------------------------------------------------------
// The rules
// ---------------------------------------------------------------------------------------

/// (module, modules it must not depend on, why).
const MUST_NOT_DEPEND_ON: &[(&str, &[&str], &str)] = &[
    (
        "sim",
        &[
            "render", "video", "look", "cli", "record", "sweep", "bench", "plot", "output",
        ],
        "the solver computes states; recording, rendering and commands are built on it",
    ),
    (
        "render",
        &[
            "sim", "scene", "cli", "video", "record", "sweep", "bench", "player", "live",
        ],
        "the renderer draws frames (bfs::Frame) from typed settings; it never advances the \
         physics nor reads scenes or flags (it uses the look's vocabulary, a leaf); the look \
         is resolved into its settings above it (video::resolve)",
    ),
    (
        "video",
        &["sim", "cli", "sweep", "bench", "player", "live"],
        "the video sinks encode rendered frames; they never advance the physics",
    ),
    (
        "player",
        &["sim", "cli", "sweep", "bench"],
        "the player draws frames it reads from a recording or receives over a channel from \
         `live`; it never steps the physics itself",
    ),
    (
        "live",
        &["render", "video", "player", "cli", "sweep", "bench"],
        "a live run computes and records frames and hands them over; it draws nothing",
    ),
    (
        "bfs",
        &[
            "sim", "render", "video", "look", "cli", "record", "sweep", "bench",
        ],
        "the file format is the contract between solver and renderer, below both",
    ),
];

/// (module, the only crate modules it may depend on). Each of those must itself be a leaf:
/// depend on no crate module at all.
/// `look` is one: the one type of a look's settings, shared by the scene schema, the flags
/// and (its vocabulary) the renderer; resolving a look is `video::resolve`'s.
const ONLY_ON_LEAVES: &[(&str, &[&str])] = &[("scene", &["units", "look", "sys"]), ("look", &[])];

/// (module, paths it must never name, as `module::Item`). A glob import of the item's module
/// counts as naming it.
const MUST_NOT_NAME: &[(&str, &[&str])] = &[("sim", &["bfs::Writer", "bfs::BfsError"])];

/// (module, external crates it must not use).
const MUST_NOT_USE_CRATES: &[(&str, &[&str])] = &[
    ("sim", &["wgpu"]),
    ("render", &["cudarc"]),
    ("video", &["cudarc"]),
];

/// Modules that must exist, or the rules above would check nothing.
const MUST_EXIST: &[&str] = &[
    "scene", "bfs", "sim", "render", "player", "live", "look", "video",
];

// ---------------------------------------------------------------------------------------
// The checks on src/
// ---------------------------------------------------------------------------------------

#[test]
fn the_modules_the_rules_are_about_exist() {
    let crate_ = Crate::load();
    for m in MUST_EXIST {
        assert!(
            crate_.top_modules().contains(*m),
            "src/ has no module {m}; update the rules in tests/boundary.rs"
        );
    }
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let crate_ = Crate::load();
    let graph = crate_.graph();
    let mut report = Vec::new();
    for scc in strongly_connected(&graph) {
        if scc.len() < 2 {
            continue;
        }
        let cycle = a_cycle(&graph, &scc);
        let members: Vec<&str> = scc.iter().map(String::as_str).collect();
        report.push(format!(
            "circle among {} (e.g. {}); the edges inside it:",
            members.join(", "),
            cycle.join(" → ")
        ));
        for from in &scc {
            for to in graph[from].intersection(&scc) {
                report.push(format!("  {from} → {to}:"));
                for e in crate_
                    .evidence(from, |r| r.top() == Some(to.as_str()))
                    .iter()
                    .take(4)
                {
                    report.push(format!("      {e}"));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "import circles between top-level modules (a lower layer imports a higher one):\n{}",
        report.join("\n")
    );
}

/// Within a module too: no two files import each other, directly or round a loop (a type
/// both need goes into the lower one, or a leaf of its own).
#[test]
fn no_import_circle_between_the_files_of_a_module() {
    let crate_ = Crate::load();
    let graph = crate_.file_graph();
    let circles: Vec<String> = strongly_connected(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1)
        .map(|scc| a_cycle(&graph, &scc).join(" → "))
        .collect();
    assert!(
        circles.is_empty(),
        "files that import each other (module paths):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_layers_keep_to_their_rules() {
    let crate_ = Crate::load();
    let graph = crate_.graph();
    let mut report = Vec::new();
    for (module, forbidden, why) in MUST_NOT_DEPEND_ON {
        let Some(deps) = graph.get(*module) else {
            continue;
        };
        for f in forbidden.iter().filter(|f| deps.contains(**f)) {
            report.push(format!("{module} depends on {f} ({why}):"));
            for e in crate_.evidence(module, |r| r.top() == Some(*f)) {
                report.push(format!("    {e}"));
            }
        }
    }
    for (module, allowed) in ONLY_ON_LEAVES {
        let Some(deps) = graph.get(*module) else {
            continue;
        };
        for d in deps {
            if !allowed.contains(&d.as_str()) {
                report.push(format!(
                    "{module} depends on {d} (it may depend only on the leaves {allowed:?}):"
                ));
                for e in crate_.evidence(module, |r| r.top() == Some(d.as_str())) {
                    report.push(format!("    {e}"));
                }
            } else if let Some(dd) = graph.get(d).filter(|dd| !dd.is_empty()) {
                report.push(format!(
                    "{module} depends on {d}, which must be a leaf but depends on {dd:?}"
                ));
            }
        }
    }
    for (module, names) in MUST_NOT_NAME {
        for name in *names {
            let want: Vec<&str> = name.split("::").collect();
            let parent = &want[..want.len() - 1];
            let hits = crate_.evidence(module, |r| {
                r.path.len() >= want.len() && r.path[..want.len()] == want[..]
                    || r.glob && r.path == parent
            });
            if !hits.is_empty() {
                report.push(format!("{module} names {name}:"));
                report.extend(hits.into_iter().map(|e| format!("    {e}")));
            }
        }
    }
    for (module, crates) in MUST_NOT_USE_CRATES {
        for c in *crates {
            let hits = crate_.external_evidence(module, c);
            if !hits.is_empty() {
                report.push(format!("{module} uses the crate {c}:"));
                report.extend(hits.into_iter().map(|e| format!("    {e}")));
            }
        }
    }
    assert!(
        report.is_empty(),
        "module rules broken (see the tables at the top of tests/boundary.rs):\n{}",
        report.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// The parser, tested on inline sources
// ---------------------------------------------------------------------------------------

/// The top-level modules `src` (as the file of module `module`) depends on, and the crate
/// paths it names, with the known modules given.
fn analyse_str(module: &str, src: &str, known: &[&str]) -> (BTreeSet<String>, BTreeSet<String>) {
    let known: BTreeSet<Vec<String>> = known.iter().map(|m| split_path(m)).collect();
    let file = analyse(Path::new("inline.rs"), &split_path(module), src, &known);
    let own = module.split("::").next().unwrap_or("").to_string();
    let deps = file
        .refs
        .iter()
        .filter_map(|r| r.top().map(str::to_string))
        .filter(|t| *t != own && known.contains(&vec![t.clone()]))
        .collect();
    let names = file.refs.iter().map(|r| r.path.join("::")).collect();
    (deps, names)
}

fn split_path(m: &str) -> Vec<String> {
    m.split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

const KNOWN: &[&str] = &[
    "scene",
    "bfs",
    "sim",
    "sim::cpu",
    "sim::grid",
    "render",
    "render::colormap",
    "video",
    "record",
    "cli",
    "look",
    "plot",
];

#[test]
fn parser_catches_every_kind_of_path() {
    let src = r##"
use crate::{render, sim::State};
use crate::{bfs::{self, Writer as W}, scene::{Model, Boundary}};
pub use crate::look::Look;
use super::grid::Grid;
use super::super::record::Recorder;
fn f<'a>(x: &'a str) -> char {
    let q = '"';
    let v = crate::video::encode(x);
    let e: bfs::BfsError = todo!();
    W::new();
    $crate::plot::draw();
    'x'
}
mod tests {
    use super::*;
    use crate::cli::Args as _;
}
"##;
    let (deps, names) = analyse_str("sim::cpu", src, KNOWN);
    let want: BTreeSet<String> = [
        "render", "bfs", "scene", "look", "record", "video", "plot", "cli",
    ]
    .map(String::from)
    .into();
    assert_eq!(deps, want);
    for n in [
        "sim::State",
        "bfs::Writer",
        "bfs::BfsError",
        "bfs::Writer::new",
        "sim::grid::Grid",
        "video::encode",
        "sim::cpu",
    ] {
        assert!(names.contains(n), "{n} not found in {names:?}");
    }

    // `use` names as local roots; `self::` and a child module named without a prefix.
    let src = "use crate::render as r;\nuse self::inner::X;\nmod inner { use super::super::scene; }\nfn g() { r::draw(); colormap::NAMES; }";
    let (deps, names) = analyse_str("render", src, KNOWN);
    assert_eq!(deps, ["scene".to_string()].into());
    assert!(names.contains("render::draw"), "{names:?}");
    assert!(names.contains("render::inner::X"), "{names:?}");
    assert!(names.contains("render::colormap::NAMES"), "{names:?}");
}

#[test]
fn parser_ignores_comments_strings_and_foreign_paths() {
    let src = r###"
//! Module docs mention crate::video::Encoder.
/// So do item docs: crate::cli.
// A comment line mentioning crate::render must be ignored.
/* a block comment /* nested */ crate::cli::x */
use std::collections::HashMap;
use ::render::Thing;
fn f<'a, 'b>(x: &'a str, y: &'b str) -> &'static str {
    let s = "crate::cli::run \" crate::record";
    let r = r#"crate::cli "quoted" crate::plot"#;
    let b = b"crate::video";
    let c = ('"', '\'', '\\', 'x');
    let l = 'outer: loop { break 'outer; };
    Self::new(); self.crate_field; pub(crate) fn h() {}
    "crate::look"
}
"###;
    let (deps, names) = analyse_str("sim::cpu", src, KNOWN);
    assert!(deps.is_empty(), "{deps:?}");
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn parser_finds_external_crates() {
    let known = BTreeSet::from([vec!["sim".to_string()]]);
    let src = "use wgpu::{Device, Queue};\nuse rayon;\nfn f() { cudarc::driver::init(); rayon::scope(|_| {}); }\n// wgpu::x\n";
    let file = analyse(Path::new("inline.rs"), &split_path("sim"), src, &known);
    let names: BTreeSet<&str> = file.external.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["wgpu", "rayon", "cudarc"]));
    assert!(file.refs.is_empty(), "{:?}", file.refs);
}

#[test]
fn module_paths_of_files() {
    for (file, want) in [
        ("src/lib.rs", ""),
        ("src/main.rs", ""),
        ("src/scene.rs", "scene"),
        ("src/sim/mod.rs", "sim"),
        ("src/sim/cpu.rs", "sim::cpu"),
        ("src/render/passes/bloom.rs", "render::passes::bloom"),
        ("src/render/passes/mod.rs", "render::passes"),
    ] {
        assert_eq!(
            module_path(Path::new("src"), Path::new(file)).join("::"),
            want,
            "{file}"
        );
    }
}

#[test]
fn cycle_finder() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "e2")] {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    }
    let sccs: Vec<_> = strongly_connected(&g)
        .into_iter()
        .filter(|s| s.len() > 1)
        .collect();
    assert_eq!(sccs.len(), 1);
    let want: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    assert_eq!(sccs[0], want);
    let cycle = a_cycle(&g, &sccs[0]);
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4, "{cycle:?}");
}
