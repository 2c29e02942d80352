"""Opens a forge glTF export in Blender, headless, and checks it against the recording:

    blender -b --factory-startup -P scripts/blender-check.py -- RUN.glb EXPECTED.json [OUT.png]

EXPECTED.json: {"frames": {"K": [[x, y, z], ...], ...}, "world": [w, h]} (forge's coordinates),
and optionally "size": [W, H] (the render's, default 320x180), "render_frame": K (default
the last frame checked), "radius" (a point's, world units; default 0.4% of the world),
"colour" and "background" (linear RGB; default white points on black).
At each frame K given, every vertex of the imported point cloud must be within 1e-4 of the
world's size of the recorded position (of the agents there: where a species comes and goes, the
export holds a child of `Agents` per species, scaled to nothing while it is out of the world,
and EXPECTED lists the agents in the world at K) (Blender adds each frame's displacement to the first in
float32). With OUT.png, renders the last frame given from an orthographic camera straight down
onto the world (2D runs: the world fills a frame of its shape), each agent a small white point
on black, with Cycles on the CPU. Prints "blender-check: ok" and exits 0, else exits 1.

The scene's frame rate is set to the export's (its extras.forge.fps) before the import, so
Blender's frame K is the recording's frame K.
"""

import json
import struct
import sys

import bpy

# Blender 3.4's glTF importer calls numpy.bool, which NumPy 1.24 removed (Debian 12 and Ubuntu
# ship both): give it back.
import warnings

import numpy

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if not hasattr(numpy, "bool"):
        numpy.bool = bool

args = sys.argv[sys.argv.index("--") + 1:]
glb, expected = args[0], json.load(open(args[1]))
out = args[2] if len(args) > 2 else None

with open(glb, "rb") as f:
    head = f.read(20)
    json_len = struct.unpack("<I", head[12:16])[0]
    doc = json.loads(f.read(json_len))
fps = doc["extras"]["forge"]["fps"]

bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene
scene.render.fps = fps
bpy.ops.import_scene.gltf(filepath=glb)
# The point clouds, in the export's node order (agent ids ascending): `Agents` itself, or its
# children, a species each.
children = doc["nodes"][0].get("children", [])
clouds = [bpy.data.objects[doc["nodes"][c]["name"]] for c in children] or [bpy.data.objects["Agents"]]
world = expected["world"]
tol = 1e-4 * max(world)
worst = 0.0
for k, want in sorted(expected["frames"].items(), key=lambda kv: int(kv[0])):
    scene.frame_set(int(k))
    got = []
    for cloud in clouds:
        # A species out of the world is scaled to nothing: none of its points is shown.
        if min(abs(s) for s in cloud.matrix_world.to_scale()) < 1e-9:
            continue
        ev = cloud.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mesh = ev.to_mesh()
        got += [cloud.matrix_world @ v.co for v in mesh.vertices]
        ev.to_mesh_clear()
    if len(got) != len(want):
        print(f"blender-check: frame {k}: {len(got)} points, the recording has {len(want)}")
        sys.exit(1)
    for g, w in zip(got, want):
        worst = max(worst, max(abs(g[i] - w[i]) for i in range(3)))
print(f"blender-check: {len(expected['frames'])} frames checked, worst {worst:.3g} (tolerance {tol:.3g})")
if worst > tol:
    print("blender-check: the points are not where the recording has them")
    sys.exit(1)

if out:
    # Points as Cycles renders them: a point cloud (geometry nodes) with a white emission.
    tree = bpy.data.node_groups.new("forge points", "GeometryNodeTree")
    tree.inputs.new("NodeSocketGeometry", "Geometry")
    tree.outputs.new("NodeSocketGeometry", "Geometry")
    gin, gout = tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")
    to_points = tree.nodes.new("GeometryNodeMeshToPoints")
    to_points.inputs["Radius"].default_value = expected.get("radius", 0.004 * max(world))
    set_mat = tree.nodes.new("GeometryNodeSetMaterial")
    mat = bpy.data.materials.new("forge agent")
    mat.use_nodes = True
    nodes = mat.node_tree.nodes
    nodes.clear()
    emit, mout = nodes.new("ShaderNodeEmission"), nodes.new("ShaderNodeOutputMaterial")
    emit.inputs["Strength"].default_value = 4.0
    emit.inputs["Color"].default_value = (*expected.get("colour", [1, 1, 1]), 1)
    mat.node_tree.links.new(emit.outputs[0], mout.inputs["Surface"])
    set_mat.inputs["Material"].default_value = mat
    tree.links.new(gin.outputs[0], to_points.inputs["Mesh"])
    tree.links.new(to_points.outputs[0], set_mat.inputs["Geometry"])
    tree.links.new(set_mat.outputs[0], gout.inputs[0])
    for cloud in clouds:
        mod = cloud.modifiers.new("forge points", "NODES")
        mod.node_group = tree
    cam_data = bpy.data.cameras.new("top")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = max(world[0], world[1])
    cam = bpy.data.objects.new("top", cam_data)
    cam.location = (world[0] / 2, world[1] / 2, 10 * max(world))
    cam_data.clip_end = 20 * max(world)
    scene.collection.objects.link(cam)
    scene.camera = cam
    scene.world = bpy.data.worlds.new("black")
    scene.world.color = expected.get("background", [0, 0, 0])
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 4
    scene.cycles.use_denoising = False
    scene.render.resolution_x = int(expected.get("size", [320, 180])[0])
    scene.render.resolution_y = int(expected.get("size", [320, 180])[1])
    scene.render.film_transparent = False
    scene.view_settings.view_transform = "Standard"
    scene.render.filepath = out
    last = expected.get("render_frame")
    if last is None:
        last = max(int(k) for k in expected["frames"])
    scene.frame_set(int(last))
    bpy.ops.render.render(write_still=True)
    print(f"blender-check: rendered {out}")
print("blender-check: ok")
