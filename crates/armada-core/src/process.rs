//! Process start: the initial stack (argv, envp, auxv) as Linux builds it, and [`Program`],
//! one ready-to-run guest process (registers, memory, Linux state).
//!
//! Stack layout from the top, as in Linux's `create_elf_tables`: the exec file name
//! (AT_EXECFN), the environment strings, the argument strings, the platform string
//! ("aarch64"), the 16 AT_RANDOM bytes; then, 16-byte aligned, argc, argv[], NULL, envp[],
//! NULL and the auxiliary vector, with sp pointing at argc.

use std::path::PathBuf;
use std::sync::Arc;

use crate::elf::{Image, LoadError};
use crate::linux::mm::mmap::{MMAP_TOP, STACK_SIZE, STACK_TOP};
use crate::linux::proc::exec::ExecRequest;
use crate::linux::{Errno, LinuxConfig, Process, Stdio, SysOutcome};
use crate::memory::{AddressSpace, Perm, PAGE_SIZE};
use crate::state::CpuState;

/// HWCAP_FP | HWCAP_ASIMD | HWCAP_ATOMICS | HWCAP_ASIMDDP: what armada implements (never
/// SVE), as the ID registers MRS reads say it (`sysreg::value`).
pub const HWCAP: u64 = armada_isa::uop::sysreg::value::HWCAP;
pub const HWCAP2: u64 = 0;
/// AT_MINSIGSTKSZ as Linux/arm64 reports it.
pub const MINSIGSTKSZ: u64 = 5120;

pub const AT_NULL: u64 = 0;
pub const AT_PHDR: u64 = 3;
pub const AT_PHENT: u64 = 4;
pub const AT_PHNUM: u64 = 5;
pub const AT_PAGESZ: u64 = 6;
pub const AT_BASE: u64 = 7;
pub const AT_FLAGS: u64 = 8;
pub const AT_ENTRY: u64 = 9;
pub const AT_UID: u64 = 11;
pub const AT_EUID: u64 = 12;
pub const AT_GID: u64 = 13;
pub const AT_EGID: u64 = 14;
pub const AT_PLATFORM: u64 = 15;
pub const AT_HWCAP: u64 = 16;
pub const AT_CLKTCK: u64 = 17;
pub const AT_SECURE: u64 = 23;
pub const AT_RANDOM: u64 = 25;
pub const AT_HWCAP2: u64 = 26;
pub const AT_EXECFN: u64 = 31;
pub const AT_MINSIGSTKSZ: u64 = 51;

/// Most bytes of argument and environment strings (Linux: a quarter of the stack limit).
pub const MAX_ARG_BYTES: u64 = STACK_SIZE / 4;

fn stack_err(what: &str) -> LoadError {
    LoadError::Stack(what.to_string())
}

