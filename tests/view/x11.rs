//! A real X display for the player's tests: Xvfb on a free display number, real input through
//! XTEST (xdotool: keys, clicks, drags, the wheel), the window's title, and its pixels captured
//! by the X server (xwd, read here).
//!
//! Every wait has a generous deadline: the machine may be slow and shared; a slow machine
//! makes a test slower, never wrong.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The programs the tests drive the display with, and the Debian packages that have them.
pub const TOOLS: &[(&str, &str)] = &[
    ("Xvfb", "xvfb"),
    ("xdotool", "xdotool"),
    ("xwd", "x11-apps"),
];

/// The first of [`TOOLS`] not on the PATH, with its package.
pub fn missing_tool() -> Option<(&'static str, &'static str)> {
    TOOLS.iter().copied().find(|(prog, _)| {
        Command::new("sh")
            .args(["-c", &format!("command -v {prog}")])
            .stdout(Stdio::null())
            .status()
            .map_or(true, |s| !s.success())
    })
}

/// An Xvfb server of its own, stopped when dropped.
pub struct Xvfb {
    pub display: String,
    server: Child,
}

impl Xvfb {
    /// Starts Xvfb (24-bit colour) on a free display number: one whose lock file, once the
    /// server is up, holds this server's pid (so no other server, here or in another mount
    /// namespace, is the one answering). Tests running at once start at different numbers.
    pub fn start() -> Xvfb {
        // One start at a time in this process, each from its own number on.
        static STARTING: std::sync::Mutex<u32> = std::sync::Mutex::new(0);
        let mut next = STARTING.lock().unwrap_or_else(|p| p.into_inner());
        if *next == 0 {
            *next = 140 + (std::process::id() % 50) * 8;
        }
        let first = *next;
        for n in first..first + 400 {
            *next = n + 1;
            let lock = format!("/tmp/.X{n}-lock");
            if Path::new(&lock).exists() || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
                continue;
            }
            let display = format!(":{n}");
            let mut server = Command::new("Xvfb")
                .args([
                    &display,
                    "-screen",
                    "0",
                    "1600x1000x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("Xvfb starts");
            let ours = server.id().to_string();
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(60) {
                if server.try_wait().unwrap().is_some() {
                    break;
                }
                let owner = std::fs::read_to_string(&lock).unwrap_or_default();
                let up = owner.trim() == ours
                    && Command::new("xdotool")
                        .arg("getdisplaygeometry")
                        .env("DISPLAY", &display)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .is_ok_and(|s| s.success());
                if up {
                    return Xvfb { display, server };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
        panic!("no free X display number for Xvfb");
    }

    fn xdotool(&self, args: &[&str]) -> String {
        let out = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.display)
            .output()
            .expect("xdotool runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The id of the window whose name contains `name`, once it is mapped (within `limit`).
    pub fn window(&self, name: &str, limit: Duration, player: &mut Child) -> Window<'_> {
        let t0 = Instant::now();
        loop {
            let id = self.xdotool(&["search", "--onlyvisible", "--name", name]);
            if let Some(id) = id.lines().next().filter(|l| !l.is_empty()) {
                return Window {
                    x: self,
                    id: id.to_string(),
                };
            }
            if let Some(s) = player.try_wait().unwrap() {
                let mut err = String::new();
                if let Some(mut e) = player.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("forge view ended ({s}) before its window showed:\n{err}");
            }
            assert!(t0.elapsed() < limit, "no window {name:?} within {limit:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM: the server removes its lock file and socket as it goes.
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        unsafe { libc::kill(self.server.id() as i32, libc::SIGTERM) };
        let t0 = Instant::now();
        while self.server.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = self.server.kill();
                let _ = self.server.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One window on the display.
pub struct Window<'a> {
    x: &'a Xvfb,
    pub id: String,
}

impl Window<'_> {
    pub fn title(&self) -> String {
        self.x.xdotool(&["getwindowname", &self.id])
    }

    /// Waits (up to `limit`) until the title satisfies `ok`; returns it.
    pub fn wait_title(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let t = self.title();
            if ok(&t) {
                return t;
            }
            assert!(
                t0.elapsed() < limit,
                "the window's title never showed {what} within {limit:?}; last: {t:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Keys pressed and released through XTEST, with the window focused.
    pub fn keys(&self, keys: &[&str]) {
        self.x.xdotool(&["windowfocus", "--sync", &self.id]);
        let mut args = vec!["key", "--delay", "60"];
        args.extend_from_slice(keys);
        self.x.xdotool(&args);
    }

    /// The pointer to `at` (window pixels).
    pub fn point(&self, at: [u32; 2]) {
        let (x, y) = (at[0].to_string(), at[1].to_string());
        self.x
            .xdotool(&["mousemove", "--sync", "--window", &self.id, &x, &y]);
    }

    /// A click of `button` (1 left, 3 right) at `at`.
    pub fn click(&self, at: [u32; 2], button: u8) {
        self.point(at);
        self.x.xdotool(&["click", &button.to_string()]);
    }

    /// A drag with `button` held from `from` to `to`, in a few steps.
    pub fn drag(&self, from: [u32; 2], to: [u32; 2], button: u8) {
        self.point(from);
        self.x.xdotool(&["mousedown", &button.to_string()]);
        // The press in a frame of its own before the moves, even when the player's frames come
        // slowly (a busy machine): a press and a release seen in one frame are a click.
        std::thread::sleep(Duration::from_millis(60));
        for i in 1..=5u32 {
            let p = [
                (from[0] as i64 + (to[0] as i64 - from[0] as i64) * i as i64 / 5) as u32,
                (from[1] as i64 + (to[1] as i64 - from[1] as i64) * i as i64 / 5) as u32,
            ];
            self.point(p);
            std::thread::sleep(Duration::from_millis(30));
        }
        self.x.xdotool(&["mouseup", &button.to_string()]);
    }

    /// One notch of the wheel at `at`: towards the user (up) when `up`.
    pub fn wheel(&self, at: [u32; 2], up: bool) {
        self.click(at, if up { 4 } else { 5 });
    }

    /// The window's pixels as the X server holds them (RGB, rows top down).
    pub fn capture(&self, dir: &Path, name: &str) -> Image {
        let path = dir.join(name);
        let ok = Command::new("xwd")
            .args(["-silent", "-id", &self.id, "-out"])
            .arg(&path)
            .env("DISPLAY", &self.x.display)
            .status()
            .expect("xwd runs")
            .success();
        assert!(ok, "xwd could not capture window {}", self.id);
        Image::from_xwd(&std::fs::read(&path).expect("xwd wrote its file"))
    }
}

/// An RGB image.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "Image {}x{}", self.width, self.height)
    }
}

impl Image {
    /// An XWD file (X Window Dump, version 7, a ZPixmap of 24 or 32 bits a pixel).
    pub fn from_xwd(b: &[u8]) -> Image {
        let u = |i: usize| u32::from_be_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
        let (header_size, version, format) = (u(0) as usize, u(1), u(2));
        assert_eq!((version, format), (7, 2), "an XWD v7 ZPixmap");
        let (width, height) = (u(4), u(5));
        let byte_order = u(7);
        let bits_per_pixel = u(11);
        let bytes_per_line = u(12) as usize;
        let masks = [u(14), u(15), u(16)];
        let ncolors = u(19) as usize;
        assert!(
            bits_per_pixel == 32 || bits_per_pixel == 24,
            "{bits_per_pixel} bits a pixel"
        );
        let start = header_size + 12 * ncolors;
        let step = bits_per_pixel as usize / 8;
        let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
        for y in 0..height as usize {
            let row = &b[start + y * bytes_per_line..];
            for x in 0..width as usize {
                let mut p = [0u8; 4];
                p[..step].copy_from_slice(&row[x * step..x * step + step]);
                let v = if byte_order == 0 {
                    u32::from_le_bytes(p)
                } else {
                    u32::from_be_bytes(p) >> (8 * (4 - step))
                };
                for m in masks {
                    rgb.push(((v & m) >> m.trailing_zeros()) as u8);
                }
            }
        }
        Image { width, height, rgb }
    }

    /// An 8-bit RGBA or RGB PNG.
    pub fn from_png(path: &Path) -> Image {
        let (width, height, px) = super::common::read_png(path);
        let channels = px.len() / (width as usize * height as usize);
        let rgb = px
            .chunks(channels)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        Image { width, height, rgb }
    }

    /// The `w`×`h` pixels at the top-left corner.
    pub fn corner(&self, w: u32, h: u32) -> Image {
        self.region(0, 0, w, h)
    }

    /// The `w`×`h` pixels from (`x`, `y`) right and down.
    pub fn region(&self, x: u32, y: u32, w: u32, h: u32) -> Image {
        assert!(
            x + w <= self.width && y + h <= self.height,
            "{self:?} holds no {w}x{h} at ({x}, {y})"
        );
        let mut rgb = Vec::with_capacity(w as usize * h as usize * 3);
        for row in y as usize..(y + h) as usize {
            let at = (row * self.width as usize + x as usize) * 3;
            rgb.extend_from_slice(&self.rgb[at..at + w as usize * 3]);
        }
        Image {
            width: w,
            height: h,
            rgb,
        }
    }

    /// The largest difference between two images' samples, and how many samples differ.
    pub fn difference(&self, other: &Image) -> (u8, usize) {
        assert_eq!((self.width, self.height), (other.width, other.height));
        let mut worst = 0;
        let mut differ = 0;
        for (a, b) in self.rgb.iter().zip(&other.rgb) {
            let d = a.abs_diff(*b);
            worst = worst.max(d);
            differ += (d > 0) as usize;
        }
        (worst, differ)
    }

    /// How many samples are not the darkest value (lit pixels: agents, not the background).
    pub fn lit(&self) -> usize {
        let floor = self.rgb.iter().copied().min().unwrap_or(0);
        self.rgb
            .iter()
            .filter(|&&v| v > floor.saturating_add(24))
            .count()
    }
}
