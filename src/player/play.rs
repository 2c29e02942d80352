//! One window frame's work: the actions asked for applied (transport, camera, look, save),
//! the playhead moved, and the frame due drawn — from the recording (read ahead, settled when
//! paused) or from the live solver (every frame it sends, in order).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::bar::Hud;
use super::camera::{self, WHEEL_FACTOR};
use super::clock::{Clock, SPEEDS};
use super::frames::Frames;
use super::input::{Action, Move};
use super::save::Saver;
use super::screen::Screen;
use super::tune::Tuning;
use crate::bfs::{Frame, Header, Reader};
use crate::live::{Live, Msg};
use crate::look::{CameraMode, Look};
use crate::video::interp::{Space, Timeline};

/// Frames drawn into the trails, at most, on the way to the frame due while playing forward.
const MAX_CATCH_UP: u64 = 8;
/// Time given to a settle per window frame.
const SETTLE_BUDGET: Duration = Duration::from_millis(40);

/// Where frames come from.
pub enum Feed {
    File(Frames),
    Live(Box<LiveFeed>),
}

pub struct LiveFeed {
    pub live: Live,
    /// Frames the player still owes a step (`→` while paused).
    steps: u64,
    /// Frames due and not yet taken (fractions carry over).
    due: f64,
    pub ended: bool,
}

impl LiveFeed {
    pub fn new(live: Live) -> LiveFeed {
        LiveFeed {
            live,
            steps: 0,
            due: 0.0,
            ended: false,
        }
    }
}

/// The recording (or live run) being shown and its look.
pub struct Source {
    pub feed: Feed,
    pub tuning: Tuning,
    pub header: Header,
    pub timeline: Timeline,
    pub space: Space,
    pub saver: Saver,
    /// A live run's scene file (`NAME.scene.json`, beside the look file) ...
    pub scene_saver: Option<Saver>,
    /// ... and, once its run is over (the recording played as a file), the text it saves.
    pub ran: Option<String>,
    /// The look as first resolved (the fit and the recording's own camera come back to it).
    pub initial: Look,
    /// A live run's first frame, drawn first.
    pub first: Option<Frame>,
    /// The temporary recording a live look is resolved over.
    pub _tmp: Option<tempfile::TempDir>,
}

/// The window's state between frames.
pub struct State {
    pub screen: Screen,
    pub clock: Clock,
    /// The look as the panel and the camera edit it.
    pub edit: Look,
    pub hud: Hud,
    pub message: String,
    pub quit: bool,
}

/// Applies `actions` in order; the camera's and the panel's changes to the look are resolved
/// once, at the end.
pub fn apply(st: &mut State, src: &mut Source, actions: Vec<Action>) -> Result<()> {
    let mut edited = false;
    for a in actions {
        let live = matches!(src.feed, Feed::Live(_));
        let c = &mut st.clock;
        match a {
            Action::Toggle => c.toggle(),
            Action::Step(by) => match &mut src.feed {
                Feed::Live(l) if by > 0 => {
                    c.playing = false;
                    l.steps += by as u64;
                }
                Feed::Live(_) => {}
                Feed::File(_) => c.step(by),
            },
            Action::Seek(k) if !live => c.seek(k),
            Action::Start if !live => c.seek(0),
            Action::End if !live => c.seek(u64::MAX),
            Action::Faster(f) => c.faster(f),
            Action::Speed(s) => c.speed = s.clamp(*SPEEDS.start(), *SPEEDS.end()),
            Action::ToggleReverse if !live => c.reverse = !c.reverse,
            Action::ToggleLoop if !live => c.looping = !c.looping,
            Action::Save => save(st, src),
            Action::Quit => st.quit = true,
            Action::Follow => {
                st.edit.follow = Some(!st.edit.follow.unwrap_or(false));
                edited = true;
            }
            Action::Fit => {
                fit(&mut st.edit, &src.initial);
                edited = true;
            }
            Action::Look(l) => {
                st.edit = *l;
                edited = true;
            }
            Action::Camera(m) => {
                camera_move(st, &m);
                edited = true;
            }
            Action::Physics(param, value) => {
                if let Feed::Live(l) = &src.feed {
                    l.live.set(&param, value);
                }
            }
            _ => {}
        }
    }
    if edited {
        retune(st, src)?;
    }
    Ok(())
}

