//! What a crash looked like, to tell one bug from another (a fuzzer files one crash per
//! bucket) and to say it in one line.
//!
//! A bucket is the signal, the faulting PC and the functions on the stack, with recursion
//! folded. The stack is read the way a debugger without unwind tables reads it: the
//! frame-pointer chain (x29), each return address checked to follow a `BL` or `BLR` in
//! executable memory. Four things kept one bug in many buckets
//! before (a recursive-descent parser with one planted overflow gave 9 to 28 crash files):
//! - **recursion depth**: the same function on the stack twice counts once;
//! - **x30**: in a function that made a call, x30 is the return address of its last call,
//!   which depends on the input; it is left out;
//! - **smashed stacks**: a frame record the overflow wrote over holds the input's bytes,
//!   which a chain followed blindly turns into "return addresses"; a word that does not
//!   follow a call instruction in executable memory ends the chain;
//! - **wild PCs**: a return through a smashed return address jumps to the input's bytes,
//!   a new PC (and SIGSEGV or SIGBUS) for every input; all wild jumps from one chain of
//!   callers are one bucket.
//!
//! A frame is named by the function it was in, where the call into it says which: the
//! `BL` before a return address gives the start of the function called from there, which
//! is the frame below. So recursion folds without symbols; where the call was indirect
//! (`BLR`), the return address itself stands for the frame.

use crate::memory::{AddressSpace, Perm};

/// Functions of a crash's stack kept for its bucket, after folding (the innermost).
pub const BUCKET_FRAMES: usize = 5;
/// Frame records followed at most.
const MAX_CHAIN: usize = 512;

/// Where a task stood when a signal ended its process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashSite {
    pub signal: i32,
    pub pc: u64,
    /// The PC was not in executable memory (a jump through a corrupted pointer).
    pub wild: bool,
    /// The address a memory fault was at (SIGSEGV, SIGBUS raised by the engine).
    pub addr: Option<u64>,
    /// The frames, innermost first: (return address, start of the function the call
    /// before it went to, where that was a direct call).
    pub frames: Vec<(u64, Option<u64>)>,
}

impl CrashSite {
    /// Reads the stack of the task whose registers are `x` and `pc` in `mem`. With the
    /// program's `symbols`, x30 counts as the first frame where it returns to another
    /// function than the PC's: the PC's function is then a leaf, or was jumped to by a
    /// tail call, and has no frame record of its own, so the chain starts at its caller's
    /// caller (and a tail call at depth 0 of a recursion would look like another bug than
    /// the same call deeper down).
    pub fn read(
        mem: &mut AddressSpace,
        signal: i32,
        pc: u64,
        x: &[u64; 31],
        addr: Option<u64>,
        symbols: Option<&Symbols>,
    ) -> CrashSite {
        let wild = !executable(mem, pc);
        let mut frames = Vec::new();
        if let (Some(syms), false) = (symbols, wild) {
            if let Some(callee) = return_address(mem, x[30]) {
                let (f_pc, f_lr) = (syms.function(pc), syms.function(x[30]));
                if f_pc.is_some() && f_lr.is_some() && f_pc != f_lr {
                    frames.push((x[30], callee));
                }
            }
        }
        let mut fp = x[29];
        while frames.len() < MAX_CHAIN {
            if fp == 0 || fp & 7 != 0 {
                break;
            }
            let (Ok(next), Ok(lr)) = (mem.read_u64(fp), mem.read_u64(fp.wrapping_add(8))) else {
                break;
            };
            let Some(callee) = return_address(mem, lr) else {
                break;
            };
            if frames.len() == 1 && frames[0].0 == lr {
                // x30 was the caller's return address the chain starts with
            } else {
                frames.push((lr, callee));
            }
            if next <= fp {
                break;
            }
            fp = next;
        }
        CrashSite {
            signal,
            pc,
            wild,
            addr,
            frames,
        }
    }

