//! The playhead: which output frame is due, from the wall time played at the look's frame
//! rate times the speed, forwards or backwards, looping or stopping at the ends.
//!
//! It never moves more than `ceil(speed)` frames per drawn frame: when the renderer cannot keep
//! up, playback slows down instead of skipping frames, so trails stay those of a render.

/// The slowest and fastest playback speeds.
pub const SPEEDS: std::ops::RangeInclusive<f32> = 0.05..=8.0;

#[derive(Clone, Debug)]
pub struct Clock {
    /// Output frames there are (grows while a live simulation runs).
    pub len: u64,
    /// Frames per second at speed 1 (the look's `fps`).
    pub fps: f64,
    pub playing: bool,
    pub speed: f32,
    pub reverse: bool,
    pub looping: bool,
    /// The playhead, in output frames (the fraction is time not yet due).
    pos: f64,
}

impl Clock {
    pub fn new(len: u64, fps: u32) -> Clock {
        Clock {
            len,
            fps: f64::from(fps.max(1)),
            playing: false,
            speed: 1.0,
            reverse: false,
            looping: false,
            pos: 0.0,
        }
    }

    /// The frame due now.
    pub fn frame(&self) -> u64 {
        (self.pos.max(0.0) as u64).min(self.last())
    }

    fn last(&self) -> u64 {
        self.len.saturating_sub(1)
    }

    /// `wall` seconds have passed: moves the playhead if playing. At an end it wraps round when
    /// looping, else stops there and pauses.
    pub fn tick(&mut self, wall: f64) {
        if !self.playing || self.len == 0 {
            return;
        }
        let most = f64::from(self.speed).ceil().max(1.0);
        let step = (wall.max(0.0) * self.fps * f64::from(self.speed)).min(most);
        let last = self.last() as f64;
        let at = self.frame() as f64;
        if self.reverse {
            self.pos -= step;
            if self.pos < 0.0 {
                self.end_reached(at, last, 0.0);
            }
        } else {
            self.pos += step;
            if self.pos >= last + 1.0 {
                self.end_reached(at, 0.0, last);
            }
        }
    }

    /// Past an end: to `start` (looping, once the end frame has been shown), else stop at `end`.
    fn end_reached(&mut self, at: f64, start: f64, end: f64) {
        if self.looping && at == end {
            self.pos = start;
        } else {
            self.pos = end;
            if !self.looping {
                self.playing = false;
            }
        }
    }

    /// Play or pause; playing from the end (or from the start backwards) starts again.
    pub fn toggle(&mut self) {
        self.playing = !self.playing;
        if self.playing {
            let f = self.frame();
            if !self.reverse && f == self.last() {
                self.pos = 0.0;
            } else if self.reverse && f == 0 {
                self.pos = self.last() as f64;
            }
        }
    }

    /// Pauses and moves `by` frames (clamped to the recording).
    pub fn step(&mut self, by: i64) {
        self.playing = false;
        let f = self.frame() as i64 + by;
        self.seek(f.clamp(0, self.last() as i64) as u64);
    }

    /// Moves to frame `f` (clamped), playing or not.
    pub fn seek(&mut self, f: u64) {
        self.pos = f.min(self.last()) as f64;
    }

    /// Speed times `factor`, within [`SPEEDS`].
    pub fn faster(&mut self, factor: f32) {
        self.speed = (self.speed * factor).clamp(*SPEEDS.start(), *SPEEDS.end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playback_follows_the_wall_clock_and_never_skips_at_speed_one() {
        let mut c = Clock::new(100, 30);
        c.toggle();
        c.tick(0.5 / 30.0);
        assert_eq!(c.frame(), 0);
        c.tick(0.5 / 30.0);
        assert_eq!(c.frame(), 1);
        // A slow frame (a second): one frame on, not thirty.
        c.tick(1.0);
        assert_eq!(c.frame(), 2);
        c.speed = 4.0;
        c.tick(1.0);
        assert_eq!(c.frame(), 6);
    }

    #[test]
    fn the_ends_stop_or_wrap() {
        let mut c = Clock::new(3, 30);
        c.toggle();
        for _ in 0..10 {
            c.tick(1.0 / 30.0);
        }
        assert_eq!((c.frame(), c.playing), (2, false));
        c.toggle();
        assert_eq!(c.frame(), 0, "playing from the end starts again");
        c.looping = true;
        let mut seen = Vec::new();
        for _ in 0..5 {
            c.tick(1.0 / 30.0);
            seen.push(c.frame());
        }
        assert_eq!(seen, [1, 2, 0, 1, 2]);
        c.reverse = true;
        let mut seen = Vec::new();
        for _ in 0..4 {
            c.tick(1.0 / 30.0);
            seen.push(c.frame());
        }
        assert_eq!(seen, [1, 0, 2, 1]);
    }

    #[test]
    fn steps_pause_and_clamp() {
        let mut c = Clock::new(10, 30);
        c.toggle();
        c.step(3);
        assert_eq!((c.frame(), c.playing), (3, false));
        c.step(-5);
        assert_eq!(c.frame(), 0);
        c.seek(50);
        assert_eq!(c.frame(), 9);
        c.faster(100.0);
        assert_eq!(c.speed, 8.0);
        c.faster(1e-6);
        assert_eq!(c.speed, 0.05);
    }
}
