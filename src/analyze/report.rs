//! `forge analyze`'s summary, as text.

use super::{Analysis, Field, Method};

impl Analysis {
    /// The summary `forge analyze` prints, several lines.
    pub fn report(&self, name: &str) -> String {
        let mut s = format!(
            "{name}: frames {}..{}{} ({} analysed), {} agents, {}D, {}; {} fluctuations, {} pair sums{}\n",
            self.frames[0],
            self.frames[1],
            if self.every > 1 { format!(" every {}", self.every) } else { String::new() },
            self.frames_analysed,
            self.agents,
            self.dim,
            if self.periodic { "periodic box" } else { "each frame's bounding box" },
            match self.field {
                Field::Velocity => "velocity",
                Field::Heading => "heading",
            },
            match self.method {
                Method::Grid => "grid (FFT)",
                _ => "exact",
            },
            self.grid.map(|g| format!(", {g} cells a side")).unwrap_or_default(),
        );
        s += &format!("polarization            {:.4}\n", self.polarization);
        s += &match self.correlation_length {
            Some(x) => format!(
                "correlation length ξ    {x:.4}{}  (first zero of C(r); r_max {:.4})\n",
                pm(self.correlation_length_error),
                self.r_max
            ),
            None => format!(
                "correlation length ξ    none: C(r) > 0 up to r_max {:.4}\n",
                self.r_max
            ),
        };
        s += &format!(
            "susceptibility χ        {:.4}{}  (max of the integrated correlation)\n",
            self.susceptibility,
            pm(self.susceptibility_error)
        );
        let a = &self.anisotropy;
        s += "neighbour anisotropy γ_k = ⟨(û·V̂)²⟩ − 1/d:";
        s += &per_k(&a.gamma, &a.gamma_error, |g| format!("{g:+.4}"));
        s += &match a.isotropic_from_k {
            Some(k) => format!("\nisotropic (|γ_k| within 2 error bars of 0) from k = {k}"),
            None => "\nnot isotropic within its error bars for any k measured".into(),
        };
        s += "\nBallerini's projection (W·V̂)², 1/d when isotropic:";
        s += &per_k(&a.projection, &a.projection_error, |p| format!("{p:.4}"));
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.4}"))
                .collect::<Vec<_>>()
                .join(" : ")
        };
        s += &format!(
            "\nprincipal axes          {} (largest first); {} = {}",
            list(&self.shape.principal_axes).replace(" : ", ", "),
            if self.dim == 3 {
                "thickness : width : length"
            } else {
                "width : length"
            },
            list(&self.shape.aspect_ratios)
        );
        if let Some(t) = self.shape.thinnest_axis_to_vertical {
            s += &format!(
                "\nthinnest axis           {t:.2}°{} from the vertical",
                pm(self.shape.thinnest_axis_to_vertical_error)
            );
        }
        let nn = &self.shape.nearest_neighbour;
        s += &format!(
            "\nnearest neighbour       least {:.4}, mean {:.4} (a frame's, over frames)",
            nn.min, nn.mean
        );
        let b = &self.shape.border_density;
        s += &match b.ratio {
            Some(r) => format!(
                "\nborder density          {r:.3} × the centre's ({:.1}% of agents on the border)",
                100.0 * b.border_fraction
            ),
            None => format!(
                "\nborder density          none: {:.1}% of agents on the border",
                100.0 * b.border_fraction
            ),
        };
        for c in &self.caveats {
            s += &format!("\nnote: {c}");
        }
        s
    }
}

/// ` ± e` where there is an error bar.
fn pm(v: Option<f64>) -> String {
    v.map(|e| format!(" ± {e:.3}")).unwrap_or_default()
}

/// ` k=1 v ± e k=2 …`: the first eight values per k and the last, `-` where there is none.
fn per_k(values: &[Option<f64>], errors: &[Option<f64>], show: impl Fn(f64) -> String) -> String {
    let mut s = String::new();
    for (k, (v, e)) in values.iter().zip(errors).enumerate() {
        if k < 8 || k + 1 == values.len() {
            match v {
                Some(v) => s += &format!(" k={} {}{}", k + 1, show(*v), pm(*e)),
                None => s += &format!(" k={} -", k + 1),
            }
        } else if k == 8 {
            s += " …";
        }
    }
    s
}
