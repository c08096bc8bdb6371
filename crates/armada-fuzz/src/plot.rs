//! A picture of a fuzz run: `plot.html` in the output directory, one self-contained page
//! (inline SVG, no script, nothing fetched) with coverage, corpus, crashes and execs/s over
//! time, for people who would rather look than read `plot_data`. It is rewritten with
//! every `plot_data` line.

use std::fmt::Write as _;

/// One sample of the run (a `plot_data` line).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Seconds since the instance started (earlier runs included).
    pub time: f64,
    pub edges: f64,
    pub corpus: f64,
    pub crashes: f64,
    pub hangs: f64,
    pub execs_per_sec: f64,
    pub execs: f64,
}

impl Sample {
    /// A `plot_data` line (AFL++ 4's columns; see `afl`), None for the header or a line
    /// that does not parse.
    pub fn parse(line: &str) -> Option<Sample> {
        if line.starts_with('#') {
            return None;
        }
        let f: Vec<f64> = line
            .split(',')
            .map(|x| x.trim().trim_end_matches('%').parse::<f64>())
            .collect::<Result<_, _>>()
            .ok()?;
        (f.len() >= 13).then(|| Sample {
            time: f[0],
            corpus: f[3],
            crashes: f[7],
            hangs: f[8],
            execs_per_sec: f[10],
            execs: f[11],
            edges: f[12],
        })
    }
}

const W: f64 = 900.0;
const H: f64 = 220.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 40.0;

/// A round step for about five ticks up to `max`.
fn step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

fn label(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A line of a chart: its name, colour, and value in a sample.
type Series<'a> = (&'a str, &'a str, fn(&Sample) -> f64);

/// One chart: `series` over time.
fn chart(out: &mut String, title: &str, samples: &[Sample], series: &[Series]) {
    let t_max = samples.iter().map(|s| s.time).fold(1.0, f64::max);
    let v_max = samples
        .iter()
        .flat_map(|s| series.iter().map(move |(_, _, f)| f(s)))
        .fold(1.0, f64::max);
    let (ts, vs) = (step(t_max), step(v_max));
    let (t_top, v_top) = ((t_max / ts).ceil() * ts, (v_max / vs).ceil() * vs);
    let x = |t: f64| LEFT + (W - LEFT - RIGHT) * t / t_top;
    let y = |v: f64| H - BOTTOM - (H - TOP - BOTTOM) * v / v_top;
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(out, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{title}</text>"
    );
    let mut v = 0.0;
    while v <= v_top + vs / 2.0 {
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e0e0e0\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            label(v),
            y = y(v)
        );
        v += vs;
    }
    let mut t = 0.0;
    while t <= t_top + ts / 2.0 {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(t),
            H - BOTTOM + 16.0,
            label(t)
        );
        t += ts;
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">seconds</text>",
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 6.0
    );
    for (k, (name, colour, f)) in series.iter().enumerate() {
        let points: Vec<String> = samples
            .iter()
            .map(|s| format!("{:.1},{:.1}", x(s.time), y(f(s))))
            .collect();
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2.5\" points=\"{}\"/>",
            points.join(" ")
        );
        let lx = W - RIGHT - 150.0;
        let ly = TOP + 4.0 + 16.0 * k as f64;
        let _ = writeln!(
            out,
            "<line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\">{name}</text>",
            lx + 20.0,
            lx + 26.0,
            ly + 4.0
        );
    }
    out.push_str("</svg>\n");
}

/// The page for `samples` of the instance `name`.
pub fn html(name: &str, command: &str, samples: &[Sample]) -> String {
    let mut out = String::new();
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let last = samples.last().copied().unwrap_or_default();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>armada fuzz: {}</title></head>\n<body style=\"font-family: sans-serif\">\n<h2>armada fuzz: {}</h2>\n<p><code>{}</code><br>{} s, {} executions, {} edges, {} corpus entries, {} crashes, {} hangs</p>",
        esc(name),
        esc(name),
        esc(command),
        label(last.time),
        label(last.execs),
        last.edges,
        last.corpus,
        last.crashes,
        last.hangs
    );
    chart(
        &mut out,
        "coverage",
        samples,
        &[
            ("edges", "#0090ff", |s| s.edges),
            ("corpus", "#303030", |s| s.corpus),
        ],
    );
    chart(
        &mut out,
        "crashes and hangs (one a bucket)",
        samples,
        &[
            ("crashes", "#c00080", |s| s.crashes),
            ("hangs", "#c0a000", |s| s.hangs),
        ],
    );
    chart(
        &mut out,
        "speed",
        samples,
        &[("execs/s", "#00a040", |s| s.execs_per_sec)],
    );
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_data_lines_parse_and_draw() {
        let s = Sample::parse("12, 180, 59, 121, 0, 0, 0.70%, 2, 1, 19, 71023.21, 852331, 456")
            .unwrap();
        assert_eq!(
            (s.time, s.corpus, s.crashes, s.edges),
            (12.0, 121.0, 2.0, 456.0)
        );
        assert_eq!(Sample::parse("# relative_time, cycles_done"), None);
        let page = html("default", "prog <@@>", &[Sample::default(), s]);
        assert_eq!(page.matches("<svg").count(), 3);
        assert!(page.contains("prog &lt;@@&gt;"));
        assert_eq!(step(456.0), 100.0);
        assert_eq!(step(71023.0), 20000.0);
    }
}
