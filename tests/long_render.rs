//! Long renders keep flat memory.
//!
//! Mesa's lavapipe 22.x (the Vulkan software driver of Debian 12) folds the values of a
//! uniform buffer that decides an `if`, `switch` or loop into a fresh copy of the shader on
//! every draw, compiles it, and never frees it. A single `if p.bloom > 0.0` in the tone map
//! made every render grow by ~0.5 MB a frame (1500 frames at 640x360: 956 MB; a still with
//! `--trails 0.999`: 2.8 GB). So:
//!
//! - no shader branches on uniform values alone (checked on naga's IR; no GPU needed);
//! - through the binary, on lavapipe where it is installed (else the default adapter): 3000
//!   frames at 160x90 peak within [`GROWTH_MB`] of 300 frames of the same render, and under
//!   [`PEAK_MB`];
//! - `forge bench render --only memory` prints the long-render memory row.
//!
//! Also here, the other ways a big or long render could crash or hang:
//!
//! - a size past one of the adapter's limits (texture side, storage binding, buffer size,
//!   workgroups) fails before any pass is built, naming the limit, its value and the largest
//!   size of the same shape that fits (wgpu itself would panic);
//! - an encoder that stalls (reads nothing, or never exits) fails after
//!   `FORGE_ENCODER_TIMEOUT` seconds without progress; one that exits 0 without a playable MP4
//!   fails; both name the encoder and the output and leave nothing behind.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use naga::{Expression, Function, Handle, Statement};

use crate::common;

use common::*;

/// The most a render of 3000 frames may peak above the same render of 300 frames (MB). Before
/// the fix the difference was ~1 GB at 160x90; after, under 5 MB.
const GROWTH_MB: f64 = 32.0;
/// The most a 3000-frame 160x90 render may peak at (MB): ~110 MB on lavapipe.
const PEAK_MB: f64 = 600.0;

// ---------------------------------------------------------------------------------------
// No branch on a uniform alone
// ---------------------------------------------------------------------------------------

/// What an expression's value depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Dep {
    /// Constants only.
    Const,
    /// Uniform buffers (or immediates) and constants: what lavapipe inlines.
    Uniform,
    /// Anything else (inputs, textures, storage, invocation ids, calls of those).
    Varying,
}

/// A function of the module: a helper or an entry point.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Fid {
    Helper(Handle<Function>),
    Entry(usize),
}

/// What is known of each function's arguments, locals and result (joined over every call,
/// store and return: flow-insensitive, so it may over-approximate, never miss).
#[derive(Default)]
struct Facts {
    args: HashMap<(Fid, u32), Dep>,
    locals: HashMap<(Fid, usize), Dep>,
    returns: HashMap<Fid, Dep>,
}

struct Scan<'a> {
    module: &'a naga::Module,
    id: Fid,
    f: &'a Function,
    facts: &'a Facts,
    memo: HashMap<Handle<Expression>, Dep>,
}

