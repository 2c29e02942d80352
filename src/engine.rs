//! Which piece of a split job this process is: `I/N` from a flag (`--chunk`, `--shard`), or
//! `auto` read from the environment of the engine that runs the task. forge has no scheduler
//! of its own; Slurm, Kubernetes or a CI matrix starts one task per piece and tells it which.
//!
//! `auto` looks, in this order, for:
//! - `FORGE_TASK_INDEX` (with `FORGE_TASK_COUNT`): set by hand, e.g. in a CI matrix;
//! - `SLURM_ARRAY_TASK_ID` (a Slurm job array): the index is `(ID − MIN) / STEP` with
//!   `SLURM_ARRAY_TASK_MIN` (else 0) and `SLURM_ARRAY_TASK_STEP` (else 1); the count is
//!   `SLURM_ARRAY_TASK_COUNT`, else `(MAX − MIN) / STEP + 1`;
//! - `JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job): the count is not in the environment,
//!   so it comes from the flag (`auto/N`, N = the Job's `completions`) or `FORGE_TASK_COUNT`.
//!
//! `auto/N` gives the count and checks it against the engine's where the engine has one. A
//! leaf module: it reads only the environment.

use anyhow::{anyhow, bail, Result};

/// One piece of `count`: `index` in `0..count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub index: u64,
    pub count: u64,
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a `--chunk` / `--shard` flag said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSpec {
    /// `I/N`.
    Given(Task),
    /// `auto` (`auto/N`: the count given).
    Auto { count: Option<u64> },
}

/// Parses `I/N`, `auto` or `auto/N` (a clap value parser).
pub fn parse_task_spec(s: &str) -> Result<TaskSpec, String> {
    let s = s.trim();
    let num = |t: &str, what: &str| -> Result<u64, String> {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("bad {what} {t:?} in {s:?} (expected I/N, auto or auto/N)"))
    };
    if s == "auto" {
        return Ok(TaskSpec::Auto { count: None });
    }
    let (a, b) = s.split_once('/').ok_or_else(|| {
        format!("expected I/N (0-based index of N pieces), auto or auto/N, got {s:?}")
    })?;
    let count = num(b, "count")?;
    if count == 0 {
        return Err(format!("the count must be at least 1, got {s:?}"));
    }
    if a.trim() == "auto" {
        return Ok(TaskSpec::Auto { count: Some(count) });
    }
    let index = num(a, "index")?;
    if index >= count {
        return Err(format!(
            "the index is 0-based and must be below the count: {s:?} (use 0/{count} .. {}/{count})",
            count - 1
        ));
    }
    Ok(TaskSpec::Given(Task { index, count }))
}

impl TaskSpec {
    /// The task: as given, or read from this process's environment. `flag` names the flag in
    /// messages (`--chunk`).
    pub fn resolve(self, flag: &str) -> Result<Task> {
        self.resolve_with(flag, &|k| std::env::var(k).ok())
    }

