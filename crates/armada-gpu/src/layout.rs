//! What the host and the kernel agree on: the lane record, the stop codes, the page-table
//! format, the kernel parameters, and the generated C header that carries all of it (and the
//! micro-op numbers from `armada_isa`) into the kernel source, so no number is written twice.

use armada_isa::ops;
use armada_isa::uop::{addr_mode, cond, sysreg};
// (what system registers read, as the CPU engine gives them: one home in armada-isa)
use armada_isa::uop::sysreg::value::{FPCR_MASK, FPSR_MASK, FPSR_QC, ZVA_BYTES};
use std::fmt::Write;

// ----- the lane record: one per lane in device memory, S_WORDS u64 words -----------------------

/// x0..x30 and SP (32 words).
pub const S_X: usize = 0;
pub const S_PC: usize = 32;
/// NZCV in bits 31..28.
pub const S_NZCV: usize = 33;
pub const S_FPCR: usize = 34;
pub const S_FPSR: usize = 35;
pub const S_TPIDR: usize = 36;
/// Exclusive monitor address (u64::MAX: clear).
pub const S_EXCL: usize = 37;
pub const S_RETIRED: usize = 38;
/// Retired count at which the lane stops for good (the instruction limit).
pub const S_LIMIT: usize = 39;
/// Why the lane stopped in the last launch (`STOP_*`).
pub const S_STOP: usize = 40;
/// The stop's detail: fault address, undefined word, SVC/HLT/BRK immediate.
pub const S_INFO: usize = 41;
/// Sync period: a write to a slot whose epoch differs records the slot as dirty.
pub const S_EPOCH: usize = 42;
/// Number of dirty pages recorded (may exceed DIRTY_ALL: then all writable pages are).
pub const S_DIRTY_N: usize = 43;
/// Set by the kernel when it writes a vector register (the host's copy is then stale).
pub const S_VDIRTY: usize = 44;
/// The syscalls the kernel may answer itself (`SYS_*` bits; 0: none), see `Params::sysd`
/// and armada-gpu's `engine/devio.rs`.
pub const S_SYS: usize = 45;
/// fd 0's position in the lane's input.
pub const S_IN_OFF: usize = 46;
/// Syscalls the kernel answered since the host last looked.
pub const S_SYS_N: usize = 47;
/// Bytes the kernel may still drop from writes to fd 1 and fd 2 (the capture's cap).
pub const S_ROOM: usize = 48;
/// Nanoseconds the lane slept on the virtual clock (`SYS_CLOCK`).
pub const S_SLEPT: usize = 50;
/// Words the host writes back after servicing a lane (registers but the vector ones).
pub const CORE_WORDS: usize = 51;
/// Page numbers written since the last sync (DIRTY_CAP of them at most).
pub const S_DIRTY: usize = 51;
pub const DIRTY_CAP: usize = 32;
/// The lane's code regions in the region table: first | count << 32.
pub const S_REGIONS: usize = S_DIRTY + DIRTY_CAP;
/// The page-table lane number of the lane's program image (its shared pages).
pub const S_IMAGE: usize = S_REGIONS + 1;
/// The page-table lane number of the lane's own pages: its running process's address space
/// (the lane's number for its first; a fork or an exec gets another, see `engine/spaces.rs`).
pub const S_SPACE: usize = S_IMAGE + 1;
/// Frames the lane may still take from the batch's pool (`Params::pool`) once its reserve is
/// empty: its memory cap less the pages it holds and its reserve (0 without a pool).
pub const S_POOL_LEFT: usize = S_SPACE + 1;
/// Frames the kernel may take for the lane's lazy pages (`PT_LAZY`): S_RES_N of them, at
/// S_RES.., taken from the end. The host refills the list when it services the lane.
pub const S_RES_N: usize = S_POOL_LEFT + 1;
pub const S_RES: usize = S_RES_N + 1;
pub const RES_CAP: usize = 64;
/// Words the host reads from a stopped lane: all but the reserve's frames (the host keeps
/// the list itself: the kernel takes frames from its end and gives them back there, and the
/// count says which are left) and the vector registers. A round of 65,536 lanes brings this
/// many words of each down.
pub const DOWN_WORDS: usize = S_RES;
/// v0..v31, two words each (low, high).
pub const S_V: usize = S_RES + RES_CAP;
/// The dirty pages past the first DIRTY_CAP (DIRTY_MORE of them), brought down only for the
/// lanes that wrote that many: a Python lane started from a snapshot copies and writes
/// hundreds of pages between two stops, and past the list every writable page it owns would
/// come down at each stop.
pub const S_DIRTY_MORE: usize = S_V + 64;
pub const DIRTY_MORE: usize = 480;
/// Dirty pages a record lists at most.
pub const DIRTY_ALL: usize = DIRTY_CAP + DIRTY_MORE;
pub const S_WORDS: usize = S_DIRTY_MORE + DIRTY_MORE;

