"""forge export to extended XYZ and USD, opened in the tools they are for: ASE, OVITO and
OpenUSD (usd-core)."""

import importlib

import numpy as np
import pytest

import forge_flocks as ff
from conftest import forge


def need(module, pip):
    """The tool a user opens the file with; scripts/py-test.sh installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(f"{module} is missing ({e}): pip install {pip}")


@pytest.fixture(scope="module")
def two_species(tmp_path_factory):
    """Two species in a wrapping 2D world, exported every other frame."""
    d = tmp_path_factory.mktemp("xyz")
    forge("simulate", "two-flocks", "--agents", 60, "--steps", 6, "-o", d / "tf.bfs", "-q")
    forge("export", d / "tf.bfs", "-o", d / "tf.xyz", "--every", 2, "-q")
    return d / "tf.bfs", d / "tf.xyz"


@pytest.fixture(scope="module")
def three_d(tmp_path_factory):
    """50 boids in clusters in a cube that wraps every way (what murmuration3d was before it
    flew over a roost in an open sky)."""
    d = tmp_path_factory.mktemp("xyz3")
    scene = d / "cube.json"
    scene.write_text(
        '{"name": "cube", "model": "boids", "dim": 3, "agents": 50, "steps": 3, "warmup": 200, '
        '"dt": 0.05, "seed": 9, "world": {"size": [800, 800, 800], "boundary": "wrap"}, '
        '"boids": {"r_sep": 8, "r_ali": 25, "r_coh": 40, "w_sep": 200, "w_ali": 1.6, '
        '"w_coh": 0.6, "max_force": 260, "v_min": 70, "v_max": 160}, '
        '"init": {"layout": "clusters", "count": 8, "radius": 80, "velocity": "aligned"}}'
    )
    forge("simulate", scene, "-o", d / "s.bfs", "-q")
    forge("export", d / "s.bfs", "-o", d / "s.xyz", "-q")
    return d / "s.bfs", d / "s.xyz"


def species_names(rec):
    """Each agent's species name: the scene's species own consecutive agents, in order."""
    return [s["name"] for s in rec.scene["species"] for _ in range(s["agents"])]


def test_ase_reads_every_frame_exactly(two_species):
    ase_io = need("ase.io", "ase")
    bfs, xyz = two_species
    rec = ff.Recording(bfs)
    frames = ase_io.read(xyz, index=":", format="extxyz")
    assert len(frames) == len(range(0, len(rec), 2))
    for atoms, k in zip(frames, range(0, len(rec), 2)):
        f = rec[k]
        n = len(f.positions)
        assert len(atoms) == n
        # The shortest decimals of float32 read back to the same float32.
        assert np.array_equal(atoms.positions[:, :2].astype(np.float32), f.positions)
        assert np.array_equal(atoms.arrays["velo"][:, :2].astype(np.float32), f.velocities)
        assert not atoms.positions[:, 2].any() and not atoms.arrays["velo"][:, 2].any()
        assert np.array_equal(atoms.arrays["id"], np.arange(n))
        assert atoms.info["Step"] == f.step and atoms.info["Frame"] == k
        assert atoms.info["Time"] == pytest.approx(f.time)
        assert np.allclose(atoms.cell.lengths(), rec.header["world"] + [1.0])
        assert list(atoms.pbc) == [True, True, False]


def test_species_names_per_agent(two_species):
    bfs, xyz = two_species
    rec = ff.Recording(bfs)
    lines = xyz.read_text().splitlines()
    n = int(lines[0])
    assert [line.split()[0] for line in lines[2:2 + n]] == species_names(rec)
    assert lines[1].startswith('Lattice="1600 0 0 0 900 0 0 0 1" Origin="0 0 0" pbc="T T F" ')


def test_ovito_reads_types_box_and_trajectory(two_species, three_d):
    ovito_io = need("ovito.io", "ovito")
    bfs, xyz = two_species
    rec = ff.Recording(bfs)
    p = ovito_io.import_file(str(xyz), multiple_frames=True)
    assert p.source.num_frames == len(range(0, len(rec), 2))
    last = p.source.num_frames - 1
    data = p.compute(last)
    f = rec[2 * last]
    types = data.particles.particle_types
    names = [types.type_by_id(t).name for t in types[...]]
    assert names == species_names(rec)
    assert np.array_equal(np.asarray(data.particles.positions)[:, :2].astype(np.float32), f.positions)
    assert np.array_equal(np.asarray(data.particles["Velocity"])[:, :2].astype(np.float32), f.velocities)
    assert np.array_equal(np.asarray(data.particles.identifiers), np.arange(len(f.positions)))
    assert data.attributes["Step"] == f.step
    cell = np.asarray(data.cell[...])
    assert np.allclose(np.diag(cell[:, :3]), rec.header["world"] + [1.0])
    assert tuple(data.cell.pbc) == (True, True, False)
    # 3D as recorded, in a box that wraps every way.
    bfs3, xyz3 = three_d
    rec3 = ff.Recording(bfs3)
    data3 = ovito_io.import_file(str(xyz3), multiple_frames=True).compute(len(rec3) - 1)
    assert np.array_equal(np.asarray(data3.particles.positions).astype(np.float32), rec3[-1].positions)
    assert tuple(data3.cell.pbc) == (True, True, True)


def test_ovito_coordination_agrees_with_forge_analyze(tmp_path, three_d):
    """OVITO's coordination analysis of the .xyz counts the neighbours forge's pair function
    counts: the mean number within r, summed from g(r) over its shells, at three radii."""
    need("ovito.io", "ovito")
    from ovito.io import import_file
    from ovito.modifiers import CoordinationAnalysisModifier
    import json

    bfs, xyz = three_d
    rec = ff.Recording(bfs)
    k = len(rec) - 1
    out = forge("analyze", bfs, "--frames", f"{k}..{k + 1}", "--json")
    a = json.loads(out.stdout)
    assert a["method"] == "exact" and a["periodic"]
    r, g = np.array(a["r"]), np.array(a["g"])
    width = r[1] - r[0]
    edges = np.concatenate([[r[0] - width / 2], r + width / 2])
    n = len(rec[k].positions)
    density = (n - 1) / np.prod(rec.header["world"])
    counted = np.cumsum(g * density * 4 / 3 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3))
    for b in (5, 20, 60):
        p = import_file(str(xyz), multiple_frames=True)
        p.modifiers.append(CoordinationAnalysisModifier(cutoff=float(edges[b])))
        coordination = np.asarray(p.compute(k).particles["Coordination"])
        assert coordination.mean() > 0.5
        np.testing.assert_allclose(coordination.mean(), counted[b - 1], rtol=1e-6)


@pytest.fixture(scope="module")
def usd_export(tmp_path_factory):
    """Two species in 2D, exported to USD text every other frame."""
    d = tmp_path_factory.mktemp("usd")
    forge("simulate", "two-flocks", "--agents", 60, "--steps", 6, "-o", d / "tf.bfs", "-q")
    forge("export", d / "tf.bfs", "-o", d / "tf.usda", "--every", 2, "-q")
    return d / "tf.bfs", d / "tf.usda"


def test_usd_opens_in_openusd_and_holds_every_frame_exactly(usd_export):
    pxr = need("pxr.Usd", "usd-core")
    from pxr import Usd, UsdGeom, UsdValidation

    bfs, usda = usd_export
    rec = ff.Recording(bfs)
    stage = Usd.Stage.Open(str(usda))
    # OpenUSD's own validators (what usdchecker runs): no error.
    ctx = UsdValidation.ValidationContext(UsdValidation.ValidationRegistry().GetOrLoadAllValidators())
    errors = [e.GetMessage() for e in ctx.Validate(stage)
              if e.GetType() == UsdValidation.ValidationErrorType.Error]
    assert errors == []
    assert stage.GetDefaultPrim().GetPath() == "/Flock"
    assert UsdGeom.GetStageUpAxis(stage) == "Z" and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    fps = stage.GetTimeCodesPerSecond()
    assert fps == 30.0
    pts = UsdGeom.Points(stage.GetPrimAtPath("/Flock/Agents"))
    kept = list(range(0, len(rec), 2))
    assert pts.GetPointsAttr().GetTimeSamples() == [float(k) for k in kept]
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (kept[0], kept[-1])
    scene = rec.scene
    dt, every = rec.header["dt"], rec.header["record_every"]
    for k in kept:
        f = rec[k]
        n = len(f.positions)
        p = np.array(pts.GetPointsAttr().Get(k), dtype=np.float32)
        assert p.shape == (n, 3) and not p[:, 2].any()
        assert np.array_equal(p[:, :2], f.positions)  # float32 for float32
        v = np.array(pts.GetVelocitiesAttr().Get(k), dtype=np.float32)
        # World units per second of stage time: a time code is record_every steps of dt.
        np.testing.assert_allclose(v[:, :2], f.velocities * (dt * every * fps), rtol=1e-6)
        lo, hi = np.array(pts.GetExtentAttr().Get(k))
        assert np.array_equal(lo[:2], f.positions.min(axis=0))
        assert np.array_equal(hi[:2], f.positions.max(axis=0))
    assert list(pts.GetIdsAttr().Get()) == list(range(60))
    species = UsdGeom.PrimvarsAPI(pts).GetPrimvar("species")
    want = [i for i, s in enumerate(scene["species"]) for _ in range(s["agents"])]
    assert list(species.Get()) == want and species.GetInterpolation() == "vertex"
    colours = np.array(pts.GetDisplayColorAttr().Get())
    assert colours.shape == (60, 3)
    assert len({tuple(c) for c in colours}) == 2  # one colour per species
    world = UsdGeom.Cube(stage.GetPrimAtPath("/Flock/World"))
    assert world.GetPurposeAttr().Get() == "guide"


COMING_AND_GOING = """{"model": "boids", "dim": 2, "dt": 0.05, "steps": 40, "seed": 3,
 "world": {"size": [400, 300], "boundary": "wrap"},
 "boids": {"r_sep": 7, "r_ali": 30, "r_coh": 50, "max_force": 150, "v_min": 60, "v_max": 170},
 "species": [
   {"name": "starling", "agents": 150},
   {"name": "falcon", "agents": 2, "role": "predator",
    "boids": {"v_max": 160, "chase_radius": 300, "w_chase": 300},
    "render": {"colour": "#ff0000"}}],
 "timeline": [{"step": 10, "add": ["species[1]"]}, {"step": 25, "remove": ["species[1]"]}]}"""


def test_usd_of_a_species_that_comes_and_goes(tmp_path):
    """The falcons come in at step 10 and leave at 25: each time sample holds the agents in the
    world, with their ids, species and colours sampled alongside."""
    need("pxr.Usd", "usd-core")
    from pxr import Usd, UsdGeom, UsdValidation

    (tmp_path / "s.json").write_text(COMING_AND_GOING)
    bfs, usda = tmp_path / "s.bfs", tmp_path / "s.usda"
    forge("simulate", tmp_path / "s.json", "-o", bfs, "-q")
    forge("export", bfs, "-o", usda, "--every", 5, "-q")
    rec = ff.Recording(bfs)
    stage = Usd.Stage.Open(str(usda))
    ctx = UsdValidation.ValidationContext(UsdValidation.ValidationRegistry().GetOrLoadAllValidators())
    assert [e.GetMessage() for e in ctx.Validate(stage)
            if e.GetType() == UsdValidation.ValidationErrorType.Error] == []
    pts = UsdGeom.Points(stage.GetPrimAtPath("/Flock/Agents"))
    species = UsdGeom.PrimvarsAPI(pts).GetPrimvar("species")
    kinds = np.array([0] * 150 + [1] * 2)
    counts = {}
    for k in range(0, len(rec), 5):
        f = rec[k]
        there = np.flatnonzero(f.present)
        counts[k] = len(there)
        p = np.array(pts.GetPointsAttr().Get(k), dtype=np.float32)
        assert np.array_equal(p[:, :2], f.positions[there]), f"frame {k}"
        assert len(pts.GetVelocitiesAttr().Get(k)) == len(there)
        assert list(pts.GetIdsAttr().Get(k)) == list(there)
        assert list(species.Get(k)) == list(kinds[there])
        colours = np.array(pts.GetDisplayColorAttr().Get(k))
        assert colours.shape == (len(there), 3)
        assert len({tuple(c) for c in colours}) == len(set(kinds[there]))
        lo, hi = np.array(pts.GetExtentAttr().Get(k))
        assert np.array_equal(lo[:2], f.positions[there].min(axis=0))
    # Out until step 10, in until 25, out again: the counts say so.
    assert counts == {0: 150, 5: 150, 10: 152, 15: 152, 20: 152, 25: 150, 30: 150, 35: 150, 40: 150}
    # Coloured by the look, the colours follow the agents there too.
    forge("export", bfs, "-o", tmp_path / "c.usda", "--color", "speed", "--frames", "8..12", "-q")
    stage = Usd.Stage.Open(str(tmp_path / "c.usda"))
    pv = UsdGeom.PrimvarsAPI(stage.GetPrimAtPath("/Flock/Agents")).GetPrimvar("displayColor")
    assert [len(pv.Get(k)) for k in range(8, 12)] == [150, 150, 152, 152]


def test_usd_export_refuses_what_it_cannot_write(tmp_path, usd_export):
    bfs, _ = usd_export
    for ext in ("usdc", "usdz"):
        r = forge("export", bfs, "-o", tmp_path / f"x.{ext}", check=False)
        assert r.returncode != 0 and "--output" in r.stderr and "usdcat" in r.stderr
        assert not (tmp_path / f"x.{ext}").exists()
    r = forge("export", bfs, "-o", tmp_path / "x.usd", "--frames", "0..999", check=False)
    assert r.returncode != 0 and "--frames" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_recording_to_usd_writes_what_forge_export_writes(tmp_path, usd_export):
    bfs, usda = usd_export
    rec = ff.Recording(bfs)
    assert rec.to_usd(tmp_path / "py.usda", every=2) == len(range(0, len(rec), 2))
    # The same bytes as the CLI's export of the same recording.
    assert (tmp_path / "py.usda").read_bytes() == usda.read_bytes()
    with pytest.raises(ValueError, match="usda"):
        rec.to_usd(tmp_path / "x.usdc")
    with pytest.raises(ff.ForgeError, match="already exists"):
        rec.to_usd(tmp_path / "py.usda", every=2)


def test_usd_colours_are_the_looks_map_in_every_frame(tmp_path, usd_export):
    """`--color` writes each agent's colour in every frame, from the look's map and range."""
    need("pxr.Usd", "usd-core")
    from pxr import Usd, UsdGeom, UsdValidation

    bfs = tmp_path / "c.bfs"
    forge("simulate", "cuplan", "--agents", 200, "--steps", 8, "-o", bfs, "-q")
    rec = ff.Recording(bfs)

    def colours(name, *flags):
        out = tmp_path / f"{name}.usda"
        forge("export", bfs, "-o", out, "--frames", "2..6", *flags, "-q")
        stage = Usd.Stage.Open(str(out))
        ctx = UsdValidation.ValidationContext(
            UsdValidation.ValidationRegistry().GetOrLoadAllValidators())
        assert [e.GetMessage() for e in ctx.Validate(stage)
                if e.GetType() == UsdValidation.ValidationErrorType.Error] == []
        pv = UsdGeom.PrimvarsAPI(stage.GetPrimAtPath("/Flock/Agents")).GetPrimvar("displayColor")
        assert pv.GetInterpolation() == "vertex"
        assert pv.GetAttr().GetTimeSamples() == [2.0, 3.0, 4.0, 5.0]
        return {k: np.array(pv.Get(k)) for k in range(2, 6)}

    # Speed through a grey ramp: brighter for faster, the same speed the same grey, and the
    # colour changes from frame to frame as the speeds do.
    grey = colours("grey", "--color", "speed", "--colormap", "greys")
    for k, c in grey.items():
        speed = np.linalg.norm(rec[k].velocities, axis=1)
        assert c.shape == (200, 3) and np.allclose(c[:, 0], c[:, 1]) and np.allclose(c[:, 1], c[:, 2])
        order = np.argsort(speed, kind="stable")
        assert np.all(np.diff(c[order, 0]) >= -1e-7)
        assert c[:, 0].max() - c[:, 0].min() > 0.2
    assert not np.array_equal(grey[2], grey[5])
    # A fixed colour is that colour in linear light, for every agent.
    fixed = colours("fixed", "--color", "fixed:#ff8000")
    want = [1.0, ((0x80 / 255 + 0.055) / 1.055) ** 2.4, 0.0]
    for c in fixed.values():
        np.testing.assert_allclose(c, np.tile(want, (200, 1)), rtol=1e-6, atol=1e-7)
    # Density is counted on the GPU, and colours go into USD only: refused, naming the flag.
    for out, flags, says in ((tmp_path / "d.usda", ("--color", "density"), "--color density"),
                             (tmp_path / "x.xyz", ("--color", "speed"), "--color")):
        r = forge("export", bfs, "-o", out, *flags, check=False)
        assert r.returncode != 0 and says in r.stderr and not out.exists()


def test_recording_to_usd_colours_as_forge_export_does(tmp_path):
    bfs = tmp_path / "c.bfs"
    forge("simulate", "cuplan", "--agents", 100, "--steps", 4, "-o", bfs, "-q")
    rec = ff.Recording(bfs)
    forge("export", bfs, "-o", tmp_path / "cli.usda", "--color", "speed", "--colormap", "greys", "-q")
    rec.to_usd(tmp_path / "py.usda", color="speed", colormap="greys")
    assert (tmp_path / "py.usda").read_bytes() == (tmp_path / "cli.usda").read_bytes()
    for bad, says in ((dict(color="loudness"), "color"), (dict(colormap="rainbow"), "colormap")):
        with pytest.raises(ValueError, match=says):
            rec.to_usd(tmp_path / "bad.usda", **bad)
        assert not (tmp_path / "bad.usda").exists()
