//! How a recording looks, as one value: [`Look`], a struct of optional settings that is at
//! once the scene's `render` section (serde), the command-line flags (clap, flattened into
//! `forge render`, `still`, `run`) and a look file (`--look FILE.json`). Layers of it are
//! merged by [`Look::over`] (flag > `--look` file > the recording's `render` section); what no
//! layer sets is filled in, and measured over the recording where it depends on it, by
//! `crate::video::resolve`. A new look setting is one field here (and its use in the renderer).
//!
//! The values are a leaf: this module names nothing else of the crate, so the scene schema
//! and the renderer can both use its types. Resolving a look is the layer above, in `video`:
//! it reads the recording (`bfs`), its scene and the renderer's settings types.

pub mod interp;
pub mod keys;
mod values;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use values::{
    name_of, names_of, CameraMode, ColorBy, ColorMode, Colormap, Fit, Overlay, Overlays, Rgb,
    Shape, Size, Span, Style, Vec2, Vec3,
};

/// Every look setting, each optional. Its doc comments are the flags' help.
#[serde_with::skip_serializing_none]
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Look {
    /// Output size in pixels; a video's are even [default: 1920x1080].
    #[arg(help_heading = "Frame", long, value_name = "WxH")]
    pub size: Option<Size>,
    /// Frames per second of the video: one recorded frame per video frame [default: 30].
    #[arg(help_heading = "Frame", long)]
    pub fps: Option<u32>,
    /// Light on dark (glow: agents add their light, with bloom) or dark on light (ink: agents
    /// over a sky, a crowd reads as darkness) [default: glow].
    #[arg(help_heading = "Colour", long, value_enum)]
    pub style: Option<Style>,
    /// Colour agents by speed, heading, relative-heading (to the flock's mean direction),
    /// density (computed on the GPU), fixed (the map's brightest end) or fixed:#rrggbb
    /// [default: the quantity that varies most over the recording, of speed, relative-heading
    /// and density].
    #[arg(help_heading = "Colour", long, value_name = "MODE")]
    pub color: Option<ColorBy>,
    /// Colour map [default: inferno from 30% in (its near-black end left out); sinebow for
    /// heading].
    #[arg(help_heading = "Colour", long, value_enum)]
    pub colormap: Option<Colormap>,
    /// Where the colour scale starts in a non-cyclic map, 0..=0.9: 0.3 leaves out its darkest
    /// 30% [default: 0.3 for the default map, else 0].
    #[arg(help_heading = "Colour", long, value_name = "FRACTION")]
    pub colormap_start: Option<f32>,
    /// Values at the colour map's ends [default: measured over the whole recording; speed: 5th
    /// to 95th percentile; relative-heading: ± the 95th percentile of the turn, degrees;
    /// density: 0 to 4x the mean agents per cell (2D), 0 to the 95th percentile (3D)].
    #[arg(
        help_heading = "Colour",
        long,
        value_name = "A..B",
        allow_hyphen_values = true
    )]
    pub range: Option<Span>,
    /// Exposure before tone mapping, 0..100 [default: measured over the whole recording: how
    /// much light the agents pile up on screen].
    #[arg(help_heading = "Agents and light", long)]
    pub exposure: Option<f32>,
    /// Sprite core radius in pixels at 1080p, scaled with the output height, 0..64 [default:
    /// with a measured exposure, 0.15 of the agents' mean spacing on screen (1.4..4.5), else
    /// 1.5].
    #[arg(help_heading = "Agents and light", long)]
    pub point_size: Option<f32>,
    /// Agents as round dots or as darts along their velocity [default: dot].
    #[arg(help_heading = "Agents and light", long, value_enum)]
    pub shape: Option<Shape>,
    /// Crowds share their light, 0..1: each agent's light is divided by how many others
    /// overlap it on screen (to this power), so a dense flock shows its individuals instead
    /// of a white mass; 0 = plain addition [default: 0.7 in glow, 0.5 in ink].
    #[arg(help_heading = "Agents and light", long, value_name = "0..1")]
    pub stacking: Option<f32>,
    /// Trails: fraction of the previous frame kept, in [0, 1), 0 = off [default: the light
    /// halves in 0.15 s: 0.86 at 30 fps].
    #[arg(help_heading = "Agents and light", long)]
    pub trails: Option<f32>,
    /// Bloom strength, 0..10, 0 = off [default: 0.5; in 2D less for a flock that covers more
    /// than 85% of its world, none from 95%; 0 in ink].
    #[arg(help_heading = "Agents and light", long)]
    pub bloom: Option<f32>,
    /// Bloom's size, relative to the default: 2 = the same glow twice as wide, 0.5 = half; the
    /// same fraction of the frame at every size, its light the same (0.25..=4) [default: 1].
    #[arg(help_heading = "Agents and light", long, value_name = "R")]
    pub bloom_radius: Option<f32>,
    /// Background colour, #rrggbb; with --background-top, the colour at the bottom of the
    /// frame [default: #05050a in glow, a dusk sky in ink].
    #[arg(help_heading = "Background and grading", long, value_name = "#RRGGBB")]
    pub background: Option<Rgb>,
    /// The background's colour at the top of the frame: a vertical gradient from
    /// --background [default: none in glow (flat), a dusk sky in ink].
    #[arg(help_heading = "Background and grading", long, value_name = "#RRGGBB")]
    pub background_top: Option<Rgb>,
    /// A picture under the agents instead of the background colour: a PNG, scaled to cover
    /// the frame (centred, cut to its shape); a relative path is taken from the working
    /// directory [default: none].
    #[arg(help_heading = "Background and grading", long, value_name = "PNG")]
    pub background_image: Option<std::path::PathBuf>,
    /// A transparent background, for compositing: the agents' light over nothing, with its
    /// alpha (PNG stills and frames, EXR, ProRes 4444 video); `--alpha` alone is
    /// `--alpha=true` [default: false].
    #[arg(
        help_heading = "Background and grading",
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub alpha: Option<bool>,
    /// Grading: contrast around mid grey, 1 = as tone-mapped [default: 1].
    #[arg(help_heading = "Background and grading", long)]
    pub contrast: Option<f32>,
    /// Grading: colour saturation, 0 = grey, 1 = as tone-mapped [default: 1].
    #[arg(help_heading = "Background and grading", long)]
    pub saturation: Option<f32>,
    /// Grading: lift, raises the blacks, -0.5..0.5 [default: 0].
    #[arg(
        help_heading = "Background and grading",
        long,
        allow_hyphen_values = true
    )]
    pub lift: Option<f32>,
    /// Grading: gamma of the mid-tones, > 1 brighter [default: 1].
    #[arg(help_heading = "Background and grading", long)]
    pub gamma: Option<f32>,
    /// Grading: gain, scales the whites [default: 1].
    #[arg(help_heading = "Background and grading", long)]
    pub gain: Option<f32>,
    /// Vignette strength, 0..4, 0 = none [default: 0.25].
    #[arg(help_heading = "Background and grading", long)]
    pub vignette: Option<f32>,
    /// Motion blur: the shutter angle in degrees, film's convention (180 = open half of each
    /// frame interval; 0 = off). Each agent is smeared along its velocity over the shutter
    /// time, with its light kept [default: 0].
    #[arg(help_heading = "Agents and light", long, value_name = "SHUTTER")]
    pub motion_blur: Option<f32>,
    /// Overlays drawn over the picture, comma-separated: colorbar (the colour map, its range
    /// and quantity), time (t = … s, step), title, scale (a bar in world units, 2D); or none
    /// [default: none].
    #[arg(help_heading = "Overlays", long, value_name = "LIST")]
    pub overlay: Option<Overlays>,
    /// Title text; on the command line it also shows the title overlay [default: the scene's
    /// name].
    #[arg(help_heading = "Overlays", long)]
    pub title: Option<String>,
    /// How the world fills the frame when their aspects differ [default: letterbox].
    #[arg(help_heading = "2D view", long, value_enum)]
    pub fit: Option<Fit>,
    /// 2D: keep the centre of mass in the middle of the frame (eased); for a 3D recording, the
    /// same as --camera follow. `--follow` alone is `--follow=true` [default: false].
    #[arg(help_heading = "2D view", long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub follow: Option<bool>,
    /// 3D: orbit (circle the flock), fixed (from --eye towards --target), follow (track the
    /// centre of mass) or top (orthographic x-y projection) [default: orbit; fixed if --eye
    /// or --target is given].
    #[arg(help_heading = "3D camera", long, value_enum)]
    pub camera: Option<CameraMode>,
    /// 3D, orbit camera: degrees the camera turns per second of video, whatever the clip's
    /// length; 0 holds it still, a negative speed turns the other way [default: 18, one turn
    /// in 20 s].
    #[arg(
        help_heading = "3D camera",
        long,
        value_name = "DEG_PER_S",
        allow_negative_numbers = true
    )]
    pub orbit_speed: Option<f32>,
    /// 3D, fixed camera: where the eye is, world units [default: where the orbit starts, 25°
    /// above the -y side].
    #[arg(
        help_heading = "3D camera",
        long,
        value_name = "X,Y,Z",
        allow_hyphen_values = true
    )]
    pub eye: Option<Vec3>,
    /// 3D, fixed camera: the point looked at, world units [default: the world's centre].
    #[arg(
        help_heading = "3D camera",
        long,
        value_name = "X,Y,Z",
        allow_hyphen_values = true
    )]
    pub target: Option<Vec3>,
    /// 3D: vertical field of view in degrees [default: 45].
    #[arg(help_heading = "3D camera", long, value_name = "DEG")]
    pub fov: Option<f32>,
    /// 3D: fog, 0..1: how far the farthest agents fade towards the background [default: 0].
    #[arg(help_heading = "3D camera", long)]
    pub fog: Option<f32>,
    /// 3D: draw the world box as a faint wireframe. `--box` alone is `--box=true`
    /// [default: false].
    #[arg(help_heading = "3D camera", 
        long = "box",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    #[serde(rename = "box")]
    pub world_box: Option<bool>,
    /// 2D (and the 3D top camera): the world point at the middle of the frame, world units;
    /// with --follow the flock's centre of mass takes its place [default: the world's centre].
    #[arg(
        help_heading = "2D view",
        long,
        value_name = "X,Y",
        allow_hyphen_values = true
    )]
    pub center: Option<Vec2>,
    /// 2D (and the 3D top camera): magnification over the view --fit gives: 2 shows half as
    /// much of the world, 0.5 twice as much (0.01..=1000) [default: 1].
    #[arg(help_heading = "2D view", long)]
    pub zoom: Option<f32>,
    /// Keys that move the camera (the 2D centre and zoom, a fixed 3D camera's eye, target and
    /// field of view) and change the exposure and trails over the run, at solver steps or
    /// simulated times ([`keys`]): a scene's `render` section or a look file; no flag.
    #[arg(skip)]
    pub timeline: Option<Vec<keys::LookKey>>,
}

