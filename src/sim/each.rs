//! [`array`]: a fixed-size array from a function of the index, the solver's way of building
//! one per axis (a leaf: the step's arithmetic in `math` and the obstacles' both use it).

/// `[f(0), f(1), …]`, as `std::array::from_fn` builds it, but as a plain loop inlined into
/// its caller. The release profile has no link-time optimisation, so a function reaches a
/// caller in another codegen unit only as a call; from_fn's inner wrapper is not `#[inline]`,
/// and in the candidate loops that was a call per element (the scalar loop ran 1.5 times as
/// long).
#[inline(always)]
pub fn array<T: Copy + Default, const D: usize>(mut f: impl FnMut(usize) -> T) -> [T; D] {
    let mut a = [T::default(); D];
    for (k, x) in a.iter_mut().enumerate() {
        *x = f(k);
    }
    a
}
