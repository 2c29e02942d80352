//! The `.npy` header (NumPy's format version 1.0): the magic, the version, the header's length
//! and a Python dict literal naming the element type, the order and the shape, padded with
//! spaces and a newline so that the values start at a multiple of 64 bytes. The values follow
//! as little-endian bytes in C order.
//!
//! Written here rather than through a crate: forge only writes this header, and the crate that
//! did (npyz) reads `.npy` too, and brings a Python literal parser, a parser generator and big
//! integers with it: about 20 s of compiler time in every clean build, for one line of text.

use std::fmt::Write as _;

/// Where the values start: a multiple of this many bytes from the start of the file.
const ALIGN: usize = 64;

/// An element type of an exported array: its NumPy type string and its bytes.
pub(super) trait Element: Copy {
    /// The dtype's `descr`, such as `<f4`.
    const DESCR: &'static str;
    /// Appends the value's little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! numbers {
    ($($t:ty => $descr:literal),*) => {$(
        impl Element for $t {
            const DESCR: &'static str = $descr;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
numbers!(f32 => "<f4", f64 => "<f8", i64 => "<i8");

impl Element for bool {
    const DESCR: &'static str = "|b1";
    fn put(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
}

/// The header of an array of `descr` elements and `shape` (C order; `[]` for a scalar).
pub(super) fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (");
    for x in shape {
        write!(dict, "{x}, ").expect("writing to a String");
    }
    dict.push_str("), }");
    // magic (6 bytes), version (2), the header's length (2), the dict, spaces, a newline.
    let unpadded = 10 + dict.len() + 1;
    let spaces = unpadded.next_multiple_of(ALIGN) - unpadded;
    let len = u16::try_from(dict.len() + spaces + 1).expect("a header of a few dozen bytes");
    let mut out = Vec::with_capacity(unpadded + spaces);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + spaces, b' ');
    out.push(b'\n');
    out
}

/// A whole array: its header and its values.
pub(super) fn array<T: Element>(shape: &[u64], values: &[T]) -> Vec<u8> {
    let mut out = header(T::DESCR, shape);
    for &v in values {
        v.put(&mut out);
    }
    out
}

/// A 0-d unicode string (`<UN`, N code points, UTF-32LE): `str(d[NAME])` in Python, no pickle.
pub(super) fn text(text: &str) -> Vec<u8> {
    // numpy has no zero-length `<U0`; an empty text is one NUL, which numpy reads as "".
    let chars = text.chars().count();
    let units = chars.max(1);
    let mut out = header(&format!("<U{units}"), &[]);
    for c in text.chars() {
        out.extend_from_slice(&u32::from(c).to_le_bytes());
    }
    out.resize(out.len() + 4 * (units - chars), 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_padded_to_64_bytes_as_numpy_writes_them() {
        let h = header("<f4", &[4, 5, 2]);
        assert_eq!(h.len(), 128);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(usize::from(u16::from_le_bytes([h[8], h[9]])), 118);
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(
            text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 5, 2, ), }  ")
        );
        assert!(text.ends_with(" \n"));
        assert!(header("<U1", &[])
            .windows(13)
            .any(|w| w == b"'shape': (), "));
        for n in [0, 9, 10, 99_999, u64::MAX] {
            assert_eq!(header("<f8", &[n, n]).len() % 64, 0);
        }
        // A dict that ends one byte before a multiple of 64 gets no spaces.
        let mut shape = vec![10; 14];
        shape.extend([1, 1]);
        let h = header("<f4", &shape);
        assert_eq!(h.len(), 128);
        assert!(h.ends_with(b", ), }\n"));
    }

    #[test]
    fn values_follow_the_header_in_little_endian_order() {
        // Every header here is 128 bytes: its dict is longer than 53.
        let a = array(&[2], &[1i64, -2]);
        assert_eq!(a.len(), 128 + 16);
        assert_eq!(
            &a[128..],
            [1, 0, 0, 0, 0, 0, 0, 0, 254, 255, 255, 255, 255, 255, 255, 255]
        );
        assert_eq!(&array(&[2], &[true, false])[128..], [1, 0]);
        assert_eq!(&array(&[1], &[0.5f32])[128..], 0.5f32.to_le_bytes());
        assert_eq!(&text("é")[128..], [0xe9, 0, 0, 0]);
        assert_eq!(&text("")[128..], [0, 0, 0, 0]);
    }
}
