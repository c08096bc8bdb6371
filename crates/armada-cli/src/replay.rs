//! `armada replay FILE.jsonl --lane N [-g PORT]`: one lane of a batch again, on the CPU
//! engine, to the same end.
//!
//! A batch's lanes are deterministic (virtual clock, seed SEED + lane), so a lane is a
//! function of what the batch was given. `armada batch --out FILE.jsonl` writes that beside
//! the results, in `FILE.jsonl.batch.json` (the results file keeps one line a lane, which
//! scripts read): armada's arguments and working directory, the guest environment and
//! sysroot as they were resolved (they came from armada's own environment), and each
//! program's size and hash. Replay builds the batch's spec from them as the batch did, makes
//! lane N (from the batch's snapshot, when it had one) and runs it on the CPU engine, under
//! gdb with `-g`; then it compares the lane's exit, instruction count, stdout and stderr
//! with the batch's line. Lanes that ran on a GPU engine replay the same way: every engine
//! gives the CPU engine's results.

use crate::batch::{build_spec, BatchArgs};
use crate::record::{fnv64, json_bytes, record_path};
use anyhow::{bail, Context, Result};
use armada_core::batch::{BatchSpec, LaneResult};
use clap::{Args, Parser};
use serde_json::Value;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ReplayArgs {
    /// The batch's results (`armada batch --out FILE.jsonl`); FILE.jsonl.batch.json beside
    /// it says how the batch was run.
    #[arg(value_name = "FILE.jsonl")]
    pub file: PathBuf,
    /// The lane to run again.
    #[arg(long, value_name = "N")]
    pub lane: usize,
    /// Run the lane under gdb (as `armada run -g`): PORT, HOST:PORT or a socket path.
    #[arg(short = 'g', long = "gdb", value_name = "PORT")]
    pub gdb: Option<String>,
}

/// The lane's line of the results.
fn result_line(file: &Path, lane: usize) -> Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    for (i, line) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("{} line {}: not a JSON line", file.display(), i + 1))?;
        if v.get("lane").and_then(Value::as_u64) == Some(lane as u64) {
            return Ok(v);
        }
    }
    bail!("{} has no line for lane {lane}", file.display())
}

pub fn replay(args: ReplayArgs) -> Result<u8> {
    let rec_path = record_path(&args.file);
    let text = std::fs::read(&rec_path).with_context(|| {
        format!(
            "cannot read {} (written by `armada batch --out {}`; a batch run by an older armada, or its results file alone, cannot be replayed)",
            rec_path.display(),
            args.file.display()
        )
    })?;
    let rec: Value = serde_json::from_slice(&text)
        .with_context(|| format!("{}: not a batch record", rec_path.display()))?;
    let b = rec
        .get("armada_batch")
        .with_context(|| format!("{}: not a batch record", rec_path.display()))?;
    let field = |k: &str| {
        b.get(k)
            .with_context(|| format!("{}: no {k}", rec_path.display()))
    };
    let bytes_list = |k: &str| -> Result<Vec<Vec<u8>>> {
        field(k)?
            .as_array()
            .with_context(|| format!("{}: {k} is not a list", rec_path.display()))?
            .iter()
            .map(|v| json_bytes(v).with_context(|| format!("{}: bad {k}", rec_path.display())))
            .collect()
    };
    let argv: Vec<OsString> = bytes_list("argv")?
        .into_iter()
        .map(OsString::from_vec)
        .collect();
    let env = bytes_list("env")?;
    let cwd = PathBuf::from(OsString::from_vec(
        json_bytes(field("cwd")?).context("bad cwd")?,
    ));
    let expected = result_line(&args.file, args.lane)?;
    // the batch's relative paths (its program, --stdin-dir, --root) are relative to where
    // it ran
    std::env::set_current_dir(&cwd)
        .with_context(|| format!("the batch ran in {}, which is gone", cwd.display()))?;
    let cli = crate::Cli::try_parse_from(&argv)
        .map_err(|e| anyhow::anyhow!("the batch's arguments no longer parse: {e}"))?;
    let crate::Command::Batch(batch) = cli.command else {
        bail!("{}: not the record of a batch", rec_path.display());
    };
    let spec = lane_spec(&batch, env, b, args.lane)?;
    // the programs must be the ones that ran
    for (p, want) in spec
        .programs
        .iter()
        .zip(field("programs")?.as_array().into_iter().flatten())
    {
        let bytes = std::fs::read(&p.host_path)
            .with_context(|| format!("cannot read {}", p.host_path.display()))?;
        let same = want.get("size").and_then(Value::as_u64) == Some(bytes.len() as u64)
            && want.get("fnv64").and_then(Value::as_str)
                == Some(&format!("{:016x}", fnv64(&bytes)));
        if !same {
            bail!(
                "{} is not the file the batch ran (its size or hash changed): replay needs the same program",
                p.host_path.display()
            );
        }
    }
    let lane = spec
        .spawn(args.lane)
        .with_context(|| format!("cannot make lane {}", args.lane))?;
    let mut lane = match &args.gdb {
        Some(at) => armada_gdb::serve(
            lane,
            spec.max_instructions,
            &armada_gdb::Listen::parse(at)?,
            &spec.program_of(args.lane).host_path.display().to_string(),
        )?,
        None => {
            let mut lane = lane;
            lane.run(spec.max_instructions);
            lane
        }
    };
    let r = LaneResult::from_lane(args.lane, &mut lane, 0);
    std::io::stdout().write_all(&r.stdout)?;
    std::io::stderr().write_all(&r.stderr)?;
    let diffs = compare(&r, &expected, spec.drop_output)?;
    if diffs.is_empty() {
        eprintln!(
            "armada replay: lane {}: status {}, {} instructions: the same as in the batch",
            args.lane,
            r.exit.status(),
            r.instructions
        );
        Ok(0)
    } else {
        eprintln!(
            "armada replay: lane {} differs from the batch: {}",
            args.lane,
            diffs.join("; ")
        );
        Ok(1)
    }
}