/// Maps the stack and writes argv, envp and the auxiliary vector; returns the initial sp.
/// `argv` is the complete argument vector (argv[0] included); `exe_name` becomes AT_EXECFN;
/// `interp_base` is AT_BASE (where the interpreter was loaded, 0 for a static program).
#[allow(clippy::too_many_arguments)]
pub fn setup_stack(
    mem: &mut AddressSpace,
    image: &Image,
    interp_base: u64,
    exe_name: &str,
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    random16: [u8; 16],
    hwcap: u64,
    hwcap2: u64,
) -> Result<u64, LoadError> {
    let strings: u64 = argv
        .iter()
        .chain(envp.iter())
        .map(|s| s.len() as u64 + 1)
        .sum::<u64>()
        + exe_name.len() as u64
        + 1;
    if strings > MAX_ARG_BYTES {
        return Err(stack_err(&format!(
            "arguments and environment take {strings} bytes, more than the {MAX_ARG_BYTES} Linux allows (E2BIG)"
        )));
    }
    let stack_start = STACK_TOP - STACK_SIZE;
    mem.map(stack_start, STACK_SIZE, Perm::RW)
        .map_err(|cause| LoadError::Map {
            what: "stack".into(),
            cause,
        })?;

    let mut p = STACK_TOP - 8; // a NULL word at the very top, as Linux leaves
    fn push_str(mem: &mut AddressSpace, p: &mut u64, s: &[u8]) -> Result<u64, LoadError> {
        *p -= s.len() as u64 + 1;
        let mut v = s.to_vec();
        v.push(0);
        mem.write_bytes(*p, &v)
            .map_err(|f| stack_err(&f.to_string()))?;
        Ok(*p)
    }
    let execfn = push_str(mem, &mut p, exe_name.as_bytes())?;
    let mut env_ptrs = Vec::with_capacity(envp.len());
    for e in envp.iter().rev() {
        env_ptrs.push(push_str(mem, &mut p, e)?);
    }
    env_ptrs.reverse();
    let mut arg_ptrs = Vec::with_capacity(argv.len());
    for a in argv.iter().rev() {
        arg_ptrs.push(push_str(mem, &mut p, a)?);
    }
    arg_ptrs.reverse();
    p &= !15;
    let platform = push_str(mem, &mut p, b"aarch64")?;
    p &= !15;
    p -= 16;
    let random = p;
    mem.write_bytes(random, &random16)
        .map_err(|f| stack_err(&f.to_string()))?;

    // SAFETY: these libc calls take no arguments and cannot fail.
    let (uid, euid, gid, egid) = unsafe {
        (
            libc::getuid(),
            libc::geteuid(),
            libc::getgid(),
            libc::getegid(),
        )
    };
    let auxv: [(u64, u64); 20] = [
        (AT_MINSIGSTKSZ, MINSIGSTKSZ),
        (AT_HWCAP, hwcap),
        (AT_PAGESZ, PAGE_SIZE),
        (AT_CLKTCK, 100),
        (AT_PHDR, image.phdr),
        (AT_PHENT, image.phent),
        (AT_PHNUM, image.phnum),
        (AT_BASE, interp_base),
        (AT_FLAGS, 0),
        (AT_ENTRY, image.entry),
        (AT_UID, uid as u64),
        (AT_EUID, euid as u64),
        (AT_GID, gid as u64),
        (AT_EGID, egid as u64),
        (AT_SECURE, 0),
        (AT_RANDOM, random),
        (AT_HWCAP2, hwcap2),
        (AT_EXECFN, execfn),
        (AT_PLATFORM, platform),
        (AT_NULL, 0),
    ];
    let mut words: Vec<u64> = Vec::with_capacity(3 + argv.len() + envp.len() + 2 * auxv.len());
    words.push(argv.len() as u64);
    words.extend(&arg_ptrs);
    words.push(0);
    words.extend(&env_ptrs);
    words.push(0);
    for (k, v) in auxv {
        words.push(k);
        words.push(v);
    }
    let sp = (p - words.len() as u64 * 8) & !15;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.write_bytes(sp, &bytes)
        .map_err(|f| stack_err(&f.to_string()))?;
    Ok(sp)
}

/// Where a sysroot for dynamically linked programs usually is: Debian's
/// `libc6-arm64-cross` installs the AArch64 glibc and its ld.so there.
pub const CROSS_SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// The host file a guest path names for the loader: inside `cfg.root` when confined, else
/// under `cfg.sysroot` when it exists there (qemu's `-L`), else the host's own path.
pub fn guest_path_on_host(cfg: &LinuxConfig, guest: &[u8]) -> Result<PathBuf, Errno> {
    use std::os::unix::ffi::OsStrExt;
    if let Some(root) = &cfg.root {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        let base: &[u8] = b"/";
        return crate::linux::fs::path::resolve_in_root(&root, base, guest, true).map(|r| r.host);
    }
    if let Some(p) = cfg
        .sysroot
        .as_deref()
        .and_then(|dir| crate::linux::fs::path::under_prefix(dir, guest))
    {
        return Ok(p);
    }
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(guest)))
}

