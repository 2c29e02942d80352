//! A tiny fork-join pool for the step: persistent workers, a chunk counter, and a
//! mutex/condvar handshake. Unlike a general-purpose pool it never allocates per pass
//! (rayon's injector queue allocates a block every few dozen jobs), which keeps the step
//! loop allocation-free.
//!
//! One pass runs at a time: [`Pool::run`] takes the pool for its pass, and a call that finds
//! it taken (another thread's pass, or a pass started from inside `f`) runs its own pass on
//! the calling thread alone. Either way every index is visited once and `run` returns when
//! `f` is done with all of them.
//!
//! After `fork()` (Python's `os.fork`, `multiprocessing`'s default on Linux) the child has
//! the pool but none of its threads: there every pass runs on the calling thread alone (the
//! same results: they never depend on the thread count), and dropping the pool leaves the
//! absent workers alone.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// The pass being run, borrowed for the duration of [`Pool::run`] only.
#[derive(Clone, Copy)]
struct Job(*const (dyn Fn(Range<usize>) + Sync));
// SAFETY: the pointee is Sync and outlives every use: `run` waits until all workers are done.
unsafe impl Send for Job {}

struct Control {
    generation: u64,
    job: Option<Job>,
    n: usize,
    chunks: usize,
    /// Workers still busy with the current generation.
    active: usize,
    shutdown: bool,
}

struct Shared {
    control: Mutex<Control>,
    work: Condvar,
    done: Condvar,
    next_chunk: AtomicUsize,
    panicked: AtomicBool,
}

pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Held for the whole of a pass on the workers: the job state in `shared` belongs to it.
    busy: Mutex<()>,
    /// [`FORKS`] when the workers started: a child forked since has none of them.
    forks: u64,
}

/// How many times this process is a forked child of the process that started it: counted by
/// a `pthread_atfork` handler, so that a pass finds out with one atomic load (no `getpid`).
static FORKS: AtomicU64 = AtomicU64::new(0);

#[cfg(unix)]
extern "C" fn count_fork() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// Registers [`count_fork`] once, before the first pool's workers start.
fn watch_forks() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: registers a child handler that only increments an atomic.
        ONCE.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(count_fork));
        });
    }
}

/// Chunks a pass is split into, per thread: small enough to balance uneven cells.
const CHUNKS_PER_THREAD: usize = 8;

fn chunk(c: usize, chunks: usize, n: usize) -> Range<usize> {
    let len = n.div_ceil(chunks).max(1);
    (c * len).min(n)..((c + 1) * len).min(n)
}

fn work(shared: &Shared, job: Job, n: usize, chunks: usize) {
    // SAFETY: see `Job`.
    let f = unsafe { &*job.0 };
    loop {
        let c = shared.next_chunk.fetch_add(1, Ordering::Relaxed);
        if c >= chunks {
            return;
        }
        let r = chunk(c, chunks, n);
        if !r.is_empty() {
            f(r);
        }
    }
}

