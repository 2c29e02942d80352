//! The `.bfs` format: round trips, seeking, interrupted and truncated recordings, bit flips,
//! BoidForge BFS1 interop, and a mutation fuzz test that must never panic or over-allocate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use forge::bfs::*;
use forge::scene::{Boundary, Model};

// ---------------------------------------------------------------------------------------
// An allocator that remembers the largest single allocation, so the fuzz test can prove
// that no input makes the reader ask for memory sized by a lying field.
// ---------------------------------------------------------------------------------------

struct Tracking;
static LARGEST_ALLOC: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOC.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOC.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST_ALLOC.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// splitmix64: a tiny fixed-seed generator, so every run tests the same inputs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

fn header(dim: u8, agents: u32) -> Header {
    Header {
        version: VERSION,
        dim,
        model: Model::Boids,
        boundary: Boundary::Reflect,
        agents,
        dt: 0.05,
        seed: 0xDEAD_BEEF_1234,
        record_every: 2,
        world_size: [1920.0, 1080.0, if dim == 3 { 500.0 } else { 0.0 }],
        scene_name: "test scene".into(),
        scene_json: r#"{"model":"boids","agents":3,"name":"test scene"}"#.into(),
        frame_count: None,
        source: SourceFormat::Forge,
        world_inferred: false,
        species: Vec::new(),
    }
}

type Frames = Vec<(u64, Vec<f32>, Vec<f32>)>;

/// Frames with values that only compare equal bitwise (NaN, -0.0) mixed in.
fn make_frames(dim: u8, agents: u32, count: usize, rng: &mut Rng) -> Frames {
    let m = dim as usize * agents as usize;
    (0..count)
        .map(|k| {
            let mut pos: Vec<f32> = (0..m).map(|_| rng.f32_in(0.0, 1000.0)).collect();
            let vel: Vec<f32> = (0..m).map(|_| rng.f32_in(-5.0, 5.0)).collect();
            if m > 1 && k == 1 {
                pos[0] = f32::from_bits(0x7FC0_1234); // a NaN with a payload
                pos[1] = -0.0;
            }
            (k as u64 * 2, pos, vel)
        })
        .collect()
}

fn forge_bytes(h: &Header, frames: &Frames, finalize: bool) -> Vec<u8> {
    let mut w = Writer::new(Cursor::new(Vec::new()), h).unwrap();
    for (step, pos, vel) in frames {
        w.write_frame(*step, pos, vel).unwrap();
    }
    if finalize {
        w.finalize().unwrap().1.into_inner()
    } else {
        // flush, then take the bytes as they stand (what a killed process leaves behind)
        w.flush().unwrap();
        let (_, cur) = w.finalize().unwrap();
        let mut b = cur.into_inner();
        b[52..60].copy_from_slice(&u64::MAX.to_le_bytes());
        b
    }
}

