//! The minimum image of a separation in a periodic side, shared by the metrics and
//! `forge analyze`: [`far`] for any separation, [`near`] (the same bits, and a loop of them
//! vectorises) for positions that [`inside`] says lie near the box. [`choose`] picks one of
//! them for a frame, [`apply`] applies it (a const parameter, so that each loop is compiled
//! for one).

/// Which minimum image a frame takes: none (an open world), [`near`] or [`far`].
pub(crate) const NONE: u8 = 0;
pub(crate) const NEAR: u8 = 1;
pub(crate) const FAR: u8 = 2;

/// The minimum image of a frame: [`NONE`] in an open world, [`NEAR`] where every position lies
/// [`inside`] the periodic box on every axis (`axis(k)`: the positions along axis k of
/// `0..dim`; side `len[k]`), else [`FAR`].
pub(crate) fn choose<I: Iterator<Item = f64>>(
    wrap: bool,
    dim: usize,
    len: &[f64; 3],
    axis: impl Fn(usize) -> I,
) -> u8 {
    if !wrap {
        NONE
    } else if (0..dim).all(|k| axis(k).all(|x| inside(x, len[k]))) {
        NEAR
    } else {
        FAR
    }
}

/// The separation `d` in side `l` under minimum image `IMAGE` ([`NONE`], [`NEAR`], [`FAR`]).
#[inline(always)]
pub(crate) fn apply<const IMAGE: u8>(d: f64, l: f64) -> f64 {
    match IMAGE {
        NONE => d,
        NEAR => near(d, l),
        _ => far(d, l),
    }
}

/// The minimum image of separation `d` in a periodic side `l`: `d − l·round(d / l)`.
#[inline]
pub(crate) fn far(d: f64, l: f64) -> f64 {
    d - l * (d / l).round()
}

/// [`far`] for |d| < 1.5 l, bit for bit, with no division and no call into libm (x86-64 has no
/// instruction for round's halves away from zero before SSE4.1), so that a loop of them
/// vectorises. `d / l ≥ 0.5` exactly where `d ≥ 0.5·l` (`0.5·l` is exact, and no float lies
/// between the quotients), so round gives ±1 exactly where the selects subtract ±l; the zero
/// keeps d's sign as `l·round(d / l)` does.
#[inline(always)]
pub(crate) fn near(d: f64, l: f64) -> f64 {
    let h = 0.5 * l;
    let s = if d >= h {
        l
    } else if d <= -h {
        -l
    } else {
        0.0f64.copysign(d)
    };
    d - s
}

/// Whether position `x` lies within a quarter side of the periodic box `[0, l)`, so that the
/// separation of two such positions is under 1.5 sides and [`near`] applies. Every position
/// forge records does; a file from elsewhere may hold anything (false for a NaN, an infinity
/// or a side that is not positive).
#[inline]
pub(crate) fn inside(x: f64, l: f64) -> bool {
    (x - 0.5 * l).abs() < 0.75 * l
}

#[cfg(test)]
mod tests {
    use super::{far, near};

    /// The same bits as the division and libm's round wherever a separation is under 1.5
    /// sides: halves of the side and the floats beside them, zeros of both signs, whole sides,
    /// and random separations over sides of many sizes.
    #[test]
    fn near_is_far() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for l in [
            1.0f64,
            3.0,
            31.622776601683793,
            900.0,
            0.1,
            1e-7,
            4096.0,
            0.7,
        ] {
            let h = 0.5 * l;
            let mut ds = vec![0.0, -0.0, l, -l, 1.25 * l, -1.25 * l, 1e-300, -1e-300];
            for e in [h, -h] {
                ds.extend([e, e.next_up(), e.next_down()]);
            }
            for _ in 0..20_000 {
                ds.push((next() * 3.0 - 1.5) * l);
            }
            for d in ds.into_iter().filter(|d| d.abs() < 1.5 * l) {
                assert_eq!(
                    near(d, l).to_bits(),
                    far(d, l).to_bits(),
                    "d {d:e}, l {l:e}"
                );
            }
        }
    }
}
