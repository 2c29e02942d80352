"""Recording: forge's reader, frames read from the file it opened; damaged files fail clearly."""

import json
import mmap
import os
import struct
import subprocess
import textwrap
import zlib

import numpy as np
import pytest

import forge_flocks as ff
from conftest import FORGE, PYTHON, forge


def test_len_index_slice_iter(cli_recording):
    rec = ff.Recording(cli_recording)
    assert len(rec) == 21
    assert rec.header["format"] == "forge" and rec.header["agents"] == 1500
    assert rec.scene["name"] == "small" and rec.scene["agents"] == 1500
    f = rec[-1]
    assert f.index == 20 and f.step == 25
    assert f.time == pytest.approx(25 * 0.05)
    assert [g.index for g in rec[2:10:3]] == [2, 5, 8]
    assert [g.step for g in rec] == list(range(5, 26))
    with pytest.raises(IndexError):
        rec[21]
    with pytest.raises(IndexError):
        rec[-22]
    with pytest.raises(TypeError):
        rec["a"]


def test_frames_are_read_only_arrays_of_their_own(cli_recording):
    rec = ff.Recording(cli_recording)
    f = rec[3]
    for a in (f.positions, f.velocities):
        assert a.dtype == np.float32 and a.shape == (1500, 2)
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0, 0] = 0.0
        # Read from the file into memory of their own: nothing maps the file.
        base = a
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        assert not isinstance(base, mmap.mmap)
    assert not np.shares_memory(f.positions, rec[3].positions)


def test_a_file_cut_short_after_opening_is_an_error_not_a_signal(tmp_path, cli_recording):
    # Run in a child: a SIGBUS there (a mapped frame past the new end) shows as its status.
    p = tmp_path / "cut.bfs"
    p.write_bytes(cli_recording.read_bytes())
    script = textwrap.dedent(f"""
        import os, forge_flocks as ff
        rec = ff.Recording({str(p)!r})
        f = rec[18]
        os.truncate({str(p)!r}, 4096)
        try:
            rec[19].positions.sum()
        except ff.RecordingError as e:
            print("error:", e)
        try:
            rec.analyze(frames=(15, 20), bootstrap=0)
        except ff.RecordingError as e:
            print("analyze:", e)
        print(float(f.positions.sum()))
    """)
    r = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "error:" in r.stdout and "cut.bfs" in r.stdout, r.stdout
    analyzed = [line for line in r.stdout.splitlines() if line.startswith("analyze:")]
    assert analyzed and "cut.bfs" in analyzed[0], r.stdout


def test_a_file_replaced_after_opening_is_not_read_in_its_place(tmp_path, cli_recording, small_scene):
    p = tmp_path / "swap.bfs"
    p.write_bytes(cli_recording.read_bytes())
    rec = ff.Recording(p)
    other = tmp_path / "other.bfs"
    ff.simulate(dict(small_scene, seed=99), other, steps=20)
    assert not np.array_equal(ff.Recording(other)[10].positions, rec[10].positions)
    os.replace(other, p)
    # The reader holds the file it opened: the old frames, consistent with the old header.
    want = ff.Recording(cli_recording)[10].positions
    assert np.array_equal(rec[10].positions, want)
    # The methods that go by the path read that file or none: never the new one.
    for take in (
        lambda: rec.to_usd(tmp_path / "x.usda"),
        lambda: ff.still(rec, 10, size=[64, 36]),
        lambda: ff.render(rec, tmp_path / "x.mp4", size=[64, 36]),
    ):
        with pytest.raises(ff.RecordingError, match="not the file this Recording opened"):
            take()
    assert not (tmp_path / "x.usda").exists() and not (tmp_path / "x.mp4").exists()


