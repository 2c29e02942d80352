"""A notebook, executed headless (nbclient): steps a simulation, plots it with matplotlib,
records it and shows a still inline."""

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")
pytest.importorskip("ipykernel")


def test_notebook_runs(tmp_path, small_scene):
    cells = [
        "import numpy as np, matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
        "import matplotlib.pyplot as plt\nimport forge_flocks as ff",
        f"sim = ff.Simulation({small_scene!r}, seed=4)\nsim.step(10)\nm = sim.metrics()\nm",
        "p = sim.positions\nfig, ax = plt.subplots(figsize=(4, 2.25))\n"
        "ax.scatter(p[:, 0], p[:, 1], s=1)\nplt.show()",
        f"sim.record({str(tmp_path / 'nb.bfs')!r}, steps=4)\nrec = ff.Recording({str(tmp_path / 'nb.bfs')!r})\nlen(rec)",
        "img = ff.still(rec, -1, size=[320, 180])\nprint(img.shape, img.dtype)\nimg",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outs = [c["outputs"] for c in nb.cells]
    assert "polarization" in outs[1][0]["data"]["text/plain"]
    assert any("image/png" in o.get("data", {}) for o in outs[2]), outs[2]
    assert outs[3][0]["data"]["text/plain"] == "5"
    assert "(180, 320, 3) uint8" in outs[4][0]["text"]
    png = [o for o in outs[4] if "image/png" in o.get("data", {})]
    assert png, outs[4]
