//! `armada binfmt install|uninstall|status`: armada as the kernel's handler for AArch64 ELF
//! files (binfmt_misc), as qemu-user-binfmt registers qemu, so that `./prog` of an arm64
//! program runs it through armada.
//!
//! The registration names a small interpreter script that armada writes (`exec armada run
//! --binfmt [-L DIR] "$@"`): binfmt_misc cannot pass options, and the script holds the
//! sysroot. Flags `PF`: P hands the program its own argv[0] (the kernel passes the file's
//! path, then the original argv[0], then the arguments), F opens the interpreter at
//! registration.
//!
//! `--container` registers a copy of armada's own executable instead (named `NAME-binfmt`,
//! which is how armada knows, from its argv[0], that the kernel started it for a program:
//! `binfmt_argv`). With F the kernel holds it open from the registration on, so programs run
//! through it inside chroots and containers, whose files have neither the script nor armada;
//! armada must then be statically linked, since its own dynamic loader and libraries would be
//! looked up inside the chroot too. The sysroot then comes from `QEMU_LD_PREFIX`, as for
//! qemu-user-static (in a chroot the root itself is the sysroot).
//!
//! A registration that already handles arm64 ELF (qemu's) is never replaced silently:
//! `install` refuses unless `--force`, and then says that the newer one, armada's, takes
//! precedence while it exists and that `uninstall` gives the programs back.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

/// The ELF header of a 64-bit little-endian AArch64 executable or shared object (e_ident,
/// then e_type 2 or 3, then e_machine 183), and the mask qemu's registration uses (the
/// OS ABI byte is ignored, and e_type's low bit, so that ET_DYN matches too).
const MAGIC: [u8; 20] = [
    0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0xb7, 0,
];
const MASK: [u8; 20] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xfe, 0xff, 0xff, 0xff,
];

#[derive(Args)]
pub struct BinfmtArgs {
    #[command(subcommand)]
    command: BinfmtCommand,
    /// The registration's name (its file in binfmt_misc).
    #[arg(long, default_value = "armada-aarch64", global = true)]
    name: String,
    /// Where binfmt_misc is mounted.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/proc/sys/fs/binfmt_misc",
        global = true
    )]
    binfmt_misc: PathBuf,
}

#[derive(Subcommand)]
enum BinfmtCommand {
    /// Register armada as the handler of AArch64 ELF programs (needs root).
    Install {
        /// Sysroot for dynamically linked programs (as `armada run -L`).
        #[arg(short = 'L', long = "sysroot", value_name = "DIR")]
        sysroot: Option<PathBuf>,
        /// Where the interpreter script goes.
        #[arg(long, value_name = "DIR", default_value = "/usr/local/lib/armada")]
        interpreter_dir: PathBuf,
        /// Register even though another handler of AArch64 ELF (qemu's) is registered: the
        /// newer registration, armada's, takes precedence while it exists.
        #[arg(long)]
        force: bool,
        /// Register a copy of armada's own executable, opened now, instead of a script, so
        /// that programs run through armada inside chroots and containers too (as
        /// qemu-user-static). Needs a statically linked armada (docs/debugging.md says how
        /// to build one); the sysroot then comes from QEMU_LD_PREFIX.
        #[arg(long, conflicts_with = "sysroot")]
        container: bool,
        /// With --container: register a dynamically linked armada anyway. Programs then run
        /// only in chroots and containers that have armada's own loader and libraries (the
        /// host's, bind-mounted or copied in).
        #[arg(long, requires = "container")]
        allow_dynamic: bool,
    },
    /// Remove armada's registration (and its interpreter script).
    Uninstall,
    /// Show armada's registration and the other handlers of AArch64 ELF.
    Status,
}

/// One registration in binfmt_misc, as its file shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub enabled: bool,
    pub interpreter: String,
    pub flags: String,
    pub magic: Vec<u8>,
    pub mask: Vec<u8>,
}