/// Loads the interpreter a dynamically linked `image` asks for (None for a static one),
/// looking for it as the guest would (see [`guest_path_on_host`]). A missing interpreter
/// is an error that says where armada looked and what to do.
pub fn load_interpreter(image: &Image, cfg: &LinuxConfig) -> Result<Option<Arc<Image>>, LoadError> {
    let Some(guest) = &image.interp else {
        return Ok(None);
    };
    let name = String::from_utf8_lossy(guest).into_owned();
    let missing = || {
        let (where_, hint) = match (&cfg.root, &cfg.sysroot) {
            (Some(r), _) => (
                format!("inside the root {}", r.display()),
                "copy the program's libraries into the root, or run without --root and give a sysroot with -L DIR".to_string(),
            ),
            (None, Some(s)) => (
                format!("under the sysroot {} nor on this machine", s.display()),
                format!("give -L a directory that holds {name} and the program's libraries"),
            ),
            (None, None) => (
                "on this machine".to_string(),
                format!(
                    "give a sysroot with -L DIR (or QEMU_LD_PREFIX), a directory that holds it and the program's libraries; Debian's libc6-arm64-cross installs one at {CROSS_SYSROOT}"
                ),
            ),
        };
        LoadError::InterpreterMissing {
            path: name.clone(),
            where_,
            hint,
        }
    };
    let host = guest_path_on_host(cfg, guest).map_err(|_| missing())?;
    let file = match std::fs::File::open(&host) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(cause) => {
            return Err(LoadError::Io { path: host, cause });
        }
    };
    let shown = if host.as_os_str().as_encoded_bytes() == guest.as_slice() {
        name.clone()
    } else {
        format!("{name} ({})", host.display())
    };
    let wrap = |e: LoadError| LoadError::Interpreter {
        path: shown.clone(),
        cause: Box::new(e),
    };
    let interp = cached_image(&file, &host, true, |b| {
        Image::parse_interpreter(b, &name, MMAP_TOP)
    })
    .map_err(wrap)?;
    Ok(Some(interp))
}

/// Parsed images of the files programs were started or exec'd from, most recent last, so
/// that a shell running the same program a thousand times reads and parses it once, and
/// its processes (and the lanes of a batch) share its pages and their decoded code. A
/// file is known by its device, inode, size and modification time: a changed file is
/// read again.
static IMAGES: std::sync::Mutex<Vec<(ImageKey, Arc<Image>)>> = std::sync::Mutex::new(Vec::new());
/// Images kept at most.
const IMAGE_CACHE: usize = 32;

type ImageKey = (u64, u64, i64, i64, i64, bool);

/// The image in `file` (at `path`, for errors), parsed by `parse` unless it is cached.
pub fn cached_image(
    file: &std::fs::File,
    path: &std::path::Path,
    interp: bool,
    parse: impl FnOnce(&[u8]) -> Result<Image, LoadError>,
) -> Result<Arc<Image>, LoadError> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let io = |cause| LoadError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let m = file.metadata().map_err(io)?;
    let key = (
        m.dev(),
        m.ino(),
        m.size() as i64,
        m.mtime(),
        m.mtime_nsec(),
        interp,
    );
    let lock = || IMAGES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(img) = lock()
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, i)| i.clone())
    {
        return Ok(img);
    }
    let mut bytes = Vec::with_capacity(m.size() as usize);
    let mut f = file;
    f.read_to_end(&mut bytes).map_err(io)?;
    let img = Arc::new(parse(&bytes)?);
    let mut c = lock();
    if c.len() >= IMAGE_CACHE {
        c.remove(0);
    }
    c.push((key, img.clone()));
    Ok(img)
}

/// One guest process ready to run: registers at the entry point, memory with the image and
/// stack, and its Linux state.
pub struct Program {
    pub state: CpuState,
    pub mem: AddressSpace,
    pub process: Process,
    pub image: Arc<Image>,
    /// The program's interpreter (ld-linux-aarch64.so.1) when it is dynamically linked.
    pub interp: Option<Arc<Image>>,
}

