//! The recording's file, written with direct I/O (`O_DIRECT`) where the file system takes it:
//! frames go from an aligned staging buffer to the disk without passing through the page
//! cache. A buffered write costs the writing thread a core-second or more per gigabyte of
//! kernel time (ext4 on a 2-core VM: `dd bs=16M` of 1 GiB, 2.83 s of system time buffered,
//! 0.09 s with `oflag=direct`), and on a small machine that time is taken from the solver's
//! threads: a million agents in 2D write 16 MB a frame.
//!
//! Everything else behaves as a plain file: [`DirectFile::flush`] puts every byte written so
//! far into the file (the last partial block through the page cache, rewritten directly with
//! the blocks that follow it), so a run killed outright keeps what it kept before; a seek to
//! anywhere but the end (the header's frame count, patched at the end) turns direct I/O off
//! for good. Where direct I/O is refused (tmpfs on older kernels, some network file systems,
//! devices, pipes, a file not opened at a block boundary), every write is a plain one.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// Offsets, lengths and the buffer's address of a direct write are multiples of this (the
/// largest logical block size in common use).
const ALIGN: usize = 4096;
/// Bytes staged before a direct write: large enough that a frame of any size goes out in a
/// few writes, small beside a frame of a large run.
const STAGE: usize = 4 << 20;

pub struct DirectFile {
    file: File,
    /// Direct I/O on: the staged bytes belong at `at` (a multiple of [`ALIGN`]).
    direct: bool,
    /// `STAGE + ALIGN` bytes, of which `[off, off + STAGE)` is aligned (empty when not direct).
    stage: Vec<u8>,
    off: usize,
    /// Bytes staged.
    len: usize,
    /// The file offset of the first staged byte.
    at: u64,
}

impl DirectFile {
    /// `file` (opened for writing), with direct I/O where the file system takes it.
    pub fn new(mut file: File) -> DirectFile {
        let at = file.stream_position().ok();
        let mut f = DirectFile {
            file,
            direct: false,
            stage: Vec::new(),
            off: 0,
            len: 0,
            at: 0,
        };
        let regular = f.file.metadata().map(|m| m.is_file()).unwrap_or(false);
        if let Some(at) = at.filter(|&a| regular && a.is_multiple_of(ALIGN as u64)) {
            let mut stage = Vec::new();
            if stage.try_reserve_exact(STAGE + ALIGN).is_ok() && set_direct(&f.file, true) {
                // Within the capacity just reserved: no allocation, no abort.
                stage.extend(std::iter::repeat_n(0u8, STAGE + ALIGN));
                f.off = stage.as_ptr().align_offset(ALIGN);
                f.stage = stage;
                f.direct = true;
                f.at = at;
            }
        }
        f
    }

    /// Whether writes go to the disk directly (for the tests).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Every byte written reaches the file ([`DirectFile::flush`]), then the disk.
    pub fn sync_data(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file.sync_data()
    }

    fn window(&mut self) -> &mut [u8] {
        &mut self.stage[self.off..self.off + STAGE]
    }

    /// Writes the first `n` staged bytes (a multiple of [`ALIGN`]) directly, and keeps the
    /// rest staged at the front. A direct write the file system refuses turns direct I/O off
    /// and goes through the page cache instead.
    fn write_out(&mut self, n: usize) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        debug_assert!(n.is_multiple_of(ALIGN) && n <= self.len);
        let at = self.at;
        let r = {
            let (file, w) = (&self.file, &self.stage[self.off..self.off + n]);
            file.write_all_at(w, at)
        };
        match r {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                return self.go_plain()
            }
            Err(e) => return Err(e),
        }
        let len = self.len;
        self.window().copy_within(n..len, 0);
        self.len -= n;
        self.at += n as u64;
        Ok(())
    }

    /// Puts every staged byte into the file and turns direct I/O off for good, the file's
    /// position at the end of what was written.
    fn go_plain(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        set_direct(&self.file, false);
        self.direct = false;
        let (at, len) = (self.at, self.len);
        self.file
            .write_all_at(&self.stage[self.off..self.off + len], at)?;
        self.file.seek(SeekFrom::Start(at + len as u64))?;
        self.stage = Vec::new();
        self.len = 0;
        Ok(())
    }
}