/// The edited look resolved and handed to the screen; a look that does not resolve is said in
/// the panel and the current one kept.
pub fn retune(st: &mut State, src: &mut Source) -> Result<()> {
    match src.tuning.apply(&st.edit) {
        Ok(true) => {
            let r = src.tuning.resolved();
            st.screen.set_settings(r.settings.clone())?;
            st.clock.fps = f64::from(r.fps.max(1));
            st.message.clear();
        }
        Ok(false) => {}
        Err(e) => st.message = format!("{e:#}"),
    }
    st.edit = src.tuning.look().clone();
    Ok(())
}

fn save(st: &mut State, src: &mut Source) {
    let frame = st.screen.shown().unwrap_or(0);
    st.message = match src.saver.save(src.tuning.look()) {
        Ok(p) => {
            let m = format!("saved the look (frame {frame}) to {}", p.display());
            log::info!("{m}");
            m
        }
        Err(e) => {
            let m = format!("cannot save the look: {e:#}");
            log::error!("{m}");
            m
        }
    };
    // A live run's scene, with the keys set while it ran.
    let text = match &src.feed {
        Feed::Live(l) => Some(l.live.scene_file()),
        Feed::File(_) => src.ran.clone().map(Ok),
    };
    if let (Some(text), Some(saver)) = (text, &mut src.scene_saver) {
        let m = match text.and_then(|t| saver.save_text(&t, "scene file")) {
            Ok(p) => {
                let m = format!("saved the scene to {}", p.display());
                log::info!("{m}");
                m
            }
            Err(e) => {
                let m = format!("cannot save the scene: {e:#}");
                log::error!("{m}");
                m
            }
        };
        st.message = format!("{}; {m}", st.message);
    }
}

/// The whole world (2D), or the recording's own camera (3D).
fn fit(edit: &mut Look, initial: &Look) {
    if edit.camera.is_some() && edit.camera != Some(CameraMode::Top) {
        edit.camera = initial.camera;
        edit.eye = initial.eye;
        edit.target = initial.target;
        edit.orbit_speed = initial.orbit_speed;
        edit.fov = initial.fov;
    } else {
        camera::fit(edit);
    }
}

fn camera_move(st: &mut State, m: &Move) {
    let s = st.screen.settings();
    let image = [s.width, s.height];
    let fov = s.view3.as_ref().map(|v| v.fov).unwrap_or(45.0);
    let seen = st.screen.renderer().seen();
    let flat = seen.eye_target.is_none();
    let l = &mut st.edit;
    match *m {
        Move::Drag(by) if flat => camera::pan(l, &seen, image, by),
        Move::DragPan(by) if flat => camera::pan(l, &seen, image, by),
        Move::Wheel { at, notches } if flat => {
            camera::zoom_at(l, &seen, image, at, WHEEL_FACTOR.powf(notches))
        }
        Move::Drag(by) => camera::orbit(l, &seen, by),
        Move::DragPan(by) => camera::pan3(l, &seen, by, image[1], fov),
        Move::Wheel { notches, .. } => camera::dolly(l, &seen, WHEEL_FACTOR.powf(notches)),
        Move::Fly(along) if !flat => camera::fly(l, &seen, along, 0.05),
        Move::Fly(_) => {}
    }
}

