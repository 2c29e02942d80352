//! Disjoint writes from parallel passes: the one unsafe tool the CPU solver's threads use to
//! write their own slots of a shared array.

/// An array written by the tasks of one parallel pass, each index by one task only: the
/// pass's chunks partition the indices. The pointer is taken from a `&mut` borrow of the
/// array (never cast from a shared one) that is not used again until the pass is over.
pub(super) struct OutArr<T> {
    ptr: *mut T,
    len: usize,
}
impl<T> Clone for OutArr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for OutArr<T> {}
// SAFETY: another thread holding the pointer may only write, through `set`, indices that no
// other thread reads or writes during the pass (the contract of `set`); `T: Send` lets the
// values it writes cross threads.
unsafe impl<T: Send> Send for OutArr<T> {}
// SAFETY: as for Send: the tasks that share it write disjoint indices.
unsafe impl<T: Send> Sync for OutArr<T> {}

impl<T> OutArr<T> {
    pub(super) fn new(a: &mut [T]) -> OutArr<T> {
        OutArr {
            ptr: a.as_mut_ptr(),
            len: a.len(),
        }
    }

    /// # Safety
    /// `i < len`; the array is alive and not otherwise accessed at index `i` during the pass;
    /// no other task writes index `i` during the pass.
    #[inline(always)]
    pub(super) unsafe fn set(&self, i: usize, v: T) {
        debug_assert!(i < self.len);
        // SAFETY: (the caller) i < len, inside the allocation, and no other task writes i.
        unsafe { *self.ptr.add(i) = v };
    }
}

/// A state's two arrays (`dim × n`, component-major) written slot by slot by one pass.
#[derive(Clone, Copy)]
pub(super) struct StateOut {
    pos: OutArr<f32>,
    vel: OutArr<f32>,
}

impl StateOut {
    pub(super) fn new(pos: &mut [f32], vel: &mut [f32]) -> StateOut {
        StateOut {
            pos: OutArr::new(pos),
            vel: OutArr::new(vel),
        }
    }

    /// Index `idx` of both arrays (axis k of slot s is `k*n + s`).
    ///
    /// # Safety
    /// As for [`OutArr::set`], for index `idx` of both arrays.
    #[inline(always)]
    pub(super) unsafe fn set(&self, idx: usize, p: f32, v: f32) {
        // SAFETY: (the caller) idx is within both arrays and this task's alone.
        unsafe {
            self.pos.set(idx, p);
            self.vel.set(idx, v);
        }
    }

    /// Every axis of slot `s`: indices `k*n + s` for k < D.
    ///
    /// # Safety
    /// `s < n`, `D*n` ≤ both lengths, and no other task touches slot `s` during the pass.
    #[inline(always)]
    pub(super) unsafe fn put<const D: usize>(
        &self,
        n: usize,
        s: usize,
        p: &[f32; D],
        v: &[f32; D],
    ) {
        for k in 0..D {
            // SAFETY: (the caller) s < n and D*n fit both arrays, so k*n + s is within them,
            // and slot s is this task's alone.
            unsafe { self.set(k * n + s, p[k], v[k]) };
        }
    }
}
