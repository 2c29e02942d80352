//! The words and values a look is made of: colour modes, colour maps, cameras, overlays,
//! sizes, spans, colours and points. Each parses from the command line (clap, through
//! `ValueEnum` or `FromStr`) and from JSON (serde) in one derive, and writes back the same way.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What agents are coloured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColorMode {
    /// Speed, through the colour map over `range`.
    Speed,
    /// Direction of motion, through a cyclic colour map.
    Heading,
    /// Direction of motion relative to the flock's mean direction that frame (degrees over
    /// `range`): who turns which way, where a heading is one colour for a whole aligned flock.
    RelativeHeading,
    /// Local density (agents per cell, counted on the GPU).
    Density,
    /// One colour for every agent: the colour map's brightest end, or `fixed:#rrggbb`.
    Fixed,
    /// Each agent in its species' colour (`render.colour` of `scene.species`; a palette's
    /// where a species gives none): recordings with species only.
    Species,
}

/// What `--color` takes: a colour mode, or `fixed:#rrggbb` for one colour of your own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ColorBy {
    pub mode: ColorMode,
    /// With `fixed`: the colour (else the colour map's brightest end).
    pub fixed: Option<Rgb>,
}

impl ColorBy {
    pub fn mode(mode: ColorMode) -> ColorBy {
        ColorBy { mode, fixed: None }
    }
}

impl FromStr for ColorBy {
    type Err = String;
    fn from_str(s: &str) -> Result<ColorBy, String> {
        if let Some(c) = s.strip_prefix("fixed:") {
            return Ok(ColorBy {
                mode: ColorMode::Fixed,
                fixed: Some(c.parse()?),
            });
        }
        let mode = <ColorMode as clap::ValueEnum>::from_str(s, false).map_err(|_| {
            format!(
                "unknown colour mode {s:?} (one of: {}; or fixed:#rrggbb)",
                names_of::<ColorMode>()
            )
        })?;
        Ok(ColorBy::mode(mode))
    }
}

impl TryFrom<String> for ColorBy {
    type Error = String;
    fn try_from(s: String) -> Result<ColorBy, String> {
        s.parse()
    }
}

impl From<ColorBy> for String {
    fn from(c: ColorBy) -> String {
        c.to_string()
    }
}

impl fmt::Display for ColorBy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.fixed {
            Some(c) => write!(f, "fixed:{c}"),
            None => write!(f, "{}", name_of(&self.mode)),
        }
    }
}

/// How agents meet the background.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    /// Light on a dark ground: agents add their glow (HDR, bloom, tone mapping).
    Glow,
    /// Dark on a light ground: agents are ink over the sky, and a crowd reads as darkness,
    /// as a murmuration at dusk.
    Ink,
}

/// How one agent is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// A round soft sprite.
    Dot,
    /// A dart along the velocity: bright head, tapering tail (fish, birds).
    Dart,
}

/// Colour maps: d3-scale-chromatic's (through `colorous`) and matplotlib's `twilight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Colormap {
    Viridis,
    Magma,
    Inferno,
    Plasma,
    Turbo,
    Cividis,
    /// Cyclic (its ends meet): for `heading`.
    Twilight,
    /// Cyclic (its ends meet): for `heading`.
    Sinebow,
    /// Diverging, red–yellow–blue: for `relative-heading`.
    Spectral,
    /// Diverging, blue–white–red.
    Coolwarm,
    /// Sequential, purple to yellow through warm hues.
    Warm,
    /// Sequential, cyan to purple.
    Cool,
    /// Black to white: ink in one shade.
    Greys,
}

impl Colormap {
    /// Whether the two ends meet (the right maps for a heading).
    pub fn is_cyclic(self) -> bool {
        matches!(self, Colormap::Twilight | Colormap::Sinebow)
    }
}

/// How a 3D recording is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CameraMode {
    /// Circle the flock, framing it (eased, about two thirds of the frame), turning
    /// `orbit_speed` degrees per second of video.
    Orbit,
    /// Stand still: from `eye` towards `target`.
    Fixed,
    /// Track the centre of mass (eased), at a distance that frames the flock (eased).
    Follow,
    /// Look straight down the z axis: the orthographic x–y projection, as for 2D.
    Top,
}

/// How the world is fitted into the frame when their aspects differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    /// The whole world shows, with bars of background on two sides.
    Letterbox,
    /// The frame is filled; the world is cropped on two sides.
    Cover,
    /// A wrapping world (periodic) repeats to fill the frame: all of it shows and nothing is
    /// a bar. Other worlds letterbox.
    Tile,
}

/// What can be drawn over the picture.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Overlay {
    /// The colour map, its range and quantity.
    Colorbar,
    /// Simulated time and step.
    Time,
    /// The title (the scene's name unless `title` says otherwise).
    Title,
    /// A bar in world units (2D).
    Scale,
}

/// The name clap and serde give a value of a `ValueEnum`.
pub fn name_of<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// Every name of a `ValueEnum`, comma-separated (for messages).
pub fn names_of<T: clap::ValueEnum>() -> String {
    T::value_variants()
        .iter()
        .map(name_of)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A frame size in pixels: `WxH` on the command line, `[w, h]` in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Size(pub [u32; 2]);

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Size, String> {
        let (w, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("expected WxH (like 1920x1080), got {s:?}"))?;
        let w: u32 = w
            .trim()
            .parse()
            .map_err(|_| format!("bad width in {s:?}"))?;
        let h: u32 = h
            .trim()
            .parse()
            .map_err(|_| format!("bad height in {s:?}"))?;
        Ok(Size([w, h]))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}x{}", self.0[0], self.0[1])
    }
}

