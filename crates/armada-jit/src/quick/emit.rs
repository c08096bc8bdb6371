//! x86-64 code for quick blocks, written op by op with dynasm-rs: no IR, no register
//! allocation, a block in microseconds.
//!
//! Registers while blocks run:
//! - `rbx`: the lane's `CpuState` plus [`BIAS`] (guest registers stay in the state: every
//!   op loads its sources from it and stores its result to it, so the state is exact
//!   between any two ops and a helper or a stop needs nothing written back; with the bias,
//!   x0-x31 are each one byte of displacement away);
//! - `r12`: the `QCtx`;
//! - `r13`: the count of retired instructions when the block was entered, carried from
//!   block to block (a block adds its length where it leaves, and stores `r13 + i` in the
//!   state where it leaves to the dispatcher or calls out at its op `i`);
//! - `r14`: an access's address, kept across its slow path for the writeback;
//! - `r15`: a store's value, or a pair load's first value;
//! - `rbp`: the guarded window the blocks were made for (`QCtx::window`), where they
//!   were made for one: their general loads and stores read and write guest address `a`
//!   at `rbp + a`, the host's MMU as the check, as units' guarded accesses (see
//!   `crate::guard`: a host fault there shows the page, or sends the access to its slow
//!   path, [`Made::sites`]);
//! - the rest are scratch.
//!
//! NZCV is kept packed in the state (bits 31..28), made after each flag-setting op from
//! the host's own flags: N, Z and V are SF, ZF and OF, and C is CF for additions and its
//! complement for subtractions (Arm's carry is "no borrow"). It is made with instructions
//! that leave the host's flags as they are, so a B.cond right after its compare is one
//! host `jcc`.
//!
//! Slow paths (a TLB miss, the budget, a store into decoded code) are placed after the
//! block's straight line, so the code that runs is dense; every call and jump to the
//! lane's stubs is a 32-bit displacement (all of a lane's code is in one mapping).

use super::slow::{self, exit, Q_HI, Q_LIMIT, Q_ST, Q_STATUS, Q_TABLE, Q_WINDOW};
use armada_core::cpu::fused;
use armada_core::state::CpuState;
use armada_isa::ops::*;
use armada_isa::uop::{cond, reg, sysreg};
use armada_isa::MicroOp;
use dynasmrt::x64::X64Relocation;
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi, VecAssembler};
use std::mem::offset_of;

mod fpsimd;
mod ldst;

/// Entries of a lane's direct-mapped PC -> block table.
pub const TABLE: usize = 4096;
/// Ops a block takes at most.
pub const MAX_OPS: usize = 64;

/// `rbx` is the state's address plus this.
const BIAS: i32 = 128;
const PC: i32 = offset_of!(CpuState, pc) as i32 - BIAS;
const NZCV: i32 = offset_of!(CpuState, nzcv) as i32 - BIAS;
const RETIRED: i32 = offset_of!(CpuState, retired) as i32 - BIAS;
const X0: i32 = offset_of!(CpuState, x) as i32 - BIAS;
const TPIDR: i32 = offset_of!(CpuState, tpidr) as i32 - BIAS;
const V0: i32 = offset_of!(CpuState, v) as i32 - BIAS;

fn xoff(r: u8) -> i32 {
    X0 + 8 * (r as i32 & 63)
}

/// Where vector register `r` is, from `rbx`.
fn voff(r: u8) -> i32 {
    V0 + 16 * (r as i32 & 31)
}

type Asm = VecAssembler<X64Relocation>;

/// Where the lane's shared pieces of code are (see [`stubs`]).
#[derive(Clone, Copy)]
pub struct Stubs {
    /// `fn(ctx, block) -> exit`: saves the host's registers, loads `rbx`, `r12` and `r13`
    /// and jumps into the block.
    pub enter: usize,
    /// Links an exit to a PC known when the block was made (see `Block::chain_const`).
    link: usize,
    /// Enters the unit at the stored PC (`slow::unit`).
    unit: usize,
    /// Enters the unit at the stored PC where there is one, else leaves to the dispatcher
    /// (a PC without a block).
    probe: usize,
    /// Each way back to the dispatcher, by exit code (`exit::NEXT` to `exit::HOT`):
    /// returns the code.
    exits: [usize; 6],
    /// The helpers, each behind a jump blocks call with a 32-bit displacement.
    read: usize,
    read16: usize,
    write: usize,
    write16: usize,
    one: usize,
    fp: usize,
}

/// The stubs, assembled for address `base`: their bytes and where each is.
pub fn stubs(base: usize) -> (Vec<u8>, Stubs) {
    let mut a = Asm::new(base);
    let epi = a.new_dynamic_label();
    let enter = a.offset().0;
    // 16-byte aligned stack for the helpers: the return address, rbp and five pushes
    // leave it 8 off, so 8 more
    dynasm!(a
        ; .arch x64
        ; push rbp
        ; mov rbp, rsp
        ; push rbx
        ; push r12
        ; push r13
        ; push r14
        ; push r15
        ; sub rsp, 8
        ; mov r12, rdi
        ; mov rbp, QWORD [rdi + Q_WINDOW]
        ; mov rbx, QWORD [rdi + Q_ST]
        ; add rbx, BIAS
        ; mov r13, QWORD [rbx + RETIRED]
        ; jmp rsi
        ; =>epi
        ; add rsp, 8
        ; pop r15
        ; pop r14
        ; pop r13
        ; pop r12
        ; pop rbx
        ; pop rbp
        ; ret
    );
    let mut exits = [0; 6];
    for (code, at) in exits.iter_mut().enumerate() {
        *at = base + a.offset().0;
        dynasm!(a ; .arch x64 ; mov eax, code as i32 ; jmp =>epi);
    }
    // Called from an exit whose target is known (see `Block::chain_const`), the target
    // PC in the 8 bytes after the call. Where the table has the target's block, the exit's
    // jump is patched to go there from now on.
    let link = base + a.offset().0;
    let mask = (TABLE - 1) as i32;
    let probe = a.new_dynamic_label();
    dynasm!(a
        ; .arch x64
        ; pop rdx
        ; mov rax, QWORD [rdx]
        ; mov QWORD [rbx + PC], rax
        ; mov rcx, rax
        ; shr rcx, 2
        ; and ecx, mask
        ; shl rcx, 4
        ; add rcx, QWORD [r12 + Q_TABLE]
        ; cmp rax, QWORD [rcx]
        ; jne >miss
        ; mov rcx, QWORD [rcx + 8]
        ; mov rax, rcx
        ; sub rax, rdx
        ; add rax, 5
        ; mov DWORD [rdx - 9], eax
        ; jmp rcx
        ; miss:
        ; mov QWORD [rbx + RETIRED], r13
        ; jmp =>probe
    );
    // Where a block whose count ran out, or that was sent to its unit, goes with its PC
    // and count stored: `slow::unit` enters the unit (under the translation tier), then
    // the blocks go on at the PC it left to, or leave with the code it returned. A PC
    // without a block (the link's miss, or where a unit left to) probes for a unit there
    // the same way, and leaves to the dispatcher where there is none: code that has a unit
    // gets no block, and every way into it from blocks went round the dispatcher.
    let unit = base + a.offset().0;
    let unit_fn = slow::unit as *const () as i64;
    let call = a.new_dynamic_label();
    dynasm!(a ; .arch x64 ; xor esi, esi ; jmp =>call);
    let probe_at = base + a.offset().0;
    dynasm!(a
        ; .arch x64
        ; =>probe
        ; mov esi, 1
        ; =>call
        ; mov rdi, r12
        ; mov rax, QWORD unit_fn
        ; call rax
        ; cmp rax, slow::GO_ON as i32
        ; jne =>epi
        ; mov r13, QWORD [rbx + RETIRED]
        ; mov rax, QWORD [rbx + PC]
        ; mov rcx, rax
        ; shr rcx, 2
        ; and ecx, mask
        ; shl rcx, 4
        ; add rcx, QWORD [r12 + Q_TABLE]
        ; cmp rax, QWORD [rcx]
        ; jne =>probe
        ; jmp QWORD [rcx + 8]
    );
    let mut tramp = |f: usize| {
        let at = base + a.offset().0;
        dynasm!(a ; .arch x64 ; mov rax, QWORD f as i64 ; jmp rax);
        at
    };
    let read = tramp(slow::read as *const () as usize);
    let read16 = tramp(slow::read16 as *const () as usize);
    let write = tramp(slow::write as *const () as usize);
    let write16 = tramp(slow::write16 as *const () as usize);
    let one = tramp(slow::one as *const () as usize);
    let fp = tramp(slow::fp as *const () as usize);
    let code = a.finalize().expect("the quick tier's stubs assemble");
    (
        code,
        Stubs {
            enter: base + enter,
            link,
            unit,
            probe: probe_at,
            exits,
            read,
            read16,
            write,
            write16,
            one,
            fp,
        },
    )
}