fn header_len(bytes: &[u8]) -> usize {
    u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_frame_eq(got: &Frame, k: u64, want: &(u64, Vec<f32>, Vec<f32>)) {
    assert_eq!(got.index, k);
    assert_eq!(got.step, want.0, "frame {k} step");
    assert_eq!(bits(&got.pos), bits(&want.1), "frame {k} positions");
    assert_eq!(bits(&got.vel), bits(&want.2), "frame {k} velocities");
}

fn open_bytes(dir: &Path, name: &str, bytes: &[u8]) -> Result<Reader, BfsError> {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    Reader::open(&p)
}

fn bfs1_frames(ns: &[usize], rng: &mut Rng, lo: f32, hi: f32) -> Vec<Bfs1Frame> {
    ns.iter()
        .enumerate()
        .map(|(k, &n)| {
            let mut v = || (0..n).map(|_| rng.f32_in(lo, hi)).collect::<Vec<f32>>();
            (k as i32 * 10, v(), v(), v(), v())
        })
        .collect()
}

fn bfs1_bytes(frames: &[Bfs1Frame], max_boids: i32, finalized: bool) -> Vec<u8> {
    let mut b = Vec::new();
    write_bfs1(&mut b, 0.05, 7, max_boids, frames, finalized).unwrap();
    b
}

fn assert_bfs1_frame(got: &Frame, k: u64, want: &Bfs1Frame) {
    let n = want.1.len();
    assert_eq!(got.index, k);
    assert_eq!(got.step, want.0 as u64);
    assert_eq!(got.agents(2), n);
    assert_eq!(bits(&got.pos[..n]), bits(&want.1));
    assert_eq!(bits(&got.pos[n..]), bits(&want.2));
    assert_eq!(bits(&got.vel[..n]), bits(&want.3));
    assert_eq!(bits(&got.vel[n..]), bits(&want.4));
}

// ---------------------------------------------------------------------------------------
// forge files
// ---------------------------------------------------------------------------------------

#[test]
fn round_trip_2d_and_3d() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(1);
    for dim in [2u8, 3] {
        let h = header(dim, 5);
        let frames = make_frames(dim, 5, 6, &mut rng);
        let p = dir.path().join(format!("rt{dim}.bfs"));
        let mut w = Writer::new(std::fs::File::create(&p).unwrap(), &h).unwrap();
        for (step, pos, vel) in &frames {
            w.write_frame(*step, pos, vel).unwrap();
        }
        assert_eq!(w.frames_written(), 6);
        let (n, _file) = w.finalize().unwrap();
        assert_eq!(n, 6);

        let mut r = Reader::open(&p).unwrap();
        assert!(r.warnings().is_empty(), "{:?}", r.warnings());
        assert_eq!(r.frame_count(), 6);
        let want = Header {
            frame_count: Some(6),
            ..h.clone()
        };
        assert_eq!(r.header(), &want);
        for (k, f) in frames.iter().enumerate() {
            let got = r.read_frame(k as u64).unwrap();
            assert_eq!(got.agents(dim as usize), 5);
            assert_frame_eq(&got, k as u64, f);
        }
        // the layout is what the module documents
        let bytes = std::fs::read(&p).unwrap();
        let hl = header_len(&bytes);
        assert_eq!(hl % 8, 0);
        assert_eq!(bytes.len(), hl + 6 * (24 + 8 * dim as usize * 5));
        assert_eq!(&bytes[hl..hl + 4], b"FRM1");
    }
}

#[test]
fn zero_agents_and_zero_frames() {
    let dir = tempfile::tempdir().unwrap();
    let h = header(2, 0);
    let b = forge_bytes(&h, &vec![(0, vec![], vec![]), (1, vec![], vec![])], true);
    let mut r = open_bytes(dir.path(), "zero.bfs", &b).unwrap();
    assert_eq!(r.frame_count(), 2);
    assert_eq!(r.read_frame(1).unwrap().step, 1);
    let b = forge_bytes(&header(3, 4), &vec![], true);
    let r = open_bytes(dir.path(), "none.bfs", &b).unwrap();
    assert_eq!(r.frame_count(), 0);
    assert_eq!(r.header().frame_count, Some(0));
}

#[test]
fn seek_reads_any_frame_directly() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(2);
    let h = header(3, 4);
    let frames = make_frames(3, 4, 12, &mut rng);
    let b = forge_bytes(&h, &frames, true);
    let mut r = open_bytes(dir.path(), "seek.bfs", &b).unwrap();
    let mut f = Frame::empty();
    for k in [7u64, 2, 9, 0, 11, 7] {
        r.read_frame_into(k, &mut f).unwrap();
        assert_frame_eq(&f, k, &frames[k as usize]);
    }
    // buffers are reused, not reallocated
    let (pp, vp) = (f.pos.as_ptr(), f.vel.as_ptr());
    r.read_frame_into(3, &mut f).unwrap();
    assert_eq!((pp, vp), (f.pos.as_ptr(), f.vel.as_ptr()));
    match r.read_frame(12) {
        Err(BfsError::FrameOutOfRange {
            frame: 12,
            count: 12,
        }) => {}
        other => panic!("expected FrameOutOfRange, got {:?}", other.map(|f| f.index)),
    }
    assert!(matches!(
        r.read_frame(u64::MAX),
        Err(BfsError::FrameOutOfRange { .. })
    ));
}