/// Two values A < B: `A..B` on the command line, `[a, b]` in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Span(pub [f32; 2]);

impl FromStr for Span {
    type Err = String;
    fn from_str(s: &str) -> Result<Span, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("expected A..B, got {s:?}"))?;
        let a: f32 = a.trim().parse().map_err(|_| format!("bad number {a:?}"))?;
        let b: f32 = b.trim().parse().map_err(|_| format!("bad number {b:?}"))?;
        Ok(Span([a, b]))
    }
}

/// A point or direction in world units: `X,Y,Z` on the command line, `[x, y, z]` in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Vec3(pub [f32; 3]);

impl FromStr for Vec3 {
    type Err = String;
    fn from_str(s: &str) -> Result<Vec3, String> {
        let parts: Vec<&str> = s.split(',').collect();
        if parts.len() != 3 {
            return Err(format!("expected X,Y,Z, got {s:?}"));
        }
        let mut v = [0.0f32; 3];
        for (o, t) in v.iter_mut().zip(&parts) {
            *o = t
                .trim()
                .parse()
                .map_err(|_| format!("bad number {:?} in {s:?}", t.trim()))?;
        }
        Ok(Vec3(v))
    }
}

/// A point in the plane, world units: `X,Y` on the command line, `[x, y]` in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Vec2(pub [f32; 2]);

impl FromStr for Vec2 {
    type Err = String;
    fn from_str(s: &str) -> Result<Vec2, String> {
        let (x, y) = s
            .split_once(',')
            .ok_or_else(|| format!("expected X,Y, got {s:?}"))?;
        let num = |t: &str| {
            t.trim()
                .parse::<f32>()
                .map_err(|_| format!("bad number {:?} in {s:?}", t.trim()))
        };
        Ok(Vec2([num(x)?, num(y)?]))
    }
}

/// An sRGB colour, `#rrggbb` everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rgb(pub [u8; 3]);

impl Rgb {
    /// The components as written, 0..1 (sRGB-encoded: decoding is the renderer's job).
    pub fn unit(self) -> [f32; 3] {
        self.0.map(|c| c as f32 / 255.0)
    }
}

impl FromStr for Rgb {
    type Err = String;
    fn from_str(s: &str) -> Result<Rgb, String> {
        let bad = || format!("must be a colour like \"#0a0a12\", got {s:?}");
        let h = s.strip_prefix('#').ok_or_else(bad)?;
        if h.len() != 6 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let v = u32::from_str_radix(h, 16).map_err(|_| bad())?;
        Ok(Rgb([(v >> 16) as u8, (v >> 8) as u8, v as u8]))
    }
}

impl TryFrom<String> for Rgb {
    type Error = String;
    fn try_from(s: String) -> Result<Rgb, String> {
        s.parse()
    }
}

impl From<Rgb> for String {
    fn from(c: Rgb) -> String {
        c.to_string()
    }
}

impl fmt::Display for Rgb {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let [r, g, b] = self.0;
        write!(f, "#{r:02x}{g:02x}{b:02x}")
    }
}

/// A list of overlays: `colorbar,time` (or `none`) on the command line, `["colorbar", "time"]`
/// in JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Overlays(pub Vec<Overlay>);

impl Overlays {
    pub fn has(&self, o: Overlay) -> bool {
        self.0.contains(&o)
    }
}

impl FromStr for Overlays {
    type Err = String;
    fn from_str(s: &str) -> Result<Overlays, String> {
        if s.trim() == "none" {
            return Ok(Overlays(Vec::new()));
        }
        let mut list = Vec::new();
        for name in s.split(',').map(str::trim) {
            let o = <Overlay as clap::ValueEnum>::from_str(name, false).map_err(|_| {
                format!(
                    "unknown overlay {name:?} (one or more of: {}; or none)",
                    names_of::<Overlay>()
                )
            })?;
            if !list.contains(&o) {
                list.push(o);
            }
        }
        Ok(Overlays(list))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_from_flags_and_json_alike() {
        assert_eq!("640x360".parse::<Size>().unwrap(), Size([640, 360]));
        assert_eq!("0.5..2".parse::<Span>().unwrap(), Span([0.5, 2.0]));
        assert_eq!("1,-2,3.5".parse::<Vec3>().unwrap(), Vec3([1.0, -2.0, 3.5]));
        assert_eq!("-1.5, 2".parse::<Vec2>().unwrap(), Vec2([-1.5, 2.0]));
        assert!("1,2,3".parse::<Vec2>().is_err());
        let c: Rgb = "#0b0D1a".parse().unwrap();
        assert_eq!(c, Rgb([0x0b, 0x0d, 0x1a]));
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"#0b0d1a\"");
        assert_eq!(serde_json::from_str::<Rgb>("\"#0b0d1a\"").unwrap(), c);
        assert!("0b0d1a".parse::<Rgb>().is_err());
        let o: Overlays = "time,colorbar".parse().unwrap();
        assert_eq!(serde_json::to_string(&o).unwrap(), r#"["time","colorbar"]"#);
        assert_eq!("none".parse::<Overlays>().unwrap(), Overlays::default());
        assert!("time,clock"
            .parse::<Overlays>()
            .unwrap_err()
            .contains("clock"));
        for m in Colormap::value_variants_list() {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", name_of(&m)));
        }
    }

    impl Colormap {
        fn value_variants_list() -> Vec<Colormap> {
            <Colormap as clap::ValueEnum>::value_variants().to_vec()
        }
    }
}
