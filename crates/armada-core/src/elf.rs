//! ELF loader: turns an AArch64 Linux executable into page-aligned segments whose pages
//! are shared (`Arc`) by every lane that runs the program.
//!
//! Supported: `ET_EXEC` and `ET_DYN` (static-pie, or a program with a `PT_INTERP`
//! interpreter, which is loaded the same way: see [`Image::parse_interpreter`]),
//! little-endian ELF64 for `EM_AARCH64`. The parser never panics on malformed input: every offset, size and address
//! is checked, and problems come back as [`LoadError`] with a message that says what is wrong.
//!
//! Segment contents are built by virtual address, not by mapping file pages, so the usual
//! requirement that `p_vaddr` and `p_offset` be congruent modulo the page size does not
//! matter here. Two `PT_LOAD` segments that share a page produce one page holding the union
//! of their file bytes, with the union of their permissions (as a kernel mapping both would
//! leave the page readable by both).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::elf;

use crate::memory::{
    AddressSpace, MapError, PageBuf, PageData, Perm, ADDR_LIMIT, PAGE_MASK, PAGE_SHIFT, PAGE_SIZE,
};

/// Load bias for position-independent (static-pie) executables, page-aligned.
pub const PIE_LOAD_BIAS: u64 = 0x55_5555_0000;

/// Highest address a segment may end at: segments stay below armada's mmap region and stack
/// (see `linux::mm::mmap`).
pub const IMAGE_LIMIT: u64 = crate::linux::mm::mmap::MMAP_TOP - 0x1000_0000;

/// Most program headers accepted (Linux refuses more than 64 KiB of them).
const MAX_PHDR_BYTES: u64 = 65536;

/// Why a program could not be loaded or started. Each message names its cause itself (the
/// causes are not chained as sources, which would print them twice in `{:#}`).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("not an ELF file (it does not start with \\x7fELF): armada runs AArch64 Linux ELF executables")]
    NotElf,
    #[error("truncated ELF file: {0} lies beyond the end of the file ({1} bytes); the file is damaged or incomplete")]
    Truncated(&'static str, usize),
    #[error(
        "32-bit ELF (ELFCLASS32): armada runs 64-bit AArch64 programs; build for aarch64-linux-gnu"
    )]
    Not64Bit,
    #[error("ELF class {0} is not valid: the file is damaged")]
    BadClass(u8),
    #[error(
        "big-endian ELF: armada runs little-endian AArch64 programs (aarch64, not aarch64_be)"
    )]
    BigEndian,
    #[error("ELF data encoding {0} is not valid: the file is damaged")]
    BadEncoding(u8),
    #[error("not an AArch64 ELF (machine {0}): armada runs AArch64 Linux programs; build with aarch64-linux-gnu-gcc")]
    WrongMachine(String),
    #[error(
        "ELF type {0} is not an executable: armada runs executables (ET_EXEC or static-pie ET_DYN)"
    )]
    NotExecutable(String),
    #[error("the interpreter {0} asks for an interpreter itself: an ELF interpreter must be self-contained (ld-linux-aarch64.so.1)")]
    NestedInterpreter(String),
    #[error("the interpreter path in PT_INTERP is not valid: {0}")]
    BadInterpreter(String),
    #[error(
        "the program is dynamically linked and its interpreter {path} is not {where_}: {hint}"
    )]
    InterpreterMissing {
        path: String,
        where_: String,
        hint: String,
    },
    #[error("cannot load the program's interpreter {path}: {cause}")]
    Interpreter { path: String, cause: Box<LoadError> },
    #[error("malformed ELF header: {0}")]
    BadHeader(String),
    #[error("malformed program header {index}: {why}")]
    BadSegment { index: usize, why: String },
    #[error("the ELF file has no PT_LOAD segment, so there is nothing to run")]
    NoLoad,
    #[error("cannot map the program's {what}: {cause}")]
    Map { what: String, cause: MapError },
    #[error("cannot set up the program's stack: {0}")]
    Stack(String),
}

