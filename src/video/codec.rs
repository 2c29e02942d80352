//! `--codec` and `--encoder` → one FFmpeg encoder, its pixel format, quality settings and
//! container, checked against what the FFmpeg at hand can do (`ffmpeg -encoders`,
//! `ffmpeg -h encoder=NAME`) before any slow work starts.
//!
//! | codec  | encoder (first present)           | pixels                  | container |
//! |--------|-----------------------------------|-------------------------|-----------|
//! | h264   | libx264                           | 8-bit 4:2:0             | .mp4      |
//! | h265   | libx265                           | 10-bit 4:2:0            | .mp4      |
//! | av1    | libsvtav1, libaom-av1, librav1e   | 10-bit 4:2:0            | .mp4      |
//! | prores | prores_ks (profile 422 HQ)        | 10-bit 4:2:2            | .mov      |
//!
//! Where an encoder lacks the 10-bit format it falls back to 8-bit 4:2:0, and says so.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Result};

pub use super::encoding::{Container, Encoding};
use super::ffmpeg::ffmpeg_program;
use crate::render::YuvFormat;

/// The codecs forge knows by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    /// H.264, 8-bit 4:2:0 in MP4: plays everywhere.
    H264,
    /// H.265/HEVC, 10-bit 4:2:0 in MP4 (tagged hvc1, for Apple players).
    H265,
    /// AV1, 10-bit 4:2:0 in MP4: the smallest files for the web.
    Av1,
    /// Apple ProRes 422 HQ, 10-bit 4:2:2 in QuickTime .mov: for editing.
    Prores,
}

impl Codec {
    pub fn name(self) -> &'static str {
        match self {
            Codec::H264 => "h264",
            Codec::H265 => "h265",
            Codec::Av1 => "av1",
            Codec::Prores => "prores",
        }
    }

    /// FFmpeg's name for the codec (as `ffmpeg -encoders` prints it).
    fn ffmpeg_name(self) -> &'static str {
        match self {
            Codec::H264 => "h264",
            Codec::H265 => "hevc",
            Codec::Av1 => "av1",
            Codec::Prores => "prores",
        }
    }

    fn from_ffmpeg_name(s: &str) -> Option<Codec> {
        [Codec::H264, Codec::H265, Codec::Av1, Codec::Prores]
            .into_iter()
            .find(|c| c.ffmpeg_name() == s)
    }

    /// Software encoders tried in order.
    fn encoders(self) -> &'static [&'static str] {
        match self {
            Codec::H264 => &["libx264"],
            Codec::H265 => &["libx265"],
            Codec::Av1 => &["libsvtav1", "libaom-av1", "librav1e"],
            Codec::Prores => &["prores_ks"],
        }
    }

    /// The pixel format wanted, where the encoder has it.
    fn wanted(self) -> YuvFormat {
        match self {
            Codec::H264 => YuvFormat::Yuv420p,
            Codec::H265 | Codec::Av1 => YuvFormat::Yuv420p10,
            Codec::Prores => YuvFormat::Yuv422p10,
        }
    }

    pub fn container(self) -> Container {
        match self {
            Codec::Prores => Container::Mov,
            _ => Container::Mp4,
        }
    }
}

/// What the user asked for (`--codec`, `--encoder`, `--crf`, `--preset`); `None` = default.
#[derive(Clone, Debug, Default)]
pub struct EncodingFlags {
    pub codec: Option<Codec>,
    pub encoder: Option<String>,
    pub crf: Option<u32>,
    pub preset: Option<String>,
    /// The codec is ProRes 4444 because the look asks for alpha ([`EncodingFlags::for_alpha`]),
    /// not because the user named it: messages about it name `--alpha`.
    pub for_alpha: bool,
}

impl EncodingFlags {
    /// The flags of a render whose look asks for `alpha`: a video with alpha is ProRes 4444
    /// unless a codec or an encoder is named (one without alpha is then refused, naming it).
    pub fn for_alpha(self, alpha: bool) -> EncodingFlags {
        let chosen = alpha && self.codec.is_none() && self.encoder.is_none();
        EncodingFlags {
            codec: if chosen {
                Some(Codec::Prores)
            } else {
                self.codec
            },
            for_alpha: chosen,
            ..self
        }
    }

