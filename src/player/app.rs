//! The event loop (winit's `ApplicationHandler`): the window opened when the loop starts,
//! window events turned into actions (egui's first), and one redraw per frame due — when
//! playing, settling or when something changed; idle otherwise.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use winit::application::ApplicationHandler;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow};
use winit::window::WindowId;

use super::bar::{self, Hud};
use super::clock::Clock;
use super::frames::Frames;
use super::input::{self, Action, Pointer};
pub use super::play::Source;
use super::play::{self, Feed, LiveFeed, State};
use super::save::Saver;
use super::screen::Screen;
use super::tune::Tuning;
use super::window::{PaintTimes, Window, BAR_PT, PANEL_PT};
use super::{first_frame_recording, open_recording, Input, Options};
use crate::bfs::Reader;
use crate::live::Live;
use crate::look::Size;
use crate::video::interp::{Space, Timeline};
use crate::video::resolve::world_of;

/// How often an idle player looks for a signal (SIGINT, SIGTERM).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

impl Source {
    /// Opens the recording (or starts the simulation and takes its first frame) and resolves
    /// the look: every check before the window opens.
    pub fn prepare(input: Input, o: &Options) -> Result<Source> {
        let k = o.interpolate.max(1);
        let timeline = Timeline { k };
        match input {
            Input::Recording(path) => {
                let reader = open_recording(&path)?;
                let header = reader.header().clone();
                let space = space_of(&header);
                let tuning = Tuning::new(&o.look, reader, &path)?;
                let frames = Frames::start(Reader::open(&path)?, timeline, space)?;
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
                let save = o.save_look.clone().unwrap_or_else(|| {
                    Saver::default_path(path.parent(), stem.as_deref().unwrap_or("forge"))
                });
                if crate::output::same_file(&save, &path) {
                    bail!("--save-look {}: that is the recording", save.display());
                }
                Ok(Source {
                    feed: Feed::File(frames),
                    initial: tuning.look().clone(),
                    tuning,
                    header,
                    timeline,
                    space,
                    saver: Saver::new(save, o.force),
                    scene_saver: None,
                    ran: None,
                    first: None,
                    _tmp: None,
                })
            }
            Input::Scene(scene) => {
                if k > 1 {
                    bail!("--interpolate: applies to a recording, not to a live simulation");
                }
                let name = scene.scene.name.clone();
                let mut live = Live::start(*scene)?;
                let (tmp, first_path, first) = first_frame_recording(&mut live)?;
                let header = live.header.clone();
                let tuning = Tuning::new(&o.look, Reader::open(&first_path)?, Path::new(&o.name))?;
                let save = o
                    .save_look
                    .clone()
                    .unwrap_or_else(|| Saver::default_path(None, &name));
                let scene_path = save.with_file_name(format!("{name}.scene.json"));
                Ok(Source {
                    feed: Feed::Live(Box::new(LiveFeed::new(live))),
                    initial: tuning.look().clone(),
                    tuning,
                    space: space_of(&header),
                    header,
                    timeline,
                    saver: Saver::new(save, o.force),
                    scene_saver: Some(Saver::new(scene_path, o.force)),
                    ran: None,
                    first: Some(first),
                    _tmp: Some(tmp),
                })
            }
        }
    }
}

fn space_of(h: &crate::bfs::Header) -> Space {
    let w = world_of(h);
    Space {
        dim: w.dim,
        size: h.world_size,
        wrap: w.wrap,
        frame_dt: w.frame_dt,
    }
}

/// The window, once open, and what the loop keeps between frames.
struct View {
    window: Window,
    st: State,
    pointer: Pointer,
    actions: Vec<Action>,
    last_tick: Instant,
    title: String,
    /// When frames were shown lately (the HUD's rate), and in all.
    shows: std::collections::VecDeque<Instant>,
    shown_total: u64,
    first_show: Option<Instant>,
    last_shown: Option<u64>,
    /// `--bench-frames`: the seconds the N frames took, once shown.
    bench_secs: Option<f64>,
    /// `--bench-frames`, after the N frames: where the time went (the scene drawn, the panel,
    /// the window), over a few more frames with each part waited for.
    times: Option<Times>,
}

/// `--bench-frames N`: the frames after the N timed ones whose parts are timed.
fn parts_frames(n: u64) -> u32 {
    (n / 4).clamp(10, 100) as u32
}

/// `--bench-frames`' breakdown: each part waited for on the GPU before the next begins.
#[derive(Default)]
struct Times {
    frames: u32,
    scene: std::time::Duration,
    paint: PaintTimes,
}