#[test]
fn unfinalized_recording_opens_with_every_frame_and_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(3);
    let h = header(2, 3);
    let frames = make_frames(2, 3, 5, &mut rng);

    // dropped without finalize: Drop flushes
    let p = dir.path().join("dropped.bfs");
    {
        let mut w = Writer::new(std::fs::File::create(&p).unwrap(), &h).unwrap();
        for (s, pos, vel) in &frames {
            w.write_frame(*s, pos, vel).unwrap();
        }
    }
    // flushed, then the process "dies" (no Drop runs)
    let q = dir.path().join("killed.bfs");
    let mut w = Writer::new(std::fs::File::create(&q).unwrap(), &h).unwrap();
    for (s, pos, vel) in &frames[..4] {
        w.write_frame(*s, pos, vel).unwrap();
    }
    w.flush().unwrap();
    std::mem::forget(w);

    for (path, n) in [(&p, 5u64), (&q, 4)] {
        let mut r = Reader::open(path).unwrap();
        assert_eq!(r.header().frame_count, None);
        assert_eq!(r.frame_count(), n);
        assert!(
            r.warnings().iter().any(|w| w.contains("not finalized") && w.contains(&format!("{n} complete frames"))),
            "{:?}",
            r.warnings()
        );
        for k in 0..n {
            assert_frame_eq(&r.read_frame(k).unwrap(), k, &frames[k as usize]);
        }
    }
}

#[test]
fn truncation_at_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(4);
    for (dim, finalize) in [(2u8, true), (3, true), (2, false)] {
        let h = header(dim, 3);
        let frames = make_frames(dim, 3, 4, &mut rng);
        let full = forge_bytes(&h, &frames, finalize);
        let hl = header_len(&full);
        let fs = 24 + 8 * dim as usize * 3;
        assert_eq!(full.len(), hl + 4 * fs);
        for len in 0..=full.len() {
            let got = catch_unwind(AssertUnwindSafe(|| {
                open_bytes(dir.path(), "cut.bfs", &full[..len]).map(|mut r| {
                    let n = r.frame_count();
                    let fr: Vec<Frame> = (0..n).map(|k| r.read_frame(k).unwrap()).collect();
                    (n, fr, r.warnings().to_vec())
                })
            }))
            .unwrap_or_else(|_| panic!("panic at length {len}"));
            if len < hl {
                assert!(got.is_err(), "length {len} < header {hl} must fail");
                continue;
            }
            let (n, fr, warnings) = got.unwrap_or_else(|e| panic!("length {len}: {e}"));
            let complete = (len - hl) / fs;
            assert_eq!(n as usize, complete, "length {len}");
            for (k, f) in fr.iter().enumerate() {
                assert_frame_eq(f, k as u64, &frames[k]);
            }
            if finalize && complete < 4 {
                let w = format!("file cut inside frame {complete}");
                assert!(
                    warnings.iter().any(|x| x.contains(&w)),
                    "{len}: {warnings:?}"
                );
            }
            if finalize && len == full.len() {
                assert!(warnings.is_empty());
            }
        }
    }
}

