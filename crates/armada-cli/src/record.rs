//! The record of a batch that `armada batch --out FILE.jsonl` writes beside its results,
//! `FILE.jsonl.batch.json`, and of a fuzzing run, `armada_fuzz.json` in its output directory
//! (or its crashes directory), which `armada replay` reads: armada's arguments and working
//! directory, the guest environment and sysroot as they were resolved, and each program's
//! size and hash (see `replay.rs`).

use anyhow::{Context, Result};
use armada_core::batch::BatchSpec;
use armada_fuzz::target::TargetSpec;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The file beside a batch's results that says how to run it again.
pub fn record_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_os_string();
    s.push(".batch.json");
    PathBuf::from(s)
}

/// FNV-1a, 64 bits: a program file's identity in the record (stable across builds and
/// machines, unlike std's hasher).
pub fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn bytes_json(b: &[u8]) -> Value {
    // lossless: a string where the bytes are UTF-8, else an array of numbers
    match std::str::from_utf8(b) {
        Ok(s) => Value::String(s.to_string()),
        Err(_) => Value::Array(b.iter().map(|x| json!(x)).collect()),
    }
}

/// The bytes `bytes_json` wrote.
pub fn json_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Array(a) => a.iter().map(|x| x.as_u64().map(|n| n as u8)).collect(),
        _ => None,
    }
}

/// The record's body: what `argv` (armada's own arguments) ran, from where, with which
/// guest environment, sysroot and programs.
fn body(
    argv: &[OsString],
    env: &[Vec<u8>],
    sysroot: Option<&Path>,
    programs: &[&Path],
) -> Result<Value> {
    let cwd = std::env::current_dir().context("the working directory")?;
    let programs: Vec<Value> = programs
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).unwrap_or_default();
            json!({
                "path": bytes_json(p.as_os_str().as_bytes()),
                "size": bytes.len(),
                "fnv64": format!("{:016x}", fnv64(&bytes)),
            })
        })
        .collect();
    Ok(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "cwd": bytes_json(cwd.as_os_str().as_bytes()),
        "argv": argv.iter().map(|a| bytes_json(a.as_bytes())).collect::<Vec<_>>(),
        "env": env.iter().map(|e| bytes_json(e)).collect::<Vec<_>>(),
        "sysroot": sysroot.map(|s| bytes_json(s.as_os_str().as_bytes())),
        "programs": programs,
    }))
}

/// Writes the record of a batch that `argv` (armada's own arguments) ran with `spec`.
pub fn write_record(out: &Path, argv: &[OsString], spec: &BatchSpec) -> Result<()> {
    let env = spec.lanes.first().map(|l| &l.env[..]).unwrap_or_default();
    let programs: Vec<&Path> = spec
        .programs
        .iter()
        .map(|p| p.host_path.as_path())
        .collect();
    let b = body(argv, env, spec.config.sysroot.as_deref(), &programs)?;
    let path = record_path(out);
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({ "armada_batch": b }))?,
    )
    .with_context(|| format!("cannot write {}", path.display()))
}

/// The name of a fuzzing run's record, in its instance directory (`-o OUT`: OUT/NAME) or
/// its crashes directory (`--crashes DIR`).
pub const FUZZ_RECORD: &str = "armada_fuzz.json";

/// Writes the record of a fuzzing run that `argv` ran with `spec` into `dir`.
pub fn write_fuzz_record(dir: &Path, argv: &[OsString], spec: &TargetSpec) -> Result<()> {
    let b = body(
        argv,
        &spec.env,
        spec.config.sysroot.as_deref(),
        &[spec.program.as_path()],
    )?;
    let path = dir.join(FUZZ_RECORD);
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({ "armada_fuzz": b }))?,
    )
    .with_context(|| format!("cannot write {}", path.display()))
}
