//! `--strace`: one line per syscall, `openat(AT_FDCWD, "/etc/passwd", O_RDONLY) = 3`.

use crate::nr::*;
use crate::{Errno, SysResult};
use armada_machine::memory::AddressSpace;

use crate::syscalls::K;

/// How `--strace` shows syscall `nr`'s arguments (the syscall table's column).
fn signature(nr: u64) -> Option<&'static [K]> {
    crate::syscalls::row(nr).map(|r| r.args)
}

fn quote(bytes: &[u8], limit: usize) -> String {
    let mut s = String::from("\"");
    for &c in bytes.iter().take(limit) {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\{c:o}")),
        }
    }
    s.push('"');
    if bytes.len() > limit {
        s.push_str("...");
    }
    s
}

fn open_flags(f: u64) -> String {
    use crate::io::fd::o::*;
    let f = f as u32;
    let mut parts = vec![match f & O_ACCMODE {
        O_RDONLY => "O_RDONLY",
        O_WRONLY => "O_WRONLY",
        _ => "O_RDWR",
    }
    .to_string()];
    let names = [
        (O_CREAT, "O_CREAT"),
        (O_EXCL, "O_EXCL"),
        (O_NOCTTY, "O_NOCTTY"),
        (O_TRUNC, "O_TRUNC"),
        (O_APPEND, "O_APPEND"),
        (O_NONBLOCK, "O_NONBLOCK"),
        (O_DIRECTORY, "O_DIRECTORY"),
        (O_NOFOLLOW, "O_NOFOLLOW"),
        (O_LARGEFILE, "O_LARGEFILE"),
        (O_CLOEXEC, "O_CLOEXEC"),
        (O_PATH, "O_PATH"),
    ];
    let mut rest = f & !O_ACCMODE;
    for (b, n) in names {
        if rest & b != 0 {
            parts.push(n.to_string());
            rest &= !b;
        }
    }
    if rest != 0 {
        parts.push(format!("{rest:#o}"));
    }
    parts.join("|")
}

fn futex_op(op: u32) -> String {
    const NAMES: [&str; 14] = [
        "FUTEX_WAIT",
        "FUTEX_WAKE",
        "FUTEX_FD",
        "FUTEX_REQUEUE",
        "FUTEX_CMP_REQUEUE",
        "FUTEX_WAKE_OP",
        "FUTEX_LOCK_PI",
        "FUTEX_UNLOCK_PI",
        "FUTEX_TRYLOCK_PI",
        "FUTEX_WAIT_BITSET",
        "FUTEX_WAKE_BITSET",
        "FUTEX_WAIT_REQUEUE_PI",
        "FUTEX_CMP_REQUEUE_PI",
        "FUTEX_LOCK_PI2",
    ];
    let cmd = op & 0x7f;
    let mut s = match NAMES.get(cmd as usize) {
        Some(n) => n.to_string(),
        None => format!("{cmd}"),
    };
    if op & 128 != 0 {
        s.push_str("_PRIVATE");
    }
    if op & 256 != 0 {
        s.push_str("|FUTEX_CLOCK_REALTIME");
    }
    if op & !0x1ff != 0 {
        s.push_str(&format!("|{:#x}", op & !0x1ff));
    }
    s
}

/// Formats `name(args)` for syscall `nr` (strings are read now, before the call runs).
pub(crate) fn format_call(nr: u64, a: &[u64; 6], mem: &mut AddressSpace) -> String {
    let name = match name(nr) {
        Some(n) => n.to_string(),
        None => format!("syscall_{nr}"),
    };
    let args: Vec<String> = match signature(nr) {
        Some(sig) => sig
            .iter()
            .zip(a.iter())
            .map(|(k, &v)| match k {
                K::I => (v as i64).to_string(),
                K::U => v.to_string(),
                K::X => format!("{v:#x}"),
                K::P if v == 0 => "NULL".into(),
                K::P => format!("{v:#x}"),
                K::Fd if v as i32 == crate::fs::path::AT_FDCWD => "AT_FDCWD".into(),
                K::Fd => (v as i32).to_string(),
                K::S if v == 0 => "NULL".into(),
                K::S => match mem.read_cstr(v, 256) {
                    Ok(s) => quote(&s, 255),
                    Err(_) => format!("{v:#x}"),
                },
                K::B => {
                    let n = (a[2] as usize).min(32);
                    let mut buf = vec![0u8; n];
                    match mem.read_bytes(v, &mut buf) {
                        Ok(()) => {
                            let mut s = quote(&buf, 32);
                            if a[2] > 32 && !s.ends_with("...") {
                                s.push_str("...");
                            }
                            s
                        }
                        Err(_) => format!("{v:#x}"),
                    }
                }
                K::O => open_flags(v),
                K::M if v as u32 == 0 => "0".into(),
                K::M => format!("0{:o}", v as u32),
                K::Futex => futex_op(v as u32),
            })
            .collect(),
        None => a.iter().map(|v| format!("{v:#x}")).collect(),
    };
    format!("{name}({})", args.join(", "))
}

/// Formats the result: a number (hex for addresses) or `-1 ENOENT (No such file or directory)`.
pub(crate) fn format_ret(nr: u64, r: SysResult) -> String {
    match r {
        Ok(v) => match nr {
            BRK | MMAP | MREMAP => format!("{v:#x}"),
            _ => (v as i64).to_string(),
        },
        Err(Errno(e)) => format!(
            "-1 {} ({})",
            Errno(e).name(),
            std::io::Error::from_raw_os_error(e)
                .to_string()
                .split(" (os error")
                .next()
                .unwrap_or("")
        ),
    }
}