// ----- syscalls the kernel answers (`S_SYS` bits) ------------------------------------------------

/// read(0, ...) from the lane's input (`Params::sysd`: address, length).
pub const SYS_READ0: u64 = 1;
/// write(1, ...) and write(2, ...) answered (counted against `S_ROOM`): the bytes are kept
/// in the output list at `Params::out`, or dropped where the batch has none.
pub const SYS_DROP1: u64 = 2;
pub const SYS_DROP2: u64 = 4;
/// fstat / newfstatat(fd, "", AT_EMPTY_PATH) of fd 0, 1, 2 (SYS_STAT0 << fd) from the
/// stat in `Params::sysd`.
pub const SYS_STAT0: u64 = 8;
/// exit and exit_group end the lane on the device (stop `STOP_EXIT`): the lane's process is
/// the lane's first and has no other thread, so the exit ends the lane.
pub const SYS_EXIT: u64 = 64;
/// clock_gettime answered from the virtual clocks of deterministic mode: the instructions
/// retired (`NS_PER_INSN` each) and `S_SLEPT` (armada-linux's `time::clock::det_clock`, exported as
/// the CLOCK_* masks below).
pub const SYS_CLOCK: u64 = 128;

/// Deterministic mode's clocks (armada-linux's `time::clock::det_clock`; a test checks these against
/// it: the kernels' build scripts read this file without armada-core), as bit masks of clock
/// ids: those that exist, those that count only CPU time, those at the realtime base, the one
/// at the TAI base (realtime + 37 s); the rest start at the monotonic base.
pub const CLOCKS_VALID: u64 = 0b1011_1111_1111;
pub const CLOCKS_CPU: u64 = 0b0000_0000_1100;
pub const CLOCKS_REALTIME: u64 = 0b0001_0010_0001;
pub const CLOCKS_TAI: u64 = 0b1000_0000_0000;
/// Virtual time (armada-linux's `time::clock::DET_*`, `NS_PER_INSN`; checked by the same test).
pub const DET_REALTIME_BASE_S: u64 = 1_704_067_200;
pub const DET_MONOTONIC_BASE_S: u64 = 100;
pub const NS_PER_INSN: u64 = 1;
// ----- persistent lanes taken back to their start by the kernel (`Params::restart`) ---------

/// Words of a lane's undo list at `Params::undo`: [0] the count of pages it claimed since its
/// start, then (page-table slot, the lazy value the slot had) for each (RES_CAP at most: a
/// lane the host never serviced claims no more than its reserve held).
pub const UNDO_WORDS: usize = 1 + 2 * RES_CAP;
/// `Params::restart` bits, taken by the kernel as the lane's launch starts: the slots of the
/// undo list get their lazy values back;
pub const RESTART_TABLE: u64 = 1;
/// the record is the lane's start (`Params::start`);
pub const RESTART_RECORD: u64 = 2;
/// the lane's input is the pair at `Params::newio` and its coverage map is cleared.
pub const RESTART_INPUT: u64 = 4;
/// Words a lane's end at `Params::ends` (written at `STOP_EXIT`): the status (x0), the
/// instructions retired, and with coverage whether the map has a bucket `Params::virgin`
/// lacks << 32 | its path hash (the coverage-news kernel's word).
pub const END_WORDS: usize = 3;
/// u32 words of a lane's list at `Params::covlist`: [0] the count of map slots the lane's
/// kernel hit since its map was last cleared, then the slots (COVLIST_CAP at most; past
/// that, the whole map is scanned and cleared). A fuzz target's run hits a few hundred edges
/// of the 65,536 slots: its news and its clearing read and write those alone.
pub const COVLIST_WORDS: usize = 512;
pub const COVLIST_CAP: usize = COVLIST_WORDS - 1;

/// `Params::out`: [0] the words of chunks written (a count the kernel's writers claim room
/// with: it may pass the capacity), [1] the capacity in words, then the chunks, each a
/// header (lane | stream << 32 | bytes << 33; stream 0 is stdout, 1 stderr) and the bytes,
/// padded to a word. A write that does not fit goes to the host; where its claim starts
/// inside the list, it writes `OUT_END` there, which ends the list. A header whose lane is
/// all ones (`OUT_SKIP`) and that is not `OUT_END` is a chunk to skip.
pub const OUT_HEAD_WORDS: usize = 2;
/// (all ones: the kernel's MAXU64, which the WGSL header could not carry)
pub const OUT_END: u64 = u64::MAX;
pub const OUT_SKIP: u32 = u32::MAX;