impl Entry {
    /// Parses a registration's file (`enabled`, `interpreter ...`, `flags: ...`, `magic ...`).
    pub fn parse(name: &str, text: &str) -> Entry {
        let mut e = Entry {
            name: name.to_string(),
            ..Entry::default()
        };
        for line in text.lines() {
            if line == "enabled" {
                e.enabled = true;
            } else if let Some(v) = line.strip_prefix("interpreter ") {
                e.interpreter = v.to_string();
            } else if let Some(v) = line.strip_prefix("flags: ") {
                e.flags = v.to_string();
            } else if let Some(v) = line.strip_prefix("magic ") {
                e.magic = unhex(v);
            } else if let Some(v) = line.strip_prefix("mask ") {
                e.mask = unhex(v);
            }
        }
        e
    }

    /// Whether it takes AArch64 ELF programs (its magic, under its mask, matches the
    /// header of one).
    pub fn takes_aarch64(&self) -> bool {
        if self.magic.is_empty() || self.magic.len() > MAGIC.len() {
            return false;
        }
        self.magic.iter().enumerate().all(|(i, m)| {
            let k = self.mask.get(i).copied().unwrap_or(0xff);
            (MAGIC[i] & k) == (m & k)
        })
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// The line written to `register` for a handler named `name` run by `interpreter`.
pub fn registration_line(name: &str, interpreter: &Path) -> String {
    let esc = |b: &[u8]| b.iter().map(|x| format!("\\x{x:02x}")).collect::<String>();
    format!(
        ":{name}:M::{}:{}:{}:PF",
        esc(&MAGIC),
        esc(&MASK),
        interpreter.display()
    )
}

/// The ending of the interpreter's file name (`NAME-binfmt`), which the container mode's
/// copy of armada is recognized by.
const INTERPRETER_SUFFIX: &str = "-binfmt";

/// When armada was started by the kernel for an AArch64 program (its argv[0] is a
/// `NAME-binfmt` registered by `install --container`): the command line of `armada run` in
/// binfmt mode, with the program's file, its argv[0] and its arguments as the kernel gave
/// them. `args`: armada's own argv.
pub fn binfmt_argv(args: &[std::ffi::OsString]) -> Option<Vec<std::ffi::OsString>> {
    let name = Path::new(args.first()?).file_name()?.to_str()?;
    if !name.ends_with(INTERPRETER_SUFFIX) || name.len() == INTERPRETER_SUFFIX.len() {
        return None;
    }
    let mut v: Vec<std::ffi::OsString> =
        ["armada", "run", "--binfmt", "--"].map(Into::into).to_vec();
    v.extend(args[1..].iter().cloned());
    Some(v)
}

/// Whether the ELF file at `path` (a 64-bit little-endian one: armada's host) is statically
/// linked: it names no dynamic loader (no PT_INTERP).
pub fn statically_linked(path: &Path) -> Result<bool> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let elf = ElfFile64::<object::LittleEndian>::parse(&*data)
        .with_context(|| format!("{} is not a 64-bit ELF file", path.display()))?;
    let e = elf.endian();
    Ok(elf
        .elf_program_headers()
        .iter()
        .all(|ph| ph.p_type(e) != object::elf::PT_INTERP))
}

/// The interpreter script: armada run in binfmt mode, with the sysroot.
pub fn interpreter_script(armada: &Path, sysroot: Option<&Path>) -> String {
    let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
    let sysroot = sysroot.map_or(String::new(), |s| format!(" -L {}", q(s)));
    format!(
        "#!/bin/sh\n# armada binfmt install: the kernel runs AArch64 ELF programs through this.\n# (binfmt_misc flags PF: \"$1\" is the program's file, \"$2\" its argv[0], then its arguments)\nexec {} run --binfmt{sysroot} -- \"$@\"\n",
        q(armada)
    )
}

/// The registrations in `dir`, but for `register` and `status`.
fn entries(dir: &Path) -> Result<Vec<Entry>> {
    let mut v = Vec::new();
    for f in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let f = f?;
        let name = f.file_name().to_string_lossy().into_owned();
        if name == "register" || name == "status" {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(f.path()) {
            v.push(Entry::parse(&name, &text));
        }
    }
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}

fn check_mounted(dir: &Path) -> Result<()> {
    if !dir.join("register").exists() {
        bail!(
            "binfmt_misc is not mounted at {} (as root: mount -t binfmt_misc binfmt_misc {})",
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Removes registration `name` from `dir`.
fn unregister(dir: &Path, name: &str) -> Result<()> {
    std::fs::write(dir.join(name), "-1")
        .with_context(|| format!("cannot remove the registration {name} (run as root)"))
}

pub fn binfmt(args: BinfmtArgs) -> Result<u8> {
    let dir = &args.binfmt_misc;
    check_mounted(dir)?;
    let name = &args.name;
    if name.is_empty() || name.contains(['/', ':']) || name == "register" || name == "status" {
        bail!("--name {name:?} cannot name a registration");
    }
    let all = entries(dir)?;
    let ours = all.iter().find(|e| &e.name == name).cloned();
    let others: Vec<&Entry> = all
        .iter()
        .filter(|e| &e.name != name && e.takes_aarch64())
        .collect();
    match args.command {
        BinfmtCommand::Status => {
            match &ours {
                Some(e) => println!(
                    "{name}: registered, {}; interpreter {} (flags {})",
                    if e.enabled { "enabled" } else { "disabled" },
                    e.interpreter,
                    e.flags
                ),
                None => println!("{name}: not registered (armada binfmt install registers it)"),
            }
            if let Some(e) = &ours {
                if let Ok(script) = std::fs::read_to_string(&e.interpreter) {
                    if let Some(l) = script.lines().find(|l| l.starts_with("exec ")) {
                        println!("  runs: {l}");
                    }
                } else if statically_linked(Path::new(&e.interpreter)).unwrap_or(false) {
                    println!("  runs: a statically linked armada (chroots and containers too)");
                }
            }
            for o in &others {
                println!(
                    "{}: also handles AArch64 ELF, {}; interpreter {}{}",
                    o.name,
                    if o.enabled { "enabled" } else { "disabled" },
                    o.interpreter,
                    if ours.is_some() {
                        " (the newer registration takes precedence)"
                    } else {
                        ""
                    }
                );
            }
            Ok(if ours.is_some_and(|e| e.enabled) {
                0
            } else {
                1
            })
        }
        BinfmtCommand::Uninstall => {
            let Some(e) = ours else {
                println!("{name}: not registered; nothing to do");
                return Ok(0);
            };
            unregister(dir, name)?;
            if e.interpreter
                .ends_with(&format!("{name}{INTERPRETER_SUFFIX}"))
            {
                let _ = std::fs::remove_file(&e.interpreter);
            }
            println!("{name}: removed");
            for o in others.iter().filter(|o| o.enabled) {
                println!(
                    "{}: handles AArch64 ELF programs again ({})",
                    o.name, o.interpreter
                );
            }
            Ok(0)
        }
        BinfmtCommand::Install {
            sysroot,
            interpreter_dir,
            force,
            container,
            allow_dynamic,
        } => {
            let enabled: Vec<&&Entry> = others.iter().filter(|o| o.enabled).collect();
            if !enabled.is_empty() && !force {
                let names: Vec<String> = enabled
                    .iter()
                    .map(|o| format!("{} ({})", o.name, o.interpreter))
                    .collect();
                bail!(
                    "AArch64 ELF programs are handled by {} already; armada leaves that as it is. \
                     --force registers armada anyway (the newer registration takes precedence while it exists; \
                     `armada binfmt uninstall` gives the programs back), or remove the other one first",
                    names.join(", ")
                );
            }
            let armada = std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .context("cannot find armada's own executable")?;
            let sysroot = sysroot
                .map(|s| std::fs::canonicalize(&s).with_context(|| format!("-L {}", s.display())))
                .transpose()?;
            std::fs::create_dir_all(&interpreter_dir)
                .with_context(|| format!("cannot create {}", interpreter_dir.display()))?;
            let interp = interpreter_dir.join(format!("{name}{INTERPRETER_SUFFIX}"));
            if container {
                if !statically_linked(&armada)? && !allow_dynamic {
                    bail!(
                        "--container needs a statically linked armada ({} names a dynamic loader, \
                         which a chroot or container would not have): build one with \
                         RUSTFLAGS='-C target-feature=+crt-static' cargo build --release -p armada-cli \
                         --target x86_64-unknown-linux-gnu, and run `binfmt install --container` with it \
                         (or --allow-dynamic, where the chroots have armada's libraries)",
                        armada.display()
                    );
                }
                // a copy: the registration keeps working while armada itself is rebuilt or
                // moved (the kernel holds the file open from now on anyway)
                let tmp = interp.with_extension("new");
                std::fs::copy(&armada, &tmp)
                    .and_then(|_| std::fs::rename(&tmp, &interp))
                    .with_context(|| format!("cannot write {}", interp.display()))?;
            } else {
                let script = interpreter_script(&armada, sysroot.as_deref());
                std::fs::write(&interp, script)
                    .with_context(|| format!("cannot write {}", interp.display()))?;
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&interp, std::fs::Permissions::from_mode(0o755))?;
            if ours.is_some() {
                unregister(dir, name)?;
                println!("{name}: was registered; registering it again");
            }
            std::fs::write(dir.join("register"), registration_line(name, &interp))
                .with_context(|| format!("cannot register with {} (run as root)", dir.display()))?;
            if container {
                println!(
                    "{name}: registered: AArch64 ELF programs run through {} (a copy of the \
                     statically linked armada {}, held open by the kernel: chroots and \
                     containers too; sysroot from QEMU_LD_PREFIX)",
                    interp.display(),
                    armada.display(),
                );
            } else {
                println!(
                    "{name}: registered: AArch64 ELF programs run through {} (armada {}{})",
                    interp.display(),
                    armada.display(),
                    sysroot
                        .as_ref()
                        .map_or(String::new(), |s| format!(", sysroot {}", s.display()))
                );
            }
            for o in enabled {
                println!(
                    "{}: stays registered; armada's registration takes precedence while it exists (armada binfmt uninstall gives the programs back)",
                    o.name
                );
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registration_line_is_qemus_magic_with_our_interpreter() {
        let l = registration_line(
            "armada-aarch64",
            Path::new("/usr/local/lib/armada/a-binfmt"),
        );
        assert!(l.starts_with(":armada-aarch64:M::\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00"));
        assert!(l.ends_with(":/usr/local/lib/armada/a-binfmt:PF"));
        assert_eq!(l.matches(':').count(), 7);
    }

    #[test]
    fn entries_parse_and_match_aarch64() {
        let qemu = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: PO\noffset 0\nmagic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n";
        let e = Entry::parse("qemu-aarch64", qemu);
        assert!(e.enabled && e.takes_aarch64());
        assert_eq!(e.flags, "PO");
        let arm32 = "enabled\ninterpreter /usr/bin/qemu-arm\nflags: \noffset 0\nmagic 7f454c4601010100000000000000000002002800\nmask ffffffffffffff00fffffffffffffffffeffffff\n";
        assert!(!Entry::parse("qemu-arm", arm32).takes_aarch64());
        assert!(!Entry::parse("x", "disabled\nextension .jar\n").takes_aarch64());
    }

    #[test]
    fn the_kernel_starting_the_container_copy_is_a_binfmt_run() {
        let os = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let got = binfmt_argv(&os(&[
            "/usr/local/lib/armada/armada-aarch64-binfmt",
            "/bin/sh",
            "sh",
            "-c",
            "echo hi",
        ]));
        assert_eq!(
            got,
            Some(os(&[
                "armada", "run", "--binfmt", "--", "/bin/sh", "sh", "-c", "echo hi"
            ]))
        );
        assert_eq!(binfmt_argv(&os(&["/usr/bin/armada", "run", "x"])), None);
        assert_eq!(binfmt_argv(&os(&["-binfmt"])), None);
        assert_eq!(binfmt_argv(&[]), None);
    }

    #[test]
    fn static_and_dynamic_executables_are_told_apart() {
        // the test binary itself is dynamically linked (it names ld-linux)
        let me = std::env::current_exe().unwrap();
        assert!(!statically_linked(&me).unwrap());
        let dir = std::env::temp_dir().join(format!("armada-binfmt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("not-elf");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        assert!(statically_linked(&f).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_script_quotes_paths() {
        let s = interpreter_script(Path::new("/opt/it's/armada"), Some(Path::new("/sys root")));
        assert!(s.contains("exec '/opt/it'\\''s/armada' run --binfmt -L '/sys root' -- \"$@\""));
    }
}
