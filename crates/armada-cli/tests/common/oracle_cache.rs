//! The oracle's runs kept for the rest of a test run (`ARMADA_TEST_ORACLE_CACHE=DIR`).
//!
//! scripts/test runs the guest program suites five times, once a tier (the default, the
//! interpreter, all code translated with and without guards, the quick tier, quick blocks
//! under units), and qemu-aarch64's side of a case is the same every time: its command line,
//! environment (`make_command` clears it), stdin, input files and working directory are the
//! case's, none of them the tier's. So the first pass runs qemu and keeps what it printed,
//! its status and the files it left; the later passes compare armada against that. On 2
//! cores qemu's side is about 90 s of every pass (processes.rs alone 36 s).
//!
//! A kept run is found by a key made of everything that decides what qemu does: the oracle's
//! command line, the program's path and bytes, the arguments, the environment, stdin, the
//! input files and the working directory (the same path in every pass while the cache is
//! on: `work_dir`). Files the program reads from elsewhere (a sysroot, other guest
//! programs it execs) are not in the key: the cache is for one run of scripts/test, which
//! empties it first, and nothing rebuilds them during that run. A run that timed out is
//! never kept.

use super::{RunOutput, Snapshot};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The cache's directory: `$ARMADA_TEST_ORACLE_CACHE`, or none (every case runs qemu).
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("ARMADA_TEST_ORACLE_CACHE")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// A key of 128 bits (two hashes of different families, so that a collision of one is not
/// a collision of the key) over `parts`, each with its length (no two lists of parts give
/// the same byte stream).
pub fn key(parts: &[&[u8]]) -> String {
    let mut stream = Vec::new();
    for p in parts {
        stream.extend((p.len() as u64).to_le_bytes());
        stream.extend_from_slice(p);
    }
    let mut sip = std::collections::hash_map::DefaultHasher::new();
    stream.hash(&mut sip);
    format!("{:016x}{:016x}", sip.finish(), super::fnv64(&stream))
}

/// Where the suites run their cases while the cache is on: the same path in every pass,
/// and as short as the usual one (a program may put a unix socket's path, at most 107
/// bytes, in its working directory), in the temporary directory and named after the cache.
pub fn work_dir(cache: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let k = key(&[cache.as_os_str().as_bytes()]);
    std::env::temp_dir().join(format!("armada-oracle-{}", &k[..12]))
}

const MAGIC: &[u8] = b"armada oracle run 1\n";

fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join("oracle").join(key)
}

/// The run kept under `key`, if there is one (a file that does not parse is no run).
pub fn load(dir: &Path, key: &str) -> Option<(RunOutput, Snapshot)> {
    let data = fs::read(path(dir, key)).ok()?;
    let mut r = Reader(data.strip_prefix(MAGIC)?);
    let status = i32::from_le_bytes(r.take(4)?.try_into().ok()?);
    let elapsed = Duration::from_nanos(r.u64()?);
    let status_text = String::from_utf8(r.bytes()?.to_vec()).ok()?;
    let stdout = r.bytes()?.to_vec();
    let stderr = r.bytes()?.to_vec();
    let mut snap = Snapshot::new();
    for _ in 0..r.u64()? {
        let k = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        let v = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        snap.insert(k, v);
    }
    if !r.0.is_empty() {
        return None;
    }
    let out = RunOutput {
        status,
        status_text,
        stdout,
        stderr,
        elapsed,
        timed_out: false,
    };
    Some((out, snap))
}

/// Keeps `out` and `snap` under `key` (written whole, then renamed: a pass that reads it
/// at the same time sees all of it or nothing). Runs that timed out are not kept.
pub fn store(dir: &Path, key: &str, out: &RunOutput, snap: &Snapshot) -> io::Result<()> {
    if out.timed_out {
        return Ok(());
    }
    let mut w = MAGIC.to_vec();
    w.extend(out.status.to_le_bytes());
    w.extend((out.elapsed.as_nanos() as u64).to_le_bytes());
    for b in [out.status_text.as_bytes(), &out.stdout, &out.stderr] {
        put(&mut w, b);
    }
    w.extend((snap.len() as u64).to_le_bytes());
    for (k, v) in snap {
        put(&mut w, k.as_bytes());
        put(&mut w, v.as_bytes());
    }
    let p = path(dir, key);
    fs::create_dir_all(p.parent().unwrap())?;
    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, w)?;
    fs::rename(tmp, p)
}

fn put(w: &mut Vec<u8>, b: &[u8]) {
    w.extend((b.len() as u64).to_le_bytes());
    w.extend(b);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
}
