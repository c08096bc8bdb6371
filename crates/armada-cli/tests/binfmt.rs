//! `armada binfmt`: registered with the machine's binfmt_misc (where it is mounted and
//! writable: root, as scripts/test is), `./prog` of an arm64 program runs through armada,
//! with the sysroot the registration names and the program's own argv[0]; uninstalling
//! gives arm64 programs back to the handler that had them (qemu's, which scripts/test
//! registers), and a registration that exists is never replaced without --force. Where the
//! machine does not allow a registration, the test says so and checks `status` alone (the
//! registration line and the parsing of binfmt_misc's entries are unit tests in
//! src/binfmt.rs).

mod common;

use common::{armada_bin, loud, require_tools};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const BINFMT: &str = "/proc/sys/fs/binfmt_misc";
const CROSS_SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// Uninstalls the test's registration however the test ends.
struct Registration {
    name: String,
    dir: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = Command::new(armada_bin())
            .args(["binfmt", "--name", &self.name, "uninstall"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn armada(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(armada_bin()).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn programs_run_through_armada_once_registered() {
    if !require_tools("binfmt", &[OsString::from("aarch64-linux-gnu-gcc")]) {
        return;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("binfmt");
    std::fs::create_dir_all(&tmp).unwrap();
    let src = tmp.join("argv0.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nint main(int c, char **v) { printf(\"%s|%d\\n\", v[0], c); return 0; }\n",
    )
    .unwrap();
    // dynamically linked: its /lib/ld-linux-aarch64.so.1 is only in the sysroot, so it runs
    // only where the handler has the sysroot (armada's registration has; qemu's has not)
    let prog = tmp.join("argv0");
    let o = Command::new("aarch64-linux-gnu-gcc")
        .args(["-O1", "-o"])
        .arg(&prog)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let name = format!("armada-test-{}", std::process::id());
    let writable = Path::new(BINFMT).join("register").exists()
        && nix_access_w(&Path::new(BINFMT).join("register"));
    if !writable {
        loud(&format!(
            "### binfmt: {BINFMT} is not mounted or not writable here: checking `status` only"
        ));
        let (code, out, err) = armada(&["binfmt", "--name", &name, "status"]);
        assert!(
            code == 1 || err.contains("binfmt_misc is not mounted"),
            "{code} {out} {err}"
        );
        return;
    }
    let others: Vec<String> = std::fs::read_dir(BINFMT)
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().to_string_lossy().into_owned();
            let t = std::fs::read_to_string(Path::new(BINFMT).join(&n)).ok()?;
            (t.starts_with("enabled")
                && t.contains("magic 7f454c460201010000000000000000000200b700"))
            .then_some(n)
        })
        .collect();
    let interp_dir = tmp.join("interp");
    let reg = Registration {
        name: name.clone(),
        dir: interp_dir.clone(),
    };
    let install = |force: bool| {
        let mut a = vec![
            "binfmt",
            "--name",
            &name,
            "install",
            "-L",
            CROSS_SYSROOT,
            "--interpreter-dir",
            interp_dir.to_str().unwrap(),
        ];
        if force {
            a.push("--force");
        }
        armada(&a)
    };
    if !others.is_empty() {
        // another handler has arm64 programs: not replaced without --force
        let (code, _, err) = install(false);
        assert_eq!(code, 125, "{err}");
        assert!(
            err.contains("handled by") && err.contains("--force"),
            "{err}"
        );
        assert!(!Path::new(BINFMT).join(&name).exists());
    }
    let (code, out, err) = install(true);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("registered"), "{out}");
    let entry = std::fs::read_to_string(Path::new(BINFMT).join(&name)).unwrap();
    assert!(entry.contains("flags: PF"), "{entry}");

    let (code, out, _) = armada(&["binfmt", "--name", &name, "status"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("registered, enabled") && out.contains("run --binfmt -L"),
        "{out}"
    );

    // ./prog: through armada, with the sysroot and the program's own argv[0]
    let o = Command::new(&prog)
        .arg0("my-name")
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "my-name|2\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let (code, out, _) = armada(&["binfmt", "--name", &name, "uninstall"]);
    assert_eq!(code, 0);
    assert!(out.contains("removed"), "{out}");
    for o in &others {
        assert!(
            out.contains(&format!("{o}: handles AArch64 ELF programs again")),
            "{out}"
        );
    }
    assert!(!Path::new(BINFMT).join(&name).exists());
    drop(reg);
}

fn nix_access_w(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The shared libraries and loader `ldd` lists for `bin` (absolute paths).
fn libraries_of(bin: &Path) -> Vec<PathBuf> {
    let o = Command::new("ldd").arg(bin).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

/// `install --container`: the kernel holds armada itself open, so a program run inside a
/// chroot (whose files have neither armada nor the interpreter script) runs through it, with
/// the chroot as its root. The armada registered is `ARMADA_STATIC_BIN` where that names a
/// statically linked build; otherwise the test's own armada with `--allow-dynamic`, its
/// loader and libraries copied into the chroot (what the static build spares a user).
#[test]
fn programs_in_a_chroot_run_through_the_container_registration() {
    if !require_tools(
        "binfmt_container",
        &[OsString::from("aarch64-linux-gnu-gcc")],
    ) {
        return;
    }
    let register = Path::new(BINFMT).join("register");
    // SAFETY: geteuid has no preconditions.
    if !register.exists() || !nix_access_w(&register) || unsafe { libc::geteuid() } != 0 {
        loud("### binfmt_container: needs root and a writable binfmt_misc: skipped");
        return;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("binfmt-container");
    let _ = std::fs::remove_dir_all(&tmp);
    let root = tmp.join("rootfs");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("marker"), "inside the chroot\n").unwrap();
    let src = tmp.join("where.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nint main(int c, char **v) { char b[64] = {0}; FILE *f = fopen(\"/marker\", \"r\");\n\
         if (!f) { printf(\"%s: no /marker\\n\", v[0]); return 3; }\n\
         fgets(b, sizeof b, f); printf(\"%s|%d|%s\", v[0], c, b); return 0; }\n",
    )
    .unwrap();
    let o = Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O1", "-o"])
        .arg(root.join("bin/where"))
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let (armada_exe, extra) = match std::env::var_os("ARMADA_STATIC_BIN") {
        Some(p) => (PathBuf::from(p), vec![]),
        None => {
            let me = armada_bin();
            for lib in libraries_of(&me) {
                let to = root.join(lib.strip_prefix("/").unwrap());
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&lib, &to).unwrap();
            }
            (me, vec!["--allow-dynamic"])
        }
    };
    let name = format!("armada-test-ct-{}", std::process::id());
    let interp_dir = tmp.join("interp");
    let reg = Registration {
        name: name.clone(),
        dir: interp_dir.clone(),
    };
    let run = |args: &[&str]| {
        let o = Command::new(&armada_exe).args(args).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let mut install = vec![
        "binfmt",
        "--name",
        &name,
        "install",
        "--container",
        "--force",
    ];
    install.extend(["--interpreter-dir", interp_dir.to_str().unwrap()]);
    if extra.is_empty() {
        // a dynamically linked armada is refused without --allow-dynamic
        let (code, _, err) = armada(&install);
        assert_eq!(code, 125, "{err}");
        assert!(err.contains("statically linked"), "{err}");
    }
    install.extend(extra.iter().copied());
    let (code, out, err) = run(&install);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("chroots and containers"), "{out}");
    let entry = std::fs::read_to_string(Path::new(BINFMT).join(&name)).unwrap();
    assert!(entry.contains("flags: PF"), "{entry}");

    // the program's own argv[0] and the chroot's file: armada ran inside it
    let o = Command::new("chroot")
        .arg(&root)
        .args(["/bin/where", "x"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "/bin/where|2|inside the chroot\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let (code, out, _) = run(&["binfmt", "--name", &name, "uninstall"]);
    assert_eq!(code, 0, "{out}");
    assert!(!Path::new(BINFMT).join(&name).exists());
    assert!(!interp_dir.join(format!("{name}-binfmt")).exists());
    drop(reg);
}
