//! A resolved video encoding ([`Encoding`]: the FFmpeg encoder, its pixel format, quality
//! settings and [`Container`]) as a value: what `codec` resolves from the flags and `ffmpeg`
//! runs.

use anyhow::{bail, Result};

use crate::render::YuvFormat;

/// The file format around the video stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    Mp4,
    Mov,
}

impl Container {
    /// FFmpeg's muxer name, which is also the file extension.
    pub fn name(self) -> &'static str {
        match self {
            Container::Mp4 => "mp4",
            Container::Mov => "mov",
        }
    }
}

/// Video encoding settings, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Encoding {
    /// The FFmpeg encoder.
    pub encoder: String,
    /// The codec it writes, FFmpeg's name (`h264`, `hevc`, `av1`, `prores`, …).
    pub codec: String,
    /// The raw frames forge feeds it (and the stream's pixel format).
    pub format: YuvFormat,
    pub container: Container,
    /// The quality setting, where the encoder has one forge drives.
    pub crf: Option<u32>,
    pub preset: Option<String>,
    /// With alpha (`--alpha`): ProRes 4444, fed 16-bit RGBA (`rgba64le`) that FFmpeg turns
    /// into 10-bit Y'CbCr with a 16-bit alpha plane.
    pub alpha: bool,
}

impl Encoding {
    /// forge's default (H.264 through libx264, CRF 18, preset veryfast), without asking FFmpeg.
    pub fn h264() -> Encoding {
        Encoding {
            encoder: "libx264".into(),
            codec: "h264".into(),
            format: YuvFormat::Yuv420p,
            container: Container::Mp4,
            crf: Some(18),
            preset: Some("veryfast".into()),
            alpha: false,
        }
    }

    /// The encoding with alpha: ProRes 4444 only; another codec is refused naming `asked`,
    /// what asked for alpha (`--alpha`, a `--look` file, the recording's scene), and the flags
    /// that give it.
    pub fn with_alpha(mut self, asked: &str) -> Result<Encoding> {
        if !self.encoder.starts_with("prores") {
            bail!(
                "{asked}: a video with alpha is ProRes 4444 (--codec prores, a .mov) or a folder \
                 of PNG frames (--png DIR); {} has no alpha",
                self.encoder
            );
        }
        self.alpha = true;
        Ok(self)
    }

    /// The pixel formats FFmpeg is fed and writes (`-pix_fmt` of its input and output).
    pub fn pix_fmts(&self) -> (&'static str, &'static str) {
        if self.alpha {
            ("rgba64le", "yuva444p10le")
        } else {
            (self.format.name(), self.format.name())
        }
    }

    /// Refuses a frame size this encoder cannot take, before any work: FFmpeg's own rule for
    /// every picture (`av_image_check_size`: `(8·w + 1024)·(h + 128)` below 2³¹ − 1, so
    /// 16384x16384 is refused), and libx264's (at most 16384 a side). The message names the
    /// size, the rule and the largest size of the same shape that fits (as the adapter's
    /// limits do, `render::limits`).
    pub fn check_size(&self, width: u32, height: u32) -> Result<()> {
        let ffmpeg = |w: u64, h: u64| (8 * w + 1024) * (h + 128) < i32::MAX as u64;
        let side = |w: u64, h: u64| self.encoder != "libx264" || (w <= 16384 && h <= 16384);
        let fits = |w: u64, h: u64| ffmpeg(w, h) && side(w, h);
        let (w, h) = (u64::from(width), u64::from(height));
        if fits(w, h) {
            return Ok(());
        }
        let rule = if ffmpeg(w, h) {
            format!("{} takes at most 16384 pixels a side", self.encoder)
        } else {
            "FFmpeg refuses a picture when (8 x width + 1024) x (height + 128) reaches 2^31"
                .to_string()
        };
        // The largest even size of the same shape that fits: the largest h/2 that does.
        let at = |h2: u64| {
            let h = 2 * h2;
            let w = ((w as f64 * h as f64 / height.max(1) as f64 / 2.0).round() as u64).max(1) * 2;
            (w, h)
        };
        let (mut lo, mut hi) = (0u64, h / 2);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let (a, b) = at(mid);
            if fits(a, b) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let fit = match lo {
            0 => String::new(),
            _ => {
                let (a, b) = at(lo);
                let g = gcd(w, h).max(1);
                let shape = match (w / g, h / g) {
                    (x, y) if x <= 64 && y <= 64 => format!("{x}:{y} "),
                    _ => String::new(),
                };
                format!("; the largest {shape}size that fits is {a}x{b}")
            }
        };
        bail!(
            "--size {width}x{height}: too large for the encoder {} ({rule}){fit}",
            self.encoder
        )
    }

    /// The encoder's own arguments: quality, speed, profile, colour signalling.
    pub fn encoder_args(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
        let crf = self.crf.map(|c| c.to_string());
        let preset = self.preset.clone();
        match self.encoder.as_str() {
            "libx264" | "libx265" => {
                // Not `.crf()`/`.preset()`, which spell them `-crf:v`/`-preset:v`.
                if let Some(c) = &crf {
                    push(&["-crf", c]);
                }
                if let Some(p) = &preset {
                    push(&["-preset", p]);
                }
                if self.encoder == "libx264" {
                    push(&[
                        "-x264-params",
                        "colorprim=bt709:transfer=bt709:colormatrix=bt709:range=tv",
                    ]);
                } else {
                    push(&[
                        "-x265-params",
                        "colorprim=bt709:transfer=bt709:colormatrix=bt709:range=limited:log-level=error",
                    ]);
                }
            }
            "libsvtav1" => {
                if let Some(c) = &crf {
                    push(&["-crf", c]);
                }
                if let Some(p) = &preset {
                    push(&["-preset", p]);
                }
            }
            "libaom-av1" => {
                if let Some(c) = &crf {
                    push(&["-crf", c, "-b:v", "0"]);
                }
                if let Some(p) = &preset {
                    push(&["-cpu-used", p]);
                }
                push(&["-row-mt", "1"]);
            }
            "prores_ks" if self.alpha => push(&[
                "-profile:v",
                "4",
                "-vendor",
                "apl0",
                "-alpha_bits",
                "16",
                // RGB in: the conversion to BT.709 limited-range Y'CbCr is FFmpeg's here.
                "-vf",
                "scale=out_color_matrix=bt709:out_range=tv,setparams=colorspace=bt709",
            ]),
            "prores_ks" => push(&["-profile:v", "3", "-vendor", "apl0"]),
            _ => {}
        }
        if self.codec == "hevc" && self.container == Container::Mp4 {
            // Apple's players want the hvc1 sample entry.
            push(&["-tag:v", "hvc1"]);
        }
        a
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