/// A slow path, placed after the block's straight line.
enum Slow {
    /// A read missed the TLB (or crosses a page): `size` bytes (16: both halves).
    Read {
        at: DynamicLabel,
        back: DynamicLabel,
        i: usize,
        size: i32,
    },
    /// A write missed: `size` bytes of r15 (16: r15, then guest register `hi`).
    Write {
        at: DynamicLabel,
        back: DynamicLabel,
        i: usize,
        size: i32,
        hi: u8,
    },
    /// Op `i`'s fast path missed: the interpreter runs it, then on at `back`.
    One {
        at: DynamicLabel,
        back: DynamicLabel,
        i: usize,
    },
    /// An FP op's fast path missed: the interpreter's FP code runs it (`slow::fp`), then
    /// on at `back`.
    Fp {
        at: DynamicLabel,
        back: DynamicLabel,
        word: u64,
        imm: u64,
    },
    /// The block does not fit in the budget: the interpreter runs what is left.
    Budget { at: DynamicLabel },
    /// The block's run count ran out: the dispatcher asks for its unit.
    Hot { at: DynamicLabel },
    /// Op `i` wrote decoded code: leave after it.
    CodeChanged { at: DynamicLabel, i: usize },
}

/// How the last op left the host's flags, where they still are its NZCV.
#[derive(Clone, Copy, PartialEq)]
enum Live {
    Sub,
    Add,
    Logic,
}

/// One block being assembled.
struct Block {
    a: Asm,
    base: usize,
    pc: u64,
    stubs: Stubs,
    slow: Vec<Slow>,
    live: Option<Live>,
    /// Where the way out for a run count that ran out was placed.
    hot_at: Option<usize>,
    /// Whether the general loads and stores go through the guarded window at `rbp`.
    window: bool,
    /// Those accesses' host instructions (start and end offsets) and their slow paths.
    sites: Vec<(usize, usize, DynamicLabel)>,
}

/// Whether the block ends after `op` (a branch or SVC) or before it (an op only the
/// interpreter's outer loop runs), or neither.
enum Role {
    Body,
    Last,
    Before,
}

fn role(op: u16) -> Role {
    match op {
        B | BL | BR | BLR | B_COND | CBZ_W | CBZ_X | CBNZ_W | CBNZ_X | TBZ | TBNZ | SVC => {
            Role::Last
        }
        NOT_DECODED | END_OF_REGION | UNDEFINED | HLT | BRK => Role::Before,
        _ => Role::Body,
    }
}

/// The operation of a register-operand op (`alu_form`).
#[derive(Clone, Copy, PartialEq)]
enum Alu {
    Add,
    Sub,
    And,
    Or,
    Xor,
}

/// How a register-operand op runs: the operation, the second operand (shifted as the
/// shifted-register forms shift it, or extended), 64 bits or 32, the operand inverted
/// (BIC, ORN, EON), and whether it sets the flags.
#[derive(Clone, Copy)]
struct AluForm {
    alu: Alu,
    extended: bool,
    wide: bool,
    invert: bool,
    flags: bool,
}

/// The register-operand ops as one table (the X and W forms differ only in `wide`).
fn alu_form(op: u16) -> Option<AluForm> {
    let (alu, extended, invert, flags, wide) = match op {
        ADD_SR_X | ADD_SR_W => (Alu::Add, false, false, false, op == ADD_SR_X),
        SUB_SR_X | SUB_SR_W => (Alu::Sub, false, false, false, op == SUB_SR_X),
        ADDS_SR_X | ADDS_SR_W => (Alu::Add, false, false, true, op == ADDS_SR_X),
        SUBS_SR_X | SUBS_SR_W => (Alu::Sub, false, false, true, op == SUBS_SR_X),
        fused::SUBS_SR_X_BCOND | fused::SUBS_SR_W_BCOND => {
            (Alu::Sub, false, false, true, op == fused::SUBS_SR_X_BCOND)
        }
        AND_SR_X | AND_SR_W => (Alu::And, false, false, false, op == AND_SR_X),
        BIC_SR_X | BIC_SR_W => (Alu::And, false, true, false, op == BIC_SR_X),
        ORR_SR_X | ORR_SR_W => (Alu::Or, false, false, false, op == ORR_SR_X),
        ORN_SR_X | ORN_SR_W => (Alu::Or, false, true, false, op == ORN_SR_X),
        EOR_SR_X | EOR_SR_W => (Alu::Xor, false, false, false, op == EOR_SR_X),
        EON_SR_X | EON_SR_W => (Alu::Xor, false, true, false, op == EON_SR_X),
        ANDS_SR_X | ANDS_SR_W => (Alu::And, false, false, true, op == ANDS_SR_X),
        BICS_SR_X | BICS_SR_W => (Alu::And, false, true, true, op == BICS_SR_X),
        ADD_EXT_X | ADD_EXT_W => (Alu::Add, true, false, false, op == ADD_EXT_X),
        SUB_EXT_X | SUB_EXT_W => (Alu::Sub, true, false, false, op == SUB_EXT_X),
        ADDS_EXT_X | ADDS_EXT_W => (Alu::Add, true, false, true, op == ADDS_EXT_X),
        SUBS_EXT_X | SUBS_EXT_W => (Alu::Sub, true, false, true, op == SUBS_EXT_X),
        _ => return None,
    };
    Some(AluForm {
        alu,
        extended,
        wide,
        invert,
        flags,
    })
}