#[test]
fn bit_flip_in_a_frame_is_that_frame_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    let h = header(2, 3);
    let frames = make_frames(2, 3, 4, &mut rng);
    let full = forge_bytes(&h, &frames, true);
    let hl = header_len(&full);
    let fs = 24 + 16 * 3;
    for byte in hl..full.len() {
        let target = ((byte - hl) / fs) as u64;
        for bit in 0..8 {
            let mut b = full.clone();
            b[byte] ^= 1 << bit;
            let mut r = open_bytes(dir.path(), "flip.bfs", &b).unwrap();
            assert_eq!(r.frame_count(), 4);
            for k in 0..4u64 {
                let res = r.read_frame(k);
                if k == target {
                    match res {
                        Err(BfsError::CorruptFrame { frame }) => assert_eq!(frame, k),
                        other => panic!(
                            "byte {byte} bit {bit}: expected CorruptFrame, got {:?}",
                            other.map(|f| f.index)
                        ),
                    }
                } else {
                    assert_frame_eq(&res.unwrap(), k, &frames[k as usize]);
                }
            }
        }
    }
    let e = BfsError::CorruptFrame { frame: 12 };
    assert_eq!(e.to_string(), "frame 12 is corrupt (checksum mismatch)");
}

#[test]
fn bit_flip_in_the_header_is_an_error_or_a_safe_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(6);
    let h = header(3, 3);
    let frames = make_frames(3, 3, 4, &mut rng);
    let full = forge_bytes(&h, &frames, true);
    let hl = header_len(&full);
    for byte in 0..hl {
        for bit in 0..8 {
            let mut b = full.clone();
            b[byte] ^= 1 << bit;
            let res = catch_unwind(AssertUnwindSafe(|| open_bytes(dir.path(), "hflip.bfs", &b)))
                .unwrap_or_else(|_| panic!("panic on byte {byte} bit {bit}"));
            if (52..60).contains(&byte) {
                // frame_count is outside the CRC so finalize can patch it: any value is safe
                let mut r = res.unwrap();
                assert!(r.frame_count() <= 4);
                for k in 0..r.frame_count() {
                    assert_frame_eq(&r.read_frame(k).unwrap(), k, &frames[k as usize]);
                }
            } else {
                assert!(res.is_err(), "byte {byte} bit {bit} was accepted");
            }
        }
    }
}

#[test]
fn header_errors_are_typed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let full = forge_bytes(
        &header(2, 1),
        &vec![(0, vec![1.0, 2.0], vec![3.0, 4.0])],
        true,
    );

    let e = open_bytes(dir.path(), "magic.bfs", b"NOTABFSFILE AT ALL")
        .err()
        .unwrap();
    assert!(matches!(e, BfsError::BadMagic));
    assert!(e.to_string().starts_with("not a .bfs file"), "{e}");
    assert!(matches!(
        open_bytes(dir.path(), "empty.bfs", b""),
        Err(BfsError::BadMagic)
    ));

    let mut b = full.clone();
    b[8..10].copy_from_slice(&7u16.to_le_bytes());
    assert!(matches!(
        open_bytes(dir.path(), "ver.bfs", &b),
        Err(BfsError::UnsupportedVersion { found: 7 })
    ));

    let mut b = full.clone();
    b[40] ^= 1; // world size: covered by the CRC
    let e = open_bytes(dir.path(), "crc.bfs", &b).err().unwrap();
    assert!(
        matches!(&e, BfsError::CorruptHeader(m) if m.contains("checksum")),
        "{e}"
    );

    let e = open_bytes(dir.path(), "short.bfs", &full[..30])
        .err()
        .unwrap();
    assert!(
        matches!(&e, BfsError::CorruptHeader(m) if m.contains("ends inside the header")),
        "{e}"
    );

    let e = Reader::open(&dir.path().join("missing.bfs")).err().unwrap();
    assert!(matches!(e, BfsError::Io(_)));
    assert!(e.to_string().starts_with("i/o error: "), "{e}");
}

