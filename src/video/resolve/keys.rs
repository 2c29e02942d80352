//! The look's timeline resolved against a recording: keys at solver steps (a time: `time /
//! dt`), each keyed setting starting from its resolved value.

use anyhow::{anyhow, bail, Result};

use crate::bfs::Header;
use crate::look::keys::{LookField, LookKeys};
use crate::look::{self, Look};
use crate::render::{Settings, World};

/// The look's timeline at solver steps (a time: `time / dt` of the recording), each keyed
/// setting starting from its resolved value; None without keys.
pub(super) fn look_keys(
    l: &Look,
    s: &Settings,
    world: &World,
    h: &Header,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<LookKeys>> {
    let Some(keys) = l.timeline.as_deref().filter(|k| !k.is_empty()) else {
        return Ok(None);
    };
    let v3 = s.view3.as_ref();
    let base = |f: LookField| -> Option<Vec<f32>> {
        Some(match f {
            LookField::Center => s
                .center
                .unwrap_or([world.size[0] / 2.0, world.size[1] / 2.0])
                .to_vec(),
            LookField::Zoom => vec![s.zoom],
            LookField::Exposure => vec![s.exposure],
            LookField::Trails => vec![s.trails],
            LookField::Eye => v3?.eye?.to_vec(),
            LookField::Target => v3?.target?.to_vec(),
            LookField::Fov => vec![v3?.fov],
        })
    };
    if let Some(f) = [LookField::Eye, LookField::Target, LookField::Fov]
        .into_iter()
        .find(|&f| base(f).is_none() && keys.iter().any(|k| k.set.contains_key(f.name())))
    {
        let mode = v3.map_or("2D view".to_string(), |v| look::name_of(&v.mode));
        bail!(
            "{}: keys the {}, which only the fixed camera has (the camera is {mode})",
            origin("timeline"),
            f.name()
        );
    }
    LookKeys::resolve(keys, h.dt, base)
        .map(Some)
        .map_err(|(field, why)| {
            anyhow!(
                "{}{}: {why}",
                origin("timeline"),
                &field["timeline".len()..]
            )
        })
}