pub struct App {
    o: Options,
    src: Source,
    view: Option<View>,
    error: Option<anyhow::Error>,
    started: Instant,
    /// `--bench-frames`' report, once made.
    bench_report: Option<String>,
}

impl App {
    pub fn new(o: Options, src: Source) -> App {
        App {
            o,
            src,
            view: None,
            error: None,
            started: Instant::now(),
            bench_report: None,
        }
    }

    /// How the loop ended, and `--bench-frames`' report where it was asked for.
    pub fn result(&mut self) -> Result<Option<String>> {
        if let Feed::Live(l) = &mut self.src.feed {
            l.live.finish()?;
        }
        if let Some(s) = crate::signal::caught() {
            return Err(crate::signal::Interrupted::noting(s, String::new()).into());
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.bench_report.take()),
        }
    }

    fn open(&mut self, el: &ActiveEventLoop) -> Result<View> {
        let s = &self.src.tuning.resolved().settings;
        let title = format!("forge view: {}", self.o.name);
        let (window, gpu) =
            Window::open(el, &title, [s.width, s.height], self.o.adapter.as_deref())?;
        let mut world = world_of(&self.src.header);
        world.frame_dt /= self.src.timeline.k as f32;
        let h = &self.src.header;
        let marks = crate::video::SceneMarks::of(h);
        let screen = Screen::new(gpu, s.clone(), world, h.agents, marks)?;
        let len = match &self.src.feed {
            Feed::File(f) => f.len(),
            Feed::Live(_) => 1,
        };
        let mut clock = Clock::new(len, self.src.tuning.resolved().fps);
        clock.playing = !self.o.paused;
        clock.looping = self.o.looping;
        let mut st = State {
            screen,
            clock,
            edit: self.src.tuning.look().clone(),
            hud: Hud::default(),
            message: String::new(),
            quit: false,
        };
        if let Some(f) = self.src.first.take() {
            st.screen.next(&f)?;
            play::hud_of(&mut st.hud, &f, &self.src.header);
            if let Feed::Live(l) = &self.src.feed {
                l.live.give_back(f);
            }
        }
        Ok(View {
            window,
            st,
            pointer: Pointer::default(),
            actions: Vec::new(),
            last_tick: Instant::now(),
            title,
            shows: Default::default(),
            shown_total: 0,
            first_show: None,
            last_shown: None,
            bench_secs: None,
            times: None,
        })
    }

    fn fail(&mut self, el: &ActiveEventLoop, e: anyhow::Error) {
        self.error.get_or_insert(e);
        el.exit();
    }

    /// One frame: actions, the playhead, the scene, the panel and bar, the window.
    fn redraw(&mut self) -> Result<()> {
        let v = self.view.as_mut().ok_or_else(|| anyhow!("no window"))?;
        let src = &mut self.src;
        play::apply(&mut v.st, src, std::mem::take(&mut v.actions))?;
        let now = Instant::now();
        let wall = (now - v.last_tick).as_secs_f64();
        v.last_tick = now;
        let mut ended = None;
        let scene_t0 = Instant::now();
        match &mut src.feed {
            Feed::File(frames) => {
                v.st.clock.len = frames.len();
                if self.o.bench_frames.is_some() {
                    bench_tick(&mut v.st);
                } else {
                    v.st.clock.tick(wall);
                }
                play::update_file(&mut v.st, frames)?;
            }
            Feed::Live(l) => ended = play::update_live(&mut v.st, l, wall)?,
        }
        if let Some(t) = &mut v.times {
            v.st.screen.renderer().wait()?;
            t.scene += scene_t0.elapsed();
            t.frames += 1;
        }
        if let Some(path) = ended {
            play::to_file(src, &path)?;
            v.st.message = format!("the simulation is over; recorded to {}", path.display());
        }
        count_show(v, now);
        v.st.hud.state = state_word(&v.st, &src.feed);
        let title = format!(
            "forge view: {}: frame {} of {}, {}",
            self.o.name, v.st.hud.frame, v.st.clock.len, v.st.hud.state
        );
        if title != v.title {
            v.window.window.set_title(&title);
            v.title = title;
        }
        paint(v, src)
    }

    /// Whether the next frame should come at once (playing, settling, a live run's frames).
    fn busy(&self) -> bool {
        let Some(v) = &self.view else { return false };
        v.st.clock.playing
            || v.st.screen.settling()
            || !v.actions.is_empty()
            || matches!(&self.src.feed, Feed::Live(l) if !l.ended && (v.st.clock.playing))
    }
}

