"""Scene: built-in names, files and dicts through forge's loader, with the CLI's messages."""

import json

import pytest

import forge_flocks as ff
from conftest import forge


def test_builtin_by_name():
    s = ff.Scene("schooling")
    assert (s.name, s.model, s.dim, s.agents) == ("schooling", "boids", 2, 5000)
    assert "schooling" in ff.Scene.builtins()
    assert s.to_dict()["agents"] == 5000


def test_file_and_dict_agree(small_file, small_scene):
    a, b = ff.Scene(small_file), ff.Scene(small_scene)
    assert a.to_dict() == b.to_dict()
    assert a.world == [400.0, 225.0]


def test_dict_error_names_the_json_path(small_scene):
    bad = dict(small_scene, agents=0)
    with pytest.raises(ff.SceneError) as e:
        ff.Scene(bad)
    assert isinstance(e.value, ValueError)
    assert "scene.agents" in str(e.value)


def test_dict_error_unknown_key(small_scene):
    bad = dict(small_scene, agnets=10)
    with pytest.raises(ff.SceneError, match="agnets"):
        ff.Scene(bad)


def test_file_error_is_the_clis_message(tmp_path, small_scene):
    bad = dict(small_scene)
    bad["boids"] = dict(bad["boids"], v_min=500)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad, indent=2))
    with pytest.raises(ff.SceneError) as e:
        ff.Scene(p)
    cli = forge("simulate", p, "-o", tmp_path / "x.bfs", check=False)
    assert cli.returncode != 0
    msg = str(e.value)
    assert str(p) in msg and "scene.boids" in msg and "(line" in msg
    # Every line of the binding's message is in the CLI's.
    for line in msg.splitlines():
        assert line.strip() in cli.stderr, (line, cli.stderr)


def test_unknown_name():
    with pytest.raises(ff.SceneError, match="no built-in scene named"):
        ff.Scene("no-such-scene")


def test_bad_type():
    with pytest.raises(TypeError):
        ff.Scene(42)
