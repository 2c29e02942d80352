//! The CSV: its header, the typed rows and their one text form, the rows of an earlier run read
//! back for `--resume`, and `OUT.partial`, where rows go as they finish. Rows are read and
//! written by the `csv` crate; the header and a shard's identity line are lines of text.

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{anyhow, bail, Context, Result};
use csv::StringRecord;

use super::param::{fmt_value, Vary};
use super::points::Point;
use super::stats::{Settings, Stats};
use crate::output::{self, TempName};

/// The columns after the varied parameters' (one per `--vary`, named like it): agent count,
/// box side (x), runs, steps, then the order parameter φ's mean over the measured steps and
/// seeds, its standard error over seeds, Binder cumulant 1 − <φ⁴>/(3<φ²>²) and susceptibility
/// N(<φ²> − <φ>²).
pub const STAT_COLUMNS: [&str; 9] = [
    "N",
    "L",
    "seeds",
    "equilibrate",
    "measure",
    "order",
    "order_se",
    "binder",
    "susceptibility",
];

/// How a shard's CSV starts: its identity line (`shard.rs` writes it; `read_earlier` tells a
/// shard's file by it).
pub const PREFIX: &str = "# forge sweep shard ";

/// What `Row`s are written as, for the files.
pub fn header(varies: &[Vary]) -> String {
    let mut cols: Vec<&str> = varies.iter().map(|v| v.param.name()).collect();
    cols.extend(STAT_COLUMNS);
    cols.join(",")
}

/// One point's row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The varied values as the CSV writes them (`Param::fmt`), in `--vary` order: the key a
    /// resumed point is matched by.
    pub key: Vec<String>,
    /// Box side L (x).
    pub side: f32,
    pub settings: Settings,
    /// N and the order parameter's statistics.
    pub stats: Stats,
    pub origin: Origin,
}

/// Where a row came from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// Run by this sweep.
    Ran,
    /// Read back from an earlier run's file (`--resume`). Its fields are written back as they
    /// were read: the values parse back exactly from what forge writes, but an edited file may
    /// spell them otherwise (`0.50`), and a resumed sweep keeps the rows it is given.
    Earlier { fields: StringRecord },
}

/// How rows are written: fields joined by `,`, `\n` after each row, a field quoted only where
/// CSV needs it (a `,`, quote or line break in it, which no value forge writes has).
fn row_writer<W: Write>(w: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .quote_style(csv::QuoteStyle::Necessary)
        .from_writer(w)
}

/// How rows are read: no header row (the caller matched the header line), and any number of
/// fields in a row (`Row::from_record` names a row with too few or too many).
fn row_reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
}

impl Row {
    pub fn ran(point: &Point, stats: Stats, settings: Settings) -> Row {
        Row {
            key: point.key.clone(),
            side: point.scene.world[0],
            settings,
            stats,
            origin: Origin::Ran,
        }
    }

    /// Writes the row's fields to `w`: the one place a row becomes text. The values are
    /// written with Rust's `{}` formatting (`fmt_value` for the statistics).
    fn write<W: Write>(&self, w: &mut csv::Writer<W>) -> csv::Result<()> {
        if let Origin::Earlier { fields } = &self.origin {
            return w.write_record(fields);
        }
        let (s, set) = (&self.stats, &self.settings);
        let mut f: Vec<String> = self.key.clone();
        f.push(s.n.to_string());
        f.push(format!("{}", self.side));
        f.push(set.seeds.to_string());
        f.push(set.equilibrate.to_string());
        f.push(set.measure.to_string());
        for x in [s.order, s.order_se, s.binder, s.susceptibility] {
            f.push(fmt_value(x));
        }
        w.write_record(&f)
    }

    /// Whether `other` holds the same numbers (however a file spells them: `0.50` is `0.5`;
    /// NaN is NaN).
    pub fn same_numbers(&self, other: &Row) -> bool {
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        let (a, b) = (&self.stats, &other.stats);
        self.key == other.key
            && a.n == b.n
            && self.side == other.side
            && self.settings == other.settings
            && [
                (a.order, b.order),
                (a.order_se, b.order_se),
                (a.binder, b.binder),
                (a.susceptibility, b.susceptibility),
            ]
            .into_iter()
            .all(|(x, y)| same(x, y))
    }