#[test]
fn species_ids_round_trip_as_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(12);
    for dim in [2u8, 3] {
        let mut h = header(dim, 5);
        h.species = vec![0, 0, 1, 2, 1];
        let frames = make_frames(dim, 5, 3, &mut rng);
        let bytes = forge_bytes(&h, &frames, true);
        assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), VERSION_SPECIES);
        let mut r = open_bytes(dir.path(), "s.bfs", &bytes).unwrap();
        assert_eq!(r.header().version, VERSION_SPECIES);
        assert_eq!(r.header().species, vec![0, 0, 1, 2, 1]);
        for (k, f) in frames.iter().enumerate() {
            assert_frame_eq(&r.read_frame(k as u64).unwrap(), k as u64, f);
        }
        // Without species: version 1, and not one byte more than before species existed.
        h.species.clear();
        let v1 = forge_bytes(&h, &frames, true);
        assert_eq!(u16::from_le_bytes([v1[8], v1[9]]), 1);
        assert!(header_len(&v1) < header_len(&bytes));
        assert!(open_bytes(dir.path(), "v1.bfs", &v1)
            .unwrap()
            .header()
            .species
            .is_empty());
    }
    // The ids must be one per agent, written and read.
    let mut h = header(2, 5);
    h.species = vec![0, 1];
    assert!(Writer::new(Cursor::new(Vec::new()), &h).is_err());
    h.species = vec![0; 5];
    let mut bytes = forge_bytes(&h, &make_frames(2, 5, 1, &mut rng), true);
    // The count field after the scene JSON says 4: refused by name, after a valid CRC.
    let json_end = 64 + h.scene_name.len() + 4 + h.scene_json.len();
    bytes[json_end..json_end + 4].copy_from_slice(&4u32.to_le_bytes());
    fix_header_crc(&mut bytes);
    match open_bytes(dir.path(), "bad.bfs", &bytes) {
        Err(BfsError::CorruptHeader(m)) => assert!(m.contains("species ids for 4 agents"), "{m}"),
        other => panic!(
            "expected a corrupt header, got {:?}",
            other.map(|r| r.header().clone())
        ),
    }
}