    /// [`TaskSpec::resolve`] with the environment as a function (for tests).
    pub fn resolve_with(self, flag: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Task> {
        match self {
            TaskSpec::Given(t) => Ok(t),
            TaskSpec::Auto { count } => from_env(count, env).map_err(|e| anyhow!("{flag} {e}")),
        }
    }
}

/// The task from the engine's variables; the error message follows the flag's name.
fn from_env(flag_count: Option<u64>, env: &dyn Fn(&str) -> Option<String>) -> Result<Task> {
    let flag = match flag_count {
        Some(n) => format!("auto/{n}"),
        None => "auto".to_string(),
    };
    let get = |k: &str| -> Result<Option<u64>> {
        match env(k) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| anyhow!("{flag}: {k}={v:?} is not a non-negative whole number")),
        }
    };
    let forge_count = get("FORGE_TASK_COUNT")?.map(|c| (c, format!("FORGE_TASK_COUNT={c}")));
    // (index, count from the engine with the variable that holds it, what set the index)
    let (index, engine_count, source): (u64, Option<(u64, String)>, String) = if let Some(i) =
        get("FORGE_TASK_INDEX")?
    {
        (i, forge_count, "FORGE_TASK_INDEX".into())
    } else if let Some(id) = get("SLURM_ARRAY_TASK_ID")? {
        let min = get("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let step = get("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
        if id < min || (id - min) % step != 0 {
            bail!(
                    "{flag}: SLURM_ARRAY_TASK_ID={id} is not on the array's range (MIN {min}, STEP {step}); submit the array as --array=0-{{N-1}}"
                );
        }
        let count = match (get("SLURM_ARRAY_TASK_COUNT")?, get("SLURM_ARRAY_TASK_MAX")?) {
            (Some(c), _) => Some((c, format!("SLURM_ARRAY_TASK_COUNT={c}"))),
            (None, Some(max)) if max >= min => {
                let from = format!("SLURM_ARRAY_TASK_MAX={max} with MIN {min}, STEP {step}");
                let c = ((max - min) / step).checked_add(1).ok_or_else(|| {
                    anyhow!(
                        "{flag}: the number of tasks from {from} is out of range (above \
                         {}): is SLURM_ARRAY_TASK_MAX right?",
                        u64::MAX
                    )
                })?;
                Some((c, from))
            }
            _ => forge_count,
        };
        ((id - min) / step, count, "SLURM_ARRAY_TASK_ID".into())
    } else if let Some(i) = get("JOB_COMPLETION_INDEX")? {
        (i, forge_count, "JOB_COMPLETION_INDEX".into())
    } else {
        bail!(
            "{flag}: no task index in the environment: none of FORGE_TASK_INDEX (CI matrices, \
                 with FORGE_TASK_COUNT), SLURM_ARRAY_TASK_ID (a Slurm job array, sbatch --array) \
                 or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set; outside such a task \
                 give the piece as I/N"
        );
    };
    let (count, count_from) = match (flag_count, engine_count) {
        (Some(f), Some((e, from))) if f != e => bail!(
            "{flag}: the count given ({f}) differs from the environment's ({from}, with {source})"
        ),
        (Some(f), _) => (f, format!("given as {flag}")),
        (None, Some((e, from))) => (e, from),
        (None, None) => bail!(
            "{flag}: {source}={index} is set but not the number of tasks: give it as auto/N \
             (for a Kubernetes Indexed Job, N = .spec.completions) or set FORGE_TASK_COUNT"
        ),
    };
    if count == 0 {
        bail!("{flag}: the number of tasks is 0 ({count_from}): it must be at least 1");
    }
    if index >= count {
        bail!(
            "{flag}: task index {index} (from {source}) is not below the number of tasks {count}"
        );
    }
    Ok(Task { index, count })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn auto(count: Option<u64>, vars: &[(&str, &str)]) -> Result<Task> {
        TaskSpec::Auto { count }.resolve_with("--chunk", &env(vars))
    }

    fn t(index: u64, count: u64) -> Task {
        Task { index, count }
    }

    #[test]
    fn parses_flags() {
        assert_eq!(parse_task_spec("2/8"), Ok(TaskSpec::Given(t(2, 8))));
        assert_eq!(parse_task_spec("0/1"), Ok(TaskSpec::Given(t(0, 1))));
        assert_eq!(parse_task_spec("auto"), Ok(TaskSpec::Auto { count: None }));
        assert_eq!(
            parse_task_spec("auto/8"),
            Ok(TaskSpec::Auto { count: Some(8) })
        );
        for bad in ["8/8", "1/0", "x/2", "3", "-1/2", "auto/0", "auto/x"] {
            assert!(parse_task_spec(bad).is_err(), "{bad}");
        }
        assert!(parse_task_spec("8/8").unwrap_err().contains("0-based"));
    }

    #[test]
    fn slurm_arrays() {
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
        ];
        assert_eq!(auto(None, &vars).unwrap(), t(3, 8));
        assert_eq!(auto(Some(8), &vars).unwrap(), t(3, 8));
        assert!(auto(Some(4), &vars)
            .unwrap_err()
            .to_string()
            .contains("differs"));
        // --array=1-8: no COUNT, MIN and MAX.
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "8"),
        ];
        assert_eq!(auto(None, &vars).unwrap(), t(0, 8));
        // --array=0-14:2
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "6"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "14"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ];
        assert_eq!(auto(None, &vars).unwrap(), t(3, 8));
        // Only the ID: the count from the flag.
        assert_eq!(
            auto(Some(4), &[("SLURM_ARRAY_TASK_ID", "2")]).unwrap(),
            t(2, 4)
        );
    }

    #[test]
    fn kubernetes_and_ci() {
        let k8s = [("JOB_COMPLETION_INDEX", "5")];
        assert_eq!(auto(Some(8), &k8s).unwrap(), t(5, 8));
        let e = auto(None, &k8s).unwrap_err().to_string();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=5") && e.contains("auto/N"),
            "{e}"
        );
        assert_eq!(
            auto(
                None,
                &[("JOB_COMPLETION_INDEX", "5"), ("FORGE_TASK_COUNT", "6")]
            )
            .unwrap(),
            t(5, 6)
        );
        let ci = [("FORGE_TASK_INDEX", "1"), ("FORGE_TASK_COUNT", "3")];
        assert_eq!(auto(None, &ci).unwrap(), t(1, 3));
        // FORGE_TASK_INDEX wins over a scheduler's.
        let both = [
            ("FORGE_TASK_INDEX", "0"),
            ("FORGE_TASK_COUNT", "2"),
            ("SLURM_ARRAY_TASK_ID", "1"),
        ];
        assert_eq!(auto(None, &both).unwrap(), t(0, 2));
    }

    #[test]
    fn clear_errors() {
        let e = auto(None, &[]).unwrap_err().to_string();
        assert!(e.starts_with("--chunk auto: no task index"), "{e}");
        for v in [
            "SLURM_ARRAY_TASK_ID",
            "JOB_COMPLETION_INDEX",
            "FORGE_TASK_INDEX",
        ] {
            assert!(e.contains(v), "{e}");
        }
        let e = auto(
            None,
            &[("FORGE_TASK_INDEX", "4"), ("FORGE_TASK_COUNT", "4")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not below"), "{e}");
        let e = auto(None, &[("FORGE_TASK_INDEX", "x")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("FORGE_TASK_INDEX=\"x\""), "{e}");
        // A count of 0 names the variable that holds it, not the index's.
        for (vars, named) in [
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "0"),
                    ("SLURM_ARRAY_TASK_COUNT", "0"),
                ][..],
                "SLURM_ARRAY_TASK_COUNT=0",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "0"), ("FORGE_TASK_COUNT", "0")][..],
                "FORGE_TASK_COUNT=0",
            ),
        ] {
            let e = auto(None, vars).unwrap_err().to_string();
            assert!(
                e.contains("number of tasks is 0") && e.contains(named),
                "{e}"
            );
        }
        // MAX = 2^64 - 1: the count does not fit in 64 bits.
        let max = u64::MAX.to_string();
        let e = auto(
            None,
            &[
                ("SLURM_ARRAY_TASK_ID", &max),
                ("SLURM_ARRAY_TASK_MAX", &max),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("out of range") && e.contains("SLURM_ARRAY_TASK_MAX"),
            "{e}"
        );
    }
}