    /// The row's line of CSV, as the files hold it, without the newline.
    pub fn line(&self) -> String {
        let mut w = row_writer(Vec::new());
        self.write(&mut w).expect("a row writes to memory");
        let mut text = String::from_utf8(w.into_inner().expect("a row writes to memory"))
            .expect("a row's fields are text");
        text.pop();
        text
    }

    /// The first row of `text` (one line of a file), as `from_record` reads it.
    #[cfg(test)]
    fn parse(text: &str, params: usize) -> Result<Row, RowError> {
        let record = row_reader(text).records().next().transpose();
        Row::from_record(record.expect("text reads").unwrap_or_default(), params)
    }

    /// A row of an earlier run's file with `params` varied parameters (the header matched).
    pub(super) fn from_record(f: StringRecord, params: usize) -> Result<Row, RowError> {
        let want = params + STAT_COLUMNS.len();
        if f.len() != want {
            return Err(RowError::Fields { got: f.len(), want });
        }
        fn get<T: FromStr>(f: &StringRecord, params: usize, k: usize) -> Result<T, RowError> {
            let text = &f[params + k];
            text.parse().map_err(|_| RowError::NotANumber {
                column: STAT_COLUMNS[k],
                text: text.to_string(),
            })
        }
        let g = |k| get::<f64>(&f, params, k);
        Ok(Row {
            key: f.iter().take(params).map(|s| s.to_string()).collect(),
            side: get(&f, params, 1)?,
            settings: Settings {
                seeds: get(&f, params, 2)?,
                equilibrate: get(&f, params, 3)?,
                measure: get(&f, params, 4)?,
            },
            stats: Stats {
                n: get(&f, params, 0)?,
                order: g(5)?,
                order_se: g(6)?,
                binder: g(7)?,
                susceptibility: g(8)?,
            },
            origin: Origin::Earlier { fields: f },
        })
    }
}

/// Why a line of an earlier run's file is not a row; completes "FILE line K ...".
#[derive(Debug, thiserror::Error)]
pub(super) enum RowError {
    #[error("has {got} fields, the header {want}")]
    Fields { got: usize, want: usize },
    #[error("column {column}: {text:?} is not a number")]
    NotANumber { column: &'static str, text: String },
}

/// The header and rows, one per line.
pub(super) fn csv_text<'a>(head: &str, rows: impl IntoIterator<Item = &'a Row>) -> Vec<u8> {
    let mut w = row_writer(format!("{head}\n").into_bytes());
    for row in rows {
        row.write(&mut w).expect("a row writes to memory");
    }
    w.into_inner().expect("rows write to memory")
}

/// The first line of `text` (without its line break) and the text after it.
pub(super) fn split_line(text: &str) -> (&str, &str) {
    let (line, rest) = match text.find('\n') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, ""),
    };
    (line.trim_end_matches('\r'), rest)
}

/// The rows of a file after its header, read by `read_body`.
pub(super) struct Body {
    /// Each row's line number and fields, in file order; empty lines are skipped.
    pub rows: Vec<(usize, StringRecord)>,
    /// The number of a last line without its newline: cut short by an interruption, and not
    /// read.
    pub cut: Option<usize>,
}

/// The rows of `body`, the text after a file's header, whose first line is line `first` of
/// the file.
pub(super) fn read_body(body: &str, first: usize) -> Result<Body> {
    let (whole, rest) = body.split_at(body.rfind('\n').map_or(0, |i| i + 1));
    let cut = (!rest.is_empty()).then(|| first + whole.matches('\n').count());
    let mut rows = Vec::new();
    let (mut line, mut counted) = (first, 0);
    for record in row_reader(whole).records() {
        let record = record?;
        // A record's position is where the reader went on from, which may be the line breaks
        // (empty lines) before it; its line is that of its first field.
        let at = record.position().map_or(counted, |p| p.byte() as usize);
        let start = at
            + whole[at..]
                .bytes()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
        line += whole[counted..start].matches('\n').count();
        counted = start;
        rows.push((line, record));
    }
    Ok(Body { rows, cut })
}

