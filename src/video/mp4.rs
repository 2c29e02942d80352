//! What an encoder wrote, read from the MP4's (or MOV's) box headers: whether it is playable
//! (an `ftyp` box first, a `moov` box, no box past the end of the file) and how many frames its
//! video track holds (the sample count of its `stsz`, or `stz2`, table).
//!
//! The file is hostile input: every size is checked against the file's length with checked
//! arithmetic, every box moves the reader forward by at least its 8-byte header, and the walk
//! stops after [`MAX_BOXES`] boxes, so no size field can make it loop or wrap.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Boxes read at most in one file (a forge MP4 has a few dozen).
const MAX_BOXES: usize = 100_000;

/// Why a file is not a playable MP4 (the reason, in words), or what it holds.
pub type Checked = Result<Summary, String>;

/// A playable MP4's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Samples of the first video track (one per frame); `None` if it has none (or stores its
    /// samples in fragments, outside `moov`).
    pub frames: Option<u64>,
}

struct Boxes<'a> {
    f: &'a mut File,
    read: usize,
}

/// One box header: its type, where its body starts and where it ends.
struct BoxHead {
    kind: [u8; 4],
    body: u64,
    end: u64,
}

impl Boxes<'_> {
    /// The box at `at`, which must end by `limit` (its parent's end, or the file's).
    fn head(&mut self, at: u64, limit: u64) -> Result<BoxHead, String> {
        self.read += 1;
        if self.read > MAX_BOXES {
            return Err(format!("it has more than {MAX_BOXES} boxes"));
        }
        let short = || format!("it ends inside a box header at byte {at}");
        if limit.saturating_sub(at) < 8 {
            return Err(short());
        }
        let mut head = [0u8; 16];
        self.f
            .seek(SeekFrom::Start(at))
            .and_then(|_| self.f.read_exact(&mut head[..8]))
            .map_err(|_| short())?;
        let kind: [u8; 4] = head[4..8].try_into().expect("4 bytes");
        let mut size = u64::from(u32::from_be_bytes(head[..4].try_into().expect("4 bytes")));
        let mut body = at + 8;
        if size == 1 {
            if limit - at < 16 {
                return Err(short());
            }
            self.f.read_exact(&mut head[8..16]).map_err(|_| short())?;
            size = u64::from_be_bytes(head[8..16].try_into().expect("8 bytes"));
            body = at + 16;
        } else if size == 0 {
            // To the end of the file (allowed for the last box).
            size = limit - at;
        }
        let end = at.checked_add(size).filter(|&e| e <= limit);
        match end {
            Some(end) if end >= body => Ok(BoxHead { kind, body, end }),
            _ => Err(format!(
                "its `{}` box at byte {at} runs past the end ({limit} bytes): cut short",
                String::from_utf8_lossy(&kind)
            )),
        }
    }

    /// The boxes directly inside `start..end`, in order.
    fn children(&mut self, start: u64, end: u64) -> Result<Vec<BoxHead>, String> {
        let mut out = Vec::new();
        let mut at = start;
        while at < end {
            let b = self.head(at, end)?;
            at = b.end;
            out.push(b);
        }
        Ok(out)
    }

    fn bytes(&mut self, at: u64, n: usize) -> Option<Vec<u8>> {
        let mut v = vec![0; n];
        self.f.seek(SeekFrom::Start(at)).ok()?;
        self.f.read_exact(&mut v).ok()?;
        Some(v)
    }

    /// The sample count of a `trak` if it is a video track (`hdlr` type `vide`).
    fn video_samples(&mut self, trak: &BoxHead) -> Result<Option<u64>, String> {
        let find = |v: &[BoxHead], k: &[u8; 4]| v.iter().position(|b| &b.kind == k);
        let kids = self.children(trak.body, trak.end)?;
        let Some(mdia) = find(&kids, b"mdia") else {
            return Ok(None);
        };
        let mdia = self.children(kids[mdia].body, kids[mdia].end)?;
        let video = match find(&mdia, b"hdlr") {
            // version/flags (4), pre_defined (4), handler_type (4)
            Some(h) => self.bytes(mdia[h].body + 8, 4).as_deref() == Some(b"vide"),
            None => false,
        };
        if !video {
            return Ok(None);
        }
        let Some(minf) = find(&mdia, b"minf") else {
            return Ok(None);
        };
        let minf = self.children(mdia[minf].body, mdia[minf].end)?;
        let Some(stbl) = find(&minf, b"stbl") else {
            return Ok(None);
        };
        let stbl = self.children(minf[stbl].body, minf[stbl].end)?;
        // stsz: version/flags (4), sample_size (4), sample_count (4);
        // stz2: version/flags (4), reserved (3), field_size (1), sample_count (4).
        let Some(sz) = stbl
            .iter()
            .find(|b| &b.kind == b"stsz" || &b.kind == b"stz2")
        else {
            return Ok(None);
        };
        if sz.end - sz.body < 12 {
            return Err("its sample size table (`stsz`) is cut short".into());
        }
        let count = self
            .bytes(sz.body + 8, 4)
            .ok_or("its sample size table (`stsz`) cannot be read")?;
        Ok(Some(u64::from(u32::from_be_bytes(
            count[..4].try_into().expect("4 bytes"),
        ))))
    }
}