#[test]
fn a_version_1_recording_written_before_species_still_opens() {
    // tests/fixtures/v1-cuplan.bfs: `forge simulate cuplan --steps 3 --agents 64` by the build
    // before species existed. It opens as version 1 with no species, and today's build writes
    // the very same bytes for the same scene (a scene without species is unchanged).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-cuplan.bfs");
    let mut r = Reader::open(&fixture).unwrap();
    assert_eq!(r.header().version, 1);
    assert!(r.header().species.is_empty());
    assert_eq!(r.header().agents, 64);
    assert_eq!(r.frame_count(), 4);
    for k in 0..4 {
        assert_eq!(r.read_frame(k).unwrap().agents(2), 64);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("now.bfs");
    let st = std::process::Command::new(assert_cmd::cargo::cargo_bin("forge"))
        .args([
            "simulate", "cuplan", "--steps", "3", "--agents", "64", "--quiet", "-o",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(
        std::fs::read(&out).unwrap() == std::fs::read(&fixture).unwrap(),
        "today's build writes other bytes for the cuplan scene than the version 1 fixture"
    );
}

#[test]
fn writer_checks_its_input() {
    let mut bad = header(4, 3);
    assert!(Writer::new(Cursor::new(Vec::new()), &bad).is_err());
    bad.dim = 2;
    let mut w = Writer::new(Cursor::new(Vec::new()), &bad).unwrap();
    assert!(w.write_frame(0, &[0.0; 6], &[0.0; 5]).is_err());
    assert!(w.write_frame(0, &[0.0; 9], &[0.0; 9]).is_err());
    assert_eq!(w.frames_written(), 0);
    w.write_frame(0, &[0.0; 6], &[0.0; 6]).unwrap();
    assert_eq!(w.frames_written(), 1);
}

#[test]
fn writer_can_start_mid_stream() {
    // finalize patches relative to where the header began
    let mut cur = Cursor::new(vec![0xAAu8; 16]);
    cur.set_position(16);
    let mut w = Writer::new(cur, &header(2, 1)).unwrap();
    w.write_frame(5, &[1.0, 2.0], &[3.0, 4.0]).unwrap();
    let (_, cur) = w.finalize().unwrap();
    let b = cur.into_inner();
    let dir = tempfile::tempdir().unwrap();
    let mut r = open_bytes(dir.path(), "mid.bfs", &b[16..]).unwrap();
    assert!(r.warnings().is_empty());
    assert_eq!(r.header().frame_count, Some(1));
    assert_eq!(r.read_frame(0).unwrap().step, 5);
}

// ---------------------------------------------------------------------------------------
// BoidForge BFS1
// ---------------------------------------------------------------------------------------

#[test]
fn bfs1_finalized_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let frames = bfs1_frames(&[4, 4, 4], &mut rng, 0.0, 1000.0);
    let mut r = open_bytes(dir.path(), "bf.bfs", &bfs1_bytes(&frames, 4, true)).unwrap();
    let h = r.header().clone();
    assert_eq!(h.source, SourceFormat::Bfs1);
    assert_eq!(
        (h.dim, h.model, h.boundary),
        (2, Model::Boids, Boundary::Open)
    );
    assert_eq!((h.agents, h.record_every, h.seed, h.dt), (4, 1, 7, 0.05));
    assert_eq!(h.frame_count, Some(3));
    assert_eq!(
        (h.scene_name.as_str(), h.scene_json.as_str()),
        ("bfs1", "{}")
    );
    assert!(h.world_inferred);
    assert_eq!(h.world_size, [1920.0, 1080.0, 0.0]);
    assert_eq!(r.warnings().len(), 1, "{:?}", r.warnings());
    assert_eq!(
        r.warnings()[0],
        "BFS1 stores no world size: inferred 1920 x 1080 from positions"
    );
    assert_eq!(r.frame_count(), 3);
    for k in [2u64, 0, 1] {
        assert_bfs1_frame(&r.read_frame(k).unwrap(), k, &frames[k as usize]);
    }
    assert!(matches!(
        r.read_frame(3),
        Err(BfsError::FrameOutOfRange { frame: 3, count: 3 })
    ));
}

#[test]
fn bfs1_world_inferred_from_positions_outside_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(8);
    let mut frames = bfs1_frames(&[3], &mut rng, 0.0, 500.0);
    frames[0].1[1] = 2500.2;
    frames[0].2[2] = 900.0;
    let r = open_bytes(dir.path(), "big.bfs", &bfs1_bytes(&frames, 3, true)).unwrap();
    assert_eq!(r.header().world_size, [2501.0, 900.0, 0.0]);
    assert!(r
        .warnings()
        .iter()
        .any(|w| w == "BFS1 stores no world size: inferred 2501 x 900 from positions"));
}

#[test]
fn bfs1_streaming_varying_n_and_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(9);
    let frames = bfs1_frames(&[2, 5, 0, 3], &mut rng, 0.0, 1000.0);
    let full = bfs1_bytes(&frames, 5, false);
    let mut r = open_bytes(dir.path(), "st.bfs", &full).unwrap();
    assert_eq!(r.header().frame_count, None);
    assert_eq!(r.header().agents, 2);
    assert_eq!(r.frame_count(), 4);
    assert!(r.warnings().iter().any(|w| w.contains("not finalized")));
    for k in 0..4 {
        assert_bfs1_frame(&r.read_frame(k).unwrap(), k, &frames[k as usize]);
    }

    // every cut of the finalized and the streaming file
    let ends: Vec<usize> = frames
        .iter()
        .scan(32usize, |at, f| {
            *at += 8 + 16 * f.1.len();
            Some(*at)
        })
        .collect();
    for finalized in [true, false] {
        let full = bfs1_bytes(&frames, 5, finalized);
        for len in 0..=full.len() {
            let res = catch_unwind(AssertUnwindSafe(|| {
                open_bytes(dir.path(), "cut1.bfs", &full[..len])
            }))
            .unwrap_or_else(|_| panic!("panic at {len}"));
            if len < 32 {
                assert!(res.is_err(), "{len}");
                continue;
            }
            let mut r = res.unwrap();
            let complete = ends.iter().filter(|&&e| e <= len).count();
            assert_eq!(r.frame_count() as usize, complete, "{len}");
            for (k, want) in frames.iter().enumerate().take(complete) {
                assert_bfs1_frame(&r.read_frame(k as u64).unwrap(), k as u64, want);
            }
            if finalized && complete < 4 {
                let w = format!("file cut inside frame {complete}");
                assert!(
                    r.warnings().iter().any(|x| x.contains(&w)),
                    "{len}: {:?}",
                    r.warnings()
                );
            }
        }
    }
}