/// Whether op `op` leaves the host's flags as its NZCV (see [`Block::flags`]).
fn sets_live(op: u16) -> Option<Live> {
    match alu_form(op) {
        Some(f) if f.flags => Some(match f.alu {
            Alu::Add => Live::Add,
            Alu::Sub => Live::Sub,
            _ => Live::Logic,
        }),
        _ => matches!(op, ANDS_IMM_W | ANDS_IMM_X).then_some(Live::Logic),
    }
}

/// The host's condition code (the low nibble of `jcc`'s opcode) that is Arm's `c` after
/// an op of kind `live`, where there is one.
fn host_cond(live: Live, c: u8) -> Option<u8> {
    const O: u8 = 0;
    const NO: u8 = 1;
    const B: u8 = 2;
    const AE: u8 = 3;
    const E: u8 = 4;
    const NE: u8 = 5;
    const BE: u8 = 6;
    const A: u8 = 7;
    const S: u8 = 8;
    const NS: u8 = 9;
    const L: u8 = 0xc;
    const GE: u8 = 0xd;
    const LE: u8 = 0xe;
    const G: u8 = 0xf;
    let same = match c {
        0 => Some(E),
        1 => Some(NE),
        4 => Some(S),
        5 => Some(NS),
        6 => Some(O),
        7 => Some(NO),
        10 => Some(GE),
        11 => Some(L),
        12 => Some(G),
        13 => Some(LE),
        _ => None,
    };
    if same.is_some() {
        return same;
    }
    // C: the complement of CF after a subtraction, CF after an addition, clear after a
    // logic op (whose HI and LS have no host condition)
    match (live, c) {
        (Live::Sub, 2) => Some(AE),
        (Live::Sub, 3) => Some(B),
        (Live::Sub, 8) => Some(A),
        (Live::Sub, 9) => Some(BE),
        (Live::Add | Live::Logic, 2) => Some(B),
        (Live::Add | Live::Logic, 3) => Some(AE),
        _ => None,
    }
}

/// A block assembled: its bytes, the guest instructions it holds, and where its way out
/// for a run count that ran out is (an offset in `code`, where it has a count).
pub struct Made {
    pub code: Vec<u8>,
    pub insns: usize,
    pub hot: Option<usize>,
    /// Its accesses through the guarded window: each host instruction's range (start, end)
    /// and its slow path's start, as offsets in `code`, by start. A host fault at one that
    /// does not show the page goes on at the slow path (`crate::guard`), with the
    /// registers as the access left them: the slow path makes it as the interpreter does.
    pub sites: Vec<(u32, u32, u32)>,
}

/// Bytes of the instruction a counted block starts with (see [`count_insn`]): a patched
/// `jmp` (5 bytes) fits over it.
pub const COUNT_LEN: usize = 7;

/// `sub dword [rip + counter], 1` placed at `at`: the first instruction of a block with a
/// run count, written again where a block's redirection to its unit is taken back.
pub fn count_insn(at: usize, counter: usize) -> [u8; COUNT_LEN] {
    let d = (counter as i64 - (at + COUNT_LEN) as i64) as i32;
    let d = d.to_le_bytes();
    [0x83, 0x2d, d[0], d[1], d[2], d[3], 1]
}

/// `jmp target` placed at `at`.
pub fn jmp_insn(at: usize, target: usize) -> [u8; 5] {
    let d = ((target as i64 - (at + 5) as i64) as i32).to_le_bytes();
    [0xe9, d[0], d[1], d[2], d[3]]
}

/// Assembles the block at `pc` from `ops` (the micro-ops from `pc` to the end of its
/// page) for address `base`. None where its first op is one the interpreter's outer loop
/// must run. With a `counter` (the address of a u32 within 2 GiB of `base`), the block
/// counts its runs down there and leaves with `exit::HOT` when the count reaches zero
/// (the first tier under the translation tier: see `crate::Jit`).
pub fn block(
    base: usize,
    pc: u64,
    ops: &[MicroOp],
    stubs: Stubs,
    counter: Option<usize>,
    window: bool,
) -> Option<Made> {
    let mut n = 0;
    let mut last = false;
    for u in ops.iter().take(MAX_OPS) {
        match role(u.op) {
            Role::Before => break,
            Role::Last => {
                n += 1;
                last = true;
                break;
            }
            Role::Body => n += 1,
        }
    }
    if n == 0 {
        return None;
    }
    let mut b = Block {
        a: Asm::new(base),
        base,
        pc,
        stubs,
        slow: Vec::new(),
        live: None,
        hot_at: None,
        window,
        sites: Vec::new(),
    };
    if let Some(c) = counter {
        b.count(c);
    }
    b.prologue(n);
    for (i, u) in ops[..n].iter().enumerate() {
        let live = b.live.take();
        b.op(i, u, n, live);
        b.live = sets_live(u.op).or(match u.op {
            ADDS_IMM_W | ADDS_IMM_X | fused::ADDS_IMM_W_BCOND | fused::ADDS_IMM_X_BCOND => {
                Some(if u.e & 1 == 1 { Live::Sub } else { Live::Add })
            }
            ADCS_W | ADCS_X => Some(Live::Add),
            SBCS_W | SBCS_X => Some(Live::Sub),
            _ => None,
        });
    }
    if !last {
        // ran off its end (an op for the outer loop, the page's end, or the length cap)
        b.chain_const(pc + 4 * n as u64, n);
    }
    b.slow_paths();
    let labels = b.a.labels();
    let sites = b
        .sites
        .iter()
        .map(|&(s, e, at)| {
            let at = labels.resolve_dynamic(at).ok()?.0;
            Some((s as u32, e as u32, at as u32))
        })
        .collect::<Option<Vec<_>>>()?;
    let code = b.a.finalize().ok()?;
    Some(Made {
        code,
        insns: n,
        hot: b.hot_at,
        sites,
    })
}

impl Block {
    fn pc_of(&self, i: usize) -> u64 {
        self.pc + 4 * i as u64
    }

    /// The displacement of a 32-bit relative jump or call to `target` whose instruction is
    /// `len` bytes and starts here.
    fn rel(&self, target: usize, len: usize) -> i32 {
        (target as i64 - (self.base + self.a.offset().0 + len) as i64) as i32
    }

    fn call_abs(&mut self, target: usize) {
        let r = self.rel(target, 5);
        self.a.push(0xe8);
        self.a.push_i32(r);
    }

    fn jmp_abs(&mut self, target: usize) {
        let r = self.rel(target, 5);
        self.a.push(0xe9);
        self.a.push_i32(r);
    }

    fn jcc_abs(&mut self, cc: u8, target: usize) {
        let r = self.rel(target, 6);
        self.a.push(0x0f);
        self.a.push(0x80 | cc);
        self.a.push_i32(r);
    }

    /// `opcode reg, [rbx + disp]` with the shortest displacement (dynasm-rs gives a
    /// displacement computed at run time four bytes).
    fn rbx_op(&mut self, opcode: u8, reg: u8, disp: i32, wide: bool) {
        let rex = 0x40 | if wide { 8 } else { 0 } | if reg >= 8 { 4 } else { 0 };
        if rex != 0x40 {
            self.a.push(rex);
        }
        self.a.push(opcode);
        if (-128..=127).contains(&disp) {
            self.a.push(0x40 | (reg & 7) << 3 | 3);
            self.a.push(disp as i8 as u8);
        } else {
            self.a.push(0x80 | (reg & 7) << 3 | 3);
            self.a.push_i32(disp);
        }
    }