impl Scan<'_> {
    fn dep(&mut self, e: Handle<Expression>) -> Dep {
        if let Some(&d) = self.memo.get(&e) {
            return d;
        }
        let d = match &self.f.expressions[e] {
            Expression::Literal(_)
            | Expression::Constant(_)
            | Expression::Override(_)
            | Expression::ZeroValue(_) => Dep::Const,
            Expression::GlobalVariable(g) => match self.module.global_variables[*g].space {
                naga::AddressSpace::Uniform | naga::AddressSpace::Immediate => Dep::Uniform,
                _ => Dep::Varying,
            },
            Expression::LocalVariable(l) => *self
                .facts
                .locals
                .get(&(self.id, l.index()))
                .unwrap_or(&Dep::Const),
            Expression::FunctionArgument(i) => match self.id {
                Fid::Entry(_) => Dep::Varying,
                Fid::Helper(_) => *self.facts.args.get(&(self.id, *i)).unwrap_or(&Dep::Const),
            },
            Expression::CallResult(h) => *self
                .facts
                .returns
                .get(&Fid::Helper(*h))
                .unwrap_or(&Dep::Const),
            Expression::Load { pointer } => self.dep(*pointer),
            Expression::Access { base, index } => self.dep(*base).max(self.dep(*index)),
            Expression::AccessIndex { base, .. } => self.dep(*base),
            Expression::Splat { value, .. } => self.dep(*value),
            Expression::Swizzle { vector, .. } => self.dep(*vector),
            Expression::Compose { components, .. } => components
                .iter()
                .map(|c| self.dep(*c))
                .max()
                .unwrap_or(Dep::Const),
            Expression::Unary { expr, .. } | Expression::As { expr, .. } => self.dep(*expr),
            Expression::Binary { left, right, .. } => self.dep(*left).max(self.dep(*right)),
            Expression::Select {
                condition,
                accept,
                reject,
            } => self
                .dep(*condition)
                .max(self.dep(*accept))
                .max(self.dep(*reject)),
            Expression::Relational { argument, .. } => self.dep(*argument),
            Expression::Math {
                arg,
                arg1,
                arg2,
                arg3,
                ..
            } => [Some(*arg), *arg1, *arg2, *arg3]
                .into_iter()
                .flatten()
                .map(|a| self.dep(a))
                .max()
                .unwrap_or(Dep::Const),
            _ => Dep::Varying,
        };
        self.memo.insert(e, d);
        d
    }

    /// The local variable a pointer expression stores into, if any.
    fn root_local(&self, mut p: Handle<Expression>) -> Option<usize> {
        loop {
            match &self.f.expressions[p] {
                Expression::LocalVariable(l) => return Some(l.index()),
                Expression::Access { base, .. } | Expression::AccessIndex { base, .. } => p = *base,
                _ => return None,
            }
        }
    }

    /// Joins what `block` stores, passes and returns into `out`; lists each branch that
    /// depends on uniforms alone in `bad`. `control`: what decides whether `block` runs (a
    /// value stored under a branch on the pixel depends on the pixel; in the driver it
    /// becomes a phi, which it never inlines).
    fn walk(&mut self, block: &naga::Block, control: Dep, out: &mut Facts, bad: &mut Vec<String>) {
        let name = match self.id {
            Fid::Entry(i) => self.module.entry_points[i].name.clone(),
            Fid::Helper(_) => self.f.name.clone().unwrap_or_default(),
        };
        let branch = |s: &mut Self, what: &str, e: Handle<Expression>, bad: &mut Vec<_>| {
            if s.dep(e) == Dep::Uniform {
                bad.push(format!("fn {name}: {what} on uniform values alone"));
            }
        };
        for st in block.iter() {
            match st {
                Statement::Block(b) => self.walk(b, control, out, bad),
                Statement::If {
                    condition,
                    accept,
                    reject,
                } => {
                    branch(self, "if", *condition, bad);
                    let inner = control.max(self.dep(*condition));
                    self.walk(accept, inner, out, bad);
                    self.walk(reject, inner, out, bad);
                }
                Statement::Switch { selector, cases } => {
                    branch(self, "switch", *selector, bad);
                    let inner = control.max(self.dep(*selector));
                    for c in cases {
                        self.walk(&c.body, inner, out, bad);
                    }
                }
                Statement::Loop {
                    body,
                    continuing,
                    break_if,
                } => {
                    if let Some(b) = break_if {
                        branch(self, "break if", *b, bad);
                    }
                    self.walk(body, control, out, bad);
                    self.walk(continuing, control, out, bad);
                }
                Statement::Store { pointer, value } => {
                    if let Some(l) = self.root_local(*pointer) {
                        let d = self.dep(*value).max(self.dep(*pointer)).max(control);
                        let e = out.locals.entry((self.id, l)).or_insert(Dep::Const);
                        *e = (*e).max(d);
                    }
                }
                Statement::Call {
                    function,
                    arguments,
                    ..
                } => {
                    for (i, a) in arguments.iter().enumerate() {
                        let d = self.dep(*a);
                        let e = out
                            .args
                            .entry((Fid::Helper(*function), i as u32))
                            .or_insert(Dep::Const);
                        *e = (*e).max(d);
                    }
                }
                Statement::Return { value: Some(v) } => {
                    let d = self.dep(*v).max(control);
                    let e = out.returns.entry(self.id).or_insert(Dep::Const);
                    *e = (*e).max(d);
                }
                _ => {}
            }
        }
    }
}