impl Program {
    /// An independent copy (see `Lane::copy_frozen`): registers, memory copy-on-write,
    /// Linux state with its own open file descriptions.
    pub(crate) fn copy_frozen(&self) -> Program {
        Program {
            state: self.state.clone(),
            mem: self.mem.clone(),
            process: self.process.clone(),
            image: self.image.clone(),
            interp: self.interp.clone(),
        }
    }

    /// Maps `image`, builds the stack from `argv` (argv[0] included) and `env` ("K=V"
    /// strings), and sets pc and sp. AT_EXECFN is `cfg.exe_guest_path`. A dynamically
    /// linked program's interpreter is loaded from the file system ([`load_interpreter`]);
    /// [`Program::spawn_dynamic`] takes one already loaded (many lanes, one interpreter).
    pub fn spawn(
        image: Arc<Image>,
        cfg: &LinuxConfig,
        argv: Vec<Vec<u8>>,
        env: Vec<Vec<u8>>,
        stdio: Stdio,
    ) -> Result<Program, LoadError> {
        let interp = load_interpreter(&image, cfg)?;
        Program::spawn_dynamic(image, interp, cfg, argv, env, stdio)
    }

    /// [`Program::spawn`] with the program's interpreter, loaded as Linux does: both images
    /// mapped, the interpreter runs first (pc at its entry) and finds the program through
    /// AT_PHDR, AT_ENTRY and AT_BASE.
    pub fn spawn_dynamic(
        image: Arc<Image>,
        interp: Option<Arc<Image>>,
        cfg: &LinuxConfig,
        argv: Vec<Vec<u8>>,
        env: Vec<Vec<u8>>,
        stdio: Stdio,
    ) -> Result<Program, LoadError> {
        if let (Some(want), None) = (&image.interp, &interp) {
            return Err(LoadError::BadInterpreter(format!(
                "the program needs {} and none was loaded",
                String::from_utf8_lossy(want)
            )));
        }
        let mut mem = AddressSpace::new();
        image.map_into(&mut mem)?;
        if let Some(i) = &interp {
            i.map_into(&mut mem)?;
        }
        let mut process = Process::new(cfg.clone(), stdio, image.brk_start);
        if let (Some(i), Some(name)) = (&interp, &image.interp) {
            for seg in &i.segments {
                process.note_file_map(seg.start, seg.end, seg.file_off, name);
            }
        }
        process.set_cmdline(&argv, &cfg.exe_guest_path);
        let mut random = [0u8; 16];
        process.random_bytes(&mut random);
        let exe = String::from_utf8_lossy(&cfg.exe_guest_path).into_owned();
        let base = interp.as_ref().map_or(0, |i| i.load_bias);
        let sp = setup_stack(
            &mut mem, &image, base, &exe, &argv, &env, random, HWCAP, HWCAP2,
        )?;
        let mut state = CpuState {
            pc: interp.as_ref().map_or(image.entry, |i| i.entry),
            ..Default::default()
        };
        state.x[31] = sp;
        Ok(Program {
            state,
            mem,
            process,
            image,
            interp,
        })
    }