    /// Counts a run down at `counter` (the block's first instruction, [`count_insn`]) and
    /// leaves for its unit when it reaches zero (at `hot_at`).
    fn count(&mut self, counter: usize) {
        let at = self.a.new_dynamic_label();
        let insn = count_insn(self.base + self.a.offset().0, counter);
        self.a.extend(insn);
        dynasm!(self.a ; .arch x64 ; jz =>at);
        self.slow.push(Slow::Hot { at });
    }

    /// The budget: the whole block must fit, else the interpreter runs what is left.
    fn prologue(&mut self, n: usize) {
        let at = self.a.new_dynamic_label();
        dynasm!(self.a
            ; .arch x64
            ; lea rax, [r13 + n as i32]
            ; cmp rax, QWORD [r12 + Q_LIMIT]
            ; ja =>at
        );
        self.slow.push(Slow::Budget { at });
    }

    /// Stores the PC and count of op `i`, as the interpreter has them when it runs it.
    fn sync(&mut self, i: usize) {
        let pc = self.pc_of(i) as i64;
        dynasm!(self.a
            ; .arch x64
            ; mov rax, QWORD pc
            ; mov QWORD [rbx + PC], rax
            ; lea rax, [r13 + i as i32]
            ; mov QWORD [rbx + RETIRED], rax
        );
    }

    /// Leaves to the dispatcher with `code`, at `pc` with `count` instructions of the
    /// block retired.
    fn leave(&mut self, pc: u64, count: usize, code: u64) {
        dynasm!(self.a
            ; .arch x64
            ; mov rax, QWORD pc as i64
            ; mov QWORD [rbx + PC], rax
            ; lea rax, [r13 + count as i32]
            ; mov QWORD [rbx + RETIRED], rax
        );
        self.jmp_abs(self.stubs.exits[code as usize]);
    }

    /// Goes on at `target` with `count` instructions of the block retired: a `jmp` whose
    /// displacement starts at 0 (into the call after it, which asks the link stub for the
    /// target's block, the target PC in the 8 bytes after the call) and is patched to the
    /// block once it exists, as TCG chains its translation blocks. Each block checks the
    /// budget itself, so a chain of them stops where the interpreter would.
    ///
    /// Only within the block's page: a target on another page is looked up in the table
    /// each time (`chain_rax`), so that a page's blocks can be set aside, and taken back,
    /// by clearing their table slots alone (`LaneQuick::revalidate`): no other page's
    /// block jumps to them directly.
    fn chain_const(&mut self, target: u64, count: usize) {
        if target >> 12 != self.pc >> 12 {
            dynasm!(self.a ; .arch x64 ; mov rax, QWORD target as i64);
            self.chain_rax(count);
            return;
        }
        dynasm!(self.a ; .arch x64 ; add r13, count as i32);
        self.a.push(0xe9);
        self.a.push_i32(0);
        self.call_abs(self.stubs.link);
        self.a.push_i64(target as i64);
    }

    /// Goes on at the PC in `rax`: its block from the table where there is one, each
    /// indirect branch with a jump of its own (one shared jump was mispredicted on most
    /// block ends).
    fn chain_rax(&mut self, count: usize) {
        let mask = (TABLE - 1) as i32;
        dynasm!(self.a
            ; .arch x64
            ; add r13, count as i32
            ; mov rcx, rax
            ; shr rcx, 2
            ; and ecx, mask
            ; shl rcx, 4
            ; add rcx, QWORD [r12 + Q_TABLE]
            ; cmp rax, QWORD [rcx]
            ; jne >miss
            ; jmp QWORD [rcx + 8]
            ; miss:
            ; mov QWORD [rbx + PC], rax
            ; mov QWORD [rbx + RETIRED], r13
        );
        self.jmp_abs(self.stubs.probe);
    }

    /// Calls helper stub `f` (arguments already in place) and leaves through the stop
    /// exit if it stopped; rax is its return value.
    fn call(&mut self, f: usize) {
        self.call_abs(f);
        dynasm!(self.a
            ; .arch x64
            ; cmp QWORD [r12 + Q_STATUS], slow::STOPPED as i32
        );
        self.jcc_abs(4, self.stubs.exits[exit::STOP as usize]);
    }

    /// After a store that may have written decoded code: leave after op `i`.
    fn leave_if_code_changed(&mut self, i: usize) {
        let at = self.a.new_dynamic_label();
        dynasm!(self.a
            ; .arch x64
            ; cmp QWORD [r12 + Q_STATUS], slow::CODE_CHANGED as i32
            ; je =>at
        );
        self.slow.push(Slow::CodeChanged { at, i });
    }

    /// The slow paths, after the block's last way out.
    fn slow_paths(&mut self) {
        for s in std::mem::take(&mut self.slow) {
            match s {
                Slow::Read { at, back, i, size } => {
                    dynasm!(self.a ; .arch x64 ; =>at);
                    self.sync(i);
                    dynasm!(self.a ; .arch x64 ; mov rdi, r12);
                    if size == 16 {
                        self.call(self.stubs.read16);
                        dynasm!(self.a ; .arch x64 ; mov rdx, QWORD [r12 + Q_HI]);
                    } else {
                        dynasm!(self.a ; .arch x64 ; mov edx, size);
                        self.call(self.stubs.read);
                    }
                    dynasm!(self.a ; .arch x64 ; jmp =>back);
                }
                Slow::Write {
                    at,
                    back,
                    i,
                    size,
                    hi,
                } => {
                    dynasm!(self.a ; .arch x64 ; =>at);
                    self.sync(i);
                    dynasm!(self.a ; .arch x64 ; mov rdi, r12 ; mov rdx, r15);
                    if size == 16 {
                        self.load(1, hi);
                        self.call(self.stubs.write16);
                    } else {
                        dynasm!(self.a ; .arch x64 ; mov ecx, size);
                        self.call(self.stubs.write);
                    }
                    dynasm!(self.a ; .arch x64 ; jmp =>back);
                }
                Slow::One { at, back, i } => {
                    dynasm!(self.a ; .arch x64 ; =>at);
                    self.one(i);
                    dynasm!(self.a ; .arch x64 ; jmp =>back);
                }
                Slow::Fp {
                    at,
                    back,
                    word,
                    imm,
                } => {
                    dynasm!(self.a ; .arch x64 ; =>at);
                    self.call_fp(word, imm);
                    dynasm!(self.a ; .arch x64 ; jmp =>back);
                }
                Slow::Budget { at } => {
                    // (a block reached through a patched jump has no PC stored yet)
                    let pc = self.pc as i64;
                    dynasm!(self.a
                        ; .arch x64
                        ; =>at
                        ; mov rax, QWORD pc
                        ; mov QWORD [rbx + PC], rax
                        ; mov QWORD [rbx + RETIRED], r13
                    );
                    self.jmp_abs(self.stubs.exits[exit::INTERP as usize]);
                }
                Slow::Hot { at } => {
                    self.hot_at = Some(self.a.offset().0);
                    let pc = self.pc as i64;
                    dynasm!(self.a
                        ; .arch x64
                        ; =>at
                        ; mov rax, QWORD pc
                        ; mov QWORD [rbx + PC], rax
                        ; mov QWORD [rbx + RETIRED], r13
                    );
                    self.jmp_abs(self.stubs.unit);
                }
                Slow::CodeChanged { at, i } => {
                    dynasm!(self.a ; .arch x64 ; =>at);
                    let pc = self.pc_of(i + 1);
                    self.leave(pc, i + 1, exit::NEXT);
                }
            }
        }
    }