    /// [`check_extension`] of the output `path` for `container`, the container these flags'
    /// codec writes; where `--alpha` chose the codec, the message says so.
    pub fn check_output(&self, path: &Path, container: Container) -> Result<()> {
        let mov = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("mov"));
        if self.for_alpha && container == Container::Mov && !mov {
            bail!(
                "--alpha: a video with alpha is ProRes 4444, which is written into a .mov file; \
                 -o {} is not one: name it {} (or write PNG frames with alpha: --png DIR)",
                path.display(),
                path.with_extension("mov").display()
            );
        }
        check_extension(path, container, "-o")
    }

    /// The container the output will have, as far as the flags alone say (an `--encoder`
    /// without `--codec` is taken for MP4 unless it is a ProRes encoder).
    pub fn container(&self) -> Container {
        match (self.codec, self.encoder.as_deref()) {
            (Some(c), _) => c.container(),
            (None, Some(e)) if e.starts_with("prores") => Container::Mov,
            _ => Container::Mp4,
        }
    }
}

/// How `--crf` and `--preset` are read for each encoder forge drives.
struct Quality {
    crf_default: u32,
    crf_max: u32,
    preset_default: &'static str,
    /// Named presets, or `None` for a number in `0..=preset_max`.
    presets: Option<&'static [&'static str]>,
    preset_max: u32,
}

const X26X_PRESETS: &[&str] = &[
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
    "placebo",
];

fn quality(encoder: &str) -> Option<Quality> {
    Some(match encoder {
        // veryfast: at CRF 18 (constant quality) its files are ~2% larger than medium's, and
        // it encodes ~1.5x as fast, which is most of a software-rendered film's time.
        "libx264" => Quality {
            crf_default: 18,
            crf_max: 51,
            preset_default: "veryfast",
            presets: Some(X26X_PRESETS),
            preset_max: 0,
        },
        // x265 at CRF 20 looks about as good as x264 at 18.
        "libx265" => Quality {
            crf_default: 20,
            crf_max: 51,
            preset_default: "medium",
            presets: Some(X26X_PRESETS),
            preset_max: 0,
        },
        "libsvtav1" => Quality {
            crf_default: 30,
            crf_max: 63,
            preset_default: "8",
            presets: None,
            preset_max: 13,
        },
        // The preset is libaom's -cpu-used.
        "libaom-av1" => Quality {
            crf_default: 30,
            crf_max: 63,
            preset_default: "6",
            presets: None,
            preset_max: 8,
        },
        _ => return None,
    })
}

