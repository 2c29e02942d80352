//! One recorded frame as the readers hold it: its step, positions and velocities, and the
//! agents the recorded timeline took out of the world at that step.

/// One recorded frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    /// Frame number in the file.
    pub index: u64,
    /// Simulation step it was taken at.
    pub step: u64,
    /// `dim * n` values, component-major: x\[0..n\], y\[0..n\], (z\[0..n\]).
    pub pos: Vec<f32>,
    /// Same layout as `pos`.
    pub vel: Vec<f32>,
    /// The agents not in the world at this frame's step (the recorded timeline removed their
    /// species), as ascending ranges of ids `lo..hi`; empty where every agent is there. The
    /// frame still holds them, where they were when they went: [`Frame::drop_absent`] leaves
    /// them out.
    pub absent: Vec<(u32, u32)>,
}

impl Frame {
    /// A frame with no agents, to be filled by [`super::Reader::read_frame_into`].
    pub fn empty() -> Frame {
        Frame::default()
    }

    /// Number of agents in this frame.
    pub fn agents(&self, dim: usize) -> usize {
        self.pos.len().checked_div(dim).unwrap_or(0)
    }

    /// The frame with only the agents there at its step: itself where none is absent, else a
    /// copy without them ([`Frame::drop_absent`]).
    pub fn present(&self, dim: usize) -> std::borrow::Cow<'_, Frame> {
        if self.absent.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut f = Frame::empty();
        self.present_into(dim, &mut f);
        std::borrow::Cow::Owned(f)
    }

    /// The agents there at its step into `out` (its buffers reused): [`Frame::present`]
    /// without an allocation once `out` has held a frame as large.
    pub fn present_into(&self, dim: usize, out: &mut Frame) {
        let n = self.agents(dim);
        out.index = self.index;
        out.step = self.step;
        out.absent.clear();
        for (from, to) in [(&self.pos, &mut out.pos), (&self.vel, &mut out.vel)] {
            to.clear();
            for axis in from.chunks(n.max(1)).take(dim) {
                to.extend(present_of(&self.absent, axis));
            }
        }
    }

    /// The agents there at its step: the frame itself where none is absent, else `scratch`
    /// filled with them ([`Frame::present_into`]: no allocation once `scratch` has held a frame
    /// as large).
    pub fn present_in<'a>(&'a self, dim: usize, scratch: &'a mut Frame) -> &'a Frame {
        if self.absent.is_empty() {
            return self;
        }
        self.present_into(dim, scratch);
        scratch
    }

    /// Whether agent `id` is absent at this frame's step ([`Frame::absent`]).
    pub fn is_absent(&self, id: usize) -> bool {
        is_in(&self.absent, id)
    }

    /// How many of its `n` agents are there at its step.
    pub fn present_count(&self, n: usize) -> usize {
        let out: usize = self
            .absent
            .iter()
            .map(|&(lo, hi)| (hi.min(n as u32).saturating_sub(lo)) as usize)
            .sum();
        n.saturating_sub(out)
    }

    /// Leaves out the agents [`Frame::absent`] names: the frame then holds the agents there
    /// at its step, in id order (and `absent` is empty).
    pub fn drop_absent(&mut self, dim: usize) {
        if self.absent.is_empty() {
            return;
        }
        let n = self.agents(dim);
        let absent = std::mem::take(&mut self.absent);
        for values in [&mut self.pos, &mut self.vel] {
            // In place, axis after axis: an agent kept never moves up the array.
            let mut w = 0;
            for k in 0..dim {
                for i in (0..n).filter(|&i| !is_in(&absent, i)) {
                    values[w] = values[k * n + i];
                    w += 1;
                }
            }
            values.truncate(w);
        }
    }

    /// The first value that is not a finite number (NaN or ±infinity), positions first: forge's
    /// solver never records one, so a frame holding one is damaged or was written by another
    /// program.
    pub fn non_finite(&self, dim: usize) -> Option<NonFinite> {
        let n = self.agents(dim);
        for (field, values) in [("position", &self.pos), ("velocity", &self.vel)] {
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                let (axis, agent) = match n {
                    0 => (0, i),
                    n => (i / n, i % n),
                };
                return Some(NonFinite {
                    field,
                    agent,
                    axis: ["x", "y", "z"].get(axis).copied().unwrap_or("?"),
                    value: values[i],
                });
            }
        }
        None
    }

    /// [`Frame::non_finite`] as an error naming frame `k`, for readers that would pass such a
    /// value on as a number (exports, metrics, analysis).
    pub fn check_finite(&self, dim: usize, k: u64) -> Result<(), super::BfsError> {
        match self.non_finite(dim) {
            Some(bad) => Err(super::BfsError::NonFinite {
                frame: k,
                what: bad.to_string(),
            }),
            None => Ok(()),
        }
    }
}

/// Whether agent `id` is in one of the ascending id ranges `ranges` ([`Frame::absent`]).
pub fn is_in(ranges: &[(u32, u32)], id: usize) -> bool {
    let id = id as u64;
    // The first range not wholly below id.
    let r = ranges.partition_point(|&(_, hi)| u64::from(hi) <= id);
    ranges.get(r).is_some_and(|&(lo, _)| u64::from(lo) <= id)
}

/// The values of `per_agent` (one per agent, in id order) of the agents not in `absent`
/// (ascending ranges of ids, as [`Frame::absent`] holds them).
pub fn present_of<'a, T: Copy>(
    absent: &'a [(u32, u32)],
    per_agent: &'a [T],
) -> impl Iterator<Item = T> + 'a {
    per_agent
        .iter()
        .enumerate()
        .filter(move |&(i, _)| !is_in(absent, i))
        .map(|(_, &v)| v)
}

/// A value of a frame that is not a finite number ([`Frame::non_finite`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonFinite {
    /// `"position"` or `"velocity"`.
    pub field: &'static str,
    pub agent: usize,
    /// `"x"`, `"y"` or `"z"`.
    pub axis: &'static str,
    pub value: f32,
}

impl std::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "agent {} has a {} of {} {} (not a finite number)",
            self.agent, self.field, self.axis, self.value
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Agents 1..3 and 5..6 of seven absent: the frame keeps 0, 3, 4 and 6, axis by axis.
    #[test]
    fn absent_agents_are_left_out_axis_by_axis() {
        let pos: Vec<f32> = (0..14).map(|v| v as f32).collect();
        let mut f = Frame {
            vel: pos.iter().map(|v| -v).collect(),
            pos,
            absent: vec![(1, 3), (5, 6)],
            ..Frame::default()
        };
        let there: Vec<bool> = (0..7).map(|i| !f.is_absent(i)).collect();
        assert_eq!(there, [true, false, false, true, true, false, true]);
        assert_eq!(f.present_count(7), 4);
        f.drop_absent(2);
        assert_eq!(f.pos, [0.0, 3.0, 4.0, 6.0, 7.0, 10.0, 11.0, 13.0]);
        assert_eq!(f.vel, [-0.0, -3.0, -4.0, -6.0, -7.0, -10.0, -11.0, -13.0]);
        assert!(f.absent.is_empty());
        let kept: Vec<u8> = present_of(&[(0, 2), (6, 7)], &[9, 8, 7, 6, 5, 4, 3]).collect();
        assert_eq!(kept, [7, 6, 5, 4]);
    }
}