/// Every `if`, `switch` and `break if` of `src` (WGSL) whose condition depends on uniform
/// buffers and constants alone, as "fn NAME: if on uniform values alone".
fn uniform_branches(src: &str) -> Vec<String> {
    let module = naga::front::wgsl::parse_str(src).expect("the WGSL parses");
    let mut fns: Vec<(Fid, &Function)> = module
        .functions
        .iter()
        .map(|(h, f)| (Fid::Helper(h), f))
        .collect();
    for (i, ep) in module.entry_points.iter().enumerate() {
        fns.push((Fid::Entry(i), &ep.function));
    }
    // Local initialisers count as stores.
    let mut facts = Facts::default();
    for (id, f) in &fns {
        for (h, l) in f.local_variables.iter() {
            if let Some(init) = l.init {
                let mut s = Scan {
                    module: &module,
                    id: *id,
                    f,
                    facts: &Facts::default(),
                    memo: HashMap::new(),
                };
                let d = s.dep(init);
                facts.locals.insert((*id, h.index()), d);
            }
        }
    }
    // Three levels, joined monotonically: a few rounds reach the fixed point.
    loop {
        let mut next = Facts {
            args: facts.args.clone(),
            locals: facts.locals.clone(),
            returns: facts.returns.clone(),
        };
        let mut bad = Vec::new();
        for (id, f) in &fns {
            let mut s = Scan {
                module: &module,
                id: *id,
                f,
                facts: &facts,
                memo: HashMap::new(),
            };
            s.walk(&f.body, Dep::Const, &mut next, &mut bad);
        }
        let stable =
            next.args == facts.args && next.locals == facts.locals && next.returns == facts.returns;
        if stable {
            bad.sort();
            bad.dedup();
            return bad;
        }
        facts = next;
    }
}

#[test]
fn the_uniform_branch_check_catches_what_leaked() {
    // The tone map's branch as it was, a switch on a mode, a branch through a helper's
    // argument and a local, and a loop bounded by a uniform.
    let src = r#"
        struct P { bloom: f32, mode: u32, n: u32, wrap: u32 }
        @group(0) @binding(0) var<uniform> p: P;
        @group(0) @binding(1) var<storage, read> data: array<f32>;
        fn wrapped(w: u32, x: f32) -> f32 {
            if w == 1u { return fract(x); }
            return x;
        }
        @fragment fn fs(@builtin(position) pos: vec4f) -> @location(0) vec4f {
            var c = pos.x;
            if p.bloom > 0.0 { c += 1.0; }
            switch p.mode { case 0u: { c *= 2.0; } default: {} }
            let w = p.wrap;
            c = wrapped(w, c);
            var on = p.mode;
            if on == 2u { c = 0.0; }
            for (var k = 0u; k < p.n; k++) { c += data[k]; }
            // Not flagged: these depend on the pixel or the data.
            if c > p.bloom { c = 1.0; }
            if data[0] > 0.0 && p.mode == 1u { c = 2.0; }
            return vec4f(c);
        }
    "#;
    let bad = uniform_branches(src);
    let expect = [
        "fn fs: if on uniform values alone",
        "fn fs: switch on uniform values alone",
        "fn wrapped: if on uniform values alone",
    ];
    for e in expect {
        assert!(bad.iter().any(|b| b == e), "not caught: {e}\n{bad:?}");
    }
    // `p.bloom > 0.0`, `on == 2u` and `k < p.n` (k is a constant-stepped counter) are all "if"
    // in fs; the data and pixel ones are not: exactly the three kinds above.
    assert_eq!(bad.len(), 3, "{bad:?}");
    // And each one alone is caught.
    for (line, what) in [
        ("if p.bloom > 0.0 { c += 1.0; }", "if"),
        ("var on = p.mode; if on == 2u { c = 0.0; }", "if"),
        ("for (var k = 0u; k < p.n; k++) { c += data[k]; }", "if"),
    ] {
        let one = format!(
            "struct P {{ bloom: f32, mode: u32, n: u32, wrap: u32 }}
             @group(0) @binding(0) var<uniform> p: P;
             @group(0) @binding(1) var<storage, read> data: array<f32>;
             @fragment fn fs(@builtin(position) pos: vec4f) -> @location(0) vec4f {{
                 var c = pos.x; {line} return vec4f(c); }}"
        );
        assert_eq!(
            uniform_branches(&one),
            vec![format!("fn fs: {what} on uniform values alone")],
            "{line}"
        );
    }
}

