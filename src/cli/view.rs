//! `forge view`: a recording or a scene, into the player.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};

use super::ViewArgs;
use crate::live::LiveScene;
use crate::player::{Input, Options};
use crate::scene::Scene;
use crate::simulate::{scene_inputs, Setup, Unfinished};

/// Whether `arg` names a recording: a file that starts like one, or any name ending in `.bfs`
/// (which then fails to open with the reader's own message).
fn is_recording(arg: &str) -> bool {
    let p = Path::new(arg);
    if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("bfs")) {
        return true;
    }
    let Ok(mut f) = crate::sys::open_regular(p) else {
        return false;
    };
    let mut magic = [0u8; 8];
    let n = std::io::Read::read(&mut f, &mut magic).unwrap_or(0);
    magic[..n].starts_with(b"FORGEBFS") || (n >= 4 && &magic[..4] == b"BFS1")
}

pub fn view_cmd(a: ViewArgs) -> Result<ExitCode> {
    let recording = is_recording(&a.input);
    let scene_only = [
        (a.record.is_some(), "--record"),
        (a.overrides.steps.is_some(), "--steps"),
        (a.overrides.agents.is_some(), "--agents"),
        (a.overrides.seed.is_some(), "--seed"),
        (a.overrides.every.is_some(), "--every"),
        (a.threads.is_some(), "--threads"),
    ];
    let input = if recording {
        if let Some((_, flag)) = scene_only.iter().find(|(given, _)| *given) {
            bail!("{flag}: applies to a scene (simulated while it is shown), not to a recording");
        }
        // A recording that cannot be opened is named before the display is looked for.
        let frames = crate::bfs::open_recording(Path::new(&a.input))?.frame_count();
        // Timing playback takes frames that follow each other: one frame never does.
        if a.bench_frames.is_some() && frames < 2 {
            bail!(
                "--bench-frames: {} holds {frames} frame{}; timing playback needs at least 2",
                a.input,
                if frames == 1 { "" } else { "s" }
            );
        }
        Input::Recording(PathBuf::from(&a.input))
    } else {
        if a.bench_frames.is_some() {
            bail!("--bench-frames: applies to a recording (a live run shows frames as the solver makes them); record one with forge simulate first");
        }
        let (mut scene, text) = Scene::load_with_text(&a.input)?;
        a.overrides.apply(&mut scene)?;
        if a.threads == Some(0) {
            bail!("--threads: must be at least 1");
        }
        crate::sim::cpu::check_threads("--threads", a.threads)?;
        let setup = Setup {
            inputs: scene_inputs(Some(&a.input), &scene),
            threads: a.threads,
            backend: a.backend,
            force: a.force,
            quiet: true,
            agents_from: a.overrides.agents_from(),
            unfinished: Unfinished::Keep,
        };
        Input::Scene(Box::new(LiveScene {
            scene,
            text,
            record: a.record.clone(),
            setup,
        }))
    };
    if let Some(s) = a.quit_after {
        if !(s.is_finite() && s > 0.0) {
            bail!("--quit-after: must be a number of seconds above 0, got {s}");
        }
    }
    let name = Path::new(&a.input)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| a.input.clone());
    let o = Options {
        look: a.look.layers()?,
        interpolate: a.interpolate.unwrap_or(1),
        adapter: a.look.adapter.clone(),
        save_look: a.save_look.clone(),
        force: a.force,
        paused: a.paused,
        looping: a.looping,
        name,
        quit_after: a.quit_after,
        bench_frames: a.bench_frames,
    };
    if let Some(report) = crate::player::run(input, o)? {
        println!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}
