//! `forge analyze`'s summary, as text.

use super::{Analysis, Field, Method};

impl Analysis {
    /// The summary `forge analyze` prints, several lines.
    pub fn report(&self, name: &str) -> String {
        let pm = |v: Option<f64>| v.map(|e| format!(" ± {e:.3}")).unwrap_or_default();
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
        for (k, (g, e)) in a.gamma.iter().zip(&a.gamma_error).enumerate() {
            if k < 8 || k + 1 == a.k.len() {
                match g {
                    Some(g) => s += &format!(" k={} {g:+.4}{}", k + 1, pm(*e)),
                    None => s += &format!(" k={} -", k + 1),
                }
            } else if k == 8 {
                s += " …";
            }
        }
        s += &match a.isotropic_from_k {
            Some(k) => format!("\nisotropic (|γ_k| within 2 error bars of 0) from k = {k}"),
            None => "\nnot isotropic within its error bars for any k measured".into(),
        };
        for c in &self.caveats {
            s += &format!("\nnote: {c}");
        }
        s
    }
}