    /// Makes NZCV from the host's flags (set by the op just before) into the state, with
    /// instructions that keep the host's flags and rax; `sub`: the op was a subtraction.
    fn flags(&mut self, sub: bool) {
        if sub {
            dynasm!(self.a ; .arch x64 ; sets cl ; setz dl ; setae r8b ; seto r9b);
        } else {
            dynasm!(self.a ; .arch x64 ; sets cl ; setz dl ; setb r8b ; seto r9b);
        }
        // ((N * 2 + Z) * 2 + C) * 2 + V, times 16: NZCV in the top nibble of one byte,
        // bits 31..28 of the state's NZCV (whose other bits are always clear)
        dynasm!(self.a
            ; .arch x64
            ; movzx ecx, cl
            ; movzx edx, dl
            ; lea ecx, [rdx + rcx * 2]
            ; movzx edx, r8b
            ; lea ecx, [rdx + rcx * 2]
            ; movzx edx, r9b
            ; lea ecx, [rdx + rcx * 2]
            ; lea ecx, [rcx * 8]
            ; lea ecx, [rcx + rcx]
            ; mov BYTE [rbx + NZCV + 3], cl
        );
    }

    /// Sets the host's carry flag to whether `cond` holds for the state's NZCV.
    fn cond_to_cf(&mut self, c: u8) {
        let table = cond::TABLE[c as usize & 15] as i32;
        dynasm!(self.a
            ; .arch x64
            ; mov edx, DWORD [rbx + NZCV]
            ; shr edx, 28
            ; mov esi, table
            ; bt esi, edx
        );
    }

    fn load(&mut self, reg: u8, r: u8) {
        if r == reg::ZR {
            dynasm!(self.a ; .arch x64 ; xor Rd(reg), Rd(reg));
        } else {
            self.rbx_op(0x8b, reg, xoff(r), true);
        }
    }

    fn load32(&mut self, reg: u8, r: u8) {
        if r == reg::ZR {
            dynasm!(self.a ; .arch x64 ; xor Rd(reg), Rd(reg));
        } else {
            self.rbx_op(0x8b, reg, xoff(r), false);
        }
    }

    /// Writes a guest register (the sink, where writes to the zero register go, is never
    /// read: nothing to write).
    fn store(&mut self, r: u8, reg: u8) {
        if r != reg::SINK {
            self.rbx_op(0x89, reg, xoff(r), true);
        }
    }

    fn imm(&mut self, reg: u8, v: u64) {
        if v <= u32::MAX as u64 {
            dynasm!(self.a ; .arch x64 ; mov Rd(reg), v as u32 as i32);
        } else {
            dynasm!(self.a ; .arch x64 ; mov Rq(reg), QWORD v as i64);
        }
    }

    /// rcx shifted as a shifted-register operand (`ty`: LSL, LSR, ASR, ROR).
    fn shift(&mut self, wide: bool, ty: u8, amount: u8) {
        let n = (amount & if wide { 63 } else { 31 }) as i8;
        if n == 0 {
            return;
        }
        match (wide, ty) {
            (true, 0) => dynasm!(self.a ; .arch x64 ; shl rcx, n),
            (true, 1) => dynasm!(self.a ; .arch x64 ; shr rcx, n),
            (true, 2) => dynasm!(self.a ; .arch x64 ; sar rcx, n),
            (true, _) => dynasm!(self.a ; .arch x64 ; ror rcx, n),
            (false, 0) => dynasm!(self.a ; .arch x64 ; shl ecx, n),
            (false, 1) => dynasm!(self.a ; .arch x64 ; shr ecx, n),
            (false, 2) => dynasm!(self.a ; .arch x64 ; sar ecx, n),
            (false, _) => dynasm!(self.a ; .arch x64 ; ror ecx, n),
        }
    }

    /// rcx extended (UXTB ... SXTX by `option`) and shifted left by `amount`.
    fn extend(&mut self, option: u8, amount: u8) {
        match option & 7 {
            0 => dynasm!(self.a ; .arch x64 ; movzx ecx, cl),
            1 => dynasm!(self.a ; .arch x64 ; movzx ecx, cx),
            2 => dynasm!(self.a ; .arch x64 ; mov ecx, ecx),
            4 => dynasm!(self.a ; .arch x64 ; movsx rcx, cl),
            5 => dynasm!(self.a ; .arch x64 ; movsx rcx, cx),
            6 => dynasm!(self.a ; .arch x64 ; movsxd rcx, ecx),
            _ => {}
        }
        let n = (amount & 7) as i8;
        if n != 0 {
            dynasm!(self.a ; .arch x64 ; shl rcx, n);
        }
    }

    /// A register-operand op (`alu_form`): rax = Rn OP (Rm shifted or extended).
    fn alu_register(&mut self, u: &MicroOp, f: AluForm) {
        if f.wide {
            self.load(0, u.b);
        } else {
            self.load32(0, u.b);
        }
        if f.extended {
            // (a W form uses the low half of the extended operand)
            self.load(1, u.c);
            self.extend(u.e, u.f);
        } else {
            if f.wide {
                self.load(1, u.c);
            } else {
                self.load32(1, u.c);
            }
            self.shift(f.wide, u.e, u.f);
        }
        match (f.invert, f.wide) {
            (true, true) => dynasm!(self.a ; .arch x64 ; not rcx),
            (true, false) => dynasm!(self.a ; .arch x64 ; not ecx),
            _ => {}
        }
        match (f.alu, f.wide) {
            (Alu::Add, true) => dynasm!(self.a ; .arch x64 ; add rax, rcx),
            (Alu::Sub, true) => dynasm!(self.a ; .arch x64 ; sub rax, rcx),
            (Alu::And, true) => dynasm!(self.a ; .arch x64 ; and rax, rcx),
            (Alu::Or, true) => dynasm!(self.a ; .arch x64 ; or rax, rcx),
            (Alu::Xor, true) => dynasm!(self.a ; .arch x64 ; xor rax, rcx),
            (Alu::Add, false) => dynasm!(self.a ; .arch x64 ; add eax, ecx),
            (Alu::Sub, false) => dynasm!(self.a ; .arch x64 ; sub eax, ecx),
            (Alu::And, false) => dynasm!(self.a ; .arch x64 ; and eax, ecx),
            (Alu::Or, false) => dynasm!(self.a ; .arch x64 ; or eax, ecx),
            (Alu::Xor, false) => dynasm!(self.a ; .arch x64 ; xor eax, ecx),
        }
        if f.flags {
            self.flags(f.alu == Alu::Sub);
        }
        self.store(u.a, 0);
    }

