//! The overlays a look shows, and the title's text.

use crate::look::{self, Look, Overlay};
use crate::render::overlay::Overlays;

/// The overlays and the title's text. A title on the command line shows the title overlay
/// too; a title from a file or the recording does where no layer lists the overlays.
pub(super) fn overlays(
    flags: &Look,
    merged: &Look,
    scene_name: &str,
) -> (Overlays, Option<String>) {
    let list = merged.overlay.clone().unwrap_or_default();
    let mut o = Overlays {
        colorbar: list.has(Overlay::Colorbar),
        time: list.has(Overlay::Time),
        title: None,
        scale: list.has(Overlay::Scale),
    };
    let shown = list.has(Overlay::Title)
        || flags.title.is_some()
        || (merged.title.is_some() && merged.overlay.is_none());
    if shown {
        let t = merged
            .title
            .clone()
            .unwrap_or_else(|| scene_name.to_string());
        o.title = (!t.trim().is_empty()).then_some(t);
    }
    let title = o.title.clone();
    (o, title)
}

/// The overlay list that shows exactly `o`.
pub(super) fn resolved(o: &Overlays) -> look::Overlays {
    let mut v = Vec::new();
    for (on, which) in [
        (o.colorbar, Overlay::Colorbar),
        (o.time, Overlay::Time),
        (o.title.is_some(), Overlay::Title),
        (o.scale, Overlay::Scale),
    ] {
        if on {
            v.push(which);
        }
    }
    look::Overlays(v)
}