    /// The functions on the stack, innermost first, each once (its first, innermost
    /// place). Frame k runs the function that the call before frame k's return address
    /// went to, so each frame but the outermost is named by the frame above it; where that
    /// call was indirect, the return address of the frame itself stands for it.
    pub fn functions(&self) -> Vec<u64> {
        let mut named: Vec<u64> = Vec::with_capacity(self.frames.len());
        if let Some(f) = self.frames.first().and_then(|f| f.1) {
            named.push(f);
        }
        for (k, &(ret, _)) in self.frames.iter().enumerate() {
            named.push(self.frames.get(k + 1).and_then(|f| f.1).unwrap_or(ret));
        }
        let mut seen = std::collections::HashSet::new();
        named.retain(|f| seen.insert(*f));
        named
    }

    /// The bucket: a crash with the same signal, PC and innermost functions is the same
    /// bug. A wild PC (a jump to where no code is: a smashed return address, a corrupted
    /// function pointer) counts as one place whatever its value and signal (SIGSEGV or, for
    /// a misaligned one, SIGBUS), both of which come from the input's bytes; the frame chain
    /// still tells a function pointer called from one place from another.
    pub fn bucket(&self) -> u32 {
        let mut h: u32 = 0x811c_9dc5;
        let mut mix = |v: u64| {
            for b in v.to_le_bytes() {
                h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
            }
        };
        if self.wild {
            mix(u64::MAX);
        } else {
            mix(self.signal as u64);
            mix(self.pc);
        }
        for f in self.functions().into_iter().take(BUCKET_FRAMES) {
            mix(f);
        }
        h
    }

    /// The crash in one line: the signal, where, the address, and the callers (by symbol
    /// where `symbols` has them).
    pub fn describe(&self, symbols: Option<&Symbols>) -> String {
        let name = |a: u64| match symbols.and_then(|s| s.name(a)) {
            Some(n) => format!("{a:#x} ({n})"),
            None => format!("{a:#x}"),
        };
        let mut s = format!("{} at ", signal_name(self.signal));
        if self.wild {
            s.push_str(&format!("wild pc {:#x} (not executable memory)", self.pc));
        } else {
            s.push_str(&format!("pc {}", name(self.pc)));
        }
        if let Some(a) = self.addr {
            s.push_str(&format!(", address {a:#x}"));
        }
        let callers: Vec<String> = self
            .functions()
            .into_iter()
            .take(BUCKET_FRAMES)
            .map(|f| match symbols.and_then(|s| s.name(f)) {
                Some(n) => n.split('+').next().unwrap_or(&n).to_string(),
                None => format!("{f:#x}"),
            })
            .collect();
        let mut callers = callers;
        callers.dedup();
        if !callers.is_empty() {
            s.push_str(&format!("; in {}", callers.join(" < ")));
        }
        s
    }
}

fn executable(mem: &AddressSpace, a: u64) -> bool {
    a & 3 == 0 && mem.area_at(a).is_some_and(|(_, _, p)| p.contains(Perm::X))
}

/// Whether `a` is a return address: executable, after a `BL` or `BLR`. Some(the `BL`'s
/// target) or Some(None) for a `BLR`; None when it is not one.
fn return_address(mem: &mut AddressSpace, a: u64) -> Option<Option<u64>> {
    if a < 4 || !executable(mem, a - 4) {
        return None;
    }
    let w = mem.read_u32(a - 4).ok()?;
    if w & 0xfc00_0000 == 0x9400_0000 {
        let off = (((w & 0x03ff_ffff) << 6) as i32 >> 6) as i64 * 4;
        return Some(Some((a - 4).wrapping_add(off as u64)));
    }
    // BLR, and BLRAA/BLRAB/BLRAAZ/BLRABZ
    if w & 0xffff_fc1f == 0xd63f_0000 || w & 0xfeff_f800 == 0xd63f_0800 {
        return Some(None);
    }
    None
}

/// "SIGSEGV" and so on.
pub fn signal_name(signal: i32) -> String {
    let n = match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        libc::SIGPIPE => "SIGPIPE",
        _ => return format!("signal {signal}"),
    };
    n.to_string()
}

/// The function symbols of a program, to name addresses in crash reports.
pub struct Symbols {
    /// (start, size, name), by start.
    funcs: Vec<(u64, u64, String)>,
}