/// Notes a frame shown (for the HUD's rate and `--quit-after`'s figure).
fn count_show(v: &mut View, now: Instant) {
    let shown = v.st.screen.shown();
    if shown == v.last_shown || shown.is_none() {
        return;
    }
    v.last_shown = shown;
    v.shown_total += 1;
    v.first_show.get_or_insert(now);
    v.shows.push_back(now);
    while v.shows.len() > 2 && (now - v.shows[0]).as_secs_f64() > 1.0 {
        v.shows.pop_front();
    }
    if v.shows.len() > 1 {
        let span = (now - v.shows[0]).as_secs_f64().max(1e-6);
        v.st.hud.fps = (v.shows.len() - 1) as f64 / span;
    }
}

/// What the player is doing, in a word (the HUD's and the title's last word).
fn state_word(st: &State, feed: &Feed) -> &'static str {
    let live = matches!(feed, Feed::Live(l) if !l.ended);
    if st.clock.playing {
        if live {
            "live"
        } else {
            "playing"
        }
    } else if st.screen.settling() {
        "settling"
    } else if st.screen.exact() {
        "paused"
    } else {
        "approximate"
    }
}

/// The panel, the bar and the image into the window; the controls' actions kept for the next
/// frame.
fn paint(v: &mut View, src: &Source) -> Result<()> {
    let s = v.st.screen.settings();
    let image = [s.width, s.height];
    let world = [src.header.world_size[0], src.header.world_size[1]];
    let seen = v.st.screen.renderer().seen();
    let save_path = src.saver.path().display().to_string();
    let live = matches!(&src.feed, Feed::Live(_));
    let dim = src.header.dim;
    let mut edit = v.st.edit.clone();
    let mut out = Vec::new();
    let (clock, hud, message) = (&v.st.clock, &v.st.hud, &v.st.message);
    let gpu = v.st.screen.gpu().clone();
    let view = v.st.screen.renderer().display_view().clone();
    let again = v.window.paint(
        &gpu,
        &view,
        image,
        |ui| {
            egui::Panel::right("look")
                .exact_size(PANEL_PT)
                .resizable(false)
                .show(ui, |ui| {
                    let info = super::panel::Info {
                        dim,
                        world,
                        seen,
                        species: !src.header.species.is_empty(),
                        save_path: &save_path,
                        message,
                        physics: match &src.feed {
                            Feed::Live(l) => Some((l.live.scene(), hud.step)),
                            Feed::File(_) => None,
                        },
                    };
                    super::panel::show(ui, &mut edit, &info, &mut out);
                });
            egui::Panel::bottom("bar")
                .exact_size(BAR_PT)
                .resizable(false)
                .show(ui, |ui| bar::show(ui, clock, live, hud, &mut out));
        },
        v.times.as_mut().map(|t| &mut t.paint),
    )?;
    if edit != v.st.edit {
        out.push(Action::Look(Box::new(edit)));
    }
    v.actions.extend(out);
    if again {
        v.window.window.request_redraw();
    }
    Ok(())
}

impl ApplicationHandler for App {
    fn resumed(&mut self, el: &ActiveEventLoop) {
        if self.view.is_some() {
            return;
        }
        match self.open(el) {
            Ok(v) => {
                v.window.window.request_redraw();
                self.view = Some(v);
            }
            Err(e) => self.fail(el, e),
        }
    }

    fn window_event(&mut self, el: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        if let WindowEvent::RedrawRequested = event {
            if let Err(e) = self.redraw() {
                self.fail(el, e);
            }
            return;
        }
        let Some(v) = self.view.as_mut() else { return };
        if let Err(e) = on_event(v, &event) {
            self.fail(el, e);
            return;
        }
        if matches!(event, WindowEvent::CloseRequested) || v.st.quit {
            el.exit();
        }
    }

    fn about_to_wait(&mut self, el: &ActiveEventLoop) {
        if crate::signal::caught().is_some() {
            el.exit();
            return;
        }
        if let Some(secs) = self.o.quit_after {
            if self.started.elapsed().as_secs_f64() >= secs {
                if let Some(v) = &self.view {
                    report_rate(v);
                }
                el.exit();
                return;
            }
        }
        if let (Some(n), Some(v)) = (self.o.bench_frames, &mut self.view) {
            // The first frame shown starts the time: N more are timed as the window plays
            // them; then a few more with each part waited for, to say where the time goes.
            if v.bench_secs.is_none() && v.shown_total > n {
                v.bench_secs = Some(v.first_show.map_or(0.0, |t| t.elapsed().as_secs_f64()));
                v.times = Some(Times::default());
            }
            if v.times
                .as_ref()
                .is_some_and(|t| t.frames >= parts_frames(n))
            {
                self.bench_report = Some(report_bench(v, n));
                el.exit();
                return;
            }
        }
        if let Some(v) = &self.view {
            if v.st.quit {
                el.exit();
                return;
            }
            if self.busy() {
                // Poll: a redraw asked for here would otherwise wait for the next wake-up.
                v.window.window.request_redraw();
                el.set_control_flow(ControlFlow::Poll);
                return;
            }
        }
        el.set_control_flow(ControlFlow::WaitUntil(Instant::now() + SIGNAL_POLL));
    }
}