#[test]
fn no_shader_branches_on_a_uniform_alone() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut seen = 0;
    let mut bad = Vec::new();
    for e in fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("wgsl") {
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        // A part (appended to other files) is checked within each module it completes.
        let Some(src) = forge::render::wgsl::module(&name, &fs::read_to_string(&p).unwrap()) else {
            continue;
        };
        for b in uniform_branches(&src) {
            bad.push(format!("{}: {b}", p.file_name().unwrap().to_string_lossy()));
        }
        seen += 1;
    }
    assert!(
        seen >= 6,
        "expected every pass's WGSL in shaders/, found {seen}"
    );
    assert!(
        bad.is_empty(),
        "branches that lavapipe turns into a leaked shader per draw (use select(), or make \
         the condition depend on the pixel/agent):\n{}",
        bad.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Through the binary
// ---------------------------------------------------------------------------------------

/// A recording of 300 agents and `frames` frames, simulated by forge itself.
fn long_recording(dir: &Path, frames: u64) {
    let steps = (frames - 1).to_string();
    succeeds(
        dir,
        &[
            "simulate", "cuplan", "--steps", &steps, "-o", "long.bfs", "--quiet",
        ],
    );
}

#[test]
fn a_long_render_keeps_flat_memory() {
    if !have_gpu("a_long_render_keeps_flat_memory")
        || !have_ffmpeg("a_long_render_keeps_flat_memory")
    {
        return;
    }
    let d = tmp();
    long_recording(d.path(), 3000);
    // The leak was lavapipe's: measure it wherever it is present, else the default adapter.
    let adapter = lavapipe(d.path());
    // Every pass: density, trails (fade), agents, bloom, tone map, yuv, readback, FFmpeg.
    let render = |frames: &str, out: &str| {
        let mut args = vec![
            "render", "long.bfs", "--size", "160x90", "--frames", frames, "--color", "density",
            "--trails", "0.9", "--bloom", "0.6", "--quiet", "-o", out,
        ];
        if let Some(a) = &adapter {
            args.extend(["--adapter", a.as_str()]);
        }
        let m = peak_memory(d.path(), &args, &[]);
        no_panic(&m.run);
        assert!(m.run.ok(), "forge {args:?} failed:\n{}", m.run.stderr);
        m.peak_mb
    };
    let short = render("0..300", "short.mp4");
    let long = render("0..3000", "long.mp4");
    eprintln!(
        "peak resident memory at 160x90{}: 300 frames {short:.0} MB, 3000 frames {long:.0} MB",
        if adapter.is_some() {
            " on lavapipe"
        } else {
            ""
        }
    );
    if short == 0.0 {
        skip("a_long_render_keeps_flat_memory: no /proc here: memory not measured");
        return;
    }
    assert!(
        long - short <= GROWTH_MB,
        "memory grows with the frames rendered: 300 frames peak at {short:.0} MB, 3000 at \
         {long:.0} MB (at most {GROWTH_MB} MB more allowed)"
    );
    assert!(
        long <= PEAK_MB,
        "3000 frames at 160x90 peak at {long:.0} MB (at most {PEAK_MB} MB allowed)"
    );
}

/// The index (for `--adapter`) of a lavapipe (Vulkan llvmpipe) adapter, if one is present: the
/// driver whose limits and leak these tests pin down. Elsewhere they run on the default one.
fn lavapipe(dir: &Path) -> Option<String> {
    let r = run(dir, &["gpus"]);
    r.stdout
        .lines()
        .find(|l| l.contains("llvmpipe") && l.contains("Vulkan"))
        .and_then(|l| l.split(':').next())
        .map(|i| i.trim().to_string())
}

/// The largest texture side of the adapter a render with `adapter` uses (`forge gpus`).
fn max_texture(dir: &Path, adapter: Option<&str>) -> u32 {
    let r = succeeds(dir, &["gpus"]);
    let want = adapter.unwrap_or("0");
    let line = r
        .stdout
        .lines()
        .find(|l| l.split(':').next() == Some(want))
        .unwrap_or_else(|| panic!("no adapter {want} in:\n{}", r.stdout));
    line.rsplit("max texture ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no max texture in {line:?}"))
}