#[test]
fn bfs1_frame_larger_than_max_boids_stops_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(10);
    let frames = bfs1_frames(&[2, 6, 2], &mut rng, 0.0, 100.0);
    let r = open_bytes(dir.path(), "mb.bfs", &bfs1_bytes(&frames, 4, true)).unwrap();
    assert_eq!(r.frame_count(), 1);
    assert!(
        r.warnings()
            .iter()
            .any(|w| w.contains("frame 1 is corrupt")),
        "{:?}",
        r.warnings()
    );

    let mut b = bfs1_bytes(&frames, 8, true);
    b[8] = 3; // dim
    assert!(matches!(
        open_bytes(dir.path(), "d3.bfs", &b),
        Err(BfsError::CorruptHeader(_))
    ));
    let mut b = bfs1_bytes(&frames, 8, true);
    b[4] = 2; // version
    assert!(matches!(
        open_bytes(dir.path(), "v2.bfs", &b),
        Err(BfsError::UnsupportedVersion { found: 2 })
    ));
}

// ---------------------------------------------------------------------------------------
// Mutation fuzzing
// ---------------------------------------------------------------------------------------

fn random_forge(rng: &mut Rng) -> Vec<u8> {
    let dim = 2 + rng.below(2) as u8;
    let agents = rng.below(5) as u32;
    let count = rng.below(6) as usize;
    let frames = make_frames(dim, agents, count, rng);
    let mut h = header(dim, agents);
    h.scene_name = "n".repeat(rng.below(12) as usize);
    h.scene_json = "{}".repeat(rng.below(20) as usize);
    // Half of them version 2, with species ids.
    if rng.below(2) == 0 {
        h.species = (0..agents).map(|_| rng.below(4) as u8).collect();
    }
    forge_bytes(&h, &frames, rng.below(3) != 0)
}

fn random_bfs1(rng: &mut Rng) -> Vec<u8> {
    let ns: Vec<usize> = (0..rng.below(5)).map(|_| rng.below(5) as usize).collect();
    let frames = bfs1_frames(&ns, rng, -100.0, 3000.0);
    bfs1_bytes(&frames, 4 + rng.below(3) as i32 - 1, rng.below(2) == 0)
}

/// Recomputes the forge header CRC, if the header is intact enough to find it, so that
/// mutated fields reach the checks behind the CRC.
fn fix_header_crc(b: &mut [u8]) {
    if b.len() < 64 || &b[..8] != b"FORGEBFS" {
        return;
    }
    let hl = header_len(b);
    if hl < 72 || hl > b.len() {
        return;
    }
    let crc_at = hl - 8;
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..52]);
    h.update(&b[60..crc_at]);
    let crc = h.finalize();
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
}