/// Each lane's second-level translation cache (`Params::tlb2`, CUDA's `pt_lookup`): its
/// entries (a power of two, direct-mapped by page number), and the bits of the launch
/// generation in an entry's tag (vpn << (TLB2_GEN_BITS + 1) | generation << 1 | writable).
pub const TLB2_ENTRIES: usize = 64;
pub const TLB2_GEN_BITS: u32 = 27;
pub const TLB2_GEN_MAX: u32 = (1 << TLB2_GEN_BITS) - 1;

/// Words of a lane's block at `Params::sysd`: [0] input address, [1] input length, then at
/// word 8 + 16 * fd the 128-byte stat of fd 0, 1, 2.
pub const SYSD_WORDS: usize = 64;

// ----- stop codes ------------------------------------------------------------------------------

pub const STOP_NONE: u32 = 0;
/// The launch's slice of instructions ran out; nothing for the host to do.
pub const STOP_SLICE: u32 = 1;
/// The lane's instruction limit.
pub const STOP_LIMIT: u32 = 2;
/// SVC (pc after it).
pub const STOP_SVC: u32 = 3;
pub const STOP_HLT: u32 = 4;
pub const STOP_BRK: u32 = 5;
pub const STOP_UNDEFINED: u32 = 6;
/// A read whose page is not in the lane's table (info = address): the host maps the page or
/// raises the fault.
pub const STOP_MISS_R: u32 = 7;
pub const STOP_MISS_W: u32 = 8;
/// An instruction the kernel leaves to the host (FP/SIMD, code outside the decoded regions).
pub const STOP_HOST: u32 = 9;
/// exit or exit_group that ends the lane (`SYS_EXIT`; pc after the SVC, x0 the status): the
/// host may take the end from the record without servicing it (persistent lanes), or
/// service it as any `STOP_SVC`.
pub const STOP_EXIT: u32 = 10;

pub fn stop_name(s: u32) -> &'static str {
    match s {
        STOP_NONE => "none",
        STOP_SLICE => "slice",
        STOP_LIMIT => "limit",
        STOP_SVC => "svc",
        STOP_HLT => "hlt",
        STOP_BRK => "brk",
        STOP_UNDEFINED => "undefined",
        STOP_MISS_R => "miss-read",
        STOP_MISS_W => "miss-write",
        STOP_HOST => "host-step",
        STOP_EXIT => "exit",
        _ => "?",
    }
}

// ----- page table ------------------------------------------------------------------------------
//
// One open-addressing hash table for all lanes: slot = (key, value), two words. key =
// (lane << 36 | vpn) + 1 (0: empty, u64::MAX: deleted); the shared pages of program image k
// use lane PT_IMAGE_LANE - k and are found when the lane has no entry of its own. value = frame number
// (bits 0..31) | PT_R | PT_W.

pub const PT_VPN_BITS: u32 = 36;
pub const PT_IMAGE_LANE: u64 = (1 << 27) - 1;
pub const PT_R: u64 = 1 << 32;
pub const PT_W: u64 = 1 << 33;
/// A lazy page: the frame holds the bytes the page starts from (the zero frame or an image
/// page), shared until the lane's first write, when the kernel copies it into a frame of the
/// lane's reserve, rewrites the entry and logs the claim for the host (`claims`).
///
/// On an image's page (with PT_W: copy-on-write image pages, `Device::image_cow`) it means
/// the same for every lane without an entry of its own there: the kernel copies the page
/// into a frame of the lane's reserve and inserts the lane's entry for it (its slot in the
/// claim, `CLAIM_SLOT_SHIFT`). A lane whose page there is not writable has an entry of its own.
pub const PT_LAZY: u64 = 1 << 34;
/// A claim's first word: lane << 32 | frame, with CLAIM_POOLED where the frame came from the
/// batch's pool rather than the lane's reserve, and CLAIM_UNUSED (with CLAIM_POOLED) for a
/// pool frame the kernel took and gave no page (it goes back to the free frames).
pub const CLAIM_POOLED: u64 = 1 << 62;
pub const CLAIM_UNUSED: u64 = 1 << 61;
/// A claim's second word: vpn | (slot + 1) << CLAIM_SLOT_SHIFT for an entry the kernel
/// inserted (a copy-on-write image page), vpn alone for a lazy entry of the lane's.
pub const CLAIM_SLOT_SHIFT: u32 = PT_VPN_BITS;
pub const PT_FRAME_MASK: u64 = 0xffff_ffff;
pub const PT_EMPTY: u64 = 0;
pub const PT_TOMB: u64 = u64::MAX;