#[test]
fn bench_render_reports_the_peak_memory_of_a_long_render() {
    if !have_gpu("bench_render_reports_the_peak_memory_of_a_long_render") {
        return;
    }
    let d = tmp();
    let r = succeeds(
        d.path(),
        &[
            "bench",
            "render",
            "--only",
            "memory",
            "--memory-size",
            "160x90",
            "--memory-frames",
            "300",
        ],
    );
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("Peak memory of a long render"))
        .unwrap_or_else(|| panic!("no memory row in:\n{}", r.stdout));
    // "... 300 agents at 160x90 (...): A MB after 30 frames, B MB after 300 frames (+x MB per
    // 1000 frames)"
    let figures: Vec<f64> = row
        .split(" MB after ")
        .take(2)
        .map(|part| {
            part.rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no figure in {row:?}"))
        })
        .collect();
    assert_eq!(figures.len(), 2, "{row}");
    assert!(
        row.contains("after 30 frames") && row.contains("after 300 frames"),
        "{row}"
    );
    assert!(row.contains("MB per 1000 frames"), "{row}");
    if figures[0] > 0.0 {
        assert!(figures[1] - figures[0] <= GROWTH_MB, "{row}");
    }
    // No fps table when only the memory row is asked for.
    assert!(!r.stdout.contains("render-only fps"), "{}", r.stdout);
    let err = fails(d.path(), &["bench", "render", "--only", "speed"]);
    has(&err, "--only");
}

#[test]
fn bench_render_times_each_pass_of_a_built_in_scene() {
    if !have_gpu("bench_render_times_each_pass_of_a_built_in_scene") {
        return;
    }
    let d = tmp();
    // A recording of one's own is timed as it is (4 steps: 5 frames), beside the scenes.
    let rec = d.path().join("own.bfs");
    let rec_s = rec.to_str().unwrap();
    succeeds(
        d.path(),
        &[
            "simulate", "vicsek", "--agents", "300", "--steps", "4", "-o", rec_s, "-q",
        ],
    );
    let scenes = format!("murmuration,shoal3d,{rec_s}");
    let r = succeeds(
        d.path(),
        &[
            "bench",
            "render",
            "--only",
            "passes",
            "--render-scenes",
            &scenes,
            "--passes-size",
            "160x90",
            "--passes-steps",
            "6",
        ],
    );
    let header = r
        .stdout
        .lines()
        .find(|l| l.starts_with("| scene |"))
        .unwrap_or_else(|| panic!("no passes table in:\n{}", r.stdout));
    let names: Vec<&str> = header.split('|').map(str::trim).collect();
    for pass in [
        "upload",
        "agents",
        "bloom",
        "tone map",
        "overlay",
        "yuv",
        "read-back",
        "sink",
    ] {
        assert!(names.contains(&pass), "no {pass} column in {header}");
    }
    for (scene, frames) in [("murmuration", "7"), ("shoal3d", "7"), (rec_s, "5")] {
        let row = r
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {scene} |")))
            .unwrap_or_else(|| panic!("no {scene} row in:\n{}", r.stdout));
        let cells: Vec<&str> = row
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cells.len(), names.len() - 2, "{row}");
        assert_eq!(cells[1], frames, "the recording's {frames} frames: {row}");
        // Eight passes and their sum, each "wall / cpu" in ms a frame.
        let pair = |c: &str| -> (f64, f64) {
            let (w, c2) = c
                .split_once(" / ")
                .unwrap_or_else(|| panic!("{c:?} in {row}"));
            (w.parse().unwrap(), c2.parse().unwrap())
        };
        let passes: Vec<(f64, f64)> = cells[4..12].iter().map(|c| pair(c)).collect();
        let sum = pair(cells[12]);
        let wall: f64 = passes.iter().map(|p| p.0).sum();
        assert!(
            (wall - sum.0).abs() <= 0.5,
            "the sum is the passes' sum: {row}"
        );
        assert!(passes.iter().all(|p| p.0 >= 0.0 && p.1 >= 0.0), "{row}");
        // Drawing hundreds of sprites takes time on any adapter.
        assert!(passes[1].0 > 0.0, "the agents pass took no time: {row}");
        for fps in &cells[13..] {
            let f: f64 = fps.parse().unwrap_or_else(|_| panic!("{fps:?} in {row}"));
            assert!(f > 0.0, "{row}");
        }
    }
    let err = fails(
        d.path(),
        &[
            "bench",
            "render",
            "--only",
            "passes",
            "--render-scenes",
            "murmurat",
        ],
    );
    has(&err, "--render-scenes");
    has(&err, "murmurat");
    let err = fails(
        d.path(),
        &["bench", "render", "--only", "passes", "--passes-steps", "0"],
    );
    has(&err, "--passes-steps");
}