/// Rows of an earlier (maybe interrupted) run of this sweep.
pub struct Earlier {
    pub from: PathBuf,
    /// In file order, the first of each key.
    pub rows: Vec<Row>,
    /// The number of a last line cut short by the interruption (not read).
    pub cut: Option<usize>,
}

impl Earlier {
    /// Warns that the point of a cut line runs again.
    pub fn warn_if_cut(&self) {
        if let Some(lineno) = self.cut {
            log::warn!(
                "{}: line {lineno} is incomplete, its point runs again",
                self.from.display()
            );
        }
    }
}

/// The rows of an earlier run of this sweep: the same varied parameters (in the same order)
/// and `settings`; a shard's file starts with `shard_line` (its identity, `shard.rs`), and
/// only a shard's does. A last line without its newline was cut by the interruption: it is not
/// read, and its point runs again (`Earlier::warn_if_cut`).
pub fn read_earlier(
    path: &Path,
    varies: &[Vary],
    settings: Settings,
    shard_line: Option<&str>,
) -> Result<Earlier> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--resume: cannot read {}", path.display()))?;
    let want = header(varies);
    let (mut head, mut body) = split_line(&text);
    let shard_of = |line: &str| {
        line.strip_prefix(PREFIX)
            .and_then(|r| r.split(' ').next())
            .map(|s| s.to_string())
    };
    match (shard_line, shard_of(head)) {
        (Some(mine), _) if head == mine => (head, body) = split_line(body),
        (Some(mine), Some(other)) => bail!(
            "--resume: {} is shard {other} of a sweep, not shard {} of this one (the same --shard, scene, --vary and settings; or start over with --force)",
            path.display(),
            shard_of(mine).unwrap_or_default()
        ),
        (Some(_), None) => bail!(
            "--resume: {} is not a shard's CSV (start over with --force)",
            path.display()
        ),
        (None, Some(other)) => bail!(
            "--resume: {} is shard {other} of a sweep: resume it with --shard {other}, or join the shards with forge sweep merge",
            path.display()
        ),
        (None, None) => {}
    }
    if head != want {
        bail!(
            "--resume: {} has the columns\n  {head}\nbut this sweep writes\n  {want}\n(vary the same parameters in the same order, or start over with --force)",
            path.display()
        );
    }
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    // Rows are numbered from line 2 whether or not a shard's identity line came first (so in
    // a shard's file a row's number is one below its line).
    let body = read_body(body, 2).with_context(|| format!("--resume: {}", path.display()))?;
    for (lineno, record) in body.rows {
        let row = Row::from_record(record, varies.len())
            .map_err(|e| anyhow!("--resume: {} line {lineno} {e}", path.display()))?;
        let (made, now) = (row.settings, settings);
        if made != now {
            bail!(
                "--resume: {} line {lineno} was made with --seeds {} --equilibrate {} --measure {}, this sweep asks for --seeds {} --equilibrate {} --measure {} (use the same, or start over with --force)",
                path.display(),
                made.seeds,
                made.equilibrate,
                made.measure,
                now.seeds,
                now.equilibrate,
                now.measure
            );
        }
        if seen.insert(row.key.clone()) {
            rows.push(row);
        }
    }
    Ok(Earlier {
        from: path.to_path_buf(),
        rows,
        cut: body.cut,
    })
}

/// `out.csv` → `out.csv.partial`.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|s| s.to_os_string())
        .unwrap_or_default();
    name.push(".partial");
    path.with_file_name(name)
}

/// Refuse to start over an interrupted sweep or a finished one, unless `resume` or `force`.
pub fn check_csv_output(path: &Path, partial: &Path, resume: bool, force: bool) -> Result<()> {
    if path.is_dir() {
        bail!("--output: {} is a folder", path.display());
    }
    if resume || force {
        return Ok(());
    }
    if partial.exists() {
        bail!(
            "--output: {} holds an interrupted sweep (use --resume to continue it, or --force to start over)",
            partial.display()
        );
    }
    if path.exists() {
        bail!(
            "--output: {} already exists (use --resume to extend it, or --force to overwrite it)",
            path.display()
        );
    }
    Ok(())
}