/// `--bench-frames`: the frame after the one shown is due (the first after the last), playing.
fn bench_tick(st: &mut State) {
    st.clock.playing = true;
    st.clock.reverse = false;
    let next = st.screen.shown().map_or(0, |s| s + 1);
    st.clock.seek(if next >= st.clock.len { 0 } else { next });
}

/// `--bench-frames`' lines: how fast N frames were shown, and what they were.
fn report_bench(v: &View, n: u64) -> String {
    let secs = v.bench_secs.unwrap_or(0.0);
    let s = v.st.screen.settings();
    let gpu = &v.st.screen.gpu().info.name;
    let mut report = format!(
        "forge view: {n} frames shown in {secs:.2} s: {:.1} frames/s ({}x{}, {} agents, {gpu})",
        n as f64 / secs.max(1e-9),
        s.width,
        s.height,
        v.st.hud.agents,
    );
    if let Some(t) = &v.times {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 / f64::from(t.frames.max(1));
        report += &format!(
            "\nforge view: per window frame, over {} more with each part waited for: scene {:.1} ms, panel and bar (egui) {:.1} ms, into the window and presented {:.1} ms",
            t.frames,
            ms(t.scene),
            ms(t.paint.panel),
            ms(t.paint.window),
        );
    }
    report
}

/// `--quit-after`'s line: frames shown and the rate.
fn report_rate(v: &View) {
    let secs = v
        .first_show
        .map(|t| t.elapsed().as_secs_f64())
        .unwrap_or(0.0);
    log::info!(
        "forge view: {} frames shown in {secs:.2} s: {:.1} frames/s",
        v.shown_total,
        v.shown_total.saturating_sub(1) as f64 / secs.max(1e-9)
    );
}

/// A window event: egui's if it takes it, else the player's (keys, the camera's mouse).
fn on_event(v: &mut View, event: &WindowEvent) -> Result<()> {
    let s = v.st.screen.settings();
    let image = [s.width as f32, s.height as f32];
    let over = |p: Option<[f32; 2]>| p.is_some_and(|p| p[0] < image[0] && p[1] < image[1]);
    let mut ours = Vec::new();
    match event {
        WindowEvent::Resized(size) => {
            let gpu = v.st.screen.gpu().clone();
            v.window.resized(&gpu, *size);
            let room = v.window.image_room();
            if room != [s.width, s.height] {
                let mut l = v.st.edit.clone();
                l.size = Some(Size(room));
                ours.push(Action::Look(Box::new(l)));
            }
            v.window.egui_event(event);
        }
        WindowEvent::KeyboardInput {
            event: k,
            is_synthetic,
            ..
        } => {
            let typing = v.window.egui.egui_wants_keyboard_input();
            if typing {
                v.window.egui_event(event);
            } else if k.state.is_pressed() && !is_synthetic {
                // A synthetic press is winit's for a key already down as the window gains
                // focus: that key's own press follows it (or came before, to another window).
                ours.extend(input::key(&k.logical_key, k.repeat, v.pointer.right));
            }
        }
        WindowEvent::ModifiersChanged(m) => {
            v.pointer.shift(m.state().shift_key());
            v.window.egui_event(event);
        }
        WindowEvent::CursorMoved { position, .. } => {
            let taken = v.window.egui_event(event);
            let p = [position.x as f32, position.y as f32];
            if let Some(a) = v.pointer.moved(p) {
                if !taken || over(Some(p)) {
                    ours.push(a);
                }
            }
        }
        WindowEvent::MouseInput { state, button, .. } => {
            let taken = v.window.egui_event(event);
            v.pointer
                .button(*button, *state, over(v.pointer.at) && !taken);
        }
        WindowEvent::MouseWheel { delta, .. } => {
            if over(v.pointer.at) {
                ours.extend(v.pointer.wheel(*delta));
            } else {
                v.window.egui_event(event);
            }
        }
        other => {
            v.window.egui_event(other);
        }
    }
    if !ours.is_empty() {
        v.actions.extend(ours);
    }
    v.window.window.request_redraw();
    Ok(())
}
