//! The renderer and video export, driven through the real binary.
//!
//! - Every WGSL file parses and validates with naga (no GPU needed).
//! - Golden images at 320x180 on whatever adapter is present (lavapipe in CI), compared with
//!   the references in tests/golden/ (`common::golden_difference`: the same size, a mean
//!   absolute error of at most 0.005, the 99th percentile over lit pixels and the total light
//!   bounded too).
//!   `FORGE_UPDATE_GOLDEN=1` rewrites the references (look at them before committing).
//! - Same input, same frames; MP4s checked with ffprobe; BFS1; every bad input.
//!
//! Tests that need a GPU adapter (or FFmpeg) skip with a printed message when there is none,
//! unless `FORGE_REQUIRE_GPU_TESTS=1` (set by scripts/test.sh), where they fail instead.

use std::fs;
use std::path::{Path, PathBuf};

use forge::bfs;

use crate::common;

use common::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// The header of a synthetic recording: the built-in scene `name` with `n` agents in `world`,
/// carrying `render` as its render section. (The one place these tests build a header from a
/// scene through the library.)
fn synthetic_header(
    name: &str,
    n: usize,
    world: [f32; 3],
    render: Option<forge::look::Look>,
) -> bfs::Header {
    let mut scene = forge::scene::Scene::load(name).unwrap();
    if scene.dim == 3 {
        // The 3D recordings here are of boids in a wrapping box, whatever the built-in 3D
        // scene flies in today.
        scene.boundary = forge::scene::Boundary::Wrap;
    }
    scene.render = render;
    scene.agents = n as u32;
    scene.world = world;
    forge::bfs::Header::for_scene(&scene)
}

