//! Helpers shared by the integration tests that drive the real `forge` binary.
//!
//! - [`forge`]: the command, run in a folder, with a timeout so that a hang fails instead of
//!   blocking, and `XDG_RUNTIME_DIR` set (wgpu's drivers ask for it).
//! - [`run`] / [`run_env`] give a [`Run`]; [`succeeds`], [`fails`] and [`fails_cleanly`] check
//!   the exit, the message and that nothing was left behind, never a panic.
//! - [`have_gpu`] / [`have_ffmpeg`]: a test that needs them skips with a printed line when they
//!   are missing, or fails when `FORGE_REQUIRE_GPU_TESTS=1` (set by scripts/test.sh).
//! - [`NO_GPU`]: an environment in which forge finds no GPU adapter, for checks that must come
//!   before any GPU work.
//!
//! - [`child`]: forge in the background, signalled at chosen moments, and stand-in programs.
//!
//! Not every test binary uses every helper.
#![allow(dead_code)]

pub mod child;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use assert_cmd::Command;
use tempfile::TempDir;

/// How long one forge command may run before the test calls it hung. Generous: renders on a
/// software GPU are slow. Tests about hangs set a shorter one themselves.
pub const TIMEOUT: Duration = Duration::from_secs(240);

/// `forge` run in `dir`.
pub fn forge(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("forge").expect("the forge binary is built");
    c.current_dir(dir)
        .timeout(TIMEOUT)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir());
    c
}

/// The path of the built binary, for tests that spawn it themselves (to kill it, or under a
/// shell).
pub fn forge_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("forge")
}

/// What a finished forge run gave: the exit code (`None`: killed by a signal) and its output.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    fn from(out: std::process::Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs forge in `dir`; checks nothing.
pub fn run(dir: &Path, args: &[&str]) -> Run {
    run_env(dir, args, &[])
}

/// Runs forge in `dir` with extra environment variables; checks nothing.
pub fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = forge(dir);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    Run::from(c.output().expect("forge runs"))
}

/// Runs a prepared command (own timeout, arguments that are not UTF-8 ...); checks nothing.
pub fn run_command(c: &mut Command) -> Run {
    Run::from(c.output().expect("forge runs"))
}

/// Runs an arbitrary process (a shell around forge, say); checks nothing.
pub fn run_process(c: &mut std::process::Command) -> Run {
    Run::from(c.output().expect("the process runs"))
}

/// forge did not panic.
pub fn no_panic(r: &Run) {
    for sign in ["panicked", "RUST_BACKTRACE"] {
        assert!(!r.stderr.contains(sign), "forge panicked:\n{}", r.stderr);
    }
}

/// `needle` is in `text` (stderr, usually).
pub fn has(text: &str, needle: &str) {
    assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
}

/// Runs forge, expects success (exit 0, no panic).
pub fn succeeds(dir: &Path, args: &[&str]) -> Run {
    succeeds_env(dir, args, &[])
}

pub fn succeeds_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let r = run_env(dir, args, env);
    no_panic(&r);
    assert_eq!(
        r.code,
        Some(0),
        "forge {args:?} failed:\nstderr:\n{}",
        r.stderr
    );
    r
}

/// Checks that `r` is a clean failure of `forge args`: a non-zero exit (not a signal), an
/// error message, no panic.
pub fn failed(r: &Run, args: &[&str]) {
    no_panic(r);
    assert!(
        r.code.is_some(),
        "forge {args:?} was killed by a signal:\n{}",
        r.stderr
    );
    assert_ne!(
        r.code,
        Some(0),
        "forge {args:?} should have failed\nstderr:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("error"),
        "no error message for {args:?}:\n{}",
        r.stderr
    );
}

/// Runs forge, expects a clean failure (see [`failed`]), returns stderr.
pub fn fails(dir: &Path, args: &[&str]) -> String {
    fails_env(dir, args, &[])
}

pub fn fails_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let r = run_env(dir, args, env);
    failed(&r, args);
    r.stderr
}

/// Runs forge, expects a clean failure whose message names each of `names`, and that none of
/// the `no_output` paths (relative to `dir`), nor any `*.partial` file in `dir`, is left
/// behind. Returns stderr.
pub fn fails_cleanly(dir: &Path, args: &[&str], names: &[&str], no_output: &[&str]) -> String {
    fails_cleanly_env(dir, args, &[], names, no_output)
}