impl Symbols {
    /// The function symbols of the ELF file `bytes` loaded `bias` above its addresses; None
    /// when it has none (a stripped program).
    pub fn of_elf(bytes: &[u8], bias: u64) -> Option<Symbols> {
        use object::{Object, ObjectSymbol, SymbolKind};
        let file = object::File::parse(bytes).ok()?;
        let mut funcs: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0 && s.is_definition())
            .filter_map(|s| {
                Some((
                    s.address().wrapping_add(bias),
                    s.size(),
                    s.name().ok()?.to_string(),
                ))
            })
            .collect();
        if funcs.is_empty() {
            return None;
        }
        funcs.sort();
        funcs.dedup_by_key(|f| f.0);
        Some(Symbols { funcs })
    }

    /// The start of the function holding `a` (or within 64 KiB past a symbol without a
    /// size).
    pub fn function(&self, a: u64) -> Option<u64> {
        self.find(a).map(|i| self.funcs[i].0)
    }

    fn find(&self, a: u64) -> Option<usize> {
        let i = self.funcs.partition_point(|f| f.0 <= a).checked_sub(1)?;
        let (start, size, _) = &self.funcs[i];
        let off = a - start;
        if (*size != 0 && off >= *size) || (*size == 0 && off >= 0x10000) {
            return None;
        }
        Some(i)
    }

    /// `name+0xOFF` for an address inside a function.
    pub fn name(&self, a: u64) -> Option<String> {
        let (start, _, name) = &self.funcs[self.find(a)?];
        let off = a - start;
        Some(if off == 0 {
            name.clone()
        } else {
            format!("{name}+{off:#x}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crash in `leaf` (0x1000) at the bottom of a recursion of `parse` (0x2000) called
    /// from `main` (0x3000, called indirectly from 0x4000): frames as the chain gives them,
    /// innermost first, with the BL before each return address naming the callee.
    fn site(depth: usize, pc: u64, wild: bool) -> CrashSite {
        let mut frames = vec![(0x2010, Some(0x1000))];
        for _ in 1..depth {
            frames.push((0x2020, Some(0x2000)));
        }
        frames.push((0x3010, Some(0x2000)));
        frames.push((0x4010, None));
        CrashSite {
            signal: if pc.is_multiple_of(2) { 11 } else { 7 },
            pc,
            wild,
            addr: None,
            frames,
        }
    }

    #[test]
    fn recursion_depth_is_one_bucket() {
        let f = site(1, 0x1004, false).functions();
        assert_eq!(f, vec![0x1000, 0x2000, 0x3010, 0x4010]);
        for depth in 2..40 {
            assert_eq!(site(depth, 0x1004, false).functions(), f, "depth {depth}");
            assert_eq!(
                site(depth, 0x1004, false).bucket(),
                site(1, 0x1004, false).bucket()
            );
        }
        // another place is another bucket; a wild PC is one place whatever its value and
        // signal
        assert_ne!(
            site(3, 0x1008, false).bucket(),
            site(3, 0x1004, false).bucket()
        );
        assert_eq!(
            site(3, 0x4141_4141_4141_4141, true).bucket(),
            site(5, 0x4242_4242_4242_4240, true).bucket()
        );
    }

    #[test]
    fn symbols_name_addresses_inside_functions() {
        let s = Symbols {
            funcs: vec![
                (0x1000, 0x40, "leaf".into()),
                (0x2000, 0x100, "parse".into()),
                (0x3000, 0x100, "main".into()),
                (0x5000, 0, "unsized".into()),
            ],
        };
        assert_eq!(s.name(0x1000).as_deref(), Some("leaf"));
        assert_eq!(s.name(0x1008).as_deref(), Some("leaf+0x8"));
        assert_eq!(s.name(0x1040), None);
        assert_eq!(s.function(0x5abc), Some(0x5000));
        assert_eq!(s.function(0x2abc), None);
        assert_eq!(s.name(0xfff), None);
        let d = site(2, 0x1004, false).describe(Some(&s));
        assert_eq!(
            d,
            "SIGSEGV at pc 0x1004 (leaf+0x4); in leaf < parse < main < 0x4010"
        );
    }
}