/// What the CSV's files are called in messages.
const WHAT: &str = "CSV";

/// `OUT.partial`, an unfinished sweep's rows: the header, then each row appended (and flushed)
/// as its point finishes, in the order they finish.
pub struct PartialCsv {
    path: PathBuf,
    csv: csv::Writer<File>,
}

impl PartialCsv {
    /// Starts `path` with the header and `rows` (an earlier run's), written all at once: it
    /// replaces an earlier `OUT.partial` only when complete. The caller checked the outputs
    /// (`check_csv_output`), so whatever is at `path` is replaced.
    pub fn start<'a>(
        path: &Path,
        head: &str,
        rows: impl IntoIterator<Item = &'a Row>,
    ) -> Result<PartialCsv> {
        // `.NAME.tmp`: `NAME.partial` is this very file's name pattern.
        output::write_atomic(path, &csv_text(head, rows), TempName::Hidden, true, WHAT)?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(PartialCsv {
            path: path.to_path_buf(),
            csv: row_writer(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&mut self, row: &Row) -> Result<()> {
        row.write(&mut self.csv)
            .and_then(|_| Ok(self.csv.flush()?))
            .map_err(|e| anyhow!("cannot write {}: {e}", self.path.display()))
    }

    /// Every point done: the header and `rows` under `out`, written all at once, and this
    /// file removed.
    pub fn finish<'a>(
        self,
        out: &Path,
        head: &str,
        rows: impl IntoIterator<Item = &'a Row>,
    ) -> Result<()> {
        let PartialCsv { path, csv } = self;
        drop(csv);
        // `.NAME.tmp`: `NAME.partial` is the file being finished.
        output::write_atomic(out, &csv_text(head, rows), TempName::Hidden, true, WHAT)?;
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_forge_wrote_parse_back_to_the_same_text() {
        for line in [
            "0,40,4,40,3.1622777,3,30,30,0.999999974645561,2.5169042850373565e-8,0.6666666666666508,0.123456",
            "1e-7,5,2,50,5,1,10,10,0.5,NaN,0.6,inf",
        ] {
            let row = Row::parse(line, 3).unwrap();
            assert_eq!(row.line(), line);
            let ran = Row {
                origin: Origin::Ran,
                ..row
            };
            assert_eq!(ran.line(), line, "formatting the parsed values");
        }
        // An edited file keeps its spelling.
        let edited = "0.50,40,4,40,3.16,3,30,30,0.50,0.1,0.6,0.2";
        assert_eq!(Row::parse(edited, 3).unwrap().line(), edited);
    }

    #[test]
    fn rows_are_numbered_by_their_line_and_a_cut_line_is_not_read() {
        let body = read_body("a,1\n\n\r\nb,2\r\n\nc,3\nd,", 2).unwrap();
        let got: Vec<(usize, &str)> = body.rows.iter().map(|(k, r)| (*k, &r[0])).collect();
        assert_eq!(got, [(2, "a"), (5, "b"), (7, "c")]);
        assert_eq!(body.cut, Some(8));
        let body = read_body("a,1\n", 3).unwrap();
        assert_eq!((body.rows.len(), body.cut), (1, None));
        assert_eq!(read_body("", 3).unwrap().rows.len(), 0);
    }

    #[test]
    fn bad_rows_name_the_column() {
        let e = Row::parse("0,40,4,40,3.1,3,30,30,high,0.1,0.6,0.2", 3).unwrap_err();
        assert_eq!(e.to_string(), "column order: \"high\" is not a number");
        let e = Row::parse("0,40,4,40.5,3.1,3,30,30,1,0.1,0.6,0.2", 3).unwrap_err();
        assert!(e.to_string().starts_with("column N:"), "{e}");
        let e = Row::parse("0,40", 3).unwrap_err();
        assert_eq!(e.to_string(), "has 2 fields, the header 12");
    }
}