/// Checks `path`: see the module's notes.
pub fn check(path: &Path) -> Checked {
    let mut f = File::open(path).map_err(|e| format!("cannot open it: {e}"))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return Err("it is empty".into());
    }
    let mut boxes = Boxes { f: &mut f, read: 0 };
    // `ftyp` first, looked at before any size, so that a text file is named as such.
    if boxes.bytes(4, 4).as_deref() != Some(b"ftyp") {
        return Err("it does not start with an MP4 `ftyp` box".into());
    }
    let top = boxes.children(0, len)?;
    let Some(moov) = top.iter().find(|b| &b.kind == b"moov") else {
        return Err("it has no `moov` box (no index: unplayable)".into());
    };
    let mut frames = None;
    for trak in boxes.children(moov.body, moov.end)? {
        if &trak.kind != b"trak" {
            continue;
        }
        if let Some(n) = boxes.video_samples(&trak)? {
            frames = Some(n);
            break;
        }
    }
    Ok(Summary { frames })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut b = ((8 + body.len()) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.extend_from_slice(body);
        b
    }

    /// A moov with one video track of `samples` samples.
    fn moov(samples: u32) -> Vec<u8> {
        let mut hdlr = vec![0u8; 8];
        hdlr.extend_from_slice(b"vide");
        hdlr.resize(24, 0);
        let mut stsz = vec![0u8; 8];
        stsz.extend_from_slice(&samples.to_be_bytes());
        let stbl = boxed(b"stbl", &boxed(b"stsz", &stsz));
        let minf = boxed(b"minf", &stbl);
        let mdia = boxed(b"mdia", &[boxed(b"hdlr", &hdlr), minf].concat());
        boxed(b"moov", &boxed(b"trak", &mdia))
    }

    fn check_bytes(bytes: &[u8]) -> Checked {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.mp4");
        std::fs::write(&p, bytes).unwrap();
        check(&p)
    }

    #[test]
    fn playable_files_and_their_frames() {
        let ftyp = boxed(b"ftyp", &[0; 16]);
        let mdat = boxed(b"mdat", &[0; 100]);
        let good = [ftyp.clone(), moov(10), mdat.clone()].concat();
        assert_eq!(check_bytes(&good), Ok(Summary { frames: Some(10) }));
        let no_track = [ftyp.clone(), boxed(b"moov", &[0; 40]), mdat.clone()].concat();
        // (A size of 0 is a box to the end of its parent: one box of zeros, not a track.)
        assert_eq!(check_bytes(&no_track), Ok(Summary { frames: None }));
        let empty_moov = [ftyp.clone(), boxed(b"moov", &[]), mdat.clone()].concat();
        assert_eq!(check_bytes(&empty_moov), Ok(Summary { frames: None }));
        assert!(check_bytes(b"").unwrap_err().contains("empty"));
        assert!(check_bytes(b"not a video").unwrap_err().contains("ftyp"));
        let no_index = [ftyp.clone(), mdat.clone()].concat();
        assert!(check_bytes(&no_index).unwrap_err().contains("moov"));
        assert!(check_bytes(&good[..good.len() - 10])
            .unwrap_err()
            .contains("cut short"));
        let dir = tempfile::tempdir().unwrap();
        assert!(check(&dir.path().join("missing.mp4"))
            .unwrap_err()
            .contains("cannot open"));
    }

    /// 64-bit sizes that wrap the offset, or are smaller than their header, end the walk.
    #[test]
    fn sizes_that_wrap_or_stall_are_errors() {
        let ftyp = boxed(b"ftyp", &[0; 16]);
        for size in [
            u64::MAX,
            u64::MAX - 23,
            1u64 << 63,
            8,
            15,
            0x0000_0001_0000_0000,
        ] {
            let mut b = ftyp.clone();
            b.extend_from_slice(&1u32.to_be_bytes());
            b.extend_from_slice(b"free");
            b.extend_from_slice(&size.to_be_bytes());
            b.extend_from_slice(&moov(3));
            let r = check_bytes(&b);
            assert!(r.is_err(), "size {size}: {r:?}");
        }
        // A 32-bit size of 1..7 is smaller than its own header.
        for size in 2u32..8 {
            let mut b = ftyp.clone();
            b.extend_from_slice(&size.to_be_bytes());
            b.extend_from_slice(b"free");
            b.extend_from_slice(&moov(3));
            assert!(check_bytes(&b).is_err(), "size {size}");
        }
    }
}
