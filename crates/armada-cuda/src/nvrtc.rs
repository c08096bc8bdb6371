//! Run-time compilation of the kernel with NVRTC, for the device's own architecture, with a
//! disk cache so that the second start of armada does not compile again.
//!
//! The cache key is a hash of the complete source (generated header included), the compiler
//! options, the NVRTC version, and the device's name and architecture. Files live in
//! `$ARMADA_CACHE_DIR`, else `$XDG_CACHE_HOME/armada`, else `~/.cache/armada`.

use crate::Error;
use cudarc::nvrtc::{result, sys};
use std::ffi::{c_char, CString};
use std::path::PathBuf;

/// Compiler options for `arch` ("sm_90"), and `extra` ones (a kernel variant).
pub fn options(arch: &str, extra: &[&str]) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture={arch}"),
        // a*b+c must not become a fused multiply-add: results must match the CPU engine
        "--fmad=false".to_string(),
        "--std=c++17".to_string(),
        // source lines for compute-sanitizer reports; no effect on the code
        "-lineinfo".to_string(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    // kernel variants for measurements, e.g. "-DARMADA_NO_PREFETCH -DARMADA_MIN_BLOCKS=4"
    if let Ok(d) = std::env::var("ARMADA_CUDA_DEFINES") {
        o.extend(d.split_whitespace().map(String::from));
    }
    if std::env::var_os("ARMADA_CUDA_PTXAS_VERBOSE").is_some() {
        o.push("--ptxas-options=-v".to_string());
    }
    o
}

/// 128-bit FNV-1a, as hex: stable across Rust versions (unlike `DefaultHasher`).
pub fn stable_hash(parts: &[&[u8]]) -> String {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for p in parts {
        for &b in p.iter().chain(&[0xffu8]) {
            h ^= b as u128;
            h = h.wrapping_mul(0x0000000001000000000000000000013B);
        }
    }
    format!("{h:032x}")
}

/// Where compiled kernels are kept.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("ARMADA_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        if !d.is_empty() {
            return Some(PathBuf::from(d).join("armada"));
        }
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("armada"))
}

fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    let r = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        format!("{major}.{minor}")
    } else {
        "?".into()
    }
}

/// Compiles `src` for `arch` to a cubin. Returns the cubin and the compiler's log.
pub fn compile(src: &str, arch: &str, extra: &[&str]) -> Result<(Vec<u8>, String), Error> {
    let csrc = CString::new(src).map_err(|_| Error::Compile("NUL in kernel source".into()))?;
    let prog = result::create_program(&csrc, Some(c"armada.cu"))
        .map_err(|e| Error::Compile(format!("nvrtcCreateProgram: {e:?}")))?;
    let opts = options(arch, extra);
    // SAFETY: prog was just created; it is destroyed below on every path.
    let compiled = unsafe { result::compile_program(prog, &opts) };
    let log = unsafe { result::get_program_log(prog) }
        .map(|l| {
            let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    if let Err(e) = compiled {
        // SAFETY: prog is live.
        let _ = unsafe { result::destroy_program(prog) };
        return Err(Error::Compile(format!(
            "NVRTC could not compile the kernel ({e:?}) with {opts:?}:\n{log}"
        )));
    }
    let mut size = 0usize;
    // SAFETY: prog compiled; the buffer is sized by the first call.
    let cubin = unsafe {
        let r = sys::nvrtcGetCUBINSize(prog, &mut size);
        if r != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
            let _ = result::destroy_program(prog);
            return Err(Error::Compile(format!("nvrtcGetCUBINSize: {r:?}")));
        }
        let mut buf = vec![0u8; size];
        let r = sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char);
        let _ = result::destroy_program(prog);
        if r != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(Error::Compile(format!("nvrtcGetCUBIN: {r:?}")));
        }
        buf
    };
    Ok((cubin, log))
}

/// The cubin for this source, architecture and device: from the cache, or compiled (and then
/// cached). The string says which, for `--verbose` notes.
pub fn compile_cached(
    src: &str,
    arch: &str,
    extra: &[&str],
    device: &str,
    dir: Option<PathBuf>,
) -> Result<(Vec<u8>, String), Error> {
    let opts = options(arch, extra).join(" ");
    let version = nvrtc_version();
    let key = stable_hash(&[
        src.as_bytes(),
        opts.as_bytes(),
        version.as_bytes(),
        device.as_bytes(),
        arch.as_bytes(),
    ]);
    let dir = dir.or_else(cache_dir);
    let path = dir
        .as_ref()
        .map(|d| d.join(format!("kernel-{arch}-{key}.cubin")));
    if let Some(p) = &path {
        if let Ok(bytes) = std::fs::read(p) {
            if !bytes.is_empty() {
                return Ok((
                    bytes,
                    format!("kernel loaded from the cache ({})", p.display()),
                ));
            }
        }
    }
    let t = std::time::Instant::now();
    let (cubin, log) = compile(src, arch, extra)?;
    let secs = t.elapsed().as_secs_f64();
    let mut note = format!("kernel compiled by NVRTC {version} for {arch} in {secs:.2} s");
    if let (Some(d), Some(p)) = (&dir, &path) {
        // a name of its own per process and thread: devices of one host compile at once
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = p.with_extension(format!("tmp{}-{n}", std::process::id()));
        let saved = std::fs::create_dir_all(d).is_ok()
            && std::fs::write(&tmp, &cubin).is_ok()
            && std::fs::rename(&tmp, p).is_ok();
        if saved {
            note.push_str(&format!(", cached in {}", p.display()));
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    if !log.trim().is_empty() {
        note.push('\n');
        note.push_str(log.trim());
    }
    Ok((cubin, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable_and_separates_parts() {
        assert_eq!(stable_hash(&[b"a", b"b"]), stable_hash(&[b"a", b"b"]));
        assert_ne!(stable_hash(&[b"ab", b""]), stable_hash(&[b"a", b"b"]));
        assert_eq!(stable_hash(&[b""]).len(), 32);
    }
}