impl Pool {
    /// `threads` in total, the calling thread included.
    pub fn new(threads: usize) -> std::io::Result<Pool> {
        watch_forks();
        let forks = FORKS.load(Ordering::Relaxed);
        let shared = Arc::new(Shared {
            control: Mutex::new(Control {
                generation: 0,
                job: None,
                n: 0,
                chunks: 0,
                active: 0,
                shutdown: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            next_chunk: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
        });
        let mut workers = Vec::new();
        for i in 1..threads.max(1) {
            let sh = shared.clone();
            workers.push(
                std::thread::Builder::new()
                    .name(format!("forge-step-{i}"))
                    .spawn(move || worker(&sh))?,
            );
        }
        Ok(Pool {
            shared,
            workers,
            busy: Mutex::new(()),
            forks,
        })
    }

    /// This is a copy of the pool in a forked child: its workers are in the parent.
    fn forked(&self) -> bool {
        FORKS.load(Ordering::Relaxed) != self.forks
    }

    /// Every chunk of the pass on the calling thread, in order.
    fn run_here(n: usize, chunks: usize, f: &(dyn Fn(Range<usize>) + Sync)) {
        for c in 0..chunks {
            let r = chunk(c, chunks, n);
            if !r.is_empty() {
                f(r);
            }
        }
    }

    pub fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Call `f` on chunks partitioning `0..n`, on every thread; returns when all are done.
    /// While another pass holds the workers, the chunks run on the calling thread.
    pub fn run(&self, n: usize, f: &(dyn Fn(Range<usize>) + Sync)) {
        let chunks = self.threads() * CHUNKS_PER_THREAD;
        if self.forked() {
            // The pool's locks may have been held by a parent thread at the fork: not touched.
            return Pool::run_here(n, chunks, f);
        }
        let _pass = match self.busy.try_lock() {
            Ok(g) => g,
            // A panic in an earlier pass left no state behind (`run` waits for every worker
            // before it unwinds): the pool is free.
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Pool::run_here(n, chunks, f),
        };
        // SAFETY: erase the borrow's lifetime; we do not return before every worker is done
        // with it (the `active` handshake below).
        let job = Job(unsafe {
            std::mem::transmute::<
                *const (dyn Fn(Range<usize>) + Sync + '_),
                *const (dyn Fn(Range<usize>) + Sync),
            >(f)
        });
        {
            let mut c = self
                .shared
                .control
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            self.shared.next_chunk.store(0, Ordering::Relaxed);
            c.job = Some(job);
            c.n = n;
            c.chunks = chunks;
            c.active = self.workers.len();
            c.generation += 1;
            self.shared.work.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| work(&self.shared, job, n, chunks)));
        let mut c = self
            .shared
            .control
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while c.active > 0 {
            c = self.shared.done.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        c.job = None;
        drop(c);
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if self.shared.panicked.swap(false, Ordering::Relaxed) {
            panic!("a step worker thread panicked");
        }
    }
}

fn worker(shared: &Shared) {
    let mut seen = 0u64;
    loop {
        let (job, n, chunks) = {
            let mut c = shared.control.lock().unwrap_or_else(|e| e.into_inner());
            while c.generation == seen && !c.shutdown {
                c = shared.work.wait(c).unwrap_or_else(|e| e.into_inner());
            }
            if c.shutdown {
                return;
            }
            seen = c.generation;
            (c.job.expect("a job with every generation"), c.n, c.chunks)
        };
        if catch_unwind(AssertUnwindSafe(|| work(shared, job, n, chunks))).is_err() {
            shared.panicked.store(true, Ordering::Relaxed);
        }
        let mut c = shared.control.lock().unwrap_or_else(|e| e.into_inner());
        c.active -= 1;
        if c.active == 0 {
            shared.done.notify_one();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.forked() {
            // No workers here to stop or join; their handles name threads of the parent.
            std::mem::forget(std::mem::take(&mut self.workers));
            return;
        }
        if let Ok(mut c) = self.shared.control.lock() {
            c.shutdown = true;
        }
        self.shared.work.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sum of `0..n` through `pool`, each index added once.
    fn sum(pool: &Pool, n: usize) -> usize {
        let total = AtomicUsize::new(0);
        pool.run(n, &|r: Range<usize>| {
            total.fetch_add(r.sum::<usize>(), Ordering::Relaxed);
        });
        total.into_inner()
    }

    /// A pool shared by several threads at once, and a pass started from inside a pass: every
    /// call visits each index once and returns the right result.
    #[test]
    fn concurrent_and_nested_passes_are_each_complete() {
        let pool = Arc::new(Pool::new(3).unwrap());
        let n = 20_000;
        let want = n * (n - 1) / 2;
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let pool = pool.clone();
                std::thread::spawn(move || (0..200).all(|_| sum(&pool, n) == want))
            })
            .collect();
        for t in threads {
            assert!(
                t.join().unwrap(),
                "a concurrent pass lost or repeated indices"
            );
        }
        let inner = AtomicUsize::new(0);
        pool.run(8, &|r: Range<usize>| {
            for _ in r {
                inner.fetch_add(sum(&pool, 100), Ordering::Relaxed);
            }
        });
        assert_eq!(inner.into_inner(), 8 * 4950);
    }

    /// In a child forked after the pool's workers started, a pass completes (on the calling
    /// thread) and dropping the pool returns: the child exits 0 instead of waiting forever for
    /// workers that exist only in the parent.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_runs_passes_and_drops_the_pool() {
        let pool = Pool::new(3).unwrap();
        let n = 10_000;
        assert_eq!(sum(&pool, n), n * (n - 1) / 2);
        // SAFETY: the child only runs the pool (no allocation on its forked path) and `_exit`s.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            let ok = sum(&pool, n) == n * (n - 1) / 2;
            drop(pool);
            // SAFETY: ends the child without running the parent's atexit handlers or unwinding.
            unsafe { libc::_exit(if ok { 0 } else { 3 }) };
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child, non-blocking.
            let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
            if r == child {
                break;
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: our own child.
                unsafe { libc::kill(child, libc::SIGKILL) };
                panic!("the forked child hung in the pool");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the forked child failed: status {status:#x}"
        );
        // The parent's pool is untouched.
        assert_eq!(sum(&pool, n), n * (n - 1) / 2);
    }

    #[test]
    fn every_index_once() {
        let pool = Pool::new(3).unwrap();
        for n in [0usize, 1, 7, 100, 10_000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            pool.run(n, &|r: Range<usize>| {
                for i in r {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                }
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "n = {n}"
            );
        }
    }
}