    /// `jcc` to `label` with the host's condition code `cc`.
    fn jcc_label(&mut self, cc: u8, label: DynamicLabel) {
        match cc & 15 {
            0 => dynasm!(self.a ; .arch x64 ; jo =>label),
            1 => dynasm!(self.a ; .arch x64 ; jno =>label),
            2 => dynasm!(self.a ; .arch x64 ; jb =>label),
            3 => dynasm!(self.a ; .arch x64 ; jae =>label),
            4 => dynasm!(self.a ; .arch x64 ; je =>label),
            5 => dynasm!(self.a ; .arch x64 ; jne =>label),
            6 => dynasm!(self.a ; .arch x64 ; jbe =>label),
            7 => dynasm!(self.a ; .arch x64 ; ja =>label),
            8 => dynasm!(self.a ; .arch x64 ; js =>label),
            9 => dynasm!(self.a ; .arch x64 ; jns =>label),
            10 => dynasm!(self.a ; .arch x64 ; jp =>label),
            11 => dynasm!(self.a ; .arch x64 ; jnp =>label),
            12 => dynasm!(self.a ; .arch x64 ; jl =>label),
            13 => dynasm!(self.a ; .arch x64 ; jge =>label),
            14 => dynasm!(self.a ; .arch x64 ; jle =>label),
            _ => dynasm!(self.a ; .arch x64 ; jg =>label),
        }
    }

