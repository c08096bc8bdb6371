//! The corpus and crash directories on disk: inputs are files; a new corpus entry is named
//! after its content's hash (so a resumed run does not write an input twice), a crash
//! after its key (so each crash is kept once, also across runs).

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Inputs longer than this are cut when loaded (and mutation never makes them longer).
pub const DEFAULT_MAX_LEN: usize = 1 << 16;

/// FNV-1a, 64 bits: names corpus files after their bytes.
pub fn content_hash(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// An input and its file name.
pub type Named = (String, Vec<u8>);

/// A directory of inputs.
pub struct CorpusDir {
    dir: PathBuf,
    names: HashSet<String>,
}

impl CorpusDir {
    /// Opens (creating it if missing) the corpus directory; returns it and the inputs in
    /// it, in name order, each cut to `max_len`.
    pub fn open(dir: &Path, max_len: usize) -> Result<(CorpusDir, Vec<Named>)> {
        fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the corpus directory {}", dir.display()))?;
        let mut inputs = Vec::new();
        let mut names = HashSet::new();
        let entries = fs::read_dir(dir)
            .with_context(|| format!("cannot read the corpus directory {}", dir.display()))?;
        for e in entries {
            let e = e.with_context(|| format!("reading {}", dir.display()))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let mut data = fs::read(e.path())
                .with_context(|| format!("cannot read {}", e.path().display()))?;
            data.truncate(max_len);
            names.insert(name.clone());
            inputs.push((name, data));
        }
        inputs.sort();
        check_writable(dir)?;
        Ok((
            CorpusDir {
                dir: dir.to_path_buf(),
                names,
            },
            inputs,
        ))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Saves a new entry (named `id-HASH`); returns its name.
    pub fn save(&mut self, data: &[u8]) -> Result<String> {
        let name = format!("id-{:016x}", content_hash(data));
        if self.names.insert(name.clone()) {
            write_new(&self.dir.join(&name), data)?;
        }
        Ok(name)
    }
}

/// The crashes directory: one file per distinct crash (`crash-KEY`) and per distinct hang
/// (`hang-HASH`).
pub struct CrashDir {
    dir: PathBuf,
    known: HashSet<String>,
}

impl CrashDir {
    /// Opens (creating it if missing) the directory; crashes saved there by an earlier run
    /// count as known.
    pub fn open(dir: &Path) -> Result<CrashDir> {
        fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the crashes directory {}", dir.display()))?;
        check_writable(dir)?;
        let mut known = HashSet::new();
        for e in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
            let name = e?.file_name().to_string_lossy().into_owned();
            if name.starts_with("crash-") || name.starts_with("hang-") {
                known.insert(name);
            }
        }
        Ok(CrashDir {
            dir: dir.to_path_buf(),
            known,
        })
    }

    /// Saves `data` as `NAME` unless a crash of that name is known; returns its path when
    /// it is new.
    pub fn save(&mut self, name: &str, data: &[u8]) -> Result<Option<PathBuf>> {
        if !self.known.insert(name.to_string()) {
            return Ok(None);
        }
        let p = self.dir.join(name);
        write_new(&p, data)?;
        Ok(Some(p))
    }

    pub fn known(&self) -> usize {
        self.known.len()
    }

    /// Those whose name starts with `prefix` (`crash-`, `hang-`).
    pub fn known_with(&self, prefix: &str) -> usize {
        self.known.iter().filter(|n| n.starts_with(prefix)).count()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The files of `dir` (not hidden, not README.txt), in name order, each cut to `max_len`.
pub fn read_dir_sorted(dir: &Path, max_len: usize) -> Result<Vec<Named>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let e = e?;
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with('.') || n == "README.txt" || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let mut data =
            fs::read(e.path()).with_context(|| format!("cannot read {}", e.path().display()))?;
        data.truncate(max_len);
        out.push((n, data));
    }
    out.sort();
    Ok(out)
}

/// Fails early, with the reason, when files cannot be made in `dir`.
pub(crate) fn check_writable(dir: &Path) -> Result<()> {
    let probe = dir.join(format!(".armada-probe-{}", std::process::id()));
    match fs::File::create(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => bail!("cannot write to {}: {e}", dir.display()),
    }
}

/// Writes a file whole (temporary name, then rename), so a reader never sees half of it.
pub fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f =
        fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(data)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Reads an AFL/libFuzzer dictionary: one token a line, `"value"` or `name="value"`, with
/// `\\`, `\"` and `\xNN` escapes; `#` starts a comment line.
pub fn read_dict(path: &Path) -> Result<Vec<Vec<u8>>> {
    let text = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.split(|&c| c == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let (Some(open), Some(close)) = (
            line.iter().position(|&c| c == b'"'),
            line.iter().rposition(|&c| c == b'"'),
        ) else {
            bail!(
                "{}:{}: a token is \"value\" or name=\"value\"",
                path.display(),
                n + 1
            );
        };
        if close <= open {
            bail!("{}:{}: unterminated token", path.display(), n + 1);
        }
        let body = &line[open + 1..close];
        let mut tok = Vec::new();
        let mut i = 0;
        while i < body.len() {
            if body[i] == b'\\' && i + 1 < body.len() {
                match body[i + 1] {
                    b'x' if i + 3 < body.len() => {
                        let hex = std::str::from_utf8(&body[i + 2..i + 4])
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok());
                        match hex {
                            Some(b) => {
                                tok.push(b);
                                i += 4;
                            }
                            None => bail!("{}:{}: bad \\x escape", path.display(), n + 1),
                        }
                        continue;
                    }
                    c => {
                        tok.push(c);
                        i += 2;
                        continue;
                    }
                }
            }
            tok.push(body[i]);
            i += 1;
        }
        if !tok.is_empty() {
            out.push(tok);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_lines() {
        let d = std::env::temp_dir().join(format!("armada-dict-{}", std::process::id()));
        fs::write(&d, b"# magic\nkw1=\"ARM\"\n\"\\x41\\x00z\"\n\n\"a\\\"b\"\n").unwrap();
        let t = read_dict(&d).unwrap();
        assert_eq!(
            t,
            vec![b"ARM".to_vec(), b"A\x00z".to_vec(), b"a\"b".to_vec()]
        );
        fs::write(&d, b"novalue\n").unwrap();
        assert!(read_dict(&d).unwrap_err().to_string().contains(":1:"));
        fs::remove_file(&d).unwrap();
    }
}
