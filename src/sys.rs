//! What the operating system says about memory, disk space and files: the facts the caps on
//! hostile input are measured against. A leaf: it depends on no other forge module.

use std::fs::{File, FileType};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// MemAvailable from /proc/meminfo, in bytes, where there is one.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Bytes an unprivileged user may still write in the file system holding `dir` (statvfs's
/// `f_bavail * f_frsize`), where it can be asked.
pub fn available_space(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Clears `O_NONBLOCK` on `file` (opened with it so that the open could not wait), for
/// blocking reads and writes; left as it is where that fails.
pub fn clear_nonblock(file: &File) {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    if let Ok(flags) = fcntl_getfl(file) {
        let _ = fcntl_setfl(file, flags - OFlags::NONBLOCK);
    }
}

/// What a file that is not a regular file is, in words ("a directory", "a FIFO (named
/// pipe)"); `None` for a regular file.
pub fn not_a_file(t: FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// `O_NONBLOCK`, as `OpenOptionsExt::custom_flags` takes it.
pub const NONBLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;

/// Opens `path` for reading if it is a regular file (after symbolic links), and refuses
/// anything else with an `InvalidInput` error saying what it is. The open itself never blocks:
/// it is made with `O_NONBLOCK` (a FIFO without a writer would otherwise hang it) and the type
/// is checked on the opened descriptor, so nothing can swap the file in between; the flag is
/// then cleared again.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(NONBLOCK)
        .open(path)?;
    if let Some(what) = not_a_file(file.metadata()?.file_type()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what}, not a regular file"),
        ));
    }
    clear_nonblock(&file);
    Ok(file)
}

/// The largest look file read (a look is a few hundred bytes).
pub const MAX_LOOK_BYTES: u64 = 1 << 20;
/// The largest scene file read (4096 obstacles and 256 species fit in well under a megabyte).
pub const MAX_SCENE_BYTES: u64 = 64 << 20;

/// The text of the regular file `path` ([`open_regular`]), refused with an `InvalidData` error
/// when it holds more than `max` bytes (read no further) or is not UTF-8. A byte-order mark
/// at the start (some Windows editors write one before JSON) is not part of the text.
pub fn read_text(path: &Path, max: u64) -> io::Result<String> {
    use std::io::Read;
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} KiB: not a file of this kind", max >> 10),
        ));
    }
    let mut text = String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_and_space_are_known_here() {
        assert!(available_memory().is_some_and(|m| m > 0));
        assert!(available_space(&std::env::temp_dir()).is_some());
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_text() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        std::fs::write(&p, "\u{feff}{\"a\": \"\u{feff}\"}").unwrap();
        assert_eq!(read_text(&p, 100).unwrap(), "{\"a\": \"\u{feff}\"}");
        std::fs::write(&p, "{}").unwrap();
        assert_eq!(read_text(&p, 100).unwrap(), "{}");
    }

    #[test]
    fn directories_are_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let e = open_regular(d.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("a directory"), "{e}");
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        assert!(open_regular(&f).is_ok());
    }
}