def test_non_finite_values_are_refused_as_the_cli_refuses_them(tmp_path, cli_recording):
    # A NaN written with a valid checksum: forge's reader takes the frame, and the rule that
    # forge still/render keep (a non-finite value is damage) holds here too.
    b = bytearray(cli_recording.read_bytes())
    rec = ff.Recording(cli_recording)
    at, step, n = rec._reader.locate(5, False)
    b[at + 4 * 7 : at + 4 * 8] = struct.pack("<f", float("nan"))
    # Frame prefix: tag (4), crc (4), index (8), step (8); the CRC covers index, step, arrays.
    prefix = at - 24
    body = bytes(b[prefix + 8 : at + 2 * 4 * 2 * n])
    struct.pack_into("<I", b, prefix + 4, zlib.crc32(body))
    p = tmp_path / "nan.bfs"
    p.write_bytes(bytes(b))
    bad = ff.Recording(p)
    bad[4]
    for take in (lambda: bad[5], bad.metrics, lambda: bad._reader.frame_metrics(5)):
        with pytest.raises(ff.RecordingError, match="frame 5.*not a finite number"):
            take()
    # analyze keeps the same rule, with the same exception, naming the file.
    with pytest.raises(ff.RecordingError, match=r"nan\.bfs: frame 5: .*not a finite number"):
        bad.analyze(bootstrap=0)
    r = subprocess.run(
        [str(FORGE), "still", str(p), "--frame", "5", "-o", str(tmp_path / "x.png")],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "frame 5" in r.stderr, r.stderr


def test_frames_equal_forge_export(tmp_path, cli_recording):
    npz = tmp_path / "x.npz"
    forge("export", cli_recording, "-o", npz, "-q")
    d = np.load(npz)
    rec = ff.Recording(cli_recording)
    for k in (0, 7, 20):
        assert np.array_equal(rec[k].positions, d["pos"][k])
        assert np.array_equal(rec[k].velocities, d["vel"][k])
    m = rec.metrics()
    assert np.array_equal(m["step"], d["step"])
    for key in ("polarization", "mean_speed", "nn_distance", "pairwise_distance"):
        assert np.array_equal(m[key], d[key]), key


def test_not_found_and_not_a_recording(tmp_path, small_file):
    with pytest.raises(FileNotFoundError, match="nope.bfs"):
        ff.Recording(tmp_path / "nope.bfs")
    junk = tmp_path / "junk.bfs"
    junk.write_bytes(b"hello world, not a recording at all")
    with pytest.raises(ff.RecordingError, match="junk.bfs"):
        ff.Recording(junk)
    # A scene where a recording goes: the CLI's hint.
    with pytest.raises(ff.RecordingError, match="scene file"):
        ff.Recording(small_file)


def test_damaged_header(tmp_path, cli_recording):
    b = bytearray(cli_recording.read_bytes())
    b[70] ^= 0xFF  # inside the scene JSON: the header CRC fails
    p = tmp_path / "hdr.bfs"
    p.write_bytes(bytes(b))
    with pytest.raises(ff.RecordingError, match="hdr.bfs"):
        ff.Recording(p)
    p.write_bytes(bytes(b[:40]))
    with pytest.raises(ff.RecordingError):
        ff.Recording(p)


def test_damaged_frame_is_found_by_its_checksum(tmp_path, cli_recording):
    rec = ff.Recording(cli_recording)
    at, _, _ = rec._reader.locate(4, False)
    b = bytearray(cli_recording.read_bytes())
    b[at + 100] ^= 0x01
    p = tmp_path / "frame.bfs"
    p.write_bytes(bytes(b))
    bad = ff.Recording(p)
    assert len(bad) == 21
    bad[3]
    with pytest.raises(ff.RecordingError, match="frame 4"):
        bad[4]
    with pytest.raises(ff.RecordingError, match="frame 4"):
        bad.metrics()
    # Without verify only the tag and index are checked: the flipped bit is read as it is.
    fast = ff.Recording(p, verify=False)
    assert not np.array_equal(fast[4].positions, rec[4].positions)


def test_truncated_file_keeps_its_complete_frames(tmp_path, cli_recording):
    b = cli_recording.read_bytes()
    p = tmp_path / "cut.bfs"
    p.write_bytes(b[: len(b) - 1000])
    rec = ff.Recording(p)
    assert len(rec) == 20
    assert rec.warnings
    assert np.array_equal(rec[19].positions, ff.Recording(cli_recording)[19].positions)


def write_bfs1(path, frames, dt=0.05, seed=9):
    """BoidForge's BFS1 (the layout in forge's DESIGN.md), written independently of forge."""
    with open(path, "wb") as f:
        n = frames[0][1].shape[0]
        f.write(b"BFS1" + struct.pack("<HHBB2xifIi4x", 1, 0, 2, 0, n, dt, seed, len(frames)))
        for t, pos, vel in frames:
            f.write(struct.pack("<ii", t, pos.shape[0]))
            for a in (pos[:, 0], pos[:, 1], vel[:, 0], vel[:, 1]):
                f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def test_bfs1(tmp_path):
    rng = np.random.default_rng(1)
    frames = [
        (t, (rng.random((50, 2)) * [1900, 1000]).astype(np.float32), rng.standard_normal((50, 2)).astype(np.float32))
        for t in (0, 1, 2)
    ]
    p = tmp_path / "bf.bfs"
    write_bfs1(p, frames)
    rec = ff.Recording(p)
    assert rec.header["format"] == "bfs1" and len(rec) == 3 and rec.scene is None
    assert rec.header["world_inferred"]
    for k, (t, pos, vel) in enumerate(frames):
        assert rec[k].step == t
        assert np.array_equal(rec[k].positions, pos)
        assert np.array_equal(rec[k].velocities, vel)


def test_analyze_is_forge_analyze(tmp_path, cli_recording):
    """``Recording.analyze`` runs the same code as ``forge analyze --json``: the same numbers,
    as NumPy arrays."""
    rec = ff.Recording(cli_recording)
    a = rec.analyze(bins=30, k_max=8)
    out = forge("analyze", cli_recording, "--json", "--bins", "30", "--k-max", "8").stdout
    want = json.loads(out)
    assert a["frames"] == want["frames"] and a["method"] == want["method"]
    for key in ("r", "c", "g", "q"):
        got = a[key]
        ref = np.array([np.nan if x is None else x for x in want[key]])
        assert isinstance(got, np.ndarray) and got.shape == (30,)
        np.testing.assert_array_equal(got, ref)
    assert a["correlation_length"] == want["correlation_length"]
    assert a["susceptibility"] == want["susceptibility"]
    np.testing.assert_array_equal(a["anisotropy"]["k"], np.arange(1, 9))
    proj = a["anisotropy"]["projection"]
    assert isinstance(proj, np.ndarray) and proj.shape == (8,)
    ref = np.array([np.nan if x is None else x for x in want["anisotropy"]["projection"]])
    np.testing.assert_array_equal(proj, ref)
    for key in ("principal_axes", "aspect_ratios", "nearest_neighbour", "border_density"):
        assert a[key] == want[key], key
    one = rec.analyze(frames=(1, 2), bootstrap=0)
    assert one["frames"] == [1, 2] and one["frames_analysed"] == 1


def test_analyze_refuses_bad_arguments(cli_recording):
    rec = ff.Recording(cli_recording)
    with pytest.raises(ValueError, match="method"):
        rec.analyze(method="fast")
    # Every argument checked by the package: a TypeError or a ValueError naming it.
    bad = [
        (dict(every=-1), ValueError, r"^every: must be a whole number in 1\.\.="),
        (dict(every=0), ValueError, r"^every: must be a whole number in 1\.\.="),
        (dict(every=1.5), TypeError, r"^every: must be a whole number .*got float"),
        (dict(bins=0), ValueError, r"^bins: must be a whole number in 1\.\.=10000, got 0"),
        (dict(bins=10**9), ValueError, r"^bins: "),
        (dict(k_max=-3), ValueError, r"^k_max: "),
        (dict(bootstrap=-1), ValueError, r"^bootstrap: "),
        (dict(bootstrap="many"), TypeError, r"^bootstrap: .*got str"),
        (dict(r_max=float("nan")), ValueError, r"^r_max: must be a distance above 0, got nan"),
        (dict(r_max=float("inf")), ValueError, r"^r_max: must be a distance above 0, got inf"),
        (dict(r_max=-2), ValueError, r"^r_max: "),
        (dict(r_max="far"), TypeError, r"^r_max: .*got str"),
        (dict(field=3), TypeError, r"^field: .*got int"),
        (dict(mean="all"), ValueError, r"^mean: must be one of 'frame', 'frames', got 'all'"),
        (dict(frames=(-1, 3)), ValueError, r"^frames: must be a whole number"),
        (dict(frames=5), TypeError, r"^frames: must be a pair"),
        # Checked against the recording by forge, named as the argument all the same.
        (dict(r_max=1e9), ValueError, r"^r_max: 1000000000 is beyond half the periodic box"),
        (dict(frames=(0, 10_000)), ValueError, r"^frames: ends at frame 10000 but .*cli\.bfs"),
    ]
    for kw, kind, pattern in bad:
        with pytest.raises(kind, match=pattern):
            rec.analyze(**kw)
        with pytest.raises(kind):
            # Never OverflowError or ForgeError.
            try:
                rec.analyze(**kw)
            except (OverflowError, ff.ForgeError) as e:
                raise AssertionError(f"{kw}: {type(e).__name__}: {e}")


def test_to_usd_refuses_bad_arguments_naming_them(tmp_path, cli_recording):
    rec = ff.Recording(cli_recording)
    out = tmp_path / "x.usda"
    bad = [
        (dict(path=b"x.usda"), TypeError, r"^path: must be a str or an os\.PathLike of str, got bytes"),
        (dict(path=out, every=-1), ValueError, r"^every: must be a whole number in 1\.\.="),
        (dict(path=out, every=0), ValueError, r"^every: "),
        (dict(path=out, frames=(-2, 5)), ValueError, r"^frames: "),
        (dict(path=out, force="yes"), TypeError, r"^force: "),
        (dict(path=out, color=7), TypeError, r"^color: "),
    ]
    for kw, kind, pattern in bad:
        with pytest.raises(kind, match=pattern):
            rec.to_usd(**kw)
    assert not out.exists()