/// The batch's spec with the recorded environment and sysroot (they came from armada's
/// environment then, not now), and its snapshot when it took one.
fn lane_spec(batch: &BatchArgs, env: Vec<Vec<u8>>, rec: &Value, lane: usize) -> Result<BatchSpec> {
    let mut spec = build_spec(batch)?;
    if lane >= spec.lanes.len() {
        bail!("the batch had {} lanes: no lane {lane}", spec.lanes.len());
    }
    let env: std::sync::Arc<[Vec<u8>]> = env.into();
    for l in spec.lanes.iter_mut() {
        l.env = env.clone();
    }
    spec.config.sysroot = rec
        .get("sysroot")
        .and_then(json_bytes)
        .map(|b| PathBuf::from(OsString::from_vec(b)));
    if let Some(point) = &batch.snapshot_at {
        spec.take_snapshot(point.clone())
            .with_context(|| format!("--snapshot-at {point}"))?;
    }
    Ok(spec)
}

/// What differs between the replayed lane and the batch's line.
fn compare(r: &LaneResult, line: &Value, dropped: bool) -> Result<Vec<String>> {
    let mut d = Vec::new();
    let num = |k: &str| line.get(k).and_then(Value::as_u64);
    if num("status") != Some(r.exit.status() as u64) {
        d.push(format!(
            "status {} against {:?}",
            r.exit.status(),
            num("status")
        ));
    }
    if num("instructions") != Some(r.instructions) {
        d.push(format!(
            "{} instructions against {:?}",
            r.instructions,
            num("instructions")
        ));
    }
    for (name, got) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        if dropped {
            // the batch dropped the lanes' output (--drop-output): nothing to compare
            break;
        }
        let want = match (line.get(name), line.get(format!("{name}_file"))) {
            (Some(Value::String(s)), _) => Some(s.as_bytes().to_vec()),
            // (relative to the batch's directory, the current one now)
            (_, Some(Value::String(f))) => std::fs::read(f).ok(),
            _ => None,
        };
        // the line's text holds bytes that were not UTF-8 as U+FFFD, as written
        let got_text = String::from_utf8_lossy(got).into_owned().into_bytes();
        match want {
            Some(w) if w == *got || w == got_text => {}
            Some(w) => d.push(format!("{name} {} bytes against {}", got.len(), w.len())),
            None => {}
        }
    }
    Ok(d)
}