pub fn fails_cleanly_env(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    names: &[&str],
    no_output: &[&str],
) -> String {
    let err = fails_env(dir, args, env);
    for n in names {
        assert!(
            err.contains(n),
            "forge {args:?}: the message does not name {n:?}:\n{err}"
        );
    }
    for out in no_output {
        assert!(
            !dir.join(out).exists(),
            "forge {args:?} failed but left {out} behind"
        );
    }
    no_partials(dir);
    err
}

/// Neither `dir/name` nor its temporary file (`name.XXXXXX.partial`, or `name.partial`)
/// exists.
pub fn no_output(dir: &Path, name: &str) {
    assert!(!dir.join(name).exists(), "{name} was left behind");
    let partial = format!("{name}.partial");
    assert!(!dir.join(&partial).exists(), "{partial} was left behind");
    if dir.is_dir() {
        let prefix = format!("{name}.");
        let left: Vec<String> = listing(dir)
            .into_iter()
            .filter(|n| n.starts_with(&prefix) && n.ends_with(".partial"))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// No `*.partial` file in `dir` (not recursive).
pub fn no_partials(dir: &Path) {
    let left: Vec<String> = listing(dir)
        .into_iter()
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        dir.display()
    );
}

/// The names in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn tmp() -> TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Writes `text` to `dir/name`, returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

// ---------------------------------------------------------------------------------------
// GPU and FFmpeg
// ---------------------------------------------------------------------------------------

/// A line on the real stderr, which shows even when the harness captures output (it captures
/// the print macros, not direct writes).
pub fn skip(msg: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {msg}");
}

/// Skips with `msg`, or fails the test where the environment variable `required` is `1` (the
/// test script sets these where it has installed what the test needs).
#[allow(dead_code)]
pub fn skip_unless_required(required: &str, msg: &str) {
    if std::env::var(required).is_ok_and(|v| v == "1") {
        panic!("{required}=1 but {msg}");
    }
    skip(msg);
}

/// `FORGE_REQUIRE_GPU_TESTS=1`: a missing GPU adapter or FFmpeg fails the test.
pub fn require_gpu_tests() -> bool {
    std::env::var("FORGE_REQUIRE_GPU_TESTS").is_ok_and(|v| v == "1")
}

/// Environment in which forge finds no GPU adapter (Vulkan only, and no Vulkan driver), so a
/// check made under it is known to come before any GPU work.
pub const NO_GPU: &[(&str, &str)] = &[
    ("WGPU_BACKEND", "vulkan"),
    ("VK_ICD_FILENAMES", "/nonexistent/forge-no-gpu.json"),
    ("VK_DRIVER_FILES", "/nonexistent/forge-no-gpu.json"),
];

/// Whether [`NO_GPU`] really hides every adapter here (`forge gpus` fails under it). Where it
/// does not, the checks made under it still run, with a GPU present.
pub fn no_gpu_hides_the_gpu() -> bool {
    static HIDDEN: OnceLock<bool> = OnceLock::new();
    *HIDDEN.get_or_init(|| {
        let d = tmp();
        let hidden = !run_env(d.path(), &["gpus"], NO_GPU).ok();
        if !hidden {
            skip("NO_GPU does not hide the GPU on this machine: pre-GPU checks run with one");
        }
        hidden
    })
}

/// True if a GPU adapter (or a software driver) is present; otherwise skips (or fails when
/// FORGE_REQUIRE_GPU_TESTS=1).
pub fn have_gpu(test: &str) -> bool {
    static PRESENT: OnceLock<Result<(), String>> = OnceLock::new();
    let r = PRESENT.get_or_init(|| {
        let d = tmp();
        let r = run(d.path(), &["gpus"]);
        no_panic(&r);
        if r.ok() {
            Ok(())
        } else {
            Err(r.stderr)
        }
    });
    match r {
        Ok(()) => true,
        Err(e) if require_gpu_tests() => panic!(
            "{test}: FORGE_REQUIRE_GPU_TESTS=1 but no GPU adapter: {e}\n\
             install: apt-get install mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri"
        ),
        Err(_) => {
            skip(&format!(
                "{test}: no GPU adapter (install mesa-vulkan-drivers for lavapipe)"
            ));
            false
        }
    }
}

/// True if `ffmpeg` and `ffprobe` run; otherwise skips (or fails when
/// FORGE_REQUIRE_GPU_TESTS=1).
pub fn have_ffmpeg(test: &str) -> bool {
    let runs = |p: &str| {
        std::process::Command::new(p)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let present = runs("ffmpeg") && runs("ffprobe");
    if !present {
        if require_gpu_tests() {
            panic!(
                "{test}: FORGE_REQUIRE_GPU_TESTS=1 but ffmpeg/ffprobe missing (apt-get install ffmpeg)"
            );
        }
        skip(&format!("{test}: ffmpeg/ffprobe not installed"));
    }
    present
}

// ---------------------------------------------------------------------------------------
// --help texts
// ---------------------------------------------------------------------------------------

/// One option of a `--help` text.
#[derive(Debug)]
pub struct HelpOption {
    /// The names as written, e.g. `-o, --output <OUTPUT>`.
    pub head: String,
    /// The long name, e.g. `--output`.
    pub long: String,
    /// Whether it takes a value (`<...>` in the head).
    pub takes_value: bool,
    /// Its description, every line joined by spaces.
    pub text: String,
}

impl HelpOption {
    /// What `[default: ...]` says, if the description has one.
    pub fn default(&self) -> Option<&str> {
        let i = self.text.find("[default: ")? + "[default: ".len();
        let j = self.text[i..].find(']')?;
        Some(&self.text[i..i + j])
    }
}

/// The options listed under `Options:` and the other headings of options (`Video:`,
/// `Colour:`, ...) in a clap `--help` text (short or long form).
pub fn help_options(help: &str) -> Vec<HelpOption> {
    let mut out: Vec<HelpOption> = Vec::new();
    let mut in_options = false;
    for line in help.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            // A section title ("Options:", "Video:", "Arguments:") or text after the options.
            let title = line.trim_end();
            in_options = title.ends_with(':')
                && title.len() <= 30
                && title.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit())
                && !["Arguments:", "Commands:", "Examples:"].contains(&title)
                && !title.starts_with("Usage:");
            continue;
        }
        if !in_options {
            continue;
        }
        let t = line.trim_start();
        let is_head =
            t.starts_with('-') && t[1..].starts_with(|c: char| c.is_alphanumeric() || c == '-');
        if is_head {
            // `head  description` (short form) or `head` alone (long form).
            let (head, rest) = match t.find("  ") {
                Some(k) => (t[..k].to_string(), t[k..].trim().to_string()),
                None => (t.to_string(), String::new()),
            };
            let long = head
                .split([',', ' ', '=', '['])
                .find(|w| w.starts_with("--"))
                .unwrap_or_else(|| panic!("option without a long name: {head:?}"))
                .to_string();
            out.push(HelpOption {
                takes_value: head.contains('<'),
                head,
                long,
                text: rest,
            });
        } else if let Some(o) = out.last_mut() {
            let t = t.trim();
            if !t.is_empty() {
                if !o.text.is_empty() {
                    o.text.push(' ');
                }
                o.text.push_str(t);
            }
        }
    }
    out
}

