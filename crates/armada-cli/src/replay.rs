//! `armada replay FILE.jsonl --lane N [-g PORT]`: one lane of a batch again, on the CPU
//! engine, to the same end. `armada replay INPUT [-g PORT]`: an input a fuzzing run saved
//! (a crash, a hang, a queue entry) run again as the fuzzer ran it.
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
//!
//! A fuzzing run (`armada fuzz -o OUT` or `--crashes DIR`) writes its record, the same
//! fields, as `armada_fuzz.json` in OUT/NAME (or DIR). Replay of a file saved there (in
//! OUT/NAME/crashes, hangs or queue, or in DIR) finds the record one or two folders up,
//! makes the target as the fuzzer made it (its snapshot, the input routed as then: stdin,
//! the `@@` file or the fuzzed function's buffer), runs the input on the CPU engine within
//! the run's `--exec-limit`, under gdb with `-g`, and says what the fuzzer would make of the
//! end: the signal, the crash's one-line report and bucket, which must be the bucket the
//! file's name carries (`bucket:` in AFL++'s names, `crash-KEY` and `hang-KEY` in
//! `--crashes`' own).

use crate::batch::{build_spec, BatchArgs};
use crate::record::{fnv64, json_bytes, record_path, FUZZ_RECORD};
use anyhow::{bail, Context, Result};
use armada_core::batch::{BatchSpec, LaneResult};
use armada_fuzz::target::Outcome;
use clap::{Args, Parser};
use serde_json::Value;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ReplayArgs {
    /// The batch's results (`armada batch --out FILE.jsonl`; FILE.jsonl.batch.json beside
    /// it says how the batch was run), or an input `armada fuzz` saved (a file of its
    /// crashes, hangs or queue; armada_fuzz.json one or two folders up says how it ran).
    #[arg(value_name = "FILE.jsonl|INPUT")]
    pub file: PathBuf,
    /// The lane of the batch to run again.
    #[arg(long, value_name = "N")]
    pub lane: Option<usize>,
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
    if args.lane.is_none() && !rec_path.exists() {
        return replay_input(&args);
    }
    let Some(n) = args.lane else {
        bail!(
            "{} is a batch's results: say which lane to run again (--lane N)",
            args.file.display()
        );
    };
    let rec = Record::read(&rec_path, "armada_batch").with_context(|| {
        format!(
            "written by `armada batch --out {}`; a batch run by an older armada, or its results file alone, cannot be replayed",
            args.file.display()
        )
    })?;
    let expected = result_line(&args.file, n)?;
    let crate::Command::Batch(batch) = rec.command()? else {
        bail!("{}: not the record of a batch", rec_path.display());
    };
    let spec = lane_spec(&batch, rec.env.clone(), rec.sysroot(), n)?;
    // the programs must be the ones that ran
    for p in &spec.programs {
        rec.check_program(&p.host_path, "the batch")?;
    }
    let lane = spec
        .spawn(n)
        .with_context(|| format!("cannot make lane {n}"))?;
    let mut lane = match &args.gdb {
        Some(at) => armada_gdb::serve(
            lane,
            spec.max_instructions,
            &armada_gdb::Listen::parse(at)?,
            &spec.program_of(n).host_path.display().to_string(),
        )?,
        None => {
            let mut lane = lane;
            lane.run(spec.max_instructions);
            lane
        }
    };
    let r = LaneResult::from_lane(n, &mut lane, 0);
    std::io::stdout().write_all(&r.stdout)?;
    std::io::stderr().write_all(&r.stderr)?;
    let diffs = compare(&r, &expected, spec.drop_output)?;
    if diffs.is_empty() {
        eprintln!(
            "armada replay: lane {}: status {}, {} instructions: the same as in the batch",
            n,
            r.exit.status(),
            r.instructions
        );
        Ok(0)
    } else {
        eprintln!(
            "armada replay: lane {} differs from the batch: {}",
            n,
            diffs.join("; ")
        );
        Ok(1)
    }
}

/// A record (`record.rs`): armada's arguments, where it ran, the guest environment and
/// sysroot as resolved, the programs' sizes and hashes.
struct Record {
    path: PathBuf,
    body: Value,
    argv: Vec<OsString>,
    env: Vec<Vec<u8>>,
    cwd: PathBuf,
}

impl Record {
    /// The record at `path` whose body is under `key` (`armada_batch`, `armada_fuzz`).
    fn read(path: &Path, key: &str) -> Result<Record> {
        let shown = path.display();
        let text = std::fs::read(path).with_context(|| format!("cannot read {shown}"))?;
        let rec: Value =
            serde_json::from_slice(&text).with_context(|| format!("{shown}: not a record"))?;
        let body = rec
            .get(key)
            .with_context(|| format!("{shown}: not a record of {key}"))?
            .clone();
        let field = |k: &str| body.get(k).with_context(|| format!("{shown}: no {k}"));
        let bytes_list = |k: &str| -> Result<Vec<Vec<u8>>> {
            field(k)?
                .as_array()
                .with_context(|| format!("{shown}: {k} is not a list"))?
                .iter()
                .map(|v| json_bytes(v).with_context(|| format!("{shown}: bad {k}")))
                .collect()
        };
        let argv = bytes_list("argv")?
            .into_iter()
            .map(OsString::from_vec)
            .collect();
        let env = bytes_list("env")?;
        let cwd = PathBuf::from(OsString::from_vec(
            json_bytes(field("cwd")?).with_context(|| format!("{shown}: bad cwd"))?,
        ));
        Ok(Record {
            path: path.to_path_buf(),
            body,
            argv,
            env,
            cwd,
        })
    }

