//! The step loop allocates nothing once running: counted with a global allocator wrapper.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use forge::record::Recorder;
use forge::scene::{self, Search};
use forge::sim::{cpu::CpuSolver, init, Params};

struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steps_and_recording_allocate_nothing() {
    let cases = [
        (
            r#"{"model": "boids", "agents": 12000, "world": {"size": [2000, 1000]}}"#,
            Search::Grid,
            2,
        ),
        (
            r#"{"model": "boids", "dim": 3, "agents": 12000, "world": {"size": [300, 300, 300]}}"#,
            Search::Grid,
            2,
        ),
        (
            r#"{"preset": "vicsek1995", "agents": 12000, "world": {"size": [55, 55]}}"#,
            Search::Grid,
            2,
        ),
        (
            r#"{"preset": "vicsek1995", "agents": 500, "world": {"size": [11, 11]}}"#,
            Search::Brute,
            1,
        ),
        (
            r#"{"model": "boids", "agents": 80, "world": {"size": [200, 100]}}"#,
            Search::Auto,
            1,
        ),
        // Topological: each thread's candidate heap is grown once, then reused.
        (
            r#"{"model": "boids", "agents": 12000, "world": {"size": [2000, 1000]},
                "boids": {"neighbours": {"kind": "topological", "k": 7}}}"#,
            Search::Grid,
            2,
        ),
        (
            r#"{"model": "boids", "dim": 3, "agents": 300, "world": {"size": [100, 100, 100]},
                "boids": {"neighbours": {"kind": "topological", "k": 20}}}"#,
            Search::Brute,
            1,
        ),
    ];
    for (text, search, threads) in cases {
        let s = scene::parse(&scene::Source {
            text,
            dir: Path::new("."),
            default_name: "a",
        })
        .unwrap();
        let st = init::initial_state(&s).unwrap();
        let n = st.n;
        let mut solver = CpuSolver::new(Params::from_scene(&s, n), st, threads, search).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("a.bfs")).unwrap();
        let mut h = forge::bfs::Header::for_scene(&s);
        h.agents = n as u32;
        let mut rec = Recorder::start(
            forge::bfs::Writer::new(forge::bfs::DirectFile::new(file), &h).unwrap(),
            s.dim,
            n,
        )
        .unwrap();
        // Warm up: thread starts, and more frames than the recorder holds in flight, so the
        // writer thread has surely started (its start-up allocates) and handed buffers back.
        for _ in 0..2 * forge::record::DEPTH + 2 {
            solver.step().unwrap();
            solver.record(&mut rec).unwrap();
        }
        ALLOCS.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        for _ in 0..20 {
            solver.step().unwrap();
            solver.record(&mut rec).unwrap();
        }
        COUNTING.store(false, Ordering::SeqCst);
        let allocs = ALLOCS.load(Ordering::SeqCst);
        rec.finish().unwrap();
        assert_eq!(
            allocs, 0,
            "{text} ({search:?}, {threads} threads): {allocs} allocations in 20 steps"
        );
    }
}
