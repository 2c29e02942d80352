//! Frames `A..B` of a recording, as `--frames` asks for them (B excluded; either end may be
//! left out): parsed once, checked against a recording once, for `render`, `export` and
//! `info` alike.

use std::ops::Range;
use std::path::Path;
use std::str::FromStr;

/// A frame range as given: `A..B`, `A..` or `..B`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameRange {
    pub start: Option<u64>,
    pub end: Option<u64>,
}

/// Why a frame range does not fit a recording.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RangeError {
    #[error("--frames: {0}..{1} is empty")]
    Empty(u64, u64),
    #[error("--frames: starts at frame {start} but {file} has {count} frames (0..{count})")]
    StartsPast {
        start: u64,
        count: u64,
        file: String,
    },
    #[error("--frames: ends at frame {end} but {file} has {count} frames (0..{count})")]
    EndsPast { end: u64, count: u64, file: String },
}

impl FromStr for FrameRange {
    type Err = String;
    fn from_str(s: &str) -> Result<FrameRange, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("expected A..B (B excluded; A.. or ..B allowed), got {s:?}"))?;
        let num = |t: &str| -> Result<Option<u64>, String> {
            let t = t.trim();
            if t.is_empty() {
                Ok(None)
            } else {
                t.parse()
                    .map(Some)
                    .map_err(|_| format!("bad frame number {t:?}"))
            }
        };
        let r = FrameRange {
            start: num(a)?,
            end: num(b)?,
        };
        if let (Some(a), Some(b)) = (r.start, r.end) {
            if a >= b {
                return Err(format!("{a}..{b} is empty"));
            }
        }
        Ok(r)
    }
}

impl FrameRange {
    /// The whole recording.
    pub const ALL: FrameRange = FrameRange {
        start: None,
        end: None,
    };

    /// The frames of a recording of `count` frames at `file`.
    pub fn within(&self, count: u64, file: &Path) -> Result<Range<u64>, RangeError> {
        let a = self.start.unwrap_or(0);
        let b = self.end.unwrap_or(count);
        let file = || file.display().to_string();
        if a >= count {
            return Err(RangeError::StartsPast {
                start: a,
                count,
                file: file(),
            });
        }
        if b > count {
            return Err(RangeError::EndsPast {
                end: b,
                count,
                file: file(),
            });
        }
        if a >= b {
            return Err(RangeError::Empty(a, b));
        }
        Ok(a..b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_fits() {
        let r: FrameRange = "3..".parse().unwrap();
        assert_eq!(r.within(10, Path::new("x")), Ok(3..10));
        assert_eq!(
            "..4"
                .parse::<FrameRange>()
                .unwrap()
                .within(10, Path::new("x")),
            Ok(0..4)
        );
        assert!("5..5".parse::<FrameRange>().is_err());
        assert!("a..b".parse::<FrameRange>().is_err());
        let e = "2..12"
            .parse::<FrameRange>()
            .unwrap()
            .within(10, Path::new("r.bfs"));
        assert_eq!(
            e.unwrap_err().to_string(),
            "--frames: ends at frame 12 but r.bfs has 10 frames (0..10)"
        );
        assert!(FrameRange::ALL.within(0, Path::new("x")).is_err());
    }
}