/// One mapped range of the image: page-aligned, one permission, with the pages that hold file
/// contents (pages left out read as zeros).
#[derive(Clone)]
pub struct Segment {
    /// Page-aligned start address (bias applied).
    pub start: u64,
    /// Page-aligned end address (exclusive).
    pub end: u64,
    pub perm: Perm,
    /// Offset in the file of the byte mapped at `start` (what /proc/self/maps shows).
    pub file_off: u64,
    /// (page number, contents), ascending.
    pub pages: Vec<(u64, Arc<PageBuf>)>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("start", &format_args!("{:#x}", self.start))
            .field("end", &format_args!("{:#x}", self.end))
            .field("perm", &format_args!("{}", self.perm))
            .field("pages", &self.pages.len())
            .finish()
    }
}

/// A parsed, ready-to-map executable.
#[derive(Clone, Debug)]
pub struct Image {
    /// Entry point (bias applied).
    pub entry: u64,
    /// Guest address of the program headers (AT_PHDR).
    pub phdr: u64,
    /// Size of one program header (AT_PHENT).
    pub phent: u64,
    /// Number of program headers (AT_PHNUM).
    pub phnum: u64,
    /// 0 for ET_EXEC, [`PIE_LOAD_BIAS`] for a position-independent program, the chosen base
    /// for an interpreter.
    pub load_bias: u64,
    /// The interpreter (PT_INTERP) a dynamically linked program asks for, as a guest path.
    pub interp: Option<Vec<u8>>,
    /// Page-aligned end of the highest segment: where the heap (brk) starts.
    pub brk_start: u64,
    /// Non-overlapping, ascending.
    pub segments: Vec<Segment>,
}

fn machine_name(m: u16) -> String {
    let name = match m {
        elf::EM_NONE => "none",
        elf::EM_SPARC => "SPARC",
        elf::EM_386 => "x86 (i386)",
        elf::EM_68K => "m68k",
        elf::EM_MIPS => "MIPS",
        elf::EM_PARISC => "PA-RISC",
        elf::EM_PPC => "PowerPC",
        elf::EM_PPC64 => "PowerPC64",
        elf::EM_S390 => "s390",
        elf::EM_ARM => "32-bit ARM",
        elf::EM_SH => "SuperH",
        elf::EM_SPARCV9 => "SPARC64",
        elf::EM_IA_64 => "IA-64",
        elf::EM_X86_64 => "x86-64",
        elf::EM_RISCV => "RISC-V",
        elf::EM_LOONGARCH => "LoongArch",
        elf::EM_BPF => "BPF",
        _ => return format!("{m}"),
    };
    format!("{name}, {m}")
}

fn type_name(t: u16) -> String {
    match t {
        elf::ET_NONE => "ET_NONE (no file type)".into(),
        elf::ET_REL => "ET_REL (an object file: link it into an executable)".into(),
        elf::ET_CORE => "ET_CORE (a core dump)".into(),
        _ => format!("{t:#x}"),
    }
}

/// Little-endian field reader with bounds checks.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn get<const N: usize>(&self, off: u64, what: &'static str) -> Result<[u8; N], LoadError> {
        let start = usize::try_from(off).map_err(|_| LoadError::Truncated(what, self.0.len()))?;
        let end = start
            .checked_add(N)
            .ok_or(LoadError::Truncated(what, self.0.len()))?;
        let s = self
            .0
            .get(start..end)
            .ok_or(LoadError::Truncated(what, self.0.len()))?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }
    fn u16(&self, off: u64, what: &'static str) -> Result<u16, LoadError> {
        Ok(u16::from_le_bytes(self.get(off, what)?))
    }
    fn u32(&self, off: u64, what: &'static str) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.get(off, what)?))
    }
    fn u64(&self, off: u64, what: &'static str) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.get(off, what)?))
    }
}

/// What is being loaded: the program (at its link address, or [`PIE_LOAD_BIAS`]) or its
/// interpreter (at 0 first, then moved to the top of the mmap area).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Program,
    Interpreter,
}

#[derive(Clone, Copy, Debug)]
struct Phdr {
    p_type: u32,
    p_flags: u32,
    p_offset: u64,
    p_vaddr: u64,
    p_filesz: u64,
    p_memsz: u64,
}

fn page_down(a: u64) -> u64 {
    a & !PAGE_MASK
}