    /// execve: replaces the image with the one `req` names (its interpreter loaded as at
    /// start), builds the new stack and resets the registers; the Linux side follows
    /// ([`Process::exec_commit`]). Fails before anything changes, with the errno execve
    /// returns: ENOEXEC for a file that is not a loadable AArch64 program, ENOENT for a
    /// missing interpreter, E2BIG or ENOMEM for a stack that cannot be built. Returns the
    /// old address space (a vfork child gives it back to its parent).
    pub fn exec(&mut self, req: &ExecRequest) -> Result<AddressSpace, Errno> {
        let image = cached_image(&req.file, &req.host_path, false, Image::parse)
            .map_err(|_| Errno::ENOEXEC)?;
        let cfg = self.process.config();
        let interp = load_interpreter(&image, cfg).map_err(|e| {
            // the guest sees only an errno (ENOENT, as Linux gives): say why and what to do
            let key = {
                use std::hash::{Hash, Hasher};
                let mut h = std::hash::DefaultHasher::new();
                req.host_path.hash(&mut h);
                h.finish() >> 8
            };
            crate::linux::note_once(crate::linux::NOTE_MISC, 0x1000 + key, || {
                format!("execve of {}: {e}", req.host_path.display())
            });
            match e {
                LoadError::InterpreterMissing { .. } => Errno::ENOENT,
                _ => Errno::ENOEXEC,
            }
        })?;
        let mut mem = self.mem.empty_in_lane();
        let map = |e: LoadError| match e {
            LoadError::Stack(s) if s.contains("E2BIG") => Errno::E2BIG,
            _ => Errno::ENOMEM,
        };
        image.map_into(&mut mem).map_err(map)?;
        if let Some(i) = &interp {
            i.map_into(&mut mem).map_err(map)?;
        }
        let mut random = [0u8; 16];
        self.process.random_bytes(&mut random);
        let base = interp.as_ref().map_or(0, |i| i.load_bias);
        let execfn = String::from_utf8_lossy(&req.execfn).into_owned();
        let sp = setup_stack(
            &mut mem, &image, base, &execfn, &req.argv, &req.envp, random, HWCAP, HWCAP2,
        )
        .map_err(map)?;
        // past the point of no return
        self.process.flush_shared_mappings(&self.mem);
        self.process.exec_commit(req, image.brk_start);
        if let (Some(i), Some(name)) = (&interp, &image.interp) {
            for seg in &i.segments {
                self.process
                    .note_file_map(seg.start, seg.end, seg.file_off, name);
            }
        }
        let retired = self.state.retired;
        self.state = CpuState {
            pc: interp.as_ref().map_or(image.entry, |i| i.entry),
            retired,
            ..Default::default()
        };
        self.state.x[31] = sp;
        self.image = image;
        self.interp = interp;
        Ok(std::mem::replace(&mut self.mem, mem))
    }

    /// Services the syscall this program stopped at.
    pub fn syscall(&mut self) -> SysOutcome {
        self.process.syscall(&mut self.state, &mut self.mem)
    }
}