fn mutate(b: &mut Vec<u8>, rng: &mut Rng) {
    const U32S: [u32; 7] = [0, 1, 2, 3, 0x7FFF_FFFF, 0x8000_0000, u32::MAX];
    const U64S: [u64; 6] = [0, 1, 1 << 31, 1 << 63, u64::MAX - 1, u64::MAX];
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        if b.is_empty() {
            b.push(rng.next() as u8);
            continue;
        }
        // favour the headers, where the lengths live
        let span = if rng.below(2) == 0 {
            b.len().min(96)
        } else {
            b.len()
        };
        let at = rng.below(span as u64) as usize;
        match rng.below(9) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = 0x00,
            2 => b[at] = 0xFF,
            3 => b[at] = rng.next() as u8,
            4 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
            5 => {
                let k = 1 + rng.below(16) as usize;
                let bytes: Vec<u8> = (0..k).map(|_| rng.next() as u8).collect();
                b.splice(at..at, bytes);
            }
            6 => {
                let at = at & !3;
                if at + 4 <= b.len() {
                    let v = U32S[rng.below(U32S.len() as u64) as usize];
                    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                }
            }
            7 => {
                let at = at & !3;
                if at + 8 <= b.len() {
                    let v = U64S[rng.below(U64S.len() as u64) as usize];
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
            _ => {
                let k = 1 + rng.below(16) as usize;
                let end = (at + k).min(b.len());
                b.drain(at..end);
            }
        }
    }
    if rng.below(2) == 0 {
        fix_header_crc(b);
    }
}

/// Opens and reads everything a reader offers; returns how many frames read fine.
fn exercise(path: &Path) -> usize {
    let Ok(mut r) = Reader::open(path) else {
        return 0;
    };
    let h = r.header().clone();
    assert!(h.dim == 2 || h.dim == 3);
    assert!(u64::from(h.agents) <= MAX_AGENTS);
    let n = r.frame_count();
    let mut ok = 0;
    let mut f = Frame::empty();
    for k in 0..n {
        if r.read_frame_into(k, &mut f).is_ok() {
            ok += 1;
            assert_eq!(f.index, k);
            assert_eq!(f.pos.len(), f.vel.len());
            assert_eq!(f.pos.len() % h.dim as usize, 0);
        }
    }
    assert!(matches!(
        r.read_frame(n),
        Err(BfsError::FrameOutOfRange { .. })
    ));
    assert!(matches!(
        r.read_frame(u64::MAX),
        Err(BfsError::FrameOutOfRange { .. })
    ));
    ok
}

#[test]
fn fuzz_mutations_never_panic_or_allocate_absurdly() {
    const ITERATIONS: usize = 4000;
    const ALLOC_LIMIT: usize = 16 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.bfs");
    let mut rng = Rng(0x5EED_F0E5);
    let mut opened = 0;
    let mut frames_read = 0;
    let mut failures = Vec::new();
    LARGEST_ALLOC.store(0, Ordering::Relaxed);
    for i in 0..ITERATIONS {
        let mut b = if i % 2 == 0 {
            random_forge(&mut rng)
        } else {
            random_bfs1(&mut rng)
        };
        mutate(&mut b, &mut rng);
        std::fs::write(&path, &b).unwrap();
        match catch_unwind(AssertUnwindSafe(|| exercise(&path))) {
            Ok(n) => {
                frames_read += n;
                opened += usize::from(Reader::open(&path).is_ok());
            }
            Err(_) => {
                let keep = dir.path().join(format!("panic-{i}.bfs"));
                std::fs::write(&keep, &b).unwrap();
                failures.push(format!("iteration {i}: {} bytes", b.len()));
            }
        }
    }
    eprintln!(
        "fuzz: opened {opened}, frames read {frames_read}, largest alloc {}",
        LARGEST_ALLOC.load(Ordering::Relaxed)
    );
    assert!(failures.is_empty(), "reader panicked: {failures:?}");
    let largest = LARGEST_ALLOC.load(Ordering::Relaxed);
    assert!(largest < ALLOC_LIMIT, "largest allocation {largest} bytes");
    // the mutations must leave enough files valid that reading paths are exercised too
    assert!(
        opened > ITERATIONS / 10,
        "only {opened} mutated files opened"
    );
    assert!(
        frames_read > ITERATIONS / 10,
        "only {frames_read} frames read"
    );
}