    /// armada's recorded command, parsed where it ran (its relative paths, the program,
    /// --stdin-dir, --root, are relative to there: the working directory becomes that).
    fn command(&self) -> Result<crate::Command> {
        std::env::set_current_dir(&self.cwd)
            .with_context(|| format!("it ran in {}, which is gone", self.cwd.display()))?;
        let cli = crate::Cli::try_parse_from(&self.argv).map_err(|e| {
            anyhow::anyhow!(
                "{}: the recorded arguments no longer parse: {e}",
                self.path.display()
            )
        })?;
        Ok(cli.command)
    }

    /// The recorded sysroot (it came from armada's environment then, not now).
    fn sysroot(&self) -> Option<PathBuf> {
        self.body
            .get("sysroot")
            .and_then(json_bytes)
            .map(|b| PathBuf::from(OsString::from_vec(b)))
    }

    /// Fails unless `path` is a program the record names, with the same size and hash.
    fn check_program(&self, path: &Path, what: &str) -> Result<()> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let hash = format!("{:016x}", fnv64(&bytes));
        let same = self
            .body
            .get("programs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|want| {
                want.get("path").and_then(json_bytes).as_deref()
                    == Some(path.as_os_str().as_bytes())
                    && want.get("size").and_then(Value::as_u64) == Some(bytes.len() as u64)
                    && want.get("fnv64").and_then(Value::as_str) == Some(hash.as_str())
            });
        if !same {
            bail!(
                "{} is not the file {what} ran (its size or hash changed): replay needs the same program",
                path.display()
            );
        }
        Ok(())
    }
}

/// The record of the fuzzing run that saved `input`: in its folder (`--crashes DIR`) or
/// the one above (`-o OUT`: OUT/NAME/crashes/FILE).
fn fuzz_record_of(input: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(input).ok()?;
    abs.ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join(FUZZ_RECORD))
        .find(|p| p.exists())
}

/// The bucket a saved input's name carries: `bucket:KEY` (AFL++'s names), `crash-KEY`,
/// `hang-KEY` (`--crashes`' own).
fn bucket_in_name(name: &str) -> Option<&str> {
    if let Some(k) = name.split(',').find_map(|f| f.strip_prefix("bucket:")) {
        return Some(k);
    }
    name.strip_prefix("crash-")
        .or_else(|| name.strip_prefix("hang-"))
}

/// `armada replay INPUT`: an input a fuzzing run saved, run again as the fuzzer ran it.
fn replay_input(args: &ReplayArgs) -> Result<u8> {
    let file = &args.file;
    let input = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let Some(rec_path) = fuzz_record_of(file) else {
        bail!(
            "{} is neither a batch's results (no {} beside it) nor an input saved by `armada fuzz -o` or `--crashes` (no {FUZZ_RECORD} in its folder or the one above)",
            file.display(),
            record_path(file).display()
        );
    };
    let rec = Record::read(&rec_path, "armada_fuzz")?;
    let crate::Command::Fuzz(fuzz) = rec.command()? else {
        bail!("{}: not the record of a fuzzing run", rec_path.display());
    };
    let mut spec = crate::fuzz::target_spec(&fuzz)?;
    spec.env = rec.env.clone();
    spec.config.sysroot = rec.sysroot();
    rec.check_program(&spec.program, "the fuzzing run")?;
    let limit = spec.exec_limit;
    let program = spec.program.display().to_string();
    let target = crate::fuzz::make_target(spec, fuzz.snapshot_at.is_none(), false)?;
    let limit = target.start_instructions() + limit;
    let lane = target.lane(&input)?;
    let mut lane = match &args.gdb {
        Some(at) => {
            armada_gdb::serve(lane, Some(limit), &armada_gdb::Listen::parse(at)?, &program)?
        }
        None => {
            let mut lane = lane;
            lane.run(Some(limit));
            lane
        }
    };
    let exit = lane
        .exit
        .clone()
        .unwrap_or(armada_core::runner::Exit::InstructionLimit);
    let outcome = target.outcome(&mut lane, &exit);
    let r = LaneResult::from_lane(0, &mut lane, 0);
    std::io::stdout().write_all(&r.stdout)?;
    std::io::stderr().write_all(&r.stderr)?;
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let what = match &outcome {
        Outcome::Crash { report, .. } | Outcome::Hang { report, .. } => {
            format!("{outcome}: {report}")
        }
        o => o.to_string(),
    };
    eprintln!(
        "armada replay: {}: {what}; {} instructions",
        file.display(),
        r.instructions
    );
    match (bucket_in_name(&name), outcome.bucket()) {
        (Some(want), Some(got)) if want == got => {
            eprintln!("armada replay: bucket {got}: the one the fuzzer filed it under");
            Ok(0)
        }
        (Some(want), got) => {
            eprintln!(
                "armada replay: the fuzzer filed it under bucket {want}; this run {}",
                match got {
                    Some(g) => format!("ends in bucket {g}"),
                    None => "does not crash or hang".into(),
                }
            );
            Ok(1)
        }
        (None, _) => Ok(0),
    }
}

/// The batch's spec with the recorded environment and sysroot (they came from armada's
/// environment then, not now), and its snapshot when it took one.
fn lane_spec(
    batch: &BatchArgs,
    env: Vec<Vec<u8>>,
    sysroot: Option<PathBuf>,
    lane: usize,
) -> Result<BatchSpec> {
    let mut spec = build_spec(batch)?;
    if lane >= spec.lanes.len() {
        bail!("the batch had {} lanes: no lane {lane}", spec.lanes.len());
    }
    let env: std::sync::Arc<[Vec<u8>]> = env.into();
    for l in spec.lanes.iter_mut() {
        l.env = env.clone();
    }
    spec.config.sysroot = sysroot;
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
