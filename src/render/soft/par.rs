//! Work split over the machine's cores with scoped threads: ranges of items, or bands of an
//! image's rows each with its own mutable rows.

use std::ops::Range;

/// Threads to split work over: the cores this process may use.
pub(super) fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 64)
}

/// `0..n` in at most [`threads`] contiguous ranges of at least `min` items (one if `n` is small).
pub(super) fn split(n: usize, min: usize) -> Vec<Range<usize>> {
    split_over(n, min, threads())
}

/// [`split`] over `threads` threads (the last ranges may be empty).
fn split_over(n: usize, min: usize, threads: usize) -> Vec<Range<usize>> {
    let parts = threads.min(n.div_ceil(min.max(1))).max(1);
    let each = n.div_ceil(parts);
    (0..parts)
        .map(|k| (k * each).min(n)..((k + 1) * each).min(n))
        .collect()
}

/// The rows `0..h` in bands of whole pairs of rows (each starts at an even row), at least
/// `min` pairs a band, none empty, one at least.
pub(super) fn pairs(h: usize, min: usize) -> Vec<Range<usize>> {
    pairs_over(h, min, threads())
}

fn pairs_over(h: usize, min: usize, threads: usize) -> Vec<Range<usize>> {
    let bands: Vec<Range<usize>> = split_over(h.div_ceil(2), min, threads)
        .into_iter()
        .map(|r| 2 * r.start..(2 * r.end).min(h))
        .filter(|r| r.start < r.end)
        .collect();
    if bands.is_empty() {
        std::iter::once(0..h).collect()
    } else {
        bands
    }
}

/// `work` on each of `jobs` with its `outs`, each on a thread of its own (the first on the
/// calling thread).
pub(super) fn each<J: Clone + Send + Sync, O: Send>(
    jobs: &[J],
    outs: &mut [O],
    work: impl Fn(J, &mut O) + Sync,
) {
    std::thread::scope(|s| {
        let work = &work;
        let mut each = jobs.iter().cloned().zip(outs.iter_mut());
        let first = each.next();
        for (job, out) in each {
            s.spawn(move || work(job, out));
        }
        if let Some((job, out)) = first {
            work(job, out);
        }
    });
}

/// `f(rows, band)` over bands of `image`'s rows (`width` items a row), each band on a thread
/// of its own: `band` holds the rows `rows` of the image.
pub(super) fn bands<T: Send>(
    image: &mut [T],
    width: usize,
    f: impl Fn(Range<usize>, &mut [T]) + Sync,
) {
    let height = image.len() / width.max(1);
    let ranges = split(height, 16);
    if ranges.len() <= 1 {
        f(0..height, image);
        return;
    }
    std::thread::scope(|s| {
        let f = &f;
        let mut rest = image;
        let mut mine = None;
        for r in ranges {
            let (band, tail) = rest.split_at_mut((r.end - r.start) * width);
            rest = tail;
            if mine.is_none() {
                mine = Some((r, band));
            } else {
                s.spawn(move || f(r, band));
            }
        }
        if let Some((r, band)) = mine {
            f(r, band);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bands of pairs cover the rows in order, each from an even row, none empty, whatever
    /// the number of threads (a 64-core machine leaves some of `split`'s ranges empty).
    #[test]
    fn bands_of_pairs_cover_the_rows_from_even_rows() {
        for h in [1, 2, 3, 7, 90, 180, 719, 720, 1080, 2160] {
            for threads in [1, 2, 3, 7, 16, 64] {
                let bands = pairs_over(h, 8, threads);
                assert!(!bands.is_empty());
                let mut at = 0;
                for b in &bands {
                    assert_eq!(b.start, at, "h {h}, {threads} threads: {bands:?}");
                    assert!(b.start < b.end && b.start % 2 == 0, "{bands:?}");
                    at = b.end;
                }
                assert_eq!(at, h, "h {h}, {threads} threads: {bands:?}");
            }
        }
    }
}