// ---------------------------------------------------------------------------------------
// Sizes past the adapter's limits
// ---------------------------------------------------------------------------------------

#[test]
fn sizes_past_the_adapters_limits_fail_naming_the_limit() {
    if !have_gpu("sizes_past_the_adapters_limits_fail_naming_the_limit") {
        return;
    }
    let d = tmp();
    let p = d.path();
    long_recording(p, 4);
    // Past the texture limit of whichever adapter renders: the targets cannot exist. (A video
    // that large is past FFmpeg's picture size too, which is checked first, before the GPU.)
    let side = max_texture(p, None) * 2;
    let size = format!("{side}x{side}");
    for (out, limit) in [
        (&["-o", "x.mp4"][..], "too large for the encoder"),
        (&["--png", "frames"][..], "max_texture_dimension_2d"),
    ] {
        let mut args = vec!["render", "long.bfs", "--size", &size, "--quiet"];
        args.extend_from_slice(out);
        let err = fails_cleanly(p, &args, &[limit, &size], &["x.mp4"]);
        has(&err, "the largest 1:1 size that fits is ");
    }
    let err = fails_cleanly(
        p,
        &[
            "still", "long.bfs", "--frame", "1", "--size", &size, "-o", "s.png",
        ],
        &["max_texture_dimension_2d"],
        &["s.png"],
    );
    has(&err, "the largest 1:1 size that fits is ");
    let k = (side / 9 + 2) & !1;
    let wide = format!("{}x{}", 16 * k, 9 * k);
    let err = fails(p, &["render", "long.bfs", "--size", &wide, "-o", "x.mp4"]);
    has(&err, "the largest 16:9 size that fits is ");
    // forge bench render checks every row's size first, before simulating anything.
    let t0 = std::time::Instant::now();
    let sizes = format!("320x180,{size}");
    let err = fails(
        p,
        &[
            "bench",
            "render",
            "--render-sizes",
            &sizes,
            "--render-agents",
            "1000",
        ],
    );
    has(&err, &format!("--render-sizes {size}"));
    has(&err, "max_texture_dimension_2d");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(60),
        "bench render took {:?} to refuse {size}",
        t0.elapsed()
    );
    // (The yuv pass renders its planes, so no storage-buffer limit caps the size; the
    // readback buffer's limit is checked in src/render/limits.rs.)
}

// ---------------------------------------------------------------------------------------
// Encoders that stall or write nothing
// ---------------------------------------------------------------------------------------

/// A fake FFmpeg in `dir`: answers `-version` as FFmpeg does, then runs `body` (sh).
/// A stand-in FFmpeg's answers to forge's questions before it encodes (`-encoders`, `-h
/// encoder=libx264`), as a real FFmpeg with libx264 gives them.
const FAKE_PROBES: &str = "if [ \"$2\" = \"-encoders\" ]; then\n  \
     echo ' V....D libx264              libx264 H.264 / AVC (codec h264)'\n  exit 0\nfi\n\
     if [ \"$2\" = \"-h\" ]; then\n  echo '    Supported pixel formats: yuv420p'\n  exit 0\nfi\n";