/// The largest side of a frame, more than any GPU takes in a texture: checked before anything
/// is sized by it (`--size` is checked against the adapter's own limit later).
pub const MAX_SIDE: u32 = 65536;

/// The settings that apply to 3D recordings only.
pub const FIELDS_3D: &[&str] = &[
    "camera",
    "orbit_speed",
    "eye",
    "target",
    "fov",
    "fog",
    "box",
];

/// One setting out of range: its JSON name and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// Its JSON name (`zoom`), or a key's path in the timeline (`timeline[2].set["zoom"]`).
    pub field: String,
    pub message: String,
}

impl Look {
    /// The JSON names of every field, in order.
    pub fn fields() -> &'static [&'static str] {
        serde_fields::<Look>()
    }

    /// How field `field` (its JSON name) is given on the command line.
    pub fn flag(field: &str) -> String {
        format!("--{}", field.replace('_', "-"))
    }

    /// The settings of `self`, with those it leaves unset taken from `lower`.
    pub fn over(&self, lower: &Look) -> Look {
        let mut map = to_map(lower);
        map.extend(to_map(self));
        serde_json::from_value(serde_json::Value::Object(map)).expect("two looks merge into a look")
    }

    /// The JSON names of the fields set.
    pub fn given(&self) -> Vec<String> {
        to_map(self).keys().cloned().collect()
    }

    /// Whether the field with this JSON name is set.
    pub fn has(&self, field: &str) -> bool {
        to_map(self).contains_key(field)
    }

    /// Every value out of its range; for a recording of `dim` dimensions, 3D settings on a
    /// 2D one too. Cross-field rules (an eye with a moving camera, …) are the resolver's.
    pub fn problems(&self, dim: Option<u8>) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut bad = |field: &str, message: String| {
            out.push(Problem {
                field: field.to_string(),
                message,
            })
        };
        if let Some(Size([w, h])) = self.size {
            // The GPU's and the encoder's own limits are checked later, before any work.
            if w == 0 || h == 0 {
                bad(
                    "size",
                    format!("must be two numbers above zero (even for a video), got {w}x{h}"),
                );
            } else if w.max(h) > MAX_SIDE {
                // Before anything is sized by it; the adapter's own limit is checked later.
                bad(
                    "size",
                    format!(
                        "must be at most {MAX_SIDE} pixels a side (more than any GPU's textures), got {w}x{h}"
                    ),
                );
            }
        }
        if let Some(fps) = self.fps {
            if fps == 0 || fps > 240 {
                bad("fps", format!("must be in 1..=240, got {fps}"));
            }
        }
        self.number_problems(&mut bad);
        if let Some(Span([a, b])) = self.range {
            if !(a.is_finite() && b.is_finite() && a < b) {
                bad("range", format!("must be A..B with A < B, got {a}..{b}"));
            }
        }
        for (field, p) in [("eye", self.eye), ("target", self.target)] {
            if let Some(Vec3(p)) = p {
                if !p.iter().all(|x| x.is_finite()) {
                    bad(field, "must be three finite numbers X,Y,Z".into());
                }
            }
        }
        if let Some(Vec2(p)) = self.center {
            if !p.iter().all(|x| x.is_finite()) {
                bad("center", "must be two finite numbers X,Y".into());
            }
        }
        if let Some(keys) = &self.timeline {
            keys::problems(keys, dim, &mut |f, m| bad(&f, m));
        }
        if dim.is_some_and(|d| d != 3) {
            for field in FIELDS_3D {
                if self.has(field) {
                    bad(field, "applies to 3D only (dim 3); this is 2D".into());
                }
            }
        }
        out
    }

    /// The single numbers out of their ranges (each finite, and within its range), to `bad`.
    fn number_problems(&self, bad: &mut impl FnMut(&str, String)) {
        use Within::*;
        let numbers: [(&'static str, Option<f32>, Within, &str); 18] = [
            (
                "colormap_start",
                self.colormap_start,
                Closed(0.0, 0.9),
                "in [0, 0.9]",
            ),
            ("exposure", self.exposure, Closed(0.0, 100.0), "in [0, 100]"),
            (
                "point_size",
                self.point_size,
                Closed(0.0, 64.0),
                "in [0, 64] (pixels at 1080p)",
            ),
            ("trails", self.trails, BelowTop(0.0, 1.0), "in [0, 1)"),
            ("bloom", self.bloom, Closed(0.0, 10.0), "in [0, 10]"),
            ("stacking", self.stacking, Closed(0.0, 1.0), "in [0, 1]"),
            ("contrast", self.contrast, Closed(0.0, 4.0), "in [0, 4]"),
            ("saturation", self.saturation, Closed(0.0, 4.0), "in [0, 4]"),
            ("lift", self.lift, Closed(-0.5, 0.5), "in [-0.5, 0.5]"),
            ("gamma", self.gamma, Closed(0.1, 10.0), "in [0.1, 10]"),
            ("gain", self.gain, Closed(0.0, 4.0), "in [0, 4]"),
            (
                "bloom_radius",
                self.bloom_radius,
                Closed(0.25, 4.0),
                "in 0.25..=4 (times the default reach)",
            ),
            ("vignette", self.vignette, Closed(0.0, 4.0), "in [0, 4]"),
            (
                "motion_blur",
                self.motion_blur,
                Closed(0.0, 360.0),
                "a shutter angle in [0, 360] degrees",
            ),
            (
                "orbit_speed",
                self.orbit_speed,
                EitherWay(36_000.0),
                "degrees per second of video, at most 36000 either way",
            ),
            (
                "fov",
                self.fov,
                Open(1.0, 170.0),
                "above 1 and below 170 degrees",
            ),
            ("fog", self.fog, Closed(0.0, 1.0), "in [0, 1]"),
            ("zoom", self.zoom, Closed(0.01, 1000.0), "in 0.01..=1000"),
        ];
        for (field, v, span, what) in numbers {
            if let Some(x) = v {
                if !(x.is_finite() && span.holds(x)) {
                    bad(field, format!("must be {what}, got {x}"));
                }
            }
        }
    }

    /// The look as JSON, one field a line (what `--print-look` prints and `--look` reads).
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, FieldPerLine::default());
        self.serialize(&mut ser).expect("a look serialises");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// A look file's `text` (read from `path` by the caller, which checks what the file is):
    /// JSON with the fields of a scene's `render` section; an error names the file, the field
    /// at fault and the line, in serde's words (`expected f32`: the caller puts them in the
    /// user's, with `units::types_in_words`, which this leaf cannot import).
    pub fn parse_file(text: &str, path: &Path) -> Result<Look, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let look: Look = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let at = e.path().to_string();
            let inner = e.inner();
            let place = if at.is_empty() || at == "." {
                String::new()
            } else {
                format!(" {at}:")
            };
            format!(
                "--look {}:{place} {} (line {})",
                path.display(),
                strip_position(&inner.to_string()),
                inner.line()
            )
        })?;
        de.end().map_err(|e| {
            format!(
                "--look {}: {} (line {})",
                path.display(),
                strip_position(&e.to_string()),
                e.line()
            )
        })?;
        Ok(look)
    }
}