pub fn pt_key(lane: u64, vpn: u64) -> u64 {
    ((lane << PT_VPN_BITS) | vpn) + 1
}

pub fn pt_hash(key: u64, shift: u32) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift
}

// ----- kernel parameters -------------------------------------------------------------------------

/// Declares `Params` and `PARAMS_C`, its fields as the kernel declares them, from one list.
macro_rules! kernel_params {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => $cty:literal,)*) => {
        /// `struct Params` of the kernel, passed by value; the kernel's declaration is
        /// generated from the same list ([`cuda_params`]).
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct Params {
            $($(#[$doc])* pub $name: $ty,)*
        }
        /// The kernel's `struct Params`, field by field: (C type, name).
        pub const PARAMS_C: &[(&str, &str)] = &[$(($cty, stringify!($name))),*];
    };
}

kernel_params! {
    ops: u64 => "const u64*",
    regions: u64 => "const u64*",
    lanes: u64 => "u64*",
    stops: u64 => "u32*",
    active: u64 => "const u32*",
    pt: u64 => "u64*",
    pt_epoch: u64 => "u32*",
    chunks: u64 => "const u64*",
    progress: u64 => "u64*",
    sched: u64 => "u64*",
    /// The claim log: word 0 counts entries, then two words each (lane << 32 | frame with
    /// the `CLAIM_*` bits, vpn with the slot of an entry the kernel inserted,
    /// `CLAIM_SLOT_SHIFT`). Zero when the device runs without lazy pages.
    claims: u64 => "u64*",
    /// The batch's pool of free frames (`engine/pool.rs`): word 0 the next slot to take (it
    /// may pass the end), word 1 the slots filled, then a frame a slot. Zero: no pool.
    pool: u64 => "u64*",
    /// Edge coverage: lane i's map of hit counters is the COV_MAP_BYTES at cov + i *
    /// COV_MAP_BYTES (see `armada_core::coverage`). Zero: no coverage (and the kernel build
    /// without it runs).
    cov: u64 => "u8*",
    /// The lanes' blocks for the syscalls the kernel answers itself (`SYSD_WORDS` a lane;
    /// 0: none, and every syscall stops for the host).
    sysd: u64 => "u64*",
    /// Persistent lanes (0 otherwise): each lane's undo list (`UNDO_WORDS`), its
    /// `RESTART_*` bits (u32 a lane, cleared by the kernel), its record at its start
    /// (`S_WORDS`), its next input's (address, length), its end (`END_WORDS`, at STOP_EXIT),
    /// the virgin map the ends' news are against (with coverage), and each lane's list of the
    /// map slots it hit (`COVLIST_WORDS`).
    undo: u64 => "u64*",
    restart: u64 => "u32*",
    start: u64 => "const u64*",
    newio: u64 => "const u64*",
    ends: u64 => "u64*",
    virgin: u64 => "const u8*",
    covlist: u64 => "u32*",
    /// The output the kernel keeps for the writes it answers (`OUT_HEAD_WORDS`, `OUT_END`;
    /// 0: those bytes are dropped).
    out: u64 => "u64*",
    /// Each lane's second-level translation cache (`TLB2_ENTRIES` pairs of words: tag, frame
    /// address; zeroed, which is no entry). Zero: none.
    tlb2: u64 => "u64*",
    /// The kernel build holding this batch's translated blocks (`Device::build_blocks`; 0:
    /// none, and no micro-op is `OP_TBLOCK`). The host chooses the function by it; the
    /// kernel does not read it.
    blocks: u64 => "u64",
    slice: u64 => "u64",
    max_ns: u64 => "u64",
    min_grace_ns: u64 => "u64",
    min_run_ns: u64 => "u64",
    pt_mask: u64 => "u64",
    nactive: u32 => "u32",
    nregions: u32 => "u32",
    pt_shift: u32 => "u32",
    chunk_shift: u32 => "u32",
    lane_shift: u32 => "u32",
    /// The launch's generation, 1 ..= `TLB2_GEN_MAX`: a `tlb2` entry is valid only in the
    /// launch that filled it (the host changes the page table between launches).
    gen: u32 => "u32",
}

/// `struct CopyDesc`: copy `words` u64 words from `src` to `dst` (device addresses).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CopyDesc {
    pub src: u64,
    pub dst: u64,
    pub words: u64,
}