fn fake_encoder(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    fs::write(
        &path,
        format!(
            "#!/bin/sh\nif [ \"$1\" = \"-version\" ]; then\n  \
             echo 'ffmpeg version 6.0 Copyright (c) 2000-2023 the FFmpeg developers'\n  \
             exit 0\nfi\n{FAKE_PROBES}{body}\n"
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    path.to_str().unwrap().to_string()
}

/// Beside a software renderer FFmpeg runs at a lower priority (niceness +10), so that its
/// threads do not stall lavapipe's; a fake encoder records its niceness, then hands over to
/// the real FFmpeg (the render must still succeed).
#[test]
fn the_encoder_yields_to_a_software_renderer() {
    if !have_gpu("the_encoder_yields_to_a_software_renderer")
        || !have_ffmpeg("the_encoder_yields_to_a_software_renderer")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    let Some(lvp) = lavapipe(p) else {
        skip_unless_required(
            "FORGE_REQUIRE_GPU_TESTS",
            "the_encoder_yields_to_a_software_renderer: no lavapipe adapter",
        );
        return;
    };
    long_recording(p, 10);
    let real = std::env::var("FORGE_FFMPEG").unwrap_or_else(|_| "ffmpeg".into());
    let seen = p.join("niceness");
    let fake = fake_encoder(
        p,
        "records-niceness.sh",
        &format!("nice > '{}'\nexec '{real}' \"$@\"", seen.display()),
    );
    let ours: i32 = String::from_utf8(std::process::Command::new("nice").output().unwrap().stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    succeeds_env(
        p,
        &[
            "render",
            "long.bfs",
            "--size",
            "160x90",
            "-o",
            "x.mp4",
            "--quiet",
            "--adapter",
            &lvp,
        ],
        &[("FORGE_FFMPEG", &fake)],
    );
    let theirs: i32 = fs::read_to_string(&seen).unwrap().trim().parse().unwrap();
    assert_eq!(
        theirs,
        (ours + 10).min(19),
        "FFmpeg's niceness beside lavapipe"
    );
    assert!(fs::metadata(p.join("x.mp4")).unwrap().len() > 0);
}

#[test]
fn an_encoder_that_stalls_or_writes_nothing_fails_the_render() {
    if !have_gpu("an_encoder_that_stalls_or_writes_nothing_fails_the_render") {
        return;
    }
    let d = tmp();
    let p = d.path();
    long_recording(p, 40);
    let render = [
        "render", "long.bfs", "--size", "160x90", "-o", "x.mp4", "--quiet",
    ];
    let cases: [(&str, &str, &[&str]); 5] = [
        // Reads nothing, never exits: the pipe fills, forge waits, gives up.
        (
            "stalls.sh",
            "exec sleep 1000",
            &["accepted no input for 2 s", "FORGE_ENCODER_TIMEOUT"],
        ),
        // Reads nothing through a child of its own that keeps the pipe open.
        (
            "stalls-in-a-child.sh",
            "sleep 30",
            &["accepted no input for 2 s"],
        ),
        // Reads everything, then hangs instead of writing the file.
        (
            "hangs-at-the-end.sh",
            "cat >/dev/null\nexec sleep 1000",
            &["wrote nothing more after its input ended"],
        ),
        // Reads everything, writes nothing, exits 0.
        (
            "writes-nothing.sh",
            "cat >/dev/null\nexit 0",
            &["exited 0 after 40 frames", "not a playable MP4", "empty"],
        ),
        // Writes something that is not an MP4, exits 0.
        (
            "writes-junk.sh",
            "for a; do out=\"$a\"; done\ncat >/dev/null\nprintf 'not a video' > \"$out\"\nexit 0",
            &["not a playable MP4", "ftyp"],
        ),
    ];
    for (name, body, says) in cases {
        let fake = fake_encoder(p, name, body);
        let t0 = std::time::Instant::now();
        let mut names = vec![fake.as_str(), "x.mp4"];
        names.extend_from_slice(says);
        fails_cleanly_env(
            p,
            &render,
            &[("FORGE_FFMPEG", &fake), ("FORGE_ENCODER_TIMEOUT", "2")],
            &names,
            &["x.mp4"],
        );
        no_output(p, "x.mp4");
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "{name}: took {:?}",
            t0.elapsed()
        );
    }
    // A bad timeout is refused before any GPU work.
    let fake = fake_encoder(p, "fine.sh", "cat >/dev/null");
    for bad in ["0", "-1", "soon", "NaN"] {
        let mut env = vec![
            ("FORGE_FFMPEG", fake.as_str()),
            ("FORGE_ENCODER_TIMEOUT", bad),
        ];
        env.extend_from_slice(NO_GPU);
        let err = fails_cleanly_env(p, &render, &env, &["FORGE_ENCODER_TIMEOUT"], &["x.mp4"]);
        assert!(
            !err.contains("GPU adapter") || !no_gpu_hides_the_gpu(),
            "{err}"
        );
    }
}
