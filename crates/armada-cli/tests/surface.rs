//! The rest of the Linux surface real programs use: interval timers and alarms, POSIX
//! timers, sleeps and signal waits with timeouts, and sockets on the run's own loopback
//! network (TCP over IPv4 and IPv6, AF_UNIX path and abstract names).
//!
//! Differential: our C programs of tests/guest/surface (built by
//! tests/guest/build-processes.sh into target/guest-surface, or `$ARMADA_GUEST_SURFACE_DIR`)
//! run under `qemu-aarch64` and under `armada run`, twice: on the host's clocks, and under
//! `--deterministic`, where every timer runs on the virtual clock (the programs print
//! relations such as "at least 13 ms passed", which hold on both clocks, never times).
//! stdout, stderr and the exit status must match (tests/common/mod.rs).

mod common;

use common::Case;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Builds tests/guest/surface once per test process.
fn programs_dir(test: &str) -> Option<PathBuf> {
    if !common::require_tools(test, &["aarch64-linux-gnu-gcc".into(), common::qemu_bin()]) {
        return None;
    }
    common::require_armada(test);
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let root = common::workspace_root();
        let out_dir = match std::env::var_os("ARMADA_GUEST_SURFACE_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => root.join("target/guest-surface"),
        };
        let script = root.join("tests/guest/build-processes.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&out_dir)
            .arg(root.join("tests/guest/surface"))
            .current_dir(&root)
            .output()
            .map_err(|e| format!("could not run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}):\n{}{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(out_dir)
    });
    match built {
        Ok(d) => Some(d.clone()),
        // the compiler is there, so a failed build is a real failure
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Each program with its arguments, under both of armada's clocks.
fn cases(dir: &std::path::Path) -> Vec<Case> {
    let programs: &[(&str, &str, &[&str])] = &[
        ("interval timers, alarm, pause", "itimer", &[]),
        ("POSIX timers", "posix_timers", &[]),
        ("loopback TCP, IPv4 and IPv6", "tcp", &[]),
        ("AF_UNIX names, SCM_RIGHTS, seqpacket", "unix_sockets", &[]),
    ];
    let mut v = Vec::new();
    for (name, program, args) in programs {
        for det in [false, true] {
            let mut c = Case::new(
                format!("{name}{}", if det { " (deterministic)" } else { "" }),
                dir.join(program),
            )
            .args(args.iter().copied())
            .expect_status(0);
            if det {
                c = c.armada_arg("--deterministic");
            }
            v.push(c);
        }
    }
    v
}

#[test]
fn c_programs_match_qemu() {
    const TEST: &str = "surface c_programs_match_qemu";
    let Some(dir) = programs_dir(TEST) else {
        return;
    };
    common::run_suite("surface-c", cases(&dir));
}