/// The subcommands listed under `Commands:` in `forge --help` (without `help`).
pub fn help_commands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if !line.starts_with(' ') {
            in_commands = line.trim_end() == "Commands:";
            continue;
        }
        if in_commands {
            // Names start two spaces in; a wrapped description starts further in.
            if line.starts_with("  ") && !line.starts_with("   ") {
                let name = line.split_whitespace().next().unwrap();
                if name != "help" {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The .bfs layout, for damaging files on purpose
// ---------------------------------------------------------------------------------------

/// `header_len` and the frame size of a forge recording of `n` agents in `dim` dimensions (see
/// the layout in src/bfs.rs): frame `k` starts at `header_len + k * frame_size`.
pub fn bfs_layout(bytes: &[u8], dim: usize, n: usize) -> (usize, usize) {
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    (header_len, 24 + 8 * dim * n)
}

// ---------------------------------------------------------------------------------------
// Memory of a running forge
// ---------------------------------------------------------------------------------------

/// What [`peak_memory`] saw: the run, and the child's peak resident memory (VmHWM), in MB.
pub struct Measured {
    pub run: Run,
    pub peak_mb: f64,
}

/// A `/proc/<pid>/status` field in KiB (`VmHWM`, `VmRSS`), while the process lives.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = s.lines().find(|l| l.starts_with(field))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `forge args` in `dir` (with `env`), reading the child's peak resident memory from
/// `/proc/<pid>/status` every 20 ms until it exits (Linux; elsewhere the peak reads 0). Killed
/// and failed as hung after [`TIMEOUT`].
pub fn peak_memory(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Measured {
    let err_path = dir.join(format!(".forge-stderr-{}", std::process::id()));
    let mut c = std::process::Command::new(forge_bin());
    c.current_dir(dir)
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(fs::File::create(&err_path).unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("forge starts");
    let t0 = std::time::Instant::now();
    let mut peak_kib = 0;
    let status = loop {
        if let Some(kib) = proc_status_kib(child.id(), "VmHWM:") {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("forge {args:?} hung (killed after {TIMEOUT:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    if let Some(mut o) = child.stdout.take() {
        use std::io::Read;
        let _ = o.read_to_string(&mut stdout);
    }
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    let _ = fs::remove_file(&err_path);
    Measured {
        run: Run {
            code: status.code(),
            stdout,
            stderr,
        },
        peak_mb: peak_kib as f64 * 1024.0 / 1e6,
    }
}

/// The look defaults shared by render, still and run.
pub const LOOK_DEFAULTS: &[(&str, &str)] = &[
    ("--size", "1920x1080"),
    ("--color", "speed"),
    ("--colormap", "inferno"),
    ("--trails", "0.86"),
    ("--bloom", "0.5"),
    ("--exposure", "measured"),
    ("--background", "#05050a"),
    ("--point-size", "1.5"),
    ("--vignette", "0.25"),
    ("--fit", "letterbox"),
    ("--camera", "orbit"),
    ("--fov", "45"),
    ("--fog", "0"),
];

/// The encoder defaults shared by render and run.
pub const VIDEO_DEFAULTS: &[(&str, &str)] = &[
    ("--fps", "30"),
    ("--codec", "h264"),
    ("--encoder", "libx264"),
    ("--crf", "18"),
    ("--preset", "veryfast"),
];

/// Width and height of a plot's PNG, decoding every pixel; it is not blank (it has both white
/// background and dark ink).
pub fn decode_png(path: &Path) -> (u32, u32) {
    let file = std::io::BufReader::new(fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut buf).expect("PNG pixels decode");
    let px = &buf[..info.buffer_size()];
    assert!(px.iter().any(|&b| b < 64) && px.iter().any(|&b| b > 250));
    (info.width, info.height)
}

/// Light per pixel (R + G + B) of an EXR still (`forge still -o f.exr`: linear light),
/// row-major: width, height, values.
#[allow(dead_code)]
pub fn exr_light(path: &Path) -> (usize, usize, Vec<f64>) {
    let img = image::open(path).unwrap().to_rgba32f();
    let (w, h) = (img.width() as usize, img.height() as usize);
    let v = img
        .pixels()
        .map(|p| (p.0[0] + p.0[1] + p.0[2]) as f64)
        .collect();
    (w, h, v)
}

/// An 8-bit RGBA (or RGB) PNG's width, height and samples.
#[allow(dead_code)]
pub fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::io::BufReader::new(
        fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    );
    let mut r = png::Decoder::new(file).read_info().expect("a PNG header");
    let mut buf = vec![0; r.output_buffer_size().expect("a sane size")];
    let info = r.next_frame(&mut buf).expect("PNG pixels decode");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// The largest difference between two images' samples, and how many samples differ; the
/// images must be the same size.
#[allow(dead_code)]
pub fn max_difference(a: &Path, b: &Path) -> (u8, usize) {
    let (wa, ha, pa) = read_png(a);
    let (wb, hb, pb) = read_png(b);
    assert_eq!(
        (wa, ha, pa.len()),
        (wb, hb, pb.len()),
        "{} and {} differ in size",
        a.display(),
        b.display()
    );
    let mut worst = 0u8;
    let mut differ = 0usize;
    for (x, y) in pa.iter().zip(&pb) {
        let d = x.abs_diff(*y);
        worst = worst.max(d);
        differ += (d > 0) as usize;
    }
    (worst, differ)
}

/// How a rendered image may differ from its golden reference: the same size; a mean absolute
/// error over all samples of at most 0.005 (0..1); over the lit pixels (those not background
/// in either image), a 99th-percentile error of at most 8/255 (so a sparse frame's agents
/// count, not its empty sky); and the total light within 1%.
#[allow(dead_code)]
pub fn golden_difference(got: &Path, reference: &Path) -> Result<(), String> {
    let (wg, hg, g) = read_png(got);
    let (wr, hr, r) = read_png(reference);
    if (wg, hg, g.len()) != (wr, hr, r.len()) {
        return Err(format!(
            "size {wg}x{hg} ({} samples), the reference is {wr}x{hr} ({} samples)",
            g.len(),
            r.len()
        ));
    }
    let ch = g.len() / (wg as usize * hg as usize);
    let mean = g
        .iter()
        .zip(&r)
        .map(|(a, b)| a.abs_diff(*b) as f64)
        .sum::<f64>()
        / g.len() as f64
        / 255.0;
    // The background: the most common pixel of the reference.
    let mut counts = std::collections::HashMap::new();
    for p in r.chunks_exact(ch) {
        *counts.entry(p).or_insert(0usize) += 1;
    }
    let bg = counts.into_iter().max_by_key(|(_, n)| *n).map(|(p, _)| p);
    let mut lit_errors = Vec::new();
    let (mut light_g, mut light_r) = (0u64, 0u64);
    for (pg, pr) in g.chunks_exact(ch).zip(r.chunks_exact(ch)) {
        light_g += pg.iter().take(3).map(|&v| v as u64).sum::<u64>();
        light_r += pr.iter().take(3).map(|&v| v as u64).sum::<u64>();
        if Some(pg) != bg || Some(pr) != bg {
            lit_errors.push(
                pg.iter()
                    .zip(pr)
                    .map(|(a, b)| a.abs_diff(*b))
                    .max()
                    .unwrap_or(0),
            );
        }
    }
    lit_errors.sort_unstable();
    let p99 = lit_errors
        .get((lit_errors.len().max(1) - 1) * 99 / 100)
        .copied()
        .unwrap_or(0);
    let light = (light_g as f64 - light_r as f64).abs() / (light_r as f64).max(1.0);
    let mut wrong = Vec::new();
    if mean > 0.005 {
        wrong.push(format!("mean abs error {mean:.4} > 0.005"));
    }
    if p99 > 8 {
        wrong.push(format!(
            "99th-percentile error over {} lit pixels {p99} > 8 code values",
            lit_errors.len()
        ));
    }
    if light > 0.01 {
        wrong.push(format!("total light differs by {:.1}% > 1%", light * 100.0));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

/// PSNR (dB, all planes) of `video`'s frames, decoded to RGB (BT.709, limited range), against
/// the PNG frames in folder `png` from `frame_{first}.png` on.
#[allow(dead_code)]
pub fn video_psnr_vs_png(video: &Path, png: &Path, first: u64) -> f64 {
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-i"])
        .arg(video)
        .args(["-framerate", "30", "-start_number", &first.to_string(), "-i"])
        .arg(png.join("frame_%06d.png"))
        .args([
            "-lavfi",
            "[0:v]scale=in_range=tv:in_color_matrix=bt709:flags=accurate_rnd+full_chroma_int,format=rgb24[a];[1:v]format=rgb24[b];[a][b]psnr",
            "-f",
            "null",
            "-",
        ])
        .output()
        .expect("ffmpeg runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let v = err
        .split("average:")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("no PSNR in ffmpeg's output:\n{err}"));
    if v == "inf" {
        f64::INFINITY
    } else {
        v.parse().unwrap()
    }
}

/// PSNR (dB) of `video`'s frames against the PNG frames in folder `png` (from
/// `frame_{first}.png` on) in Y'CbCr: the PNGs converted by FFmpeg to yuv420p (BT.709, limited
/// range) and compared plane by plane with the decoded frames: (Y', Cb, Cr).
#[allow(dead_code)]
pub fn video_psnr_yuv(video: &Path, png: &Path, first: u64) -> (f64, f64, f64) {
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-i"])
        .arg(video)
        .args(["-framerate", "30", "-start_number", &first.to_string(), "-i"])
        .arg(png.join("frame_%06d.png"))
        .args([
            "-lavfi",
            "[1:v]scale=out_color_matrix=bt709:out_range=tv:flags=accurate_rnd,format=yuv420p[b];[0:v][b]psnr",
            "-f",
            "null",
            "-",
        ])
        .output()
        .expect("ffmpeg runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let plane = |key: &str| -> f64 {
        let v = err
            .rsplit(&format!(" {key}:"))
            .next()
            .filter(|_| err.contains(&format!(" {key}:")))
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or_else(|| panic!("no PSNR {key} in ffmpeg's output:\n{err}"));
        if v == "inf" {
            f64::INFINITY
        } else {
            v.parse().unwrap()
        }
    };
    (plane("y"), plane("u"), plane("v"))
}

/// The decoded frames (yuv420p, `w`×`h`) of a video, each its three planes back to back.
#[allow(dead_code)]
pub fn decode_yuv420(path: &Path, w: usize, h: usize) -> Vec<Vec<u8>> {
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "decoding {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .chunks(w * h * 3 / 2)
        .map(|c| c.to_vec())
        .collect()
}

/// How a plane of a video's codes differs from the codes of the PNG frames, in code values:
/// the largest difference, the mean and the mean of its size.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CodeDiff {
    pub max: f64,
    pub mean: f64,
    pub mean_abs: f64,
}

/// The 8-bit 4:2:0 codes of a lossless `video` (`--crf 0`) against the exact BT.709
/// limited-range codes of the PNG frames in folder `png` (from `frame_{first}.png` on), each
/// unrounded: Y' = 16 + 219·luma, chroma from the mean R'G'B' of each 2×2 block. (Y', Cb, Cr).
/// Both sides are dithered and rounded on their own, so a sample may differ by about two
/// codes; a wrong picture differs by more, or on average.
#[allow(dead_code)]
pub fn video_codes_against_png(video: &Path, png: &Path, first: u64) -> [CodeDiff; 3] {
    let frame_png = |k: usize| png.join(format!("frame_{:06}.png", first as usize + k));
    let (w, h, _) = read_png(&frame_png(0));
    let (w, h) = (w as usize, h as usize);
    let (mut sums, mut counts) = ([CodeDiff::default(); 3], [0usize; 3]);
    for (frame, yuv) in decode_yuv420(video, w, h).iter().enumerate() {
        let (_, _, px) = read_png(&frame_png(frame));
        let channels = px.len() / (w * h);
        let rgb = |x: usize, y: usize| -> [f64; 3] {
            let i = (y * w + x) * channels;
            [0, 1, 2].map(|c| px[i + c] as f64 / 255.0)
        };
        let luma = |c: [f64; 3]| 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
        let (cw, ch) = (w / 2, h / 2);
        let (luma_plane, chroma) = yuv.split_at(w * h);
        let planes = [luma_plane, &chroma[..cw * ch], &chroma[cw * ch..]];
        let mut add = |plane: usize, code: u8, want: f64| {
            let d = code as f64 - want;
            let s = &mut sums[plane];
            s.max = s.max.max(d.abs());
            s.mean += d;
            s.mean_abs += d.abs();
            counts[plane] += 1;
        };
        for y in 0..h {
            for x in 0..w {
                add(0, planes[0][y * w + x], 16.0 + 219.0 * luma(rgb(x, y)));
            }
        }
        for y in 0..ch {
            for x in 0..cw {
                let block =
                    [(0, 0), (1, 0), (0, 1), (1, 1)].map(|(i, j)| rgb(2 * x + i, 2 * y + j));
                let m = [0, 1, 2].map(|c| block.iter().map(|p| p[c]).sum::<f64>() / 4.0);
                let yy = luma(m);
                add(
                    1,
                    planes[1][y * cw + x],
                    128.0 + 224.0 * (m[2] - yy) / 1.8556,
                );
                add(
                    2,
                    planes[2][y * cw + x],
                    128.0 + 224.0 * (m[0] - yy) / 1.5748,
                );
            }
        }
    }
    for (s, n) in sums.iter_mut().zip(counts) {
        s.mean /= n.max(1) as f64;
        s.mean_abs /= n.max(1) as f64;
    }
    sums
}

/// `forge simulate ARGS --backend cuda -o g.bfs` in `dir`: with a CUDA device, the same bytes
/// as `--backend cpu -o c.bfs` (`what` names the case in the failure); without one, a failure
/// naming the missing driver, device or NVRTC, never a refusal of the scene ("CPU only"), and
/// no output left.
pub fn cuda_runs_as_the_cpu(dir: &Path, args: &[&str], what: &str) {
    let with = |backend: &'static str, out: &'static str| -> Vec<&str> {
        let mut v = vec!["simulate"];
        v.extend_from_slice(args);
        v.extend(["-q", "-o", out, "--backend", backend]);
        v
    };
    if forge::sim::cuda::open_device().is_err() {
        let err = fails(dir, &with("cuda", "g.bfs"));
        assert!(!err.contains("CPU only"), "{err}");
        assert!(
            err.contains("driver") || err.contains("device") || err.contains("NVRTC"),
            "{err}"
        );
        no_output(dir, "g.bfs");
        return;
    }
    succeeds(dir, &with("cpu", "c.bfs"));
    succeeds(dir, &with("cuda", "g.bfs"));
    assert!(
        fs::read(dir.join("c.bfs")).unwrap() == fs::read(dir.join("g.bfs")).unwrap(),
        "CPU and CUDA recordings {what} differ"
    );
}