/// Draws what is due from a recording: while playing forward the frames in between go into
/// the trails; a jump is drawn at once; paused, the frame is then settled.
pub fn update_file(st: &mut State, frames: &Frames) -> Result<()> {
    let want = st.clock.frame();
    let dir = if st.clock.reverse { -1 } else { 1 };
    let playing = st.clock.playing;
    match st.screen.shown() {
        Some(s) if s == want => {}
        Some(s) if playing && !st.clock.reverse && want > s && want - s <= MAX_CATCH_UP => {
            for k in s + 1..want {
                st.screen.pass(&frames.get(k, 1)?)?;
            }
            let f = frames.get(want, 1)?;
            st.screen.next(&f)?;
            hud_of(&mut st.hud, &f, frames.header());
        }
        shown => {
            let f = frames.get(want, dir)?;
            if shown.is_none() && want == 0 {
                st.screen.next(&f)?;
            } else {
                st.screen.jump(&f)?;
            }
            hud_of(&mut st.hud, &f, frames.header());
            if !playing && !st.screen.exact() {
                st.screen.settle(want);
            }
            return Ok(());
        }
    }
    if !playing && !st.screen.exact() {
        if !st.screen.settling() {
            st.screen.settle(want);
        }
        st.screen.work(frames, SETTLE_BUDGET)?;
    }
    Ok(())
}

/// Takes the frames due from a live run (every frame, in order; none while paused, so the
/// solver waits) and draws them. Returns the recording's path when the run has just ended
/// with a complete recording.
pub fn update_live(st: &mut State, feed: &mut LiveFeed, wall: f64) -> Result<Option<PathBuf>> {
    let c = &st.clock;
    if c.playing {
        feed.due = (feed.due + wall * c.fps * f64::from(c.speed)).min(MAX_CATCH_UP as f64);
    } else {
        feed.due = 0.0;
    }
    let mut take = feed.due.floor() as u64 + feed.steps;
    let mut got = Vec::new();
    while take > 0 && !feed.ended {
        match feed.live.try_next()? {
            Some(Msg::Frame(f)) => {
                got.push(f);
                take -= 1;
            }
            Some(Msg::Keyed(answer)) => {
                st.message = match answer {
                    Ok((step, param, v)) => format!("{param} = {v} from step {step}"),
                    Err(e) => e,
                };
            }
            Some(Msg::Ended(why)) => {
                feed.ended = true;
                st.message = match why {
                    Some(w) => format!("the simulation stopped: {w}"),
                    None => "the simulation is over".into(),
                };
            }
            None => break,
        }
    }
    if feed.steps > 0 {
        feed.steps = feed.steps.saturating_sub(got.len() as u64);
    } else {
        feed.due -= got.len() as f64;
    }
    let last = got.len().saturating_sub(1);
    for (i, f) in got.into_iter().enumerate() {
        if i < last {
            st.screen.pass(&f)?;
        } else {
            st.screen.next(&f)?;
            hud_of(&mut st.hud, &f, &feed.live.header);
            st.clock.len = f.index + 1;
            st.clock.seek(f.index);
        }
        feed.live.give_back(f);
    }
    if feed.ended {
        return feed.live.finish();
    }
    Ok(None)
}

/// The live run's recording, finished: played from now on as any recording.
pub fn to_file(src: &mut Source, path: &std::path::Path) -> Result<()> {
    if let Feed::Live(l) = &src.feed {
        // What `s` saves from now on: the scene as it ran, its keys included.
        src.ran = Some(l.live.scene_file()?);
    }
    let reader = Reader::open(path)?;
    src.feed = Feed::File(Frames::start(reader, src.timeline, src.space)?);
    Ok(())
}

/// The HUD's figures for frame `f`.
pub fn hud_of(hud: &mut Hud, f: &Frame, h: &Header) {
    let dim = usize::from(h.dim);
    let n = f.agents(dim);
    hud.frame = f.index;
    hud.step = f.step;
    hud.time = f.step as f64 * f64::from(h.dt);
    // Over the agents there at its step.
    hud.agents = f.present_count(n);
    hud.polarization = crate::metrics::polarization_of(dim, n, &f.vel, |i| !f.is_absent(i));
}
