"""Recording: forge's reader, frames memory-mapped; damaged files fail clearly."""

import mmap
import struct

import numpy as np
import pytest

import forge_flocks as ff
from conftest import forge


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


def test_frames_are_read_only_views_of_the_mapping(cli_recording):
    rec = ff.Recording(cli_recording)
    f = rec[3]
    for a in (f.positions, f.velocities):
        assert a.dtype == np.float32 and a.shape == (1500, 2)
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0, 0] = 0.0
        # No copy: the array's memory is the file's mapping.
        base = a
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        assert isinstance(base, mmap.mmap)
        assert np.shares_memory(a, rec._mapping())


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