/// log2(access size) of LDR_B ..= STR_X, two bits each, for the kernel's fast path.
fn ldst_lg() -> u64 {
    let mut t = 0u64;
    for op in ops::LDR_B..=ops::STR_X {
        let lg: u64 = match op {
            ops::LDR_B | ops::LDRSB_W | ops::LDRSB_X | ops::STR_B => 0,
            ops::LDR_H | ops::LDRSH_W | ops::LDRSH_X | ops::STR_H => 1,
            ops::LDR_W | ops::LDRSW | ops::STR_W => 2,
            _ => 3,
        };
        t |= lg << (2 * (op - ops::LDR_B));
    }
    t
}

/// Micro-ops both GPU kernels run beyond the decoder's: a flag-setting compare followed by
/// B.cond, run as one dispatch (`armada_isa::fused`, the numbers the CPU engine uses too). The host rewrites the compare's slot in the
/// shared code array when the device asks for it (`Device::fused_pairs`); the B.cond keeps its
/// own slot, so a branch straight to it works.
pub mod fused {
    pub use armada_isa::fused::{
        with_branch, ADDS_IMM_W_BCOND, ADDS_IMM_X_BCOND, SUBS_SR_W_BCOND, SUBS_SR_X_BCOND,
    };
    use armada_isa::ops;

    /// Rewrites, in encoded micro-ops (two words each), every compare followed by B.cond.
    pub fn fuse(words: &mut [u64]) {
        let n = words.len() / 2;
        for k in 0..n.saturating_sub(1) {
            if (words[2 * k + 2] & 0xffff) as u16 == ops::B_COND {
                if let Some(f) = with_branch((words[2 * k] & 0xffff) as u16) {
                    words[2 * k] = (words[2 * k] & !0xffff) | f as u64;
                }
            }
        }
    }

    pub const NAMES: [(u16, &str); 4] = [
        (ADDS_IMM_W_BCOND, "ADDS_IMM_W_BCOND"),
        (ADDS_IMM_X_BCOND, "ADDS_IMM_X_BCOND"),
        (SUBS_SR_W_BCOND, "SUBS_SR_W_BCOND"),
        (SUBS_SR_X_BCOND, "SUBS_SR_X_BCOND"),
    ];
}

/// The CUDA kernel's translated blocks (`armada-cuda/src/blocks.rs`): a micro-op slot where a
/// translated block starts is rewritten to this op, the block's number in the fields word's
/// bits 16-47; the block holds the slot's own micro-op for when it cannot run whole. Only a
/// kernel build with that batch's blocks (`Params::blocks`) runs such code.
pub const TBLOCK: u16 = 0x3f8;
const _: () = assert!(fused::SUBS_SR_X_BCOND < TBLOCK && TBLOCK < ops::FP_BASE);

/// Bytes of one lane's coverage map (`Params::cov`): `armada_core::coverage::MAP_SIZE` (a
/// test checks; the kernels' build scripts read this file without armada-core).
pub const COV_MAP_BYTES: usize = 1 << 16;

/// Min-PC scheduling's window, in micro-ops: a lane waits while another lane of its warp
/// (subgroup) is less than this many micro-ops behind it, so lanes out of step in the same
/// code fall into step and lanes far apart run side by side (docs/cuda.md, "Min-PC within a
/// window"; measured on Python lanes, docs/performance.md).
pub const MINPC_WINDOW: u64 = 64;

/// Instructions between a running lane's looks at the clock (see `Params::max_ns`).
pub const CHECK_EVERY: u64 = 512;

/// Threads per block of the interpreter kernel.
pub const BLOCK_THREADS: u32 = 128;