    /// Op `i` of a block of `n`; `live`: how the op before left the host's flags.
    fn op(&mut self, i: usize, u: &MicroOp, n: usize, live: Option<Live>) {
        if let Some(form) = alu_form(u.op) {
            self.alu_register(u, form);
            return;
        }
        let (a, b, c, d) = (u.a, u.b, u.c, u.d);
        let next = self.pc_of(i + 1);
        match u.op {
            NOP | PRFM | MSR_NZCV_IMM => {}

            // ----- branches (the block's last op)
            B => self.chain_const(u.imm, n),
            BL => {
                self.imm(0, next);
                self.store(30, 0);
                self.chain_const(u.imm, n);
            }
            BR => {
                self.load(0, b);
                self.chain_rax(n);
            }
            BLR => {
                self.load(0, b);
                self.imm(1, next);
                self.store(30, 1);
                self.chain_rax(n);
            }
            B_COND if u.e & 15 >= 14 => self.chain_const(u.imm, n),
            B_COND | CBZ_W | CBZ_X | CBNZ_W | CBNZ_X | TBZ | TBNZ => {
                let off = xoff(b);
                // the host's condition under which the branch is not taken
                let fall_cc = match u.op {
                    B_COND => match live.and_then(|l| host_cond(l, u.e & 15)) {
                        // the compare just before left its flags in the host's
                        Some(cc) => cc ^ 1,
                        None => {
                            self.cond_to_cf(u.e);
                            3 // jnc
                        }
                    },
                    CBZ_W | CBNZ_W | CBZ_X | CBNZ_X => {
                        if matches!(u.op, CBZ_W | CBNZ_W) {
                            dynasm!(self.a ; .arch x64 ; cmp DWORD [rbx + off], 0);
                        } else {
                            dynasm!(self.a ; .arch x64 ; cmp QWORD [rbx + off], 0);
                        }
                        if matches!(u.op, CBZ_W | CBZ_X) {
                            5 // jne
                        } else {
                            4 // je
                        }
                    }
                    _ => {
                        let bit = (u.e & 63) as i8;
                        dynasm!(self.a ; .arch x64 ; bt QWORD [rbx + off], bit);
                        if u.op == TBZ {
                            2 // jc
                        } else {
                            3 // jnc
                        }
                    }
                };
                let fall = self.a.new_dynamic_label();
                self.jcc_label(fall_cc, fall);
                self.chain_const(u.imm, n);
                dynasm!(self.a ; .arch x64 ; =>fall);
                self.chain_const(next, n);
            }
            SVC => self.leave(next, i + 1, exit::SYSCALL),

            // ----- data processing, immediate
            MOV_IMM => {
                self.imm(0, u.imm);
                self.store(a, 0);
            }
            MOVK_W | MOVK_X => {
                let sh = u.e as u32 & 63;
                let width = if u.op == MOVK_W { 0xffff_ffffu64 } else { !0 };
                let keep = !(0xffffu64.wrapping_shl(sh)) & width;
                let put = u.imm.wrapping_shl(sh) & width;
                self.load(0, b);
                self.imm(1, keep);
                dynasm!(self.a ; .arch x64 ; and rax, rcx);
                self.imm(1, put);
                dynasm!(self.a ; .arch x64 ; or rax, rcx);
                self.store(a, 0);
            }
            ADD_IMM_X => {
                self.load(0, b);
                self.imm(1, u.imm);
                dynasm!(self.a ; .arch x64 ; add rax, rcx);
                self.store(a, 0);
            }
            ADD_IMM_W => {
                self.load32(0, b);
                dynasm!(self.a ; .arch x64 ; add eax, u.imm as u32 as i32);
                self.store(a, 0);
            }
            ADDS_IMM_X | fused::ADDS_IMM_X_BCOND => {
                // `e`: the carry in, 1 for SUBS, whose `imm` is the operand inverted
                let sub = u.e & 1 == 1;
                self.load(0, b);
                if sub {
                    self.imm(1, !u.imm);
                    dynasm!(self.a ; .arch x64 ; sub rax, rcx);
                } else {
                    self.imm(1, u.imm);
                    dynasm!(self.a ; .arch x64 ; add rax, rcx);
                }
                self.flags(sub);
                self.store(a, 0);
            }
            ADDS_IMM_W | fused::ADDS_IMM_W_BCOND => {
                let sub = u.e & 1 == 1;
                self.load32(0, b);
                if sub {
                    dynasm!(self.a ; .arch x64 ; sub eax, !(u.imm as u32) as i32);
                } else {
                    dynasm!(self.a ; .arch x64 ; add eax, u.imm as u32 as i32);
                }
                self.flags(sub);
                self.store(a, 0);
            }
            AND_IMM_W | AND_IMM_X | ORR_IMM_X | EOR_IMM_X | ANDS_IMM_X => {
                self.load(0, b);
                self.imm(1, u.imm);
                match u.op {
                    ORR_IMM_X => dynasm!(self.a ; .arch x64 ; or rax, rcx),
                    EOR_IMM_X => dynasm!(self.a ; .arch x64 ; xor rax, rcx),
                    _ => dynasm!(self.a ; .arch x64 ; and rax, rcx),
                }
                if u.op == ANDS_IMM_X {
                    self.flags(false);
                }
                self.store(a, 0);
            }
            ORR_IMM_W | EOR_IMM_W | ANDS_IMM_W => {
                self.load32(0, b);
                let v = u.imm as u32 as i32;
                match u.op {
                    ORR_IMM_W => dynasm!(self.a ; .arch x64 ; or eax, v),
                    EOR_IMM_W => dynasm!(self.a ; .arch x64 ; xor eax, v),
                    _ => dynasm!(self.a ; .arch x64 ; and eax, v),
                }
                if u.op == ANDS_IMM_W {
                    self.flags(false);
                }
                self.store(a, 0);
            }
            UBFM_W | UBFM_X | SBFM_W | SBFM_X => self.bitfield(u),
            fused::SHIFT_PAIR_U | fused::SHIFT_PAIR_S_X | fused::SHIFT_PAIR_S_W => {
                let (l, r) = ((u.e & 63) as i8, (u.f & 63) as i8);
                self.load(0, b);
                dynasm!(self.a ; .arch x64 ; shl rax, l);
                if u.op == fused::SHIFT_PAIR_U {
                    dynasm!(self.a ; .arch x64 ; shr rax, r);
                } else {
                    dynasm!(self.a ; .arch x64 ; sar rax, r);
                }
                if u.op == fused::SHIFT_PAIR_S_W {
                    dynasm!(self.a ; .arch x64 ; mov eax, eax);
                }
                self.store(a, 0);
            }

            // ----- data processing, register (shifted and extended: `alu_form`, above)
            MOV_REG => {
                self.load(0, b);
                self.store(a, 0);
            }
            MOV_REG_W => {
                self.load32(0, b);
                self.store(a, 0);
            }
            CSEL_W | CSEL_X | CSINC_W | CSINC_X | CSINV_W | CSINV_X | CSNEG_W | CSNEG_X => {
                self.load(0, b);
                self.load(1, c);
                match u.op {
                    CSINC_W | CSINC_X => dynasm!(self.a ; .arch x64 ; add rcx, 1),
                    CSINV_W | CSINV_X => dynasm!(self.a ; .arch x64 ; not rcx),
                    CSNEG_W | CSNEG_X => dynasm!(self.a ; .arch x64 ; neg rcx),
                    _ => {}
                }
                self.cond_to_cf(u.e);
                dynasm!(self.a ; .arch x64 ; cmovae rax, rcx);
                if matches!(u.op, CSEL_W | CSINC_W | CSINV_W | CSNEG_W) {
                    dynasm!(self.a ; .arch x64 ; mov eax, eax);
                }
                self.store(a, 0);
            }
            CCMP_REG_W | CCMP_REG_X | CCMN_REG_W | CCMN_REG_X | CCMP_IMM_W | CCMP_IMM_X
            | CCMN_IMM_W | CCMN_IMM_X => {
                let imm = matches!(u.op, CCMP_IMM_W | CCMP_IMM_X | CCMN_IMM_W | CCMN_IMM_X);
                let sub = matches!(u.op, CCMP_REG_W | CCMP_REG_X | CCMP_IMM_W | CCMP_IMM_X);
                let wide = matches!(u.op, CCMP_REG_X | CCMN_REG_X | CCMP_IMM_X | CCMN_IMM_X);
                let otherwise = (u.f as u64 & 15) << 28;
                self.cond_to_cf(u.e);
                dynasm!(self.a
                    ; .arch x64
                    ; jc >compare
                    ; mov ecx, otherwise as u32 as i32
                    ; mov QWORD [rbx + NZCV], rcx
                    ; jmp >done
                    ; compare:
                );
                self.load(0, b);
                if imm {
                    self.imm(1, u.imm);
                } else {
                    self.load(1, c);
                }
                match (sub, wide) {
                    (true, true) => dynasm!(self.a ; .arch x64 ; sub rax, rcx),
                    (false, true) => dynasm!(self.a ; .arch x64 ; add rax, rcx),
                    (true, false) => dynasm!(self.a ; .arch x64 ; sub eax, ecx),
                    (false, false) => dynasm!(self.a ; .arch x64 ; add eax, ecx),
                }
                self.flags(sub);
                dynasm!(self.a ; .arch x64 ; done:);
            }
            MADD_X | MSUB_X | MADD_W | MSUB_W => {
                self.load(0, b);
                dynasm!(self.a ; .arch x64 ; imul rax, QWORD [rbx + xoff(c)]);
                self.load(1, d);
                if matches!(u.op, MADD_X | MADD_W) {
                    dynasm!(self.a ; .arch x64 ; add rcx, rax);
                } else {
                    dynasm!(self.a ; .arch x64 ; sub rcx, rax);
                }
                if matches!(u.op, MADD_W | MSUB_W) {
                    dynasm!(self.a ; .arch x64 ; mov ecx, ecx);
                }
                self.store(a, 1);
            }

            LSLV_X | LSRV_X | ASRV_X | RORV_X => {
                // (the host masks the count to 6 bits, as the Arm ops do)
                self.load(0, b);
                self.load(1, c);
                match u.op {
                    LSLV_X => dynasm!(self.a ; .arch x64 ; shl rax, cl),
                    LSRV_X => dynasm!(self.a ; .arch x64 ; shr rax, cl),
                    ASRV_X => dynasm!(self.a ; .arch x64 ; sar rax, cl),
                    _ => dynasm!(self.a ; .arch x64 ; ror rax, cl),
                }
                self.store(a, 0);
            }
            LSLV_W | LSRV_W | ASRV_W | RORV_W => {
                self.load32(0, b);
                self.load32(1, c);
                match u.op {
                    LSLV_W => dynasm!(self.a ; .arch x64 ; shl eax, cl),
                    LSRV_W => dynasm!(self.a ; .arch x64 ; shr eax, cl),
                    ASRV_W => dynasm!(self.a ; .arch x64 ; sar eax, cl),
                    _ => dynasm!(self.a ; .arch x64 ; ror eax, cl),
                }
                self.store(a, 0);
            }
            EXTR_X | EXTR_W => {
                // the low half from Rm, shifted right, the high bits from Rn
                self.load(0, b);
                self.load(1, c);
                if u.op == EXTR_X {
                    dynasm!(self.a ; .arch x64 ; shrd rcx, rax, (u.e & 63) as i8);
                } else {
                    dynasm!(self.a ; .arch x64 ; shrd ecx, eax, (u.e & 31) as i8 ; mov ecx, ecx);
                }
                self.store(a, 1);
            }
            REV_X => {
                self.load(0, b);
                dynasm!(self.a ; .arch x64 ; bswap rax);
                self.store(a, 0);
            }
            REV_W => {
                self.load32(0, b);
                dynasm!(self.a ; .arch x64 ; bswap eax);
                self.store(a, 0);
            }
            UMADDL | UMSUBL | SMADDL | SMSUBL => {
                if matches!(u.op, UMADDL | UMSUBL) {
                    self.load32(0, b);
                    self.load32(1, c);
                } else {
                    dynasm!(self.a
                        ; .arch x64
                        ; movsxd rax, DWORD [rbx + xoff(b)]
                        ; movsxd rcx, DWORD [rbx + xoff(c)]
                    );
                }
                dynasm!(self.a ; .arch x64 ; imul rax, rcx);
                self.load(1, d);
                if matches!(u.op, UMADDL | SMADDL) {
                    dynasm!(self.a ; .arch x64 ; add rcx, rax);
                } else {
                    dynasm!(self.a ; .arch x64 ; sub rcx, rax);
                }
                self.store(a, 1);
            }
            SMULH | UMULH => {
                self.load(0, b);
                if u.op == SMULH {
                    dynasm!(self.a ; .arch x64 ; imul QWORD [rbx + xoff(c)]);
                } else {
                    dynasm!(self.a ; .arch x64 ; mul QWORD [rbx + xoff(c)]);
                }
                self.store(a, 2);
            }
            MRS if u.imm == sysreg::TPIDR_EL0 || u.imm == sysreg::NZCV => {
                let off = if u.imm == sysreg::TPIDR_EL0 {
                    TPIDR
                } else {
                    NZCV
                };
                dynasm!(self.a ; .arch x64 ; mov rax, QWORD [rbx + off]);
                self.store(a, 0);
            }

            // ----- loads and stores
            op if ldst::handles(op) => self.load_store(i, u),
            ADC_W | ADC_X | SBC_W | SBC_X | ADCS_W | ADCS_X | SBCS_W | SBCS_X => self.carry_op(u),
            CLZ_W | CLZ_X => {
                // 63 - (index of the top set bit) is that index xor 63; where there is no
                // set bit, 127 xor 63 = 64 (31 and 32 for W)
                if u.op == CLZ_X {
                    self.load(0, b);
                    dynasm!(self.a ; .arch x64 ; mov ecx, 127 ; bsr rax, rax ; cmovz eax, ecx ; xor eax, 63);
                } else {
                    self.load32(0, b);
                    dynasm!(self.a ; .arch x64 ; mov ecx, 63 ; bsr eax, eax ; cmovz eax, ecx ; xor eax, 31);
                }
                self.store(a, 0);
            }
            UDIV_W | UDIV_X | SDIV_W | SDIV_X => self.divide(u),
            op if op >= FP_BASE => self.fp_simd(i, u),

            // ----- everything else: the interpreter, one instruction
            _ => {
                if super::tracing() {
                    let n = &super::FALLBACKS[u.op as usize & 0x7ff] as *const _ as i64;
                    dynasm!(self.a ; .arch x64 ; mov rax, QWORD n ; inc QWORD [rax]);
                }
                self.one(i);
            }
        }
    }