fn perm_of(flags: u32) -> Perm {
    let mut p = 0u8;
    if flags & elf::PF_R != 0 {
        p |= Perm::R.0;
    }
    if flags & elf::PF_W != 0 {
        p |= Perm::W.0;
    }
    if flags & elf::PF_X != 0 {
        p |= Perm::X.0;
    }
    Perm(p)
}

impl Image {
    /// Reads and parses the executable at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Image, LoadError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|cause| LoadError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        Image::parse(&bytes)
    }

    /// Parses an ELF executable held in memory.
    pub fn parse(bytes: &[u8]) -> Result<Image, LoadError> {
        Image::parse_placed(bytes, Place::Program)
    }

    fn parse_placed(bytes: &[u8], place: Place) -> Result<Image, LoadError> {
        let b = Bytes(bytes);
        if bytes.len() < 4 || bytes[..4] != elf::ELFMAG {
            return Err(LoadError::NotElf);
        }
        let ident: [u8; 16] = b.get(0, "the ELF identification")?;
        match ident[4] {
            elf::ELFCLASS64 => {}
            elf::ELFCLASS32 => return Err(LoadError::Not64Bit),
            c => return Err(LoadError::BadClass(c)),
        }
        match ident[5] {
            elf::ELFDATA2LSB => {}
            elf::ELFDATA2MSB => return Err(LoadError::BigEndian),
            d => return Err(LoadError::BadEncoding(d)),
        }
        if bytes.len() < 64 {
            return Err(LoadError::Truncated("the ELF header", bytes.len()));
        }
        let e_type = b.u16(16, "the ELF header")?;
        let e_machine = b.u16(18, "the ELF header")?;
        if e_machine != elf::EM_AARCH64 {
            return Err(LoadError::WrongMachine(machine_name(e_machine)));
        }
        let pie = match e_type {
            elf::ET_EXEC => false,
            elf::ET_DYN => true,
            t => return Err(LoadError::NotExecutable(type_name(t))),
        };
        let e_entry = b.u64(24, "the ELF header")?;
        let e_phoff = b.u64(32, "the ELF header")?;
        let e_phentsize = b.u16(54, "the ELF header")?;
        let e_phnum = b.u16(56, "the ELF header")?;
        if e_phnum == 0 {
            return Err(LoadError::NoLoad);
        }
        if e_phentsize as usize != std::mem::size_of::<elf::ProgramHeader64<object::LittleEndian>>()
        {
            return Err(LoadError::BadHeader(format!(
                "program header size is {e_phentsize}, ELF64 needs 56"
            )));
        }
        if e_phnum == elf::PN_XNUM {
            return Err(LoadError::BadHeader(
                "more than 65534 program headers (PN_XNUM) are not supported".into(),
            ));
        }
        let ph_bytes = e_phnum as u64 * e_phentsize as u64;
        if ph_bytes > MAX_PHDR_BYTES {
            return Err(LoadError::BadHeader(format!(
                "{e_phnum} program headers ({ph_bytes} bytes) are more than Linux accepts"
            )));
        }
        let ph_end = e_phoff
            .checked_add(ph_bytes)
            .filter(|&e| e <= bytes.len() as u64)
            .ok_or(LoadError::Truncated(
                "the program header table",
                bytes.len(),
            ))?;
        let _ = ph_end;

        let mut phdrs = Vec::with_capacity(e_phnum as usize);
        for i in 0..e_phnum as u64 {
            let o = e_phoff + i * e_phentsize as u64;
            phdrs.push(Phdr {
                p_type: b.u32(o, "a program header")?,
                p_flags: b.u32(o + 4, "a program header")?,
                p_offset: b.u64(o + 8, "a program header")?,
                p_vaddr: b.u64(o + 16, "a program header")?,
                p_filesz: b.u64(o + 32, "a program header")?,
                p_memsz: b.u64(o + 40, "a program header")?,
            });
        }

        // A dynamically linked program names its interpreter (the caller loads it).
        let mut interp = None;
        for (index, ph) in phdrs.iter().enumerate() {
            if ph.p_type == elf::PT_INTERP {
                let bad = |why: &str| LoadError::BadSegment {
                    index,
                    why: why.to_string(),
                };
                let s = usize::try_from(ph.p_offset)
                    .ok()
                    .and_then(|s| {
                        let e = s.checked_add(usize::try_from(ph.p_filesz.min(4096)).ok()?)?;
                        bytes.get(s..e)
                    })
                    .ok_or_else(|| bad("PT_INTERP lies beyond the end of the file"))?;
                let path = s.split(|&c| c == 0).next().unwrap_or(&[]).to_vec();
                if path.is_empty() {
                    return Err(LoadError::BadInterpreter("it is empty".into()));
                }
                interp = Some(path);
                break;
            }
        }

        let bias = match place {
            Place::Program if pie => PIE_LOAD_BIAS,
            Place::Program => 0,
            Place::Interpreter => 0,
        };
        let limit = match place {
            Place::Program => IMAGE_LIMIT,
            // placed later below the mmap area's top (see `parse_interpreter`)
            Place::Interpreter => ADDR_LIMIT,
        };

        // Collect the loadable segments and check them.
        struct Load {
            start: u64, // page-aligned
            end: u64,   // page-aligned
            vaddr: u64, // biased
            offset: u64,
            filesz: u64,
            perm: Perm,
        }
        let mut loads = Vec::new();
        for (index, ph) in phdrs.iter().enumerate() {
            if ph.p_type != elf::PT_LOAD {
                continue;
            }
            let bad = |why: String| LoadError::BadSegment { index, why };
            if ph.p_memsz == 0 {
                continue;
            }
            if ph.p_filesz > ph.p_memsz {
                return Err(bad(format!(
                    "PT_LOAD file size {:#x} is larger than its memory size {:#x}",
                    ph.p_filesz, ph.p_memsz
                )));
            }
            let file_end = ph
                .p_offset
                .checked_add(ph.p_filesz)
                .filter(|&e| e <= bytes.len() as u64)
                .ok_or_else(|| {
                    bad(format!(
                        "PT_LOAD file range {:#x}+{:#x} lies beyond the end of the file ({} bytes)",
                        ph.p_offset,
                        ph.p_filesz,
                        bytes.len()
                    ))
                })?;
            let _ = file_end;
            let vaddr = ph
                .p_vaddr
                .checked_add(bias)
                .ok_or_else(|| bad(format!("address {:#x} overflows", ph.p_vaddr)))?;
            let vend = vaddr
                .checked_add(ph.p_memsz)
                .and_then(|e| e.checked_add(PAGE_MASK))
                .map(page_down)
                .filter(|&e| e <= ADDR_LIMIT)
                .ok_or_else(|| {
                    bad(format!(
                        "PT_LOAD {:#x}+{:#x} does not fit in the 48-bit guest address space",
                        ph.p_vaddr, ph.p_memsz
                    ))
                })?;
            if vend > limit {
                return Err(bad(format!(
                    "PT_LOAD {:#x}..{:#x} reaches into armada's stack and mmap region (above {:#x})",
                    vaddr, vend, limit
                )));
            }
            loads.push(Load {
                start: page_down(vaddr),
                end: vend,
                vaddr,
                offset: ph.p_offset,
                filesz: ph.p_filesz,
                perm: perm_of(ph.p_flags),
            });
        }
        if loads.is_empty() {
            return Err(LoadError::NoLoad);
        }

        // Page contents: the union of every segment's file bytes.
        let mut pages: BTreeMap<u64, Box<PageData>> = BTreeMap::new();
        for l in &loads {
            let mut done = 0u64;
            while done < l.filesz {
                let a = l.vaddr + done;
                let off = (a & PAGE_MASK) as usize;
                let n = (PAGE_SIZE - off as u64).min(l.filesz - done);
                // In range: checked above (offset + filesz <= len).
                let src_start = (l.offset + done) as usize;
                let src = &bytes[src_start..src_start + n as usize];
                let page = pages
                    .entry(a >> PAGE_SHIFT)
                    .or_insert_with(|| Box::new([0u8; PAGE_SIZE as usize]));
                page[off..off + n as usize].copy_from_slice(src);
                done += n;
            }
        }

        // Areas: union of permissions over the elementary intervals between boundaries.
        let mut bounds: Vec<u64> = loads.iter().flat_map(|l| [l.start, l.end]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut segments: Vec<Segment> = Vec::new();
        for w in bounds.windows(2) {
            let (s, e) = (w[0], w[1]);
            let mut covered = false;
            let mut perm = 0u8;
            for l in &loads {
                if l.start < e && l.end > s {
                    covered = true;
                    perm |= l.perm.0;
                }
            }
            if !covered {
                continue;
            }
            let perm = Perm(perm);
            // the file offset of `s` in the first segment that maps it
            let file_off = loads
                .iter()
                .find(|l| l.start <= s && s < l.end)
                .map_or(0, |l| {
                    (l.offset.wrapping_sub(l.vaddr - l.start)).wrapping_add(s - l.start)
                });
            match segments.last_mut() {
                Some(last) if last.end == s && last.perm == perm => last.end = e,
                _ => segments.push(Segment {
                    start: s,
                    end: e,
                    perm,
                    file_off,
                    pages: Vec::new(),
                }),
            }
        }
        for (vpn, data) in pages {
            if data.iter().all(|&b| b == 0) {
                continue; // unmaterialized pages read as zeros
            }
            let addr = vpn << PAGE_SHIFT;
            if let Some(seg) = segments
                .iter_mut()
                .find(|s| s.start <= addr && addr < s.end)
            {
                seg.pages
                    .push((vpn, Arc::new(PageBuf::from(data).held_by_cache())));
            }
        }

        // Where the program headers are in memory.
        let phdr = if let Some(p) = phdrs.iter().find(|p| p.p_type == elf::PT_PHDR) {
            p.p_vaddr.wrapping_add(bias)
        } else if let Some(l) = loads
            .iter()
            .find(|l| l.offset <= e_phoff && e_phoff - l.offset < l.filesz)
        {
            l.vaddr + (e_phoff - l.offset)
        } else {
            let l = &loads[0];
            l.vaddr.wrapping_sub(l.offset).wrapping_add(e_phoff)
        };

        let brk_start = segments.iter().map(|s| s.end).max().unwrap_or(0);
        Ok(Image {
            entry: e_entry.wrapping_add(bias),
            phdr,
            phent: e_phentsize as u64,
            phnum: e_phnum as u64,
            load_bias: bias,
            interp,
            brk_start,
            segments,
        })
    }

    /// Parses a program's interpreter (ld-linux-aarch64.so.1): a position-independent
    /// `ET_DYN` object, placed as Linux places it, at the top of the mmap area (just below
    /// `top`) so the mmap calls it makes go below it. `name` is its guest path, for messages.
    pub fn parse_interpreter(bytes: &[u8], name: &str, top: u64) -> Result<Image, LoadError> {
        let img = Image::parse_placed(bytes, Place::Interpreter)?;
        if img.interp.is_some() {
            return Err(LoadError::NestedInterpreter(name.to_string()));
        }
        if bytes.get(16..18) != Some(&elf::ET_DYN.to_le_bytes()[..]) {
            return Err(LoadError::NotExecutable(format!(
                "ET_EXEC at a fixed address ({name} must be a position-independent ET_DYN interpreter)"
            )));
        }
        let span = img.brk_start;
        if span == 0 || span > top / 2 {
            return Err(LoadError::BadHeader(format!(
                "the interpreter {name} spans {span:#x} bytes, more than fits"
            )));
        }
        Ok(img.rebased((top - span) & !PAGE_MASK))
    }

    /// The same image moved up by `delta` bytes (page-aligned): segments, pages, entry and
    /// program headers.
    fn rebased(mut self, delta: u64) -> Image {
        let dv = delta >> PAGE_SHIFT;
        self.entry = self.entry.wrapping_add(delta);
        self.phdr = self.phdr.wrapping_add(delta);
        self.load_bias = self.load_bias.wrapping_add(delta);
        self.brk_start += delta;
        for seg in &mut self.segments {
            seg.start += delta;
            seg.end += delta;
            for (vpn, _) in &mut seg.pages {
                *vpn += dv;
            }
        }
        self
    }

    /// Maps every segment into `mem` with its permission and installs the shared pages.
    pub fn map_into(&self, mem: &mut AddressSpace) -> Result<(), LoadError> {
        for seg in &self.segments {
            mem.map(seg.start, seg.end - seg.start, seg.perm)
                .map_err(|cause| LoadError::Map {
                    what: format!("segment {:#x}..{:#x} ({})", seg.start, seg.end, seg.perm),
                    cause,
                })?;
            for (vpn, data) in &seg.pages {
                mem.share_page(*vpn, data.clone());
            }
        }
        Ok(())
    }

    /// Total bytes of file contents held in shared pages.
    pub fn resident_bytes(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.pages.len() as u64 * PAGE_SIZE)
            .sum()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal static AArch64 executable: one RX segment holding the headers and code
    /// (`mov x0, #42; mov x8, #93; svc #0`), and one RW segment with 8 bytes of data and bss.
    pub(crate) fn tiny_elf(e_type: u16, base: u64) -> Vec<u8> {
        let mut f = vec![0u8; 0x1000 + 16];
        // ELF header
        f[..4].copy_from_slice(&elf::ELFMAG);
        f[4] = elf::ELFCLASS64;
        f[5] = elf::ELFDATA2LSB;
        f[6] = 1;
        f[16..18].copy_from_slice(&e_type.to_le_bytes());
        f[18..20].copy_from_slice(&elf::EM_AARCH64.to_le_bytes());
        f[20..24].copy_from_slice(&1u32.to_le_bytes());
        f[24..32].copy_from_slice(&(base + 0xb0).to_le_bytes()); // entry
        f[32..40].copy_from_slice(&64u64.to_le_bytes()); // phoff
        f[52..54].copy_from_slice(&64u16.to_le_bytes()); // ehsize
        f[54..56].copy_from_slice(&56u16.to_le_bytes()); // phentsize
        f[56..58].copy_from_slice(&2u16.to_le_bytes()); // phnum
        let ph = |f: &mut Vec<u8>, at: usize, flags: u32, off: u64, va: u64, fs: u64, ms: u64| {
            f[at..at + 4].copy_from_slice(&elf::PT_LOAD.to_le_bytes());
            f[at + 4..at + 8].copy_from_slice(&flags.to_le_bytes());
            f[at + 8..at + 16].copy_from_slice(&off.to_le_bytes());
            f[at + 16..at + 24].copy_from_slice(&va.to_le_bytes());
            f[at + 24..at + 32].copy_from_slice(&va.to_le_bytes());
            f[at + 32..at + 40].copy_from_slice(&fs.to_le_bytes());
            f[at + 40..at + 48].copy_from_slice(&ms.to_le_bytes());
            f[at + 48..at + 56].copy_from_slice(&0x1000u64.to_le_bytes());
        };
        ph(&mut f, 64, elf::PF_R | elf::PF_X, 0, base, 0xbc, 0xbc);
        ph(
            &mut f,
            120,
            elf::PF_R | elf::PF_W,
            0x1000,
            base + 0x11000,
            16,
            0x2100,
        );
        // code at 0xb0
        let code: [u32; 3] = [0xd2800540, 0xd2800ba8, 0xd4000001];
        for (i, w) in code.iter().enumerate() {
            f[0xb0 + i * 4..0xb4 + i * 4].copy_from_slice(&w.to_le_bytes());
        }
        f[0x1000..0x1010].copy_from_slice(b"hello, data!\0\0\0\x01");
        f
    }

    #[test]
    fn parses_tiny_exec() {
        let img = Image::parse(&tiny_elf(elf::ET_EXEC, 0x400000)).unwrap();
        assert_eq!(img.entry, 0x4000b0);
        assert_eq!(img.load_bias, 0);
        assert_eq!(img.phdr, 0x400040);
        assert_eq!(img.phnum, 2);
        assert_eq!(img.phent, 56);
        assert_eq!(img.segments.len(), 2);
        assert_eq!(img.segments[0].start, 0x400000);
        assert_eq!(img.segments[0].end, 0x401000);
        assert_eq!(img.segments[0].perm, Perm::RX);
        assert_eq!(img.segments[1].start, 0x411000);
        assert_eq!(img.segments[1].end, 0x414000);
        assert_eq!(img.segments[1].perm, Perm::RW);
        assert_eq!(img.segments[1].pages.len(), 1);
        assert_eq!(img.brk_start, 0x414000);

        let mut mem = AddressSpace::new();
        img.map_into(&mut mem).unwrap();
        assert_eq!(mem.read_u32(0x4000b0).unwrap(), 0xd2800540);
        let mut buf = [0u8; 12];
        mem.read_bytes(0x411000, &mut buf).unwrap();
        assert_eq!(&buf, b"hello, data!");
        assert_eq!(mem.read_u64(0x413ff8).unwrap(), 0); // bss
        assert!(mem.write_u8(0x400000, 1).is_err()); // text is read-only
        mem.write_u8(0x412000, 1).unwrap();
    }

    #[test]
    fn static_pie_gets_bias() {
        let img = Image::parse(&tiny_elf(elf::ET_DYN, 0)).unwrap();
        assert_eq!(img.load_bias, PIE_LOAD_BIAS);
        assert_eq!(img.entry, PIE_LOAD_BIAS + 0xb0);
        assert_eq!(img.segments[0].start, PIE_LOAD_BIAS);
        assert_eq!(img.phdr, PIE_LOAD_BIAS + 64);
    }

    #[test]
    fn shared_boundary_page_is_union() {
        let mut f = tiny_elf(elf::ET_EXEC, 0x400000);
        // move the data segment into the text's page: vaddr 0x400800, file offset 0x1000
        f[120 + 16..120 + 24].copy_from_slice(&0x400800u64.to_le_bytes());
        let img = Image::parse(&f).unwrap();
        assert_eq!(img.segments.len(), 2);
        assert_eq!(img.segments[0].start, 0x400000);
        assert_eq!(img.segments[0].end, 0x401000);
        assert_eq!(img.segments[0].perm, Perm::RWX);
        assert_eq!(img.segments[1].start, 0x401000);
        assert_eq!(img.segments[1].perm, Perm::RW);
        let mut mem = AddressSpace::new();
        img.map_into(&mut mem).unwrap();
        assert_eq!(mem.read_u32(0x4000b0).unwrap(), 0xd2800540);
        let mut buf = [0u8; 12];
        mem.read_bytes(0x400800, &mut buf).unwrap();
        assert_eq!(&buf, b"hello, data!");
    }

    fn err(bytes: &[u8]) -> String {
        match Image::parse(bytes) {
            Ok(img) => panic!(
                "parsed: entry {:#x}, {} segments",
                img.entry,
                img.segments.len()
            ),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_inputs_say_what_is_wrong() {
        assert!(err(b"").contains("not an ELF"));
        assert!(err(b"#!/bin/sh\n").contains("not an ELF"));
        assert!(err(b"\x7fELF").contains("truncated"));
        let good = tiny_elf(elf::ET_EXEC, 0x400000);

        let mut f = good.clone();
        f[4] = elf::ELFCLASS32;
        assert!(err(&f).contains("32-bit"));
        let mut f = good.clone();
        f[5] = elf::ELFDATA2MSB;
        assert!(err(&f).contains("big-endian"));
        let mut f = good.clone();
        f[18..20].copy_from_slice(&elf::EM_X86_64.to_le_bytes());
        let e = err(&f);
        assert!(e.contains("not an AArch64 ELF (machine x86-64"), "{e}");
        let mut f = good.clone();
        f[16..18].copy_from_slice(&elf::ET_REL.to_le_bytes());
        assert!(err(&f).contains("object file"));
        // truncated inside the header / program headers / segment contents
        assert!(err(&good[..40]).contains("truncated"));
        assert!(err(&good[..100]).contains("truncated"));
        assert!(err(&good[..0x1008]).contains("beyond the end"));
        // bad phentsize
        let mut f = good.clone();
        f[54] = 32;
        assert!(err(&f).contains("program header size"));
        // phoff far away
        let mut f = good.clone();
        f[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&f).contains("truncated"));
        // no PT_LOAD
        let mut f = good.clone();
        f[64..68].copy_from_slice(&elf::PT_NOTE.to_le_bytes());
        f[120..124].copy_from_slice(&elf::PT_GNU_STACK.to_le_bytes());
        assert!(err(&f).contains("no PT_LOAD"));
        // huge memsz
        let mut f = good.clone();
        f[120 + 40..120 + 48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&f).contains("48-bit"));
        let mut f = good.clone();
        f[120 + 40..120 + 48].copy_from_slice(&(1u64 << 47).to_le_bytes());
        assert!(err(&f).contains("stack"));
        // filesz > memsz
        let mut f = good.clone();
        f[120 + 32..120 + 40].copy_from_slice(&0x3000u64.to_le_bytes());
        assert!(err(&f).contains("larger than its memory size"));
        // interpreter
        let mut f = good.clone();
        f[120..124].copy_from_slice(&elf::PT_INTERP.to_le_bytes());
        f[120 + 8..120 + 16].copy_from_slice(&0x1000u64.to_le_bytes());
        f[0x1000..0x1010].copy_from_slice(b"/lib/ld-linux\0\0\0");
        let img = Image::parse(&f).unwrap();
        assert_eq!(img.interp.as_deref(), Some(&b"/lib/ld-linux"[..]));
        // an interpreter must not ask for one itself, and must be position-independent
        let e = Image::parse_interpreter(&f, "/lib/ld-linux", 1 << 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("asks for an interpreter itself"), "{e}");
        let e = Image::parse_interpreter(&good, "/lib/x.so", 1 << 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("position-independent"), "{e}");
    }

    #[test]
    fn interpreter_goes_below_the_top() {
        let f = tiny_elf(elf::ET_DYN, 0);
        let top = 0x7000_0000_0000;
        let img = Image::parse_interpreter(&f, "/lib/ld.so", top).unwrap();
        assert_eq!(img.brk_start, top);
        assert_eq!(img.load_bias, top - 0x14000);
        assert_eq!(img.entry, img.load_bias + 0xb0);
        assert_eq!(img.segments[0].start, img.load_bias);
        assert_eq!(img.segments[0].pages[0].0, img.load_bias >> PAGE_SHIFT);
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = Image::load("/nonexistent/armada-test-prog").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/armada-test-prog"));
    }

    fn prebuilt_hello() -> Option<Vec<u8>> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/guest/prebuilt/hello");
        std::fs::read(p).ok()
    }

    #[test]
    fn prebuilt_hello_parses() {
        if let Some(bytes) = prebuilt_hello() {
            let img = Image::parse(&bytes).unwrap();
            assert!(!img.segments.is_empty());
            let mut mem = AddressSpace::new();
            img.map_into(&mut mem).unwrap();
        }
    }

    use proptest::prelude::*;

    /// Cases per property: `default`, or ARMADA_PROPTEST_CASES for a longer run.
    fn cases(default: u32) -> u32 {
        std::env::var("ARMADA_PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn mutate(
        mut f: Vec<u8>,
        edits: &[(usize, u8)],
        cut: usize,
        words: &[(usize, u64)],
    ) -> Vec<u8> {
        if f.is_empty() {
            return f;
        }
        for &(at, v) in edits {
            let n = f.len();
            f[at % n] = v;
        }
        for &(at, v) in words {
            // header/phdr area mostly: where the interesting fields are
            let at = at % 200.min(f.len());
            let end = (at + 8).min(f.len());
            f[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
        }
        if cut > 0 {
            let n = f.len();
            f.truncate(n - cut % n);
        }
        f
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(2000)))]
        #[test]
        fn mutated_elf_never_panics(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..16),
            words in proptest::collection::vec((any::<usize>(), any::<u64>()), 0..4),
            cut in 0usize..64,
            pie in any::<bool>(),
        ) {
            let t = if pie { elf::ET_DYN } else { elf::ET_EXEC };
            let f = mutate(tiny_elf(t, 0x400000), &edits, cut, &words);
            if let Ok(img) = Image::parse(&f) {
                let mut mem = AddressSpace::new();
                let _ = img.map_into(&mut mem);
            }
        }

        #[test]
        fn mutated_real_elf_never_panics(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..16),
            words in proptest::collection::vec((any::<usize>(), any::<u64>()), 0..4),
            cut in 0usize..1_000_000,
        ) {
            if let Some(bytes) = prebuilt_hello() {
                let f = mutate(bytes, &edits, cut % 3 * cut, &words);
                let _ = Image::parse(&f);
            }
        }
    }
}