/// Services the syscalls of many stopped programs in parallel.
pub fn service_programs(programs: &mut [&mut Program]) -> Vec<SysOutcome> {
    use rayon::prelude::*;
    programs.par_iter_mut().map(|p| p.syscall()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::tests::tiny_elf;

    fn read_u64(mem: &mut AddressSpace, a: u64) -> u64 {
        mem.read_u64(a).unwrap()
    }

    #[test]
    fn stack_layout_and_auxv() {
        let img = Image::parse(&tiny_elf(object::elf::ET_EXEC, 0x400000)).unwrap();
        let cfg = LinuxConfig {
            sysroot: None,
            deterministic: true,
            seed: 5,
            exe_guest_path: b"/bin/prog".to_vec(),
            ..Default::default()
        };
        let argv = vec![b"prog".to_vec(), b"one".to_vec(), b"".to_vec()];
        let env = vec![b"A=1".to_vec(), b"HOME=/root".to_vec()];
        let mut p = Program::spawn(
            Arc::new(img),
            &cfg,
            argv.clone(),
            env.clone(),
            Stdio::Captured { stdin: vec![] },
        )
        .unwrap();
        assert_eq!(p.state.pc, 0x4000b0);
        let sp = p.state.x[31];
        assert_eq!(sp % 16, 0);
        assert!(sp < STACK_TOP && sp > STACK_TOP - STACK_SIZE);
        let m = &mut p.mem;
        assert_eq!(read_u64(m, sp), 3);
        for (i, a) in argv.iter().enumerate() {
            let ptr = read_u64(m, sp + 8 + 8 * i as u64);
            assert_eq!(&m.read_cstr(ptr, 100).unwrap(), a);
        }
        assert_eq!(read_u64(m, sp + 32), 0);
        for (i, e) in env.iter().enumerate() {
            let ptr = read_u64(m, sp + 40 + 8 * i as u64);
            assert_eq!(&m.read_cstr(ptr, 100).unwrap(), e);
        }
        assert_eq!(read_u64(m, sp + 56), 0);
        let mut aux = std::collections::HashMap::new();
        let mut a = sp + 64;
        loop {
            let (k, v) = (read_u64(m, a), read_u64(m, a + 8));
            if k == AT_NULL {
                break;
            }
            aux.insert(k, v);
            a += 16;
        }
        assert_eq!(aux[&AT_PAGESZ], 4096);
        assert_eq!(aux[&AT_PHDR], 0x400040);
        assert_eq!(aux[&AT_PHENT], 56);
        assert_eq!(aux[&AT_PHNUM], 2);
        assert_eq!(aux[&AT_ENTRY], 0x4000b0);
        assert_eq!(aux[&AT_HWCAP], HWCAP);
        assert_eq!(aux[&AT_HWCAP2], 0);
        assert_eq!(aux[&AT_CLKTCK], 100);
        assert_eq!(aux[&AT_SECURE], 0);
        assert_eq!(aux[&AT_BASE], 0);
        assert_eq!(aux[&AT_MINSIGSTKSZ], 5120);
        assert_eq!(m.read_cstr(aux[&AT_EXECFN], 100).unwrap(), b"/bin/prog");
        assert_eq!(m.read_cstr(aux[&AT_PLATFORM], 100).unwrap(), b"aarch64");
        // AT_RANDOM is seeded: the same seed gives the same bytes
        let mut r1 = [0u8; 16];
        m.read_bytes(aux[&AT_RANDOM], &mut r1).unwrap();
        let img2 = Image::parse(&tiny_elf(object::elf::ET_EXEC, 0x400000)).unwrap();
        let mut q = Program::spawn(Arc::new(img2), &cfg, argv, env, Stdio::inherit()).unwrap();
        assert_eq!(q.state.x[31], sp);
        let mut r2 = [0u8; 16];
        q.mem.read_bytes(aux[&AT_RANDOM], &mut r2).unwrap();
        assert_eq!(r1, r2);
        assert_ne!(r1, [0u8; 16]);
        assert_eq!(HWCAP, 0x10_0103);
    }

    #[test]
    fn missing_interpreter_says_what_to_do() {
        // tiny_elf with its second program header turned into PT_INTERP
        let mut f = tiny_elf(object::elf::ET_DYN, 0);
        f[120..124].copy_from_slice(&object::elf::PT_INTERP.to_le_bytes());
        f[120 + 8..120 + 16].copy_from_slice(&0x1000u64.to_le_bytes());
        f[0x1000..0x1010].copy_from_slice(b"/nonexistent/ld\0");
        let img = Image::parse(&f).unwrap();
        assert_eq!(img.interp.as_deref(), Some(&b"/nonexistent/ld"[..]));
        let cfg = LinuxConfig::default();
        let e = load_interpreter(&img, &cfg).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/ld") && e.contains("-L DIR"), "{e}");
        assert!(e.contains(CROSS_SYSROOT), "{e}");
        let cfg = LinuxConfig {
            sysroot: Some("/nonexistent-sysroot".into()),
            ..Default::default()
        };
        let e = load_interpreter(&img, &cfg).unwrap_err().to_string();
        assert!(e.contains("under the sysroot /nonexistent-sysroot"), "{e}");
        // spawning without the interpreter it needs is an error, not a wrong start
        let e = Program::spawn_dynamic(Arc::new(img), None, &cfg, vec![], vec![], Stdio::inherit())
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/ld"));
    }

    #[test]
    fn too_many_args_is_an_error() {
        let img = Image::parse(&tiny_elf(object::elf::ET_EXEC, 0x400000)).unwrap();
        let mut mem = AddressSpace::new();
        let big = vec![vec![b'x'; 1 << 20]; 3];
        let e = setup_stack(&mut mem, &img, 0, "p", &big, &[], [0; 16], HWCAP, 0).unwrap_err();
        assert!(e.to_string().contains("E2BIG"));
    }
}