    /// ADC, SBC and their flag-setting forms on the host's own carry: C into CF (its
    /// complement for SBC, since x86's borrow is Arm's carry clear), then `adc`/`sbb`,
    /// whose SF, ZF, CF and OF are Arm's N, Z, C (complemented for SBC) and V.
    fn carry_op(&mut self, u: &MicroOp) {
        let wide = matches!(u.op, ADC_X | SBC_X | ADCS_X | SBCS_X);
        let sub = matches!(u.op, SBC_W | SBC_X | SBCS_W | SBCS_X);
        self.operands(wide, u.b, u.c);
        // (after the loads: loading the zero register clears the host's flags)
        dynasm!(self.a ; .arch x64 ; bt DWORD [rbx + NZCV], 29);
        match (sub, wide) {
            (false, true) => dynasm!(self.a ; .arch x64 ; adc rax, rcx),
            (false, false) => dynasm!(self.a ; .arch x64 ; adc eax, ecx),
            (true, true) => dynasm!(self.a ; .arch x64 ; cmc ; sbb rax, rcx),
            (true, false) => dynasm!(self.a ; .arch x64 ; cmc ; sbb eax, ecx),
        }
        if matches!(u.op, ADCS_W | ADCS_X | SBCS_W | SBCS_X) {
            self.flags(sub);
        }
        self.store(u.a, 0);
    }

    /// Rn into rax and Rm into rcx, all 64 bits or the low 32 zero-extended.
    fn operands(&mut self, wide: bool, n: u8, m: u8) {
        if wide {
            self.load(0, n);
            self.load(1, m);
        } else {
            self.load32(0, n);
            self.load32(1, m);
        }
    }

    /// UDIV and SDIV: Arm's quotient is 0 for a zero divisor, and -n for a divisor of -1
    /// (wrapping: the most negative number stays itself), where x86's `div`/`idiv` would
    /// trap.
    fn divide(&mut self, u: &MicroOp) {
        let wide = matches!(u.op, UDIV_X | SDIV_X);
        self.operands(wide, u.b, u.c);
        match u.op {
            UDIV_X => dynasm!(self.a
                ; .arch x64
                ; test rcx, rcx ; jz >zero
                ; xor edx, edx ; div rcx ; jmp >done
                ; zero: ; xor eax, eax
                ; done:
            ),
            UDIV_W => dynasm!(self.a
                ; .arch x64
                ; test ecx, ecx ; jz >zero
                ; xor edx, edx ; div ecx ; jmp >done
                ; zero: ; xor eax, eax
                ; done:
            ),
            SDIV_X => dynasm!(self.a
                ; .arch x64
                ; test rcx, rcx ; jz >zero
                ; cmp rcx, -1 ; je >neg
                ; cqo ; idiv rcx ; jmp >done
                ; neg: ; neg rax ; jmp >done
                ; zero: ; xor eax, eax
                ; done:
            ),
            _ => dynasm!(self.a
                ; .arch x64
                ; test ecx, ecx ; jz >zero
                ; cmp ecx, -1 ; je >neg
                ; cdq ; idiv ecx ; jmp >done
                ; neg: ; neg eax ; jmp >done
                ; zero: ; xor eax, eax
                ; done:
            ),
        }
        self.store(u.a, 0);
    }

    /// Op `i` run by the interpreter: on after it, or out where it stopped or changed
    /// code.
    fn one(&mut self, i: usize) {
        self.sync(i);
        dynasm!(self.a
            ; .arch x64
            ; mov rdi, r12
        );
        self.call(self.stubs.one);
        // (where the op changed code, the interpreter has stored the PC and count after it)
        dynasm!(self.a
            ; .arch x64
            ; cmp QWORD [r12 + Q_STATUS], slow::CODE_CHANGED as i32
        );
        self.jcc_abs(4, self.stubs.exits[exit::NEXT as usize]);
    }

    /// UBFM and SBFM (LSL, LSR, ASR by an immediate, UXTB, SXTW, UBFX, SBFIZ...).
    fn bitfield(&mut self, u: &MicroOp) {
        let wide = matches!(u.op, UBFM_X | SBFM_X);
        let size = if wide { 64 } else { 32 };
        let (r, s) = (u.e as u32 & (size - 1), u.f as u32 & (size - 1));
        let ones = |n: u32| if n >= 64 { !0u64 } else { (1u64 << n) - 1 };
        if wide {
            self.load(0, u.b);
        } else {
            self.load32(0, u.b);
        }
        if matches!(u.op, UBFM_W | UBFM_X) {
            if s >= r {
                if r != 0 {
                    dynasm!(self.a ; .arch x64 ; shr rax, r as i8);
                }
                self.imm(1, ones(s - r + 1));
            } else {
                self.imm(1, ones(s + 1));
                dynasm!(self.a ; .arch x64 ; and rax, rcx ; shl rax, (size - r) as i8);
                self.imm(1, ones(size));
            }
            dynasm!(self.a ; .arch x64 ; and rax, rcx);
        } else {
            // the field's top bit to bit 63, then arithmetic shifts
            let up = (63 - s) as i8;
            if s >= r {
                dynasm!(self.a ; .arch x64 ; shl rax, up ; sar rax, (63 - s + r) as i8);
            } else {
                dynasm!(self.a ; .arch x64 ; shl rax, up ; sar rax, up ; shl rax, (size - r) as i8);
            }
            if !wide {
                dynasm!(self.a ; .arch x64 ; mov eax, eax);
            }
        }
        self.store(u.a, 0);
    }
}