/// Every micro-op (number, name): the integer group's table, and the FP/SIMD group found
/// through `ops::name` (its table is private to the ISA crate).
pub fn op_names() -> Vec<(u16, &'static str)> {
    let mut v: Vec<(u16, &'static str)> = ops::int::NAMES.to_vec();
    for n in ops::FP_BASE..ops::FP_BASE + 0x400 {
        let name = ops::name(n);
        if name != "?" {
            v.push((n, name));
        }
    }
    v
}

/// Every named number the kernels share with Rust (besides the micro-op numbers).
fn constants() -> Vec<(&'static str, u64)> {
    vec![
        ("S_X", S_X as u64),
        ("S_PC", S_PC as u64),
        ("S_NZCV", S_NZCV as u64),
        ("S_FPCR", S_FPCR as u64),
        ("S_FPSR", S_FPSR as u64),
        ("S_TPIDR", S_TPIDR as u64),
        ("S_EXCL", S_EXCL as u64),
        ("S_RETIRED", S_RETIRED as u64),
        ("S_LIMIT", S_LIMIT as u64),
        ("S_STOP", S_STOP as u64),
        ("S_INFO", S_INFO as u64),
        ("S_EPOCH", S_EPOCH as u64),
        ("S_DIRTY_N", S_DIRTY_N as u64),
        ("S_VDIRTY", S_VDIRTY as u64),
        ("S_SYS", S_SYS as u64),
        ("S_IN_OFF", S_IN_OFF as u64),
        ("S_SYS_N", S_SYS_N as u64),
        ("S_ROOM", S_ROOM as u64),
        ("SYS_READ0", SYS_READ0),
        ("SYS_DROP1", SYS_DROP1),
        ("SYS_DROP2", SYS_DROP2),
        ("SYS_STAT0", SYS_STAT0),
        ("SYS_EXIT", SYS_EXIT),
        ("SYSD_WORDS", SYSD_WORDS as u64),
        ("OUT_HEAD_WORDS", OUT_HEAD_WORDS as u64),
        ("TLB2_ENTRIES", TLB2_ENTRIES as u64),
        ("TLB2_GEN_BITS", TLB2_GEN_BITS as u64),
        ("RES_CAP", RES_CAP as u64),
        ("UNDO_WORDS", UNDO_WORDS as u64),
        ("RESTART_TABLE", RESTART_TABLE),
        ("RESTART_RECORD", RESTART_RECORD),
        ("RESTART_INPUT", RESTART_INPUT),
        ("END_WORDS", END_WORDS as u64),
        ("COVLIST_WORDS", COVLIST_WORDS as u64),
        ("COVLIST_CAP", COVLIST_CAP as u64),
        ("S_V", S_V as u64),
        ("S_DIRTY", S_DIRTY as u64),
        ("S_REGIONS", S_REGIONS as u64),
        ("S_IMAGE", S_IMAGE as u64),
        ("S_SPACE", S_SPACE as u64),
        ("S_POOL_LEFT", S_POOL_LEFT as u64),
        ("S_RES_N", S_RES_N as u64),
        ("S_RES", S_RES as u64),
        ("S_WORDS", S_WORDS as u64),
        ("DIRTY_CAP", DIRTY_CAP as u64),
        ("S_DIRTY_MORE", S_DIRTY_MORE as u64),
        ("DIRTY_MORE", DIRTY_MORE as u64),
        ("STOP_NONE", STOP_NONE as u64),
        ("STOP_SLICE", STOP_SLICE as u64),
        ("STOP_LIMIT", STOP_LIMIT as u64),
        ("STOP_SVC", STOP_SVC as u64),
        ("STOP_HLT", STOP_HLT as u64),
        ("STOP_BRK", STOP_BRK as u64),
        ("STOP_UNDEFINED", STOP_UNDEFINED as u64),
        ("STOP_MISS_R", STOP_MISS_R as u64),
        ("STOP_MISS_W", STOP_MISS_W as u64),
        ("STOP_HOST", STOP_HOST as u64),
        ("STOP_EXIT", STOP_EXIT as u64),
        ("PT_VPN_BITS", PT_VPN_BITS as u64),
        ("PT_IMAGE_LANE", PT_IMAGE_LANE),
        ("PT_R", PT_R),
        ("PT_W", PT_W),
        ("PT_LAZY", PT_LAZY),
        ("CLAIM_POOLED", CLAIM_POOLED),
        ("CLAIM_UNUSED", CLAIM_UNUSED),
        ("PT_FRAME_MASK", PT_FRAME_MASK),
        ("BLOCK_THREADS", BLOCK_THREADS as u64),
        ("CHECK_EVERY", CHECK_EVERY),
        ("MINPC_WINDOW", MINPC_WINDOW),
        ("COV_MAP_BYTES", COV_MAP_BYTES as u64),
        ("LDST_LG", ldst_lg()),
        ("AM_OFFSET", addr_mode::OFFSET as u64),
        ("AM_PRE", addr_mode::PRE as u64),
        ("AM_POST", addr_mode::POST as u64),
        ("AM_REG", addr_mode::REG as u64),
        ("AOP_ADD", ops::atomic_op::ADD as u64),
        ("AOP_CLR", ops::atomic_op::CLR as u64),
        ("AOP_EOR", ops::atomic_op::EOR as u64),
        ("AOP_SET", ops::atomic_op::SET as u64),
        ("AOP_SMAX", ops::atomic_op::SMAX as u64),
        ("AOP_SMIN", ops::atomic_op::SMIN as u64),
        ("AOP_UMAX", ops::atomic_op::UMAX as u64),
        ("AOP_UMIN", ops::atomic_op::UMIN as u64),
        ("AOP_SWP", ops::atomic_op::SWP as u64),
        // (the registers MRS reads from the lane; the constant ones are SYSREG_CONSTANTS)
        ("SYSREG_NZCV", sysreg::NZCV),
        ("SYSREG_FPCR", sysreg::FPCR),
        ("SYSREG_FPSR", sysreg::FPSR),
        ("SYSREG_TPIDR_EL0", sysreg::TPIDR_EL0),
        ("SYSREG_CNTVCT_EL0", sysreg::CNTVCT_EL0),
        ("SYSREG_CNTPCT_EL0", sysreg::CNTPCT_EL0),
        ("ZVA_BYTES", ZVA_BYTES),
        ("CONST_FPCR_MASK", FPCR_MASK),
        ("CONST_FPSR_MASK", FPSR_MASK),
        ("CONST_FPSR_QC", FPSR_QC),
        ("BY_ELEM", ops::BY_ELEM),
        ("LDST_WB", ops::LDST_WB as u64),
        ("FRED_ADD", ops::fred::ADD as u64),
        ("FRED_MAX", ops::fred::MAX as u64),
        ("FRED_MIN", ops::fred::MIN as u64),
        ("FRED_MAXNM", ops::fred::MAXNM as u64),
        ("FRED_MINNM", ops::fred::MINNM as u64),
        ("CMP0_EQ", ops::cmp0::EQ as u64),
        ("CMP0_GE", ops::cmp0::GE as u64),
        ("CMP0_GT", ops::cmp0::GT as u64),
        ("CMP0_LE", ops::cmp0::LE as u64),
        ("CMP0_LT", ops::cmp0::LT as u64),
        ("RMODE_FPCR", ops::rmode::FPCR as u64),
        ("RMODE_FPCR_EXACT", ops::rmode::FPCR_EXACT as u64),
        ("FCMP_ZERO", ops::fcmp::ZERO as u64),
        ("FCMP_SIGNAL", ops::fcmp::SIGNAL as u64),
        ("FCMP_CCMP_SIGNAL", ops::fcmp::CCMP_SIGNAL as u64),
        // FPCR.RMode, FZ, DN, AHP: any of them set sends FP arithmetic to the host
        ("FPCR_SPECIAL", 0x07c0_0000),
        ("S_SLEPT", S_SLEPT as u64),
        ("SYS_CLOCK", SYS_CLOCK),
        ("NS_PER_INSN", NS_PER_INSN),
        ("DET_REALTIME_BASE_S", DET_REALTIME_BASE_S),
        ("DET_MONOTONIC_BASE_S", DET_MONOTONIC_BASE_S),
        ("CLOCKS_VALID", CLOCKS_VALID),
        ("CLOCKS_CPU", CLOCKS_CPU),
        ("CLOCKS_REALTIME", CLOCKS_REALTIME),
        ("CLOCKS_TAI", CLOCKS_TAI),
    ]
}

/// The C header prepended to the CUDA kernel source: every number the kernel shares with Rust.
/// The kernel's `struct Params`, from [`PARAMS_C`] (`// @params` in armada.cu).
pub fn cuda_params() -> String {
    let mut s = String::from("struct Params { // generated from layout::Params\n");
    for (ty, name) in PARAMS_C {
        let _ = writeln!(s, "    {ty} {name};");
    }
    s.push_str("};\n");
    s
}

pub fn header() -> String {
    let mut h = String::new();
    h.push_str("// generated by armada-gpu (layout.rs): do not edit\n");
    for (n, name) in op_names().into_iter().chain(fused::NAMES) {
        let _ = writeln!(h, "#define OP_{name} {n}");
    }
    let _ = writeln!(h, "#define OP_TBLOCK {TBLOCK}");
    for (name, v) in constants() {
        let _ = writeln!(h, "#define {name} {v}ull");
    }
    let table: Vec<String> = cond::TABLE.iter().map(|t| t.to_string()).collect();
    let _ = writeln!(h, "#define COND_TABLE_INIT {}", table.join(", "));
    // MRS's constant registers, as cases of its switch
    let cases: Vec<String> = sysreg::value::CONSTANT
        .iter()
        .map(|(id, v)| format!("case {id}: return {v:#x}ull;"))
        .collect();
    let _ = writeln!(h, "#define SYSREG_CONSTANTS {}", cases.join(" "));
    h
}

/// The WGSL header prepended to the wgpu shader: the same names as [`header`]. WGSL does not
/// convert between integer types, so each constant gets the type it is used as: micro-op
/// numbers, record offsets, stop codes and other small selectors are `u32`; page-table bits,
/// system-register keys and register values are `u64` (suffix `lu`).
pub fn wgsl_header() -> String {
    let mut h = String::new();
    h.push_str("// generated by armada-gpu (layout.rs): do not edit\n");
    for (n, name) in op_names().into_iter().chain(fused::NAMES) {
        let _ = writeln!(h, "const OP_{name}: u32 = {n}u;");
    }
    const WIDE: &[&str] = &[
        "PT_IMAGE_LANE",
        "PT_R",
        "PT_W",
        "PT_LAZY",
        "CLAIM_POOLED",
        "CLAIM_UNUSED",
        "PT_FRAME_MASK",
        "LDST_LG",
        "BY_ELEM",
    ];
    for (name, v) in constants() {
        if WIDE.contains(&name) || name.starts_with("SYSREG_") || name.starts_with("CONST_") {
            let _ = writeln!(h, "const {name}: u64 = {v}lu;");
        } else {
            let _ = writeln!(h, "const {name}: u32 = {v}u;");
        }
    }
    let table: Vec<String> = cond::TABLE.iter().map(|t| format!("{t}u")).collect();
    let _ = writeln!(
        h,
        "const COND_TABLE = array<u32, 16>({});",
        table.join(", ")
    );
    // MRS's constant registers (WGSL has no macros: a function for mrs's default case)
    h.push_str("fn sysreg_constant(id: u32) -> u64 {\n    switch id {\n");
    for (id, v) in sysreg::value::CONSTANT {
        let _ = writeln!(h, "        case {id}u: {{ return {v:#x}lu; }}");
    }
    h.push_str("        default: { return 0lu; }\n    }\n}\n");
    h
}

/// A CUDA kernel source with the generated header prepended and each `// @include NAME`
/// line replaced by the part of that name, `parts` being (name, text) pairs (armada-cuda's
/// kernel and its parts; its build script uses this too).
pub fn cuda_source(kernel: &str, parts: &[(&str, &str)]) -> String {
    let mut text = kernel.replace("// @params\n", &cuda_params());
    for (name, part) in parts {
        text = text.replace(&format!("// @include {name}"), part);
    }
    let mut s = header();
    s.push_str(&text);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_fits() {
        assert_eq!(S_DIRTY_MORE + DIRTY_MORE, S_WORDS);
        const { assert!(CORE_WORDS <= S_DIRTY && S_IMAGE < S_V && S_V + 64 <= S_DIRTY_MORE) };
        const { assert!(S_WORDS * 8 <= 8192) };
        assert_eq!(std::mem::size_of::<Params>(), 29 * 8 + 6 * 4);
        // a second-level tag holds any page number the table does, the generation and a bit
        const { assert!(PT_VPN_BITS + TLB2_GEN_BITS < 64 && TLB2_ENTRIES.is_power_of_two()) };
    }

    #[test]
    fn clocks_are_the_core_ones() {
        use armada_core::linux::time::clock as t;
        assert_eq!(DET_REALTIME_BASE_S, t::DET_REALTIME_BASE_S as u64);
        assert_eq!(DET_MONOTONIC_BASE_S, t::DET_MONOTONIC_BASE_S as u64);
        assert_eq!(NS_PER_INSN, t::NS_PER_INSN);
        for id in 0..64 {
            let bit = |m: u64| m >> id & 1 != 0;
            let c = t::det_clock(id);
            assert_eq!(bit(CLOCKS_VALID), c.is_some(), "clock {id}");
            let Some(c) = c else { continue };
            assert_eq!(bit(CLOCKS_CPU), c.cpu_only, "clock {id}");
            let base = if bit(CLOCKS_CPU) {
                0
            } else if bit(CLOCKS_REALTIME) {
                DET_REALTIME_BASE_S
            } else if bit(CLOCKS_TAI) {
                DET_REALTIME_BASE_S + 37
            } else {
                DET_MONOTONIC_BASE_S
            };
            assert_eq!(base, c.base_s as u64, "clock {id}");
        }
    }

    #[test]
    fn coverage_map_size_is_the_core_one() {
        assert_eq!(COV_MAP_BYTES, armada_core::coverage::MAP_SIZE);
    }

    #[test]
    fn fast_path_ops_are_contiguous() {
        // the kernel's single-register fast path relies on this order
        assert_eq!(ops::STR_B, ops::LDRSW + 1);
        assert_eq!(ops::STR_X - ops::LDR_B, 12);
    }

    #[test]
    fn dump_wgsl_header() {
        if let Ok(p) = std::env::var("ARMADA_DUMP_WGSL_HEADER") {
            std::fs::write(p, wgsl_header()).unwrap();
        }
    }

    #[test]
    fn header_names_every_op() {
        let h = header();
        assert!(h.contains(&format!("#define OP_SVC {}\n", ops::SVC)));
        assert!(h.contains(&format!("#define OP_LDR_X {}\n", ops::LDR_X)));
        assert!(h.contains("#define OP_V_MOVI"));
    }
}