/// Turns `O_DIRECT` on or off for `file`; whether that was done.
fn set_direct(file: &File, on: bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
        let Ok(flags) = fcntl_getfl(file) else {
            return false;
        };
        let flags = if on {
            flags | OFlags::DIRECT
        } else {
            flags - OFlags::DIRECT
        };
        fcntl_setfl(file, flags).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, on);
        false
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if !self.direct {
            return self.file.write(data);
        }
        let mut done = 0;
        while done < data.len() {
            let n = (STAGE - self.len).min(data.len() - done);
            let len = self.len;
            self.window()[len..len + n].copy_from_slice(&data[done..done + n]);
            self.len += n;
            done += n;
            if self.len == STAGE {
                self.write_out(STAGE)?;
                if !self.direct {
                    return Ok(done + self.file.write(&data[done..])?);
                }
            }
        }
        Ok(done)
    }

    /// Every byte written so far into the file: the whole blocks directly, the last partial
    /// block through the page cache (it stays staged, and goes out directly with the blocks
    /// that follow it).
    fn flush(&mut self) -> io::Result<()> {
        if !self.direct || self.len == 0 {
            return self.file.flush();
        }
        let whole = self.len / ALIGN * ALIGN;
        if whole > 0 {
            self.write_out(whole)?;
            if !self.direct {
                return Ok(());
            }
        }
        if self.len > 0 {
            use std::os::unix::fs::FileExt;
            set_direct(&self.file, false);
            self.file
                .write_all_at(&self.stage[self.off..self.off + self.len], self.at)?;
            if !set_direct(&self.file, true) {
                // Cannot go back: the rest goes through the page cache.
                return self.go_plain();
            }
        }
        Ok(())
    }
}

impl Seek for DirectFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        if self.direct {
            let end = self.at + self.len as u64;
            if matches!(pos, SeekFrom::Current(0)) || pos == SeekFrom::Start(end) {
                return Ok(end);
            }
            self.go_plain()?;
        }
        self.file.seek(pos)
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        if self.direct {
            let _ = self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Bytes of every offset and length, written through staging, flushes at odd places, a
    /// patch near the start and more bytes after it: the file holds exactly what was written.
    #[test]
    fn the_file_holds_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.bin");
        let mut f = DirectFile::new(File::create(&path).unwrap());
        let mut want = Vec::new();
        let mut x = 1u32;
        for (k, n) in [
            1usize,
            100,
            4095,
            4096,
            4097,
            STAGE - 3,
            10,
            STAGE * 2 + 5,
            7,
        ]
        .into_iter()
        .enumerate()
        {
            let chunk: Vec<u8> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (x >> 24) as u8
                })
                .collect();
            f.write_all(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            if k % 2 == 0 {
                f.flush().unwrap();
                // A reader sees everything flushed, and nothing more.
                assert_eq!(std::fs::read(&path).unwrap(), want, "after flush {k}");
            }
            assert_eq!(f.stream_position().unwrap(), want.len() as u64);
        }
        f.seek(SeekFrom::Start(8)).unwrap();
        f.write_all(b"PATCHED!").unwrap();
        want[8..16].copy_from_slice(b"PATCHED!");
        let end = want.len() as u64;
        f.seek(SeekFrom::Start(end)).unwrap();
        f.write_all(b"tail").unwrap();
        want.extend_from_slice(b"tail");
        f.sync_data().unwrap();
        drop(f);
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert!(got == want, "the file differs from what was written");
    }

    /// A device is written as it is (no direct I/O), and works.
    #[test]
    fn a_device_is_written_plainly() {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        let mut f = DirectFile::new(f);
        assert!(!f.is_direct());
        f.write_all(&[1u8; 10_000]).unwrap();
        f.flush().unwrap();
    }
}