/// A synthetic 2D recording (independent of the solver, so the goldens only change when the
/// renderer does): `n` agents on a sunflower spiral in a 320x180 wrapping world, turning
/// slowly, speeds 20..80.
pub(crate) fn synthetic(path: &Path, n: usize, frames: usize) {
    let header = synthetic_header("turbulence", n, [320.0, 180.0, 0.0], None);
    let file = fs::File::create(path).unwrap();
    let mut w = bfs::Writer::new(file, &header).unwrap();
    for f in 0..frames {
        let mut pos = vec![0f32; 2 * n];
        let mut vel = vec![0f32; 2 * n];
        for i in 0..n {
            let r = (i as f32 / n as f32).sqrt() * 100.0;
            let a = i as f32 * 2.399_963 + f as f32 * 0.05;
            pos[i] = (160.0 + r * a.cos() * 1.5).rem_euclid(320.0);
            pos[n + i] = (90.0 + r * a.sin()).rem_euclid(180.0);
            let s = 20.0 + 60.0 * ((i * 7919) % 101) as f32 / 100.0;
            let h = a + 1.3;
            vel[i] = s * h.cos();
            vel[n + i] = s * h.sin();
        }
        w.write_frame(f as u64 * 10, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

/// A synthetic 3D recording (independent of the solver): `n` agents in four clumps on a
/// ring inside a 200x200x120 wrapping box, the ring tilted so heights differ, circling the
/// z axis (so headings cover every azimuth) while climbing on one side and diving on the
/// other; speeds 20..80.
fn synthetic3d(path: &Path, n: usize, frames: usize) {
    synthetic3d_with(path, n, frames, None)
}

/// `synthetic3d` carrying a scene `render` section.
fn synthetic3d_with(path: &Path, n: usize, frames: usize, render: Option<forge::look::Look>) {
    let header = synthetic_header("murmuration3d", n, [200.0, 200.0, 120.0], render);
    assert_eq!(header.dim, 3);
    let file = fs::File::create(path).unwrap();
    let mut w = bfs::Writer::new(file, &header).unwrap();
    for f in 0..frames {
        let mut pos = vec![0f32; 3 * n];
        let mut vel = vec![0f32; 3 * n];
        for i in 0..n {
            let clump = (i % 4) as f32;
            let a = clump * std::f32::consts::FRAC_PI_2 + f as f32 * 0.1;
            // Fibonacci sphere of radius 14 around the clump's centre.
            let k = (i / 4) as f32 + 0.5;
            let m = (n / 4).max(1) as f32;
            let zc = 1.0 - 2.0 * k / m;
            let rc = (1.0 - zc * zc).max(0.0).sqrt();
            let t = k * 2.399_963;
            let c = [
                100.0 + 60.0 * a.cos(),
                100.0 + 60.0 * a.sin(),
                60.0 + 30.0 * a.cos(),
            ];
            pos[i] = c[0] + 14.0 * rc * t.cos();
            pos[n + i] = c[1] + 14.0 * rc * t.sin();
            pos[2 * n + i] = c[2] + 14.0 * zc;
            let s = 20.0 + 60.0 * ((i * 7919) % 101) as f32 / 100.0;
            let d = [-a.sin(), a.cos(), -a.sin() * 0.8];
            let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            for (ax, v) in d.iter().enumerate() {
                vel[ax * n + i] = s * v / l;
            }
        }
        w.write_frame(f as u64 * 10, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[derive(serde::Deserialize)]
struct Probe {
    streams: Vec<serde_json::Value>,
}

fn ffprobe(path: &Path) -> serde_json::Value {
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=codec_name,pix_fmt,width,height,nb_read_frames,r_frame_rate,color_space,color_primaries,color_transfer,color_range"])
        .args(["-of", "json"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    assert!(
        out.status.success(),
        "ffprobe {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Probe = serde_json::from_slice(&out.stdout).unwrap();
    p.streams.into_iter().next().expect("a video stream")
}

/// The video shows the picture, not only the right metadata: `forge render ARGS` to an MP4
/// at --crf 0 (lossless in Y'CbCr), decoded, against `forge render ARGS --png` (from frame
/// `first`) converted to Y'CbCr by FFmpeg: at least 42 dB in every plane (what differs is
/// the dither and the chroma filter; misplaced planes or a wrong matrix cost 15 dB or more).
fn mp4_shows_the_frames(dir: &Path, name: &str, args: &[&str], first: u64) {
    let (mp4, png) = (
        format!("{name}-{first}.mp4"),
        format!("{name}-{first}-frames"),
    );
    let mut a = args.to_vec();
    a.extend_from_slice(&["--crf", "0", "-o", &mp4, "-q", "--force"]);
    succeeds(dir, &a);
    let mut a = args.to_vec();
    a.extend_from_slice(&["--png", &png, "-q", "--force"]);
    succeeds(dir, &a);
    let (y, u, v) = video_psnr_yuv(&dir.join(&mp4), &dir.join(&png), first);
    assert!(
        y >= 42.0 && u >= 42.0 && v >= 42.0,
        "{mp4}: Y' {y:.1}, Cb {u:.1}, Cr {v:.1} dB against the PNG frames of {args:?}"
    );
}

fn check_mp4(path: &Path, w: u32, h: u32, frames: u64, fps: &str) {
    let s = ffprobe(path);
    let field = |k: &str| {
        s[k].as_str()
            .map(str::to_string)
            .unwrap_or_else(|| s[k].to_string())
    };
    assert_eq!(field("codec_name"), "h264", "{s}");
    assert_eq!(field("pix_fmt"), "yuv420p", "{s}");
    assert_eq!(s["width"].as_u64(), Some(w as u64), "{s}");
    assert_eq!(s["height"].as_u64(), Some(h as u64), "{s}");
    assert_eq!(field("nb_read_frames"), frames.to_string(), "{s}");
    assert_eq!(field("r_frame_rate"), fps, "{s}");
    assert_eq!(field("color_space"), "bt709", "{s}");
    assert_eq!(field("color_primaries"), "bt709", "{s}");
    assert_eq!(field("color_transfer"), "bt709", "{s}");
    assert_eq!(field("color_range"), "tv", "{s}");
}

// ---------------------------------------------------------------------------------------
// Shaders: no GPU needed
// ---------------------------------------------------------------------------------------

#[test]
fn every_wgsl_file_parses_and_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut seen = 0;
    for e in fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("wgsl") {
            continue;
        }
        let src = fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy();
        // A part (appended to other files) is checked within the modules it completes.
        let Some(src) = forge::render::wgsl::module(&name, &src) else {
            continue;
        };
        let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| {
            panic!(
                "{}",
                e.emit_to_string_with_path(&src, &p.display().to_string())
            )
        });
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        )
        .validate(&module)
        .unwrap_or_else(|e| {
            panic!(
                "{}",
                e.emit_to_string_with_path(&src, &p.display().to_string())
            )
        });
        seen += 1;
    }
    assert!(
        seen >= 6,
        "expected every pass's WGSL in shaders/, found {seen}"
    );
}

#[test]
fn render_help_documents_defaults() {
    let d = tmp();
    let r = succeeds(d.path(), &["render", "--help"]);
    let options = help_options(&r.stdout);
    for flag in [
        "--4k",
        "--1080p",
        "--720p",
        "--size",
        "--fps",
        "--frames",
        "--encoder",
        "--crf",
        "--preset",
        "--png",
        "--color",
        "--colormap",
        "--range",
        "--trails",
        "--bloom",
        "--exposure",
        "--background",
        "--point-size",
        "--fit",
        "--follow",
        "--camera",
        "--eye",
        "--target",
        "--fov",
        "--fog",
        "--box",
        "--force",
    ] {
        assert!(
            options.iter().any(|o| o.long == flag),
            "render --help lacks {flag}:\n{}",
            r.stdout
        );
    }
    // The defaults, each in its own flag's description (the scene's render section, where a
    // recording has one, comes first; these are what is used without one).
    let render_only = [("--frames", "all")];
    for (flag, want) in LOOK_DEFAULTS
        .iter()
        .chain(VIDEO_DEFAULTS)
        .chain(&render_only)
    {
        let o = options
            .iter()
            .find(|o| o.long == *flag)
            .unwrap_or_else(|| panic!("render --help lacks {flag}"));
        let default = o
            .default()
            .unwrap_or_else(|| panic!("render --help: {flag} shows no [default: ...]: {o:?}"));
        assert!(
            default.contains(want),
            "render --help: {flag} should default to {want}, says [default: {default}]"
        );
    }
}

/// Only a video needs even sizes (its chroma planes are half the size): a still and PNG
/// frames are drawn at any size, every pixel there.
#[test]
fn stills_and_frames_take_any_size() {
    if !have_gpu("stills_and_frames_take_any_size") {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("s.bfs"), 300, 2);
    succeeds(
        d.path(),
        &["still", "s.bfs", "--size", "241x135", "-o", "odd.png", "-q"],
    );
    let (w, h, px) = read_png(&d.path().join("odd.png"));
    assert_eq!((w, h), (241, 135));
    assert!(px.iter().any(|&v| v > 100), "a blank odd-sized still");
    succeeds(
        d.path(),
        &[
            "render", "s.bfs", "--size", "163x91", "--png", "frames", "-q",
        ],
    );
    let (w, h, _) = read_png(&d.path().join("frames/frame_000001.png"));
    assert_eq!((w, h), (163, 91));
    let err = fails(
        d.path(),
        &["render", "s.bfs", "--size", "163x91", "-o", "v.mp4"],
    );
    has(&err, "--size 163x91: a video needs two even numbers");
    no_output(d.path(), "v.mp4");
}

#[test]
fn bad_sizes_are_refused_before_any_work() {
    let d = tmp();
    synthetic(&d.path().join("s.bfs"), 100, 2);
    fails_cleanly(
        d.path(),
        &["render", "s.bfs", "--size", "321x180"],
        &["even"],
        &[],
    );
    fails_cleanly(
        d.path(),
        &["render", "s.bfs", "--size", "0x180"],
        &["above zero"],
        &[],
    );
    fails_cleanly(
        d.path(),
        &["render", "s.bfs", "--size", "big"],
        &["WxH"],
        &[],
    );
    no_output(d.path(), "s.mp4");
}

// ---------------------------------------------------------------------------------------
// Golden images and determinism
// ---------------------------------------------------------------------------------------

const GOLDEN_CASES: &[(&str, &[&str])] = &[
    (
        "speed_plain",
        &["--color", "speed", "--trails", "0", "--bloom", "0"],
    ),
    (
        "speed_bloom",
        &["--color", "speed", "--trails", "0", "--bloom", "1.0"],
    ),
    (
        "heading_trails",
        &["--color", "heading", "--trails", "0.8", "--bloom", "0"],
    ),
    (
        "density",
        &[
            "--color",
            "density",
            "--colormap",
            "viridis",
            "--trails",
            "0",
            "--bloom",
            "0.5",
        ],
    ),
    (
        "fixed_cover",
        &[
            "--color",
            "fixed",
            "--fit",
            "cover",
            "--trails",
            "0",
            "--bloom",
            "0.5",
            "--background",
            "#203040",
        ],
    ),
];

/// 3D goldens, rendered from `synthetic3d` (frame 3 of 4; at 2700° a second of 30 fps video
/// the orbit turns once in four frames, so it is three quarters round).
const GOLDEN_CASES_3D: &[(&str, &[&str])] = &[
    (
        "orbit_3d",
        &[
            "--camera",
            "orbit",
            "--orbit-speed",
            "2700",
            "--color",
            "heading",
            "--box",
            "--fog",
            "0.6",
            "--trails",
            "0",
            "--bloom",
            "0.5",
        ],
    ),
    (
        "fixed_3d",
        &[
            "--camera",
            "fixed",
            "--eye=-60,-120,200",
            "--target",
            "100,100,60",
            "--fov",
            "60",
            "--color",
            "speed",
            "--box",
            "--trails",
            "0",
            "--bloom",
            "0",
        ],
    ),
    (
        "follow_3d",
        &[
            "--camera", "follow", "--color", "heading", "--box", "--trails", "0.8", "--bloom",
            "0.3",
        ],
    ),
    (
        "top_3d_density",
        &[
            "--camera",
            "top",
            "--color",
            "density",
            "--colormap",
            "viridis",
            "--trails",
            "0",
            "--bloom",
            "0",
        ],
    ),
];

#[test]
fn golden_images() {
    if !have_gpu("golden_images") {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("g.bfs"), 1500, 4);
    check_goldens(d.path(), "g.bfs", GOLDEN_CASES);
}

#[test]
fn golden_images_3d() {
    if !have_gpu("golden_images_3d") {
        return;
    }
    let d = tmp();
    synthetic3d(&d.path().join("g3.bfs"), 1200, 4);
    check_goldens(d.path(), "g3.bfs", GOLDEN_CASES_3D);
}

/// The tone map runs only the parts a look uses (its pipeline constants): a part at its
/// identity value gives the image the part left out gives, to within one 8-bit code (the grade
/// and the saturation mix round at the last bit), for glow and ink, with and without bloom.
#[test]
fn a_tone_map_part_at_its_identity_matches_the_part_left_out() {
    if !have_gpu("a_tone_map_part_at_its_identity_matches_the_part_left_out") {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("t.bfs"), 1500, 4);
    let still = |name: &str, flags: &[&str]| {
        let out = format!("{name}.png");
        let mut args = vec![
            "still",
            "t.bfs",
            "--frame",
            "3",
            "--size",
            "320x180",
            "-q",
            "-o",
            &out,
            "--exposure",
            "1",
            "--point-size",
            "1.5",
            "--trails",
            "0",
        ];
        args.extend_from_slice(flags);
        succeeds(d.path(), &args);
        d.path().join(out)
    };
    for style in ["glow", "ink"] {
        for bloom in ["0", "0.5"] {
            let base = ["--style", style, "--bloom", bloom];
            let plain = still(
                &format!("{style}-{bloom}-plain"),
                &[&base[..], &["--vignette", "0"]].concat(),
            );
            for (part, flags) in [
                ("vignette", &["--vignette", "0.00001"][..]),
                ("grade", &["--vignette", "0", "--contrast", "1.00001"][..]),
                (
                    "saturation",
                    &["--vignette", "0", "--saturation", "0.99999"][..],
                ),
            ] {
                let on = still(
                    &format!("{style}-{bloom}-{part}"),
                    &[&base[..], flags].concat(),
                );
                let (worst, _) = max_difference(&plain, &on);
                assert!(
                    worst <= 1,
                    "{style}, bloom {bloom}: {part} at its identity differs from it left out by {worst} codes"
                );
            }
            // And each part does act: a strong vignette darkens the corners.
            let strong = still(
                &format!("{style}-{bloom}-strong"),
                &[&base[..], &["--vignette", "0.9"]].concat(),
            );
            let (worst, _) = max_difference(&plain, &strong);
            assert!(
                worst > 10,
                "{style}, bloom {bloom}: --vignette 0.9 changed the image by only {worst} codes"
            );
        }
    }
}

fn check_goldens(dir: &Path, input: &str, cases: &[(&str, &[&str])]) {
    let d = dir;
    let update = std::env::var("FORGE_UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for (name, flags) in cases {
        let out = format!("{name}.png");
        let mut args = vec![
            "still", input, "--frame", "3", "--size", "320x180", "-q", "-o", &out,
        ];
        args.extend_from_slice(flags);
        // The goldens test the renderer, not the default look (tests/look.rs does): every
        // setting the default look would measure or choose is pinned.
        args.extend_from_slice(&["--exposure", "1", "--point-size", "1.5"]);
        if !flags.contains(&"--trails") {
            args.extend_from_slice(&["--trails", "0"]);
        }
        if !flags.contains(&"--colormap") {
            let heading = flags.windows(2).any(|w| w == ["--color", "heading"]);
            args.extend_from_slice(&["--colormap", if heading { "sinebow" } else { "inferno" }]);
        }
        succeeds(d, &args);
        let (w, h, _) = read_png(&d.join(&out));
        assert_eq!((w, h), (320, 180));
        let reference = golden_dir().join(&out);
        if update {
            fs::create_dir_all(golden_dir()).unwrap();
            fs::copy(d.join(&out), &reference).unwrap();
            continue;
        }
        assert!(
            reference.exists(),
            "no reference {}: run with FORGE_UPDATE_GOLDEN=1 and look at it",
            reference.display()
        );
        if let Err(why) = golden_difference(&d.join(&out), &reference) {
            let keep = std::env::temp_dir().join(format!("forge-golden-{out}"));
            let _ = fs::copy(d.join(&out), &keep);
            failures.push(format!("{name}: {why} (got: {})", keep.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "golden images differ:\n{}",
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// 3D: the camera's projection (no GPU needed) and its flags
// ---------------------------------------------------------------------------------------

fn near(a: [f32; 2], b: [f32; 2], tol: f32) -> bool {
    (a[0] - b[0]).abs() <= tol && (a[1] - b[1]).abs() <= tol
}

#[test]
fn projection_puts_known_points_on_known_pixels() {
    use forge::render::camera::{self, Camera};
    let (w, h) = (320.0f32, 180.0f32);
    // Eye 10 units on the -y side of the origin, 90° vertical field of view: one unit at
    // distance 10 is 1/10 of the half-height (90 px), and x is scaled by 1/aspect.
    let cam = Camera {
        eye: [0.0, -10.0, 0.0],
        target: [0.0, 0.0, 0.0],
        fov_y: 90.0,
    };
    let m = camera::view_proj(&cam, w / h, 0.1, 100.0);
    let px = |p| camera::to_pixel(&m, p, w, h).expect("in front of the camera");
    assert!(near(px([0.0, 0.0, 0.0]), [160.0, 90.0], 1e-3));
    // z is up: 5 units up at distance 10 → half-way to the top edge.
    assert!(near(px([0.0, 0.0, 5.0]), [160.0, 45.0], 1e-3));
    // x is to the right: 5 units at distance 10 → 0.5 / aspect of the half-width.
    assert!(near(
        px([5.0, 0.0, 0.0]),
        [160.0 + 160.0 * 0.5 * h / w, 90.0],
        1e-3
    ));
    // Twice as far: half the offset (perspective).
    assert!(near(px([0.0, 10.0, 5.0]), [160.0, 67.5], 1e-3));
    // The corners of the view at the target's distance.
    assert!(near(px([-10.0 * w / h, 0.0, 10.0]), [0.0, 0.0], 1e-2));
    assert!(near(px([10.0 * w / h, 0.0, -10.0]), [w, h], 1e-2));
    // Behind the eye: not on the image.
    assert!(camera::to_pixel(&m, [0.0, -20.0, 0.0], w, h).is_none());
    // Depth runs 0 at the near plane to 1 at the far plane.
    let c = camera::transform(&m, [0.0, -9.9, 0.0]);
    assert!(
        (c[2] / c[3]).abs() < 1e-4,
        "near plane depth {}",
        c[2] / c[3]
    );
    let c = camera::transform(&m, [0.0, 90.0, 0.0]);
    assert!(
        (c[2] / c[3] - 1.0).abs() < 1e-4,
        "far plane depth {}",
        c[2] / c[3]
    );
    // The WGSL layout is the transpose.
    let cols = camera::columns(&m);
    assert_eq!(cols[3][2], m[2][3]);
    // Looking straight down still gives a usable matrix (x to the right).
    let top = Camera {
        eye: [0.0, 0.0, 10.0],
        target: [0.0, 0.0, 0.0],
        fov_y: 90.0,
    };
    let m = camera::view_proj(&top, 1.0, 0.1, 100.0);
    let p = camera::to_pixel(&m, [5.0, 0.0, 0.0], 100.0, 100.0).unwrap();
    assert!(near(p, [75.0, 50.0], 1e-3), "{p:?}");
}

#[test]
fn orbit_frames_the_world_and_moves_smoothly() {
    use forge::render::camera;
    let (w, h) = (320.0f32, 180.0f32);
    let size = [200.0f32, 200.0, 120.0];
    let centre = size.map(|s| s / 2.0);
    let radius = camera::distance(size, [0.0; 3]) / 2.0;
    let steps = 240;
    let mut prev: Option<[f32; 3]> = None;
    for k in 0..=steps {
        let phase = k as f32 / steps as f32;
        let cam = camera::orbit(centre, radius, camera::DEFAULT_FOV, w / h, phase);
        let (n, f) = camera::planes(cam.eye, centre, radius);
        let m = camera::view_proj(&cam, w / h, n, f);
        // The centre of the world is the centre of the image, always.
        let c = camera::to_pixel(&m, centre, w, h).unwrap();
        assert!(
            near(c, [w / 2.0, h / 2.0], 1e-2),
            "phase {phase}: centre at {c:?}"
        );
        // Every corner of the world box is on the image.
        for bits in 0..8 {
            let p = [0, 1, 2].map(|a| if bits >> a & 1 == 1 { size[a] } else { 0.0 });
            let q = camera::to_pixel(&m, p, w, h).unwrap();
            assert!(
                (0.0..=w).contains(&q[0]) && (0.0..=h).contains(&q[1]),
                "phase {phase}: corner {p:?} off the image at {q:?}"
            );
        }
        // Constant distance, small steps: no jumps.
        let d = camera::distance(cam.eye, centre);
        assert!((d - camera::fit_distance(radius, camera::DEFAULT_FOV, w / h)).abs() < 1e-2);
        if let Some(p) = prev {
            let step = camera::distance(p, cam.eye);
            let arc =
                std::f32::consts::TAU * d * camera::ELEVATION_DEG.to_radians().cos() / steps as f32;
            assert!(
                step <= arc * 1.01,
                "phase {phase}: eye jumped {step} (arc {arc})"
            );
        }
        prev = Some(cam.eye);
    }
    // One full turn: back where it started.
    let a = camera::orbit(centre, radius, 45.0, w / h, 0.0).eye;
    let b = camera::orbit(centre, radius, 45.0, w / h, 1.0).eye;
    assert!(camera::distance(a, b) < 1e-2);
}

#[test]
fn camera_flags_need_a_3d_recording() {
    let d = tmp();
    synthetic(&d.path().join("flat.bfs"), 100, 2);
    for (flags, needle) in [
        (&["--camera", "orbit"][..], "--camera"),
        (&["--camera", "follow"][..], "--camera"),
        (&["--eye", "1,2,3"][..], "--eye"),
        (&["--fog", "0.5"][..], "--fog"),
        (&["--box"][..], "--box"),
    ] {
        let mut args = vec!["still", "flat.bfs", "--frame", "0", "-o", "x.png"];
        args.extend_from_slice(flags);
        let err = fails_cleanly(d.path(), &args, &[needle], &["x.png"]);
        has(&err, "2D");
        no_output(d.path(), "x.png");
        let mut args = vec!["render", "flat.bfs", "-o", "x.mp4"];
        args.extend_from_slice(flags);
        fails_cleanly(d.path(), &args, &[needle], &[]);
        no_output(d.path(), "x.mp4");
    }
    // And on a 3D recording, the flags that do not go together.
    synthetic3d(&d.path().join("deep.bfs"), 100, 2);
    for (flags, needle) in [
        (&["--camera", "orbit", "--eye", "1,2,3"][..], "--eye"),
        (&["--camera", "follow", "--target", "1,2,3"][..], "--target"),
        (&["--follow", "--camera", "orbit"][..], "--follow"),
        (&["--follow", "--camera", "fixed"][..], "--camera"),
        (&["--fog", "2"][..], "--fog"),
        (&["--fov", "0"][..], "--fov"),
        (&["--eye", "1,2"][..], "X,Y,Z"),
    ] {
        let mut args = vec!["still", "deep.bfs", "--frame", "0", "-o", "x.png"];
        args.extend_from_slice(flags);
        fails_cleanly(d.path(), &args, &[needle], &[]);
        no_output(d.path(), "x.png");
    }
}

#[test]
fn scene_render_section_sets_the_camera() {
    // A 2D scene asking for a camera is refused when loaded, naming the field.
    let d = tmp();
    fs::write(
        d.path().join("flat.json"),
        r#"{"model": "boids", "agents": 10, "steps": 1, "render": {"camera": "orbit"}}"#,
    )
    .unwrap();
    fails_cleanly(
        d.path(),
        &["simulate", "flat.json", "-o", "f.bfs", "-q"],
        &["scene.render.camera"],
        &[],
    );
    no_output(d.path(), "f.bfs");
    if !have_gpu("scene_render_section_sets_the_camera") {
        return;
    }
    // The scene's eye, target, fov, fog and box give the same picture as the flags.
    let render = forge::look::Look {
        eye: Some(forge::look::Vec3([-60.0, -120.0, 200.0])),
        target: Some(forge::look::Vec3([100.0, 100.0, 60.0])),
        fov: Some(60.0),
        fog: Some(0.4),
        world_box: Some(true),
        ..Default::default()
    };
    synthetic3d_with(&d.path().join("s.bfs"), 300, 2, Some(render));
    synthetic3d(&d.path().join("f.bfs"), 300, 2);
    let common = ["--frame", "1", "--size", "160x90", "--bloom", "0", "-q"];
    let mut a = vec!["still", "s.bfs", "-o", "s.png"];
    a.extend_from_slice(&common);
    succeeds(d.path(), &a);
    let mut b = vec![
        "still",
        "f.bfs",
        "-o",
        "f.png",
        "--eye=-60,-120,200",
        "--target",
        "100,100,60",
        "--fov",
        "60",
        "--fog",
        "0.4",
        "--box",
    ];
    b.extend_from_slice(&common);
    succeeds(d.path(), &b);
    let (_, _, x) = read_png(&d.path().join("s.png"));
    let (_, _, y) = read_png(&d.path().join("f.png"));
    assert!(
        x == y,
        "the scene's camera and the same flags give different images"
    );
    // A flag still wins over the scene: --camera orbit drops the scene's fixed eye.
    let mut c = vec!["still", "s.bfs", "-o", "o.png", "--camera", "orbit"];
    c.extend_from_slice(&common);
    succeeds(d.path(), &c);
    let (_, _, z) = read_png(&d.path().join("o.png"));
    assert!(
        x != z,
        "--camera orbit did not override the scene's fixed camera"
    );
}

#[test]
fn orbit_speed_is_degrees_per_second_of_video() {
    let d = tmp();
    synthetic3d(&d.path().join("s.bfs"), 300, 4);
    // Out of range: named, and nothing written.
    fails_cleanly(
        d.path(),
        &["still", "s.bfs", "-o", "o.png", "--orbit-speed", "1e6"],
        &["--orbit-speed", "36000"],
        &["o.png"],
    );
    if !have_gpu("orbit_speed_is_degrees_per_second_of_video") {
        return;
    }
    let still = |out: &str, extra: &[&str]| {
        let mut a = vec![
            "still", "s.bfs", "-o", out, "--frame", "3", "--size", "160x90",
        ];
        a.extend_from_slice(&["--bloom", "0", "--trails", "0", "-q"]);
        a.extend_from_slice(extra);
        succeeds(d.path(), &a);
        read_png(&d.path().join(out)).2
    };
    // The same degrees a frame (90° a second at 30 fps, 180° at 60) is the same view.
    let a = still("a.png", &["--orbit-speed", "90", "--fps", "30"]);
    let b = still("b.png", &["--orbit-speed", "180", "--fps", "60"]);
    assert!(a == b, "the same degrees per frame gave different views");
    // Held still, and turning the other way, are other views.
    let held = still("h.png", &["--orbit-speed", "0", "--fps", "30"]);
    let back = still("r.png", &["--orbit-speed", "-90", "--fps", "30"]);
    assert!(
        held != a && back != a && back != held,
        "the speed did not move the camera"
    );
    // The default, in the resolved look: one turn in 20 s of video.
    let r = succeeds(
        d.path(),
        &["still", "s.bfs", "--frame", "3", "--print-look"],
    );
    let look: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(look["orbit_speed"], 18.0, "{}", r.stdout);
}

/// A 3D recording of `n` agents that stand still (a ball of radius 20 in the middle of a
/// 200x200x120 box), pointing every way at speed 1.
fn still_ball(path: &Path, n: usize, frames: usize) {
    let header = synthetic_header("murmuration3d", n, [200.0, 200.0, 120.0], None);
    let mut w = bfs::Writer::new(fs::File::create(path).unwrap(), &header).unwrap();
    let mut pos = vec![0f32; 3 * n];
    let mut vel = vec![0f32; 3 * n];
    for i in 0..n {
        let k = i as f32 + 0.5;
        let z = 1.0 - 2.0 * k / n as f32;
        let r = (1.0 - z * z).max(0.0).sqrt();
        let t = k * 2.399_963;
        let d = [r * t.cos(), r * t.sin(), z];
        let c = [100.0, 100.0, 60.0];
        for a in 0..3 {
            pos[a * n + i] = c[a] + 20.0 * d[a] * (k / n as f32).cbrt();
            vel[a * n + i] = d[a];
        }
    }
    for f in 0..frames {
        w.write_frame(f as u64 * 10, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

#[test]
fn trails_fade_while_the_camera_moves_and_stay_on_the_agents() {
    if !have_gpu("trails_fade_while_the_camera_moves_and_stay_on_the_agents") {
        return;
    }
    let d = tmp();
    still_ball(&d.path().join("b.bfs"), 400, 12);
    // Which pixels are lit at frame 11 (black background, no bloom, no fog).
    let lit = |out: &str, extra: &[&str]| -> Vec<bool> {
        let mut a = vec![
            "still", "b.bfs", "-o", out, "--frame", "11", "--size", "320x180",
        ];
        a.extend_from_slice(&["--background", "#000000", "--bloom", "0", "-q"]);
        a.extend_from_slice(extra);
        succeeds(d.path(), &a);
        let (w, h, px) = read_png(&d.path().join(out));
        let ch = px.len() / (w * h) as usize;
        px.chunks(ch)
            .map(|p| p[..3].iter().any(|&c| c > 24))
            .collect()
    };
    let count = |m: &[bool]| m.iter().filter(|&&b| b).count();
    // Pixels lit with trails that are dark without: light left where no agent is.
    let ghosts =
        |bare: &[bool], kept: &[bool]| bare.iter().zip(kept).filter(|&(&b, &k)| k && !b).count();
    // The agents stand still: seen by a still camera, trails only brighten them.
    let fixed = [
        "--camera",
        "fixed",
        "--eye",
        "100,-150,120",
        "--target",
        "100,100,60",
    ];
    let bare = lit("f0.png", &[&fixed[..], &["--trails", "0"]].concat());
    let kept = lit("f9.png", &[&fixed[..], &["--trails", "0.9"]].concat());
    assert!(
        ghosts(&bare, &kept) * 10 < count(&bare),
        "a still camera's trails of still agents spread: {} px lit, {} ghosts",
        count(&bare),
        ghosts(&bare, &kept)
    );
    // A camera turning fast (12° a frame): the light kept from the frames before would lie
    // along arcs the agents never drew; it fades instead, and the exposure knows it (the
    // ball is as bright as without trails).
    let turning = ["--camera", "orbit", "--orbit-speed", "360", "--fps", "30"];
    let bare = lit("o0.png", &[&turning[..], &["--trails", "0"]].concat());
    let kept = lit("o9.png", &[&turning[..], &["--trails", "0.9"]].concat());
    let (lit0, lit9, ghost) = (count(&bare), count(&kept), ghosts(&bare, &kept));
    assert!(lit0 > 500, "the ball is hardly seen: {lit0} px");
    assert!(
        ghost * 7 < lit0,
        "an orbiting camera smears the trails: {lit0} px lit without, {ghost} more with trails 0.9"
    );
    assert!(
        lit9 * 10 > lit0 * 8,
        "trails faded by the camera darkened the ball: {lit0} px lit without, {lit9} with"
    );
}

#[test]
fn same_input_same_frames() {
    if !have_gpu("same_input_same_frames") {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("g.bfs"), 1500, 5);
    for dir in ["a", "b"] {
        succeeds(
            d.path(),
            &[
                "render", "g.bfs", "--png", dir, "--size", "160x90", "--trails", "0.7", "--bloom",
                "0.8", "--color", "density", "-q",
            ],
        );
    }
    for k in 0..5 {
        let f = format!("frame_{k:06}.png");
        let a = fs::read(d.path().join("a").join(&f)).unwrap();
        let b = fs::read(d.path().join("b").join(&f)).unwrap();
        assert!(a == b, "{f} differs between two renders of the same input");
    }
}

// ---------------------------------------------------------------------------------------
// End to end through FFmpeg
// ---------------------------------------------------------------------------------------

/// `t.bfs` in `dir`: 2000 agents of the turbulence scene, 25 frames.
fn turbulence_clip(dir: &Path) {
    let args = [
        "simulate",
        "turbulence",
        "--agents",
        "2000",
        "--steps",
        "24",
        "-o",
        "t.bfs",
        "-q",
    ];
    succeeds(dir, &args);
}

/// A video frame is tone-mapped straight into its Y'CbCr planes (no display image), its trails
/// faded in place for the next frame: its codes are the PNG frames' (drawn through the display
/// image) to within the two sides' own dither and rounding, frame after frame, in a look with
/// trails, bloom and vignette, glow and ink alike, from the first frame and from the middle
/// of a recording (trails warmed up).
#[test]
fn a_videos_codes_are_its_frames_codes() {
    let name = "a_videos_codes_are_its_frames_codes";
    if !have_gpu(name) || !have_ffmpeg(name) {
        return;
    }
    let d = tmp();
    turbulence_clip(d.path());
    let looks: [&[&str]; 2] = [
        &["--trails", "0.9", "--bloom", "0.8", "--vignette", "0.4"],
        &["--style", "ink", "--trails", "0.8"],
    ];
    for (k, look) in looks.iter().enumerate() {
        for frames in ["0..25", "10..25"] {
            let mut args = vec!["render", "t.bfs", "--size", "320x180", "--frames", frames];
            args.extend_from_slice(look);
            let (mp4, png) = (format!("v{k}.mp4"), format!("v{k}-{frames}"));
            let mut a = args.clone();
            a.extend_from_slice(&["--crf", "0", "-o", &mp4, "-q", "--force"]);
            succeeds(d.path(), &a);
            let mut a = args.clone();
            a.extend_from_slice(&["--png", &png, "-q"]);
            succeeds(d.path(), &a);
            let first: u64 = frames.split("..").next().unwrap().parse().unwrap();
            let planes = video_codes_against_png(&d.path().join(&mp4), &d.path().join(&png), first);
            for (plane, c) in ["Y'", "Cb", "Cr"].iter().zip(planes) {
                assert!(
                    c.max <= 2.1 && c.mean.abs() <= 0.15 && c.mean_abs <= 0.7,
                    "{args:?}, {plane}: the video's codes differ from the frames' by {c:?}"
                );
            }
        }
    }
}

#[test]
fn simulate_then_render_mp4() {
    if !have_gpu("simulate_then_render_mp4") || !have_ffmpeg("simulate_then_render_mp4") {
        return;
    }
    let d = tmp();
    turbulence_clip(d.path());
    succeeds(
        d.path(),
        &[
            "render", "t.bfs", "--size", "320x180", "--fps", "25", "-o", "t.mp4", "-q",
        ],
    );
    check_mp4(&d.path().join("t.mp4"), 320, 180, 25, "25/1");
    mp4_shows_the_frames(
        d.path(),
        "t.mp4",
        &["render", "t.bfs", "--size", "320x180"],
        0,
    );
    // Existing output without --force: refused, the video untouched.
    let before = fs::read(d.path().join("t.mp4")).unwrap();
    fails_cleanly(
        d.path(),
        &["render", "t.bfs", "--size", "320x180", "-o", "t.mp4"],
        &["--force"],
        &[],
    );
    assert_eq!(fs::read(d.path().join("t.mp4")).unwrap(), before);
    succeeds(
        d.path(),
        &[
            "render", "t.bfs", "--size", "320x180", "--frames", "4..10", "-o", "t.mp4", "--force",
            "-q",
        ],
    );
    check_mp4(&d.path().join("t.mp4"), 320, 180, 6, "30/1");
    let clip = ["render", "t.bfs", "--size", "320x180", "--frames", "4..10"];
    mp4_shows_the_frames(d.path(), "t.mp4", &clip, 4);
}

#[test]
fn the_documented_defaults_are_the_real_ones() {
    // A recording with no render section, rendered with no look flags: what --help says.
    if !have_gpu("the_documented_defaults_are_the_real_ones")
        || !have_ffmpeg("the_documented_defaults_are_the_real_ones")
    {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("g.bfs"), 300, 2);
    succeeds(
        d.path(),
        &["render", "g.bfs", "--preset", "ultrafast", "-q"],
    );
    // Default output name: FILE with .mp4.
    check_mp4(&d.path().join("g.mp4"), 1920, 1080, 2, "30/1");
}

#[test]
fn four_k_two_frames() {
    if !have_gpu("four_k_two_frames") || !have_ffmpeg("four_k_two_frames") {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("g.bfs"), 2000, 3);
    succeeds(
        d.path(),
        &[
            "render",
            "g.bfs",
            "--4k",
            "--frames",
            "0..2",
            "--preset",
            "ultrafast",
            "-o",
            "k.mp4",
            "-q",
        ],
    );
    check_mp4(&d.path().join("k.mp4"), 3840, 2160, 2, "30/1");
}

#[test]
fn bfs1_renders() {
    if !have_gpu("bfs1_renders") || !have_ffmpeg("bfs1_renders") {
        return;
    }
    let d = tmp();
    let n = 500;
    let frames: Vec<bfs::Bfs1Frame> = (0..6)
        .map(|f| {
            let px = (0..n)
                .map(|i| (i as f32 * 37.0 + f as f32 * 5.0) % 1900.0 + 10.0)
                .collect();
            let py = (0..n).map(|i| (i as f32 * 53.0) % 1060.0 + 10.0).collect();
            let vx = (0..n).map(|i| (i % 7) as f32 * 10.0).collect();
            let vy = (0..n).map(|i| (i % 5) as f32 * -8.0).collect();
            (f * 4, px, py, vx, vy)
        })
        .collect();
    bfs::write_bfs1(
        fs::File::create(d.path().join("b.bfs")).unwrap(),
        0.05,
        1,
        n,
        &frames,
        true,
    )
    .unwrap();
    succeeds(
        d.path(),
        &["render", "b.bfs", "--size", "320x180", "-o", "b.mp4", "-q"],
    );
    check_mp4(&d.path().join("b.mp4"), 320, 180, 6, "30/1");
    mp4_shows_the_frames(
        d.path(),
        "b.mp4",
        &["render", "b.bfs", "--size", "320x180"],
        0,
    );
}

// ---------------------------------------------------------------------------------------
// Bad input: clear error, non-zero exit, nothing under the final name
// ---------------------------------------------------------------------------------------

#[test]
fn ffmpeg_missing_or_dying() {
    if !have_gpu("ffmpeg_missing_or_dying") {
        return;
    }
    let d = tmp();
    synthetic(&d.path().join("g.bfs"), 300, 12);
    let err = fails_cleanly_env(
        d.path(),
        &["render", "g.bfs", "--size", "160x90", "-o", "x.mp4"],
        &[("FORGE_FFMPEG", "/nonexistent/ffmpeg")],
        &["FFmpeg not found"],
        &["x.mp4"],
    );
    has(&err, "apt-get install ffmpeg");
    no_output(d.path(), "x.mp4");

    // An "FFmpeg" that reads a little, complains and dies.
    let fake = d.path().join("fake-ffmpeg.sh");
    fs::write(
        &fake,
        "#!/bin/sh\nhead -c 30000 >/dev/null\necho 'fake encoder: out of cheese' >&2\nexit 3\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let err = fails_cleanly_env(
        d.path(),
        &["render", "g.bfs", "--size", "160x90", "-o", "x.mp4"],
        &[("FORGE_FFMPEG", fake.to_str().unwrap())],
        &["out of cheese"],
        &["x.mp4"],
    );
    has(&err, "FFmpeg");
    no_output(d.path(), "x.mp4");
}

/// Runs `forge args` in `dir` where it finds no GPU adapter, expecting a clean failure that
/// names `names` and leaves none of `no_output`: a check made before any GPU work, so it holds
/// on every machine, and moving it after the GPU start-up breaks this test even on a machine
/// with a GPU (where [`NO_GPU`] hides it).
fn refused_before_the_gpu(dir: &Path, args: &[&str], names: &[&str], no_output: &[&str]) {
    let err = fails_cleanly_env(dir, args, NO_GPU, names, no_output);
    if no_gpu_hides_the_gpu() {
        assert!(
            !err.contains("GPU adapter"),
            "forge {args:?} got as far as looking for a GPU before refusing:\n{err}"
        );
    }
}

#[test]
fn bad_outputs_and_sizes() {
    // Refused before any GPU work: checked on every machine.
    let d = tmp();
    let p = d.path();
    synthetic(&p.join("g.bfs"), 300, 2);
    let mp4 = |flags: &[&'static str]| {
        let mut a = vec!["render", "g.bfs", "--size", "160x90", "-o", "x.mp4"];
        a.extend_from_slice(flags);
        a
    };
    // Output folder missing: nothing is created on the way.
    refused_before_the_gpu(
        p,
        &[
            "render",
            "g.bfs",
            "--size",
            "160x90",
            "-o",
            "no/such/dir/x.mp4",
        ],
        &["no/such/dir"],
        &["no"],
    );
    refused_before_the_gpu(
        p,
        &["still", "g.bfs", "-o", "no/such/dir/s.png"],
        &["no/such/dir"],
        &["no"],
    );
    // Frames that are not in the recording.
    refused_before_the_gpu(
        p,
        &["still", "g.bfs", "--frame", "7", "-o", "s.png"],
        &["--frame", "g.bfs"],
        &["s.png"],
    );
    refused_before_the_gpu(
        p,
        &["render", "g.bfs", "--frames", "5..9", "-o", "f.mp4"],
        &["--frames"],
        &["f.mp4"],
    );
    // Flag values out of range, each named.
    for (flags, name) in [
        (&["--crf", "99"][..], "--crf"),
        (&["--fps", "0"][..], "--fps"),
        (&["--trails", "1"][..], "--trails"),
        (&["--background", "red"][..], "--background"),
        (&["--range", "5..1"][..], "--range"),
        (&["--frames", "x"][..], "--frames"),
        (&["--size", "321x180"][..], "--size"),
    ] {
        refused_before_the_gpu(p, &mp4(flags), &[name], &["x.mp4"]);
    }
    // An existing output without --force: refused, left as it was.
    for (out, cmd) in [("old.mp4", "render"), ("old.png", "still")] {
        fs::write(p.join(out), "precious").unwrap();
        refused_before_the_gpu(p, &[cmd, "g.bfs", "-o", out], &[out, "--force"], &[]);
        assert_eq!(fs::read_to_string(p.join(out)).unwrap(), "precious");
    }
    // A PNG folder that is not empty, without --force.
    fs::create_dir(p.join("frames")).unwrap();
    fs::write(p.join("frames/keep.txt"), "mine").unwrap();
    refused_before_the_gpu(
        p,
        &["render", "g.bfs", "--png", "frames"],
        &["frames", "--force"],
        &[],
    );
    assert_eq!(listing(&p.join("frames")), ["keep.txt"]);

    // A video past FFmpeg's picture size, before the GPU.
    refused_before_the_gpu(
        p,
        &["render", "g.bfs", "--size", "40000x40000", "-o", "big.mp4"],
        &[
            "--size 40000x40000: too large for the encoder",
            "the largest 1:1 size that fits is",
        ],
        &[],
    );
    no_output(p, "big.mp4");
    // Only the GPU knows its largest texture.
    if !have_gpu("bad_outputs_and_sizes, the texture limit") {
        return;
    }
    fails_cleanly(
        p,
        &["render", "g.bfs", "--size", "40000x40000", "--png", "big"],
        &[
            "max_texture_dimension_2d",
            "the largest 1:1 size that fits is",
        ],
        &[],
    );
}

/// A still's name says what it holds: x.jpg, X.JPEG or a name with no extension would hold
/// PNG bytes, so they are refused before any work; .png and .exr in any case are taken.
#[test]
fn a_still_named_for_another_format_is_refused() {
    let d = tmp();
    let p = d.path();
    synthetic(&p.join("g.bfs"), 300, 2);
    for out in ["x.jpg", "X.JPEG", "frame"] {
        refused_before_the_gpu(
            p,
            &["still", "g.bfs", "-o", out, "-q"],
            &[
                out,
                "a still is written as a PNG (.png)",
                "OpenEXR image (.exr)",
            ],
            &[out],
        );
    }
    if !have_gpu("a_still_named_for_another_format_is_refused, with a GPU") {
        return;
    }
    for out in ["x.PNG", "x.Exr"] {
        succeeds(p, &["still", "g.bfs", "-o", out, "--size", "64x36", "-q"]);
    }
}

#[test]
fn an_output_is_never_an_input() {
    // DESIGN: "an output is never the same file as an input", --force or not.
    let d = tmp();
    let p = d.path();
    synthetic(&p.join("g.bfs"), 300, 2);
    let before = fs::read(p.join("g.bfs")).unwrap();
    let cases: [&[&str]; 3] = [
        &["render", "g.bfs", "-o", "g.bfs", "--force", "-q"],
        &["render", "g.bfs", "-o", "./g.bfs", "--force", "-q"],
        &["still", "g.bfs", "-o", "g.bfs", "--force", "-q"],
    ];
    for args in cases {
        refused_before_the_gpu(p, args, &["g.bfs"], &[]);
        assert!(
            fs::read(p.join("g.bfs")).unwrap() == before,
            "{args:?} changed the input"
        );
    }
    if !have_gpu("an_output_is_never_an_input, with a GPU") {
        return;
    }
    for args in cases {
        fails_cleanly(p, args, &["g.bfs"], &[]);
        assert!(
            fs::read(p.join("g.bfs")).unwrap() == before,
            "{args:?} changed the input"
        );
    }
}

/// Writes `bytes` with `f` applied as `dir/name`.
fn damaged(dir: &Path, name: &str, bytes: &[u8], f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = bytes.to_vec();
    f(&mut b);
    fs::write(dir.join(name), b).unwrap();
}

/// The number of frames in a video, counted by decoding it.
fn video_frames(path: &Path) -> u64 {
    let s = ffprobe(path);
    s["nb_read_frames"].as_str().unwrap().parse().unwrap()
}

#[test]
fn broken_recordings() {
    let d = tmp();
    let p = d.path();
    let n = 400;
    synthetic(&p.join("g.bfs"), n, 6);
    let full = fs::read(p.join("g.bfs")).unwrap();
    let (header_len, frame_size) = bfs_layout(&full, 2, n);
    assert_eq!(full.len(), header_len + 6 * frame_size, "6 frames expected");
    let frame3 = header_len + 3 * frame_size;

    // Refused when the file is opened, before any GPU work.
    synthetic(&p.join("zero.bfs"), n, 0);
    refused_before_the_gpu(
        p,
        &["render", "zero.bfs", "-o", "z.mp4"],
        &["zero.bfs", "no frames"],
        &["z.mp4"],
    );
    // A byte of the scene JSON in the header: the header checksum catches it.
    damaged(p, "header.bfs", &full, |b| b[header_len - 20] ^= 0x01);
    refused_before_the_gpu(
        p,
        &["render", "header.bfs", "-o", "h.mp4"],
        &["header.bfs", "header"],
        &["h.mp4"],
    );

    if !have_gpu("broken_recordings, rendering the damaged files")
        || !have_ffmpeg("broken_recordings, rendering the damaged files")
    {
        return;
    }
    // Frame 3 damaged in each of its parts: tag, checksum, index, step, first and last byte of
    // the payload. The render stops, naming frame 3, and leaves nothing; with the speed colour
    // map (whose range is sampled from the frames) and with heading (which reads no frame
    // before rendering it).
    for (name, at) in [
        ("tag", 1),
        ("crc", 5),
        ("index", 8),
        ("step", 16),
        ("payload", 24),
        ("last", frame_size - 1),
    ] {
        let file = format!("frame3-{name}.bfs");
        damaged(p, &file, &full, |b| b[frame3 + at] ^= 0x40);
        for color in [&["--color", "speed"][..], &["--color", "heading"][..]] {
            let mut args = vec!["render", &file, "--size", "160x90", "-o", "bad.mp4", "-q"];
            args.extend_from_slice(color);
            let err = fails_cleanly(p, &args, &["frame 3", "corrupt"], &["bad.mp4"]);
            assert!(!err.contains("frame 2"), "{err}");
        }
    }

    // Cut short: every complete frame renders, with a warning naming the first incomplete one.
    for (name, len, frames) in [
        // In the middle of frame 5.
        ("mid", header_len + 5 * frame_size + frame_size / 2, 5),
        // Inside frame 5's prefix.
        ("prefix", header_len + 5 * frame_size + 10, 5),
        // Right after frame 1's last byte.
        ("boundary", header_len + 2 * frame_size, 2),
    ] {
        let file = format!("cut-{name}.bfs");
        fs::write(p.join(&file), &full[..len]).unwrap();
        let out = format!("cut-{name}.mp4");
        let r = succeeds(p, &["render", &file, "--size", "160x90", "-o", &out, "-q"]);
        for want in ["warning", file.as_str(), &format!("frame {frames}")] {
            assert!(
                r.stderr.contains(want),
                "{file}: no {want:?} in the warning:\n{}",
                r.stderr
            );
        }
        assert_eq!(video_frames(&p.join(&out)), frames, "{file}");
    }

    // The frame count (the one header field outside the checksum, patched by finalize) says
    // fewer frames than the file holds: only those, with a warning about the rest; more than
    // it holds: every complete frame, with a warning.
    for (count, frames) in [(4u64, 4), (9, 6)] {
        let file = format!("count{count}.bfs");
        damaged(p, &file, &full, |b| {
            b[52..60].copy_from_slice(&count.to_le_bytes())
        });
        let out = format!("count{count}.mp4");
        let r = succeeds(p, &["render", &file, "--size", "160x90", "-o", &out, "-q"]);
        assert!(
            r.stderr.contains("warning") && r.stderr.contains(&file),
            "{file}: no warning:\n{}",
            r.stderr
        );
        assert_eq!(video_frames(&p.join(&out)), frames, "{file}");
    }
}

/// `--png DIR`: every frame whole under its own number (the frames are compressed by several
/// threads at once), each the picture `forge still` draws of that frame; a frame that cannot be
/// written fails the render naming its file, and leaves no temporary file behind.
#[test]
fn png_frames_are_each_their_own_frame_and_a_failed_write_names_its_file() {
    if !have_gpu("png_frames_are_each_their_own_frame") {
        return;
    }
    let d = tmp();
    let p = d.path();
    let args = [
        "simulate",
        "schooling",
        "--agents",
        "300",
        "--steps",
        "24",
        "-o",
        "s.bfs",
        "-q",
    ];
    succeeds(p, &args);
    succeeds(
        p,
        &[
            "render", "s.bfs", "--size", "320x180", "--png", "frames", "-q",
        ],
    );
    let names: Vec<String> = (0..25).map(|k| format!("frame_{k:06}.png")).collect();
    assert_eq!(listing(&p.join("frames")), names);
    for k in [0u64, 7, 24] {
        let still = format!("still{k}.png");
        succeeds(
            p,
            &[
                "still",
                "s.bfs",
                "--frame",
                &k.to_string(),
                "--size",
                "320x180",
                "-o",
                &still,
                "-q",
            ],
        );
        let frame = p.join(format!("frames/frame_{k:06}.png"));
        assert_eq!(
            max_difference(&frame, &p.join(&still)),
            (0, 0),
            "frame {k} of the folder is not forge still's frame {k}"
        );
    }
    // Frame 7's name taken by a folder: the render fails naming it; the others are written.
    fs::create_dir_all(p.join("taken/frame_000007.png")).unwrap();
    let err = fails(
        p,
        &[
            "render", "s.bfs", "--size", "320x180", "--png", "taken", "--force", "-q",
        ],
    );
    has(&err, "frame_000007.png");
    let left = listing(&p.join("taken"));
    assert!(
        left.iter().all(|n| names.contains(n)),
        "temporary files left behind: {left:?}"
    );
    assert!(p.join("taken/frame_000006.png").is_file());
}

/// A 2D follow camera keeps a flock that crosses a wrapping world's seam again and again in
/// the middle of the frame: its eased centre stays in the world, where the copies of the agents
/// are drawn (it used to drift a world away per crossing, and the flock vanished).
#[test]
fn the_follow_camera_keeps_a_flock_that_laps_the_world() {
    if !have_gpu("the_follow_camera_keeps_a_flock_that_laps_the_world") {
        return;
    }
    let d = tmp();
    // One tight flock at top speed in a small wrapping world: about 8 world heights in 200
    // steps, up and to the right.
    write(
        d.path(),
        "lap.json",
        r#"{"preset": "boidforge", "agents": 300, "steps": 200, "seed": 3,
            "world": {"size": [480, 270]},
            "boids": {"v_min": 170, "v_max": 180, "w_coh": 3},
            "init": {"layout": "disc", "center": [240, 135], "radius": 30, "velocity": "aligned"}}"#,
    );
    succeeds(d.path(), &["simulate", "lap.json", "-o", "lap.bfs", "-q"]);
    for k in ["50", "120", "200"] {
        let out = format!("f{k}.png");
        succeeds(
            d.path(),
            &[
                "still", "lap.bfs", "--frame", k, "--follow", "--size", "320x180", "--trails", "0",
                "--bloom", "0", "-o", &out, "-q",
            ],
        );
        let img = image::open(d.path().join(&out)).unwrap().to_luma8();
        let (w, h) = img.dimensions();
        // The lit pixels' centroid: the flock, within a fifth of the frame of its middle.
        let (mut sx, mut sy, mut n) = (0f64, 0f64, 0f64);
        for (x, y, p) in img.enumerate_pixels() {
            if p.0[0] > 60 {
                sx += x as f64;
                sy += y as f64;
                n += 1.0;
            }
        }
        assert!(
            n > 50.0,
            "frame {k}: the flock is not in the frame ({n} lit pixels)"
        );
        let (cx, cy) = (sx / n / w as f64, sy / n / h as f64);
        assert!(
            (cx - 0.5).abs() < 0.2 && (cy - 0.5).abs() < 0.2,
            "frame {k}: the flock's light is centred at ({cx:.2}, {cy:.2}) of the frame"
        );
    }
}