/// FFmpeg's answer to `args` (its standard output), within `FORGE_ENCODER_TIMEOUT`: a program
/// that hangs instead of answering is stopped and named.
fn probe(prog: &Path, args: &[&str]) -> Result<String> {
    let timeout = super::watch::encoder_timeout()?;
    let mut cmd = Command::new(prog);
    cmd.args(["-hide_banner"]).args(args);
    let out =
        crate::process::run(&mut cmd, &crate::process::Limit::within(timeout)).map_err(|e| {
            super::watch::program_failed(
                e,
                &format!("FFmpeg ({})", prog.display()),
                &format!("answer `ffmpeg {}`", args.join(" ")),
            )
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ffmpeg -encoders`: (encoder, codec) for every video encoder.
fn parse_encoders(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let flags = words.next()?;
            if flags.len() != 6 || !flags.starts_with('V') {
                return None;
            }
            let name = words.next()?.to_string();
            let codec = l
                .rsplit_once("(codec ")
                .and_then(|(_, c)| c.strip_suffix(')'))
                .map(str::to_string)
                // An encoder named after its codec prints no "(codec …)".
                .unwrap_or_else(|| name.clone());
            Some((name, codec))
        })
        .collect()
}

/// `ffmpeg -h encoder=NAME`: its pixel formats (empty if it names none).
fn parse_pixel_formats(text: &str) -> Vec<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Supported pixel formats:"))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The pixel format for `encoder`, given the one wanted and those it has; with a note when
/// it falls back.
fn pick_format(
    encoder: &str,
    wanted: YuvFormat,
    has: &[String],
) -> Result<(YuvFormat, Option<String>)> {
    let has_fmt = |f: YuvFormat| has.is_empty() || has.iter().any(|h| h == f.name());
    if has_fmt(wanted) {
        return Ok((wanted, None));
    }
    if wanted != YuvFormat::Yuv420p && has_fmt(YuvFormat::Yuv420p) {
        return Ok((
            YuvFormat::Yuv420p,
            Some(format!(
                "{encoder} in this FFmpeg has no {}: writing 8-bit yuv420p",
                wanted.name()
            )),
        ));
    }
    let ours = [
        YuvFormat::Yuv420p,
        YuvFormat::Yuv420p10,
        YuvFormat::Yuv422p10,
    ];
    match ours.into_iter().find(|&f| has_fmt(f)) {
        Some(f) => Ok((f, None)),
        None => bail!(
            "--encoder {encoder}: takes none of the pixel formats forge writes (yuv420p, \
             yuv420p10le, yuv422p10le); it takes {}",
            has.join(" ")
        ),
    }
}

/// Checks `--crf` and `--preset` against the encoder and fills its defaults.
fn pick_quality(encoder: &str, flags: &EncodingFlags) -> Result<(Option<u32>, Option<String>)> {
    let Some(q) = quality(encoder) else {
        let drives = "libx264, libx265, libsvtav1 and libaom-av1";
        if flags.crf.is_some() {
            bail!("--crf: forge sets it for {drives}, not for {encoder}");
        }
        if flags.preset.is_some() {
            bail!("--preset: forge sets it for {drives}, not for {encoder}");
        }
        return Ok((None, None));
    };
    let crf = flags.crf.unwrap_or(q.crf_default);
    if crf > q.crf_max {
        bail!(
            "--crf: must be in 0..={} for {encoder}, got {crf}",
            q.crf_max
        );
    }
    let preset = flags
        .preset
        .clone()
        .unwrap_or_else(|| q.preset_default.into());
    let ok = match q.presets {
        Some(names) => names.contains(&preset.as_str()),
        None => preset.parse::<u32>().is_ok_and(|n| n <= q.preset_max),
    };
    if !ok {
        let allowed = match q.presets {
            Some(names) => names.join(", "),
            None => format!("a number 0..={} (lower is slower and better)", q.preset_max),
        };
        bail!("--preset: {encoder} takes {allowed}; got {preset:?}");
    }
    Ok((Some(crf), Some(preset)))
}

/// Resolves the flags against this FFmpeg (`FORGE_FFMPEG` or `ffmpeg`): which encoder, which
/// pixel format, the quality settings. Fails naming the flag and what this FFmpeg lacks.
/// Notes (a fallback to 8 bits) are printed unless `quiet`.
pub fn resolve(flags: &EncodingFlags, quiet: bool) -> Result<Encoding> {
    super::ffmpeg::check()?;
    Probe::start(flags).resolve(flags, quiet)
}

/// FFmpeg asked, each question on a thread of its own, for its encoders and for the pixel
/// formats of the encoder the flags will most likely resolve to: each answer is a program start
/// (tens of milliseconds), and side by side, while the caller does other work, they cost
/// little. [`Probe::resolve`] waits for them and resolves the flags as [`resolve`] does.
pub struct Probe {
    prog: PathBuf,
    likely: String,
    listed: std::thread::JoinHandle<Result<String>>,
    likely_help: std::thread::JoinHandle<Result<String>>,
}

impl Probe {
    /// Starts the two questions (after [`super::ffmpeg::check`]: FFmpeg runs).
    pub fn start(flags: &EncodingFlags) -> Probe {
        let prog = ffmpeg_program();
        let likely = match (&flags.encoder, flags.codec.unwrap_or(Codec::H264)) {
            (Some(e), _) => e.clone(),
            (None, c) => c.encoders()[0].to_string(),
        };
        let (p, e) = (prog.clone(), likely.clone());
        let likely_help = std::thread::spawn(move || encoder_help(&p, &e));
        let p = prog.clone();
        let listed = std::thread::spawn(move || probe(&p, &["-encoders"]));
        Probe {
            prog,
            likely,
            listed,
            likely_help,
        }
    }

    /// The encoding the flags ask for, from FFmpeg's answers.
    pub fn resolve(self, flags: &EncodingFlags, quiet: bool) -> Result<Encoding> {
        let answer = |h: std::thread::JoinHandle<Result<String>>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        let (listed, likely_help) = (answer(self.listed), answer(self.likely_help));
        resolve_from(flags, quiet, &self.prog, &self.likely, listed, likely_help)
    }
}

/// `ffmpeg -h encoder=NAME`: what the encoder `name` takes.
fn encoder_help(prog: &Path, name: &str) -> Result<String> {
    probe(prog, &["-h", &format!("encoder={name}")])
}

/// [`resolve`] from FFmpeg's list of encoders and the help of the `likely` one.
fn resolve_from(
    flags: &EncodingFlags,
    quiet: bool,
    prog: &Path,
    likely: &str,
    listed: Result<String>,
    likely_help: Result<String>,
) -> Result<Encoding> {
    let all = parse_encoders(&listed?);
    if all.is_empty() {
        bail!(
            "FFmpeg ({}) lists no video encoders (`ffmpeg -encoders`)",
            prog.display()
        );
    }
    let has = |e: &str| all.iter().find(|(n, _)| n == e).map(|(_, c)| c.clone());
    let (encoder, codec_name, codec) = match &flags.encoder {
        Some(e) => {
            let c = has(e).ok_or_else(|| {
                anyhow!(
                    "--encoder {e}: this FFmpeg ({}) has no such video encoder (`ffmpeg -encoders` lists them)",
                    prog.display()
                )
            })?;
            let known = Codec::from_ffmpeg_name(&c);
            if let Some(want) = flags.codec {
                if known != Some(want) {
                    bail!("--encoder {e} writes {c}, not --codec {}", want.name());
                }
            }
            (e.clone(), c, known)
        }
        None => {
            let codec = flags.codec.unwrap_or(Codec::H264);
            let found = codec.encoders().iter().find(|e| has(e).is_some());
            let Some(e) = found else {
                bail!(
                    "--codec {}: this FFmpeg ({}) has no encoder for it (looked for {}). Install an \
                     FFmpeg built with one (Debian/Ubuntu's ffmpeg package has them all), or name \
                     another with --encoder",
                    codec.name(),
                    prog.display(),
                    codec.encoders().join(", ")
                );
            };
            (e.to_string(), codec.ffmpeg_name().to_string(), Some(codec))
        }
    };
    let wanted = codec.map(Codec::wanted).unwrap_or(YuvFormat::Yuv420p);
    let formats = if encoder == *likely {
        parse_pixel_formats(&likely_help?)
    } else {
        parse_pixel_formats(&encoder_help(prog, &encoder)?)
    };
    let (format, note) = pick_format(&encoder, wanted, &formats)?;
    if let (Some(n), false) = (note, quiet) {
        log::info!("note: {n}");
    }
    let (crf, preset) = pick_quality(&encoder, flags)?;
    let container = match codec {
        Some(c) => c.container(),
        None => flags.container(),
    };
    Ok(Encoding {
        encoder,
        codec: codec_name,
        format,
        container,
        crf,
        preset,
        alpha: false,
    })
}

/// Checks that `path`'s extension suits the container (`--codec prores` writes .mov).
pub fn check_extension(path: &Path, container: Container, flag: &str) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let ok = match container {
        Container::Mp4 => matches!(ext.as_deref(), Some("mp4" | "m4v" | "mov")),
        Container::Mov => ext.as_deref() == Some("mov"),
    };
    if !ok {
        bail!(
            "{flag} {}: this codec is written into a .{} file; name the output with that extension",
            path.display(),
            container.name()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENCODERS: &str = "Encoders:
 V..... = Video
 ------
 V....D libx264              libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (codec h264)
 V....D libx265              libx265 H.265 / HEVC (codec hevc)
 VFS... prores_ks            Apple ProRes (iCodec Pro) (codec prores)
 V..... libsvtav1            SVT-AV1(Scalable Video Technology for AV1) encoder (codec av1)
 VF.... prores               Apple ProRes
 A....D aac                  AAC (Advanced Audio Coding)
";

    #[test]
    fn the_encoder_list_names_each_codec() {
        let e = parse_encoders(ENCODERS);
        let get = |n: &str| e.iter().find(|(x, _)| x == n).map(|(_, c)| c.as_str());
        assert_eq!(get("libx264"), Some("h264"));
        assert_eq!(get("libx265"), Some("hevc"));
        assert_eq!(get("libsvtav1"), Some("av1"));
        assert_eq!(get("prores"), Some("prores"));
        assert_eq!(get("aac"), None, "audio encoders are not listed");
        assert_eq!(get("------"), None);
    }

    #[test]
    fn pixel_formats_and_the_fallback_to_eight_bits() {
        let text = "Encoder libx264 [libx264 H.264]:\n    Supported pixel formats: yuv420p yuvj420p nv12\n";
        let has = parse_pixel_formats(text);
        assert_eq!(has, ["yuv420p", "yuvj420p", "nv12"]);
        let (f, note) = pick_format("libx264", YuvFormat::Yuv420p10, &has).unwrap();
        assert_eq!(f, YuvFormat::Yuv420p);
        assert!(note.unwrap().contains("no yuv420p10le"));
        let ten = vec!["yuv420p".to_string(), "yuv420p10le".to_string()];
        assert_eq!(
            pick_format("libsvtav1", YuvFormat::Yuv420p10, &ten).unwrap(),
            (YuvFormat::Yuv420p10, None)
        );
        let prores = vec!["yuv422p10le".to_string(), "yuv444p10le".to_string()];
        assert_eq!(
            pick_format("prores_ks", YuvFormat::Yuv422p10, &prores)
                .unwrap()
                .0,
            YuvFormat::Yuv422p10
        );
        let e = pick_format("x", YuvFormat::Yuv420p, &["rgb24".to_string()]).unwrap_err();
        assert!(e.to_string().contains("--encoder x"), "{e}");
    }

    #[test]
    fn quality_flags_per_encoder() {
        let f = |crf: Option<u32>, preset: Option<&str>| EncodingFlags {
            crf,
            preset: preset.map(str::to_string),
            ..Default::default()
        };
        assert_eq!(
            pick_quality("libx264", &f(None, None)).unwrap(),
            (Some(18), Some("veryfast".into()))
        );
        assert_eq!(
            pick_quality("libsvtav1", &f(None, None)).unwrap(),
            (Some(30), Some("8".into()))
        );
        assert_eq!(
            pick_quality("prores_ks", &f(None, None)).unwrap(),
            (None, None)
        );
        let err = |e: &str, fl: EncodingFlags| pick_quality(e, &fl).unwrap_err().to_string();
        assert!(err("libx264", f(Some(52), None)).starts_with("--crf:"));
        assert!(err("libsvtav1", f(None, Some("medium"))).starts_with("--preset:"));
        assert!(err("prores_ks", f(Some(10), None)).contains("not for prores_ks"));
        assert!(err("h264_nvenc", f(None, Some("fast"))).starts_with("--preset:"));
    }

    #[test]
    fn extensions_match_the_container() {
        assert!(check_extension(Path::new("a.mp4"), Container::Mp4, "-o").is_ok());
        assert!(check_extension(Path::new("a.MOV"), Container::Mov, "-o").is_ok());
        let e = check_extension(Path::new("a.mp4"), Container::Mov, "-o").unwrap_err();
        assert!(e.to_string().contains(".mov"), "{e}");
    }

    /// FFmpeg's picture-size rule, at its edge (FFmpeg 5.1 refuses 16256x16256 and takes
    /// 16254x16254), and libx264's sides.
    #[test]
    fn sizes_past_the_encoders() {
        let h264 = Encoding::h264();
        assert!(h264.check_size(3840, 2160).is_ok());
        assert!(h264.check_size(16254, 16254).is_ok());
        assert!(h264.check_size(16384, 16000).is_ok());
        let e = h264.check_size(16256, 16256).unwrap_err().to_string();
        assert!(
            e.contains("--size 16256x16256") && e.contains("FFmpeg refuses"),
            "{e}"
        );
        let e = h264.check_size(16384, 16384).unwrap_err().to_string();
        assert!(
            e.contains("the largest 1:1 size that fits is 16254x16254"),
            "{e}"
        );
        let e = h264.check_size(32768, 18432).unwrap_err().to_string();
        assert!(e.contains("the largest 16:9 size that fits is "), "{e}");
        let e = h264.check_size(16386, 8000).unwrap_err().to_string();
        assert!(e.contains("libx264 takes at most 16384"), "{e}");
        let hevc = Encoding {
            encoder: "libx265".into(),
            ..Encoding::h264()
        };
        assert!(hevc.check_size(16386, 8000).is_ok());
    }
}