/// Pretty JSON with each array on its field's line: `"size": [1280, 720],`.
#[derive(Default)]
struct FieldPerLine {
    pretty: serde_json::ser::PrettyFormatter<'static>,
}

impl serde_json::ser::Formatter for FieldPerLine {
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.pretty.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_object_value(w)
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        Ok(())
    }
}

/// serde_json's message without its " at line L column C".
fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

fn to_map(l: &Look) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(l).expect("a look serialises") {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("a look serialises as an object"),
    }
}

/// The field names serde's derive gives a struct (what `deserialize_struct` is told).
fn serde_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Fields;
    #[derive(Debug)]
    struct Found(&'static [&'static str]);
    impl std::fmt::Display for Found {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "fields found")
        }
    }
    impl std::error::Error for Found {}
    impl de::Error for Found {
        fn custom<M: std::fmt::Display>(_: M) -> Found {
            Found(&[])
        }
    }
    impl<'de> de::Deserializer<'de> for Fields {
        type Error = Found;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
            Err(Found(&[]))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Found> {
            Err(Found(fields))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    match T::deserialize(Fields) {
        Err(Found(f)) => f,
        Ok(_) => &[],
    }
}

/// Where a single number of the look may lie.
#[derive(Clone, Copy)]
enum Within {
    /// `lo..=hi`.
    Closed(f32, f32),
    /// `lo..hi`.
    BelowTop(f32, f32),
    /// Strictly between.
    Open(f32, f32),
    /// `-m..=m`.
    EitherWay(f32),
}

impl Within {
    fn holds(self, x: f32) -> bool {
        match self {
            Within::Closed(lo, hi) => (lo..=hi).contains(&x),
            Within::BelowTop(lo, hi) => (lo..hi).contains(&x),
            Within::Open(lo, hi) => x > lo && x < hi,
            Within::EitherWay(m) => x.abs() <= m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_list_is_serdes() {
        let f = Look::fields();
        assert_eq!(f.first(), Some(&"size"));
        assert!(f.contains(&"box") && f.contains(&"point_size"), "{f:?}");
        for name in FIELDS_3D {
            assert!(f.contains(name), "{name}");
        }
        let e = serde_json::from_str::<Look>(r#"{"sparkle": 1}"#).unwrap_err();
        for name in f {
            assert!(e.to_string().contains(name), "{name}: {e}");
        }
    }

    #[test]
    fn upper_layers_win_field_by_field() {
        let flags = Look {
            exposure: Some(0.7),
            ..Default::default()
        };
        let file = Look {
            exposure: Some(0.2),
            trails: Some(0.5),
            world_box: Some(true),
            ..Default::default()
        };
        let m = flags.over(&file);
        assert_eq!(m.exposure, Some(0.7));
        assert_eq!(m.trails, Some(0.5));
        assert_eq!(m.world_box, Some(true));
        assert_eq!(m.given(), ["box", "exposure", "trails"]);
    }

    #[test]
    fn floats_survive_json_exactly() {
        let mut x = 0.123_456_79_f32;
        for _ in 0..20_000 {
            let l = Look {
                exposure: Some(x),
                range: Some(Span([x, x * 3.0])),
                ..Default::default()
            };
            let back: Look = serde_json::from_str(&l.to_json()).unwrap();
            assert_eq!(back, l, "{x:e}");
            x = f32::from_bits(
                x.to_bits()
                    .wrapping_mul(1_664_525)
                    .wrapping_add(1_013_904_223),
            )
            .abs();
            if !(x * 3.0).is_finite() {
                x = 0.5;
            }
        }
    }

    #[test]
    fn problems_name_their_field() {
        let l = Look {
            size: Some(Size([0, 360])),
            trails: Some(1.0),
            fov: Some(30.0),
            ..Default::default()
        };
        let p: Vec<_> = l.problems(Some(2)).into_iter().map(|p| p.field).collect();
        assert_eq!(p, ["size", "trails", "fov"]);
        assert!(l.problems(Some(3)).iter().all(|p| p.field != "fov"));
    }
}
