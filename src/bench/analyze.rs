//! `forge bench --only analyze`: what `forge analyze` takes on one frame of the bench flock's
//! initial state (uniform positions, random velocities; boidforge preset at constant density)
//! at each size, 2D and 3D: C(r) and g(r) to half the box (exact pairs up to 5000 agents, the
//! grid and FFT above) and the k ≤ 20 neighbour anisotropy. The fastest of 3 runs.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;

use super::bench_scene;
use crate::analyze::{self, Options};
use crate::bfs::{Header, Reader, Writer};

const ROUNDS: usize = 3;

pub(super) fn analyze_table(out: &mut dyn Write, sizes: &[u64]) -> Result<()> {
    writeln!(
        out,
        "`forge analyze`, one frame, C(r) and g(r) to half the box, anisotropy k ≤ 20 (fastest of {ROUNDS}):\n"
    )?;
    writeln!(out, "| agents | dim | pair sums | s |")?;
    writeln!(out, "|---:|---:|---|---:|")?;
    let dir = tempfile::tempdir()?;
    for dim in [2, 3] {
        for &n in sizes {
            let s = bench_scene(n, dim);
            let st = crate::sim::init::initial_state(&s)?;
            let path = dir.path().join(format!("analyze-{dim}-{n}.bfs"));
            let mut h = Header::for_scene(&s);
            h.agents = st.n as u32;
            let mut w = Writer::new(std::fs::File::create(&path)?, &h)?;
            w.write_frame(0, &st.pos, &st.vel)?;
            w.finalize()?;
            let mut best = f64::INFINITY;
            let mut method = analyze::Method::Auto;
            for _ in 0..ROUNDS {
                let mut r = Reader::open(&path)?;
                let t = Instant::now();
                let a = analyze::analyze(&mut r, &Options::new(0..1))?;
                best = best.min(t.elapsed().as_secs_f64());
                method = a.method;
            }
            let how = match method {
                analyze::Method::Exact => "exact",
                _ => "grid (FFT)",
            };
            writeln!(out, "| {n} | {dim} | {how} | {best:.3} |")?;
            out.flush()?;
            std::fs::remove_file(&path)?;
        }
    }
    writeln!(out)?;
    Ok(())
}
