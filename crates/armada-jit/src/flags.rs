//! Condition flags, computed when they are read.
//!
//! Most flag-setting ops are compares whose flags one B.cond, CSEL or CCMP reads, then the
//! next compare overwrites. So a flag-setting op only records its kind and operands (in the
//! variables `fk`, `fa`, `fb`, `fr`); a condition in the same block is one host compare of
//! those operands, and NZCV as the interpreter keeps it (bits 31..28) is made only where it
//! is read as a whole: a helper, MRS, ADC's carry after a merge. Between blocks the kind and
//! operands (or NZCV itself) are in the context, `Ctx::flags`: stored at the end of a block
//! that set flags, loaded where a later block reads them; the dispatcher makes NZCV of them
//! ([`pack`]). Kind `PACKED` means the last word holds NZCV itself. (As Cranelift variables
//! they were five values carried through every block of a unit, and the register allocator
//! spilled them to the stack anyway.)

use crate::helpers::CTX_FK;
use crate::translate::{host_mem, Tx};
use armada_core::cpu;
use armada_isa::uop::cond;
use cranelift_codegen::ir::{condcodes::IntCC, types::I64, InstBuilder, Value};

/// NZCV is in `nz`.
pub const PACKED: u64 = 0;
/// `a - b` (`a + !b + 1`): compares, SUBS.
pub const SUB64: u64 = 1;
pub const SUB32: u64 = 2;
/// `a + b`: CMN, ADDS.
pub const ADD64: u64 = 3;
pub const ADD32: u64 = 4;
/// Logic: TST, ANDS, BICS (N and Z from `r`, C and V clear).
pub const LOGIC64: u64 = 5;
pub const LOGIC32: u64 = 6;

// `Tx::pack_any` tells the kinds apart by number: odd ones are 64-bit, subtractions come
// first, then additions, then logic ops.
const _: () = assert!(
    SUB64 % 2 == 1 && ADD64 % 2 == 1 && LOGIC64 % 2 == 1 && SUB32 < ADD64 && ADD32 < LOGIC64
);

/// What the translator knows, at a point in a block, of the flags.
#[derive(Clone, Copy)]
pub enum Known {
    /// Whatever the context says (at a block's start).
    Unknown,
    /// NZCV.
    Packed(Value),
    /// The last flag-setting op, in this block: kind and values (i32 for 32-bit kinds).
    Lazy {
        kind: u64,
        a: Value,
        b: Value,
        r: Value,
        /// a, b and r as i64 (zero-extended), as the context keeps them
        wide: [Value; 3],
        /// CCMP and CCMN: these flags only where the condition `.0` (i8) holds, else
        /// NZCV is `.1` (bits 31..28). Kept so, a B.cond after a CCMP is two compares and
        /// not NZCV made of both (strstr's inner loop: 35 host instructions a turn).
        chosen: Option<(Value, u64)>,
    },
    /// ADCS or SBCS (`b` already inverted), in this block: `r = a + b + cin` (i32 for the
    /// W forms; `cin` an i64, 0 or 1). NZCV is made only where it is read as a whole; the
    /// carry alone, which the next op of a carry chain reads, is two compares. (Made at
    /// each op, NZCV was about twenty host instructions an ADCS in Go's math/big loops,
    /// most of them thrown away by the next.)
    Adc {
        a: Value,
        b: Value,
        r: Value,
        cin: Value,
    },
    /// The context's four words (kind, a, b, r) as the loop being translated carries them
    /// round (see `translate::loops`): stale in the context while `Tx::flags_dirty`.
    Carried,
}

/// The interpreter's NZCV for a recorded op (32-bit kinds take the low 32 bits), by the
/// interpreter's own flag functions.
pub fn pack(kind: u64, a: u64, b: u64, r: u64, packed: u64) -> u64 {
    match kind {
        SUB64 => cpu::add_with_flags64(a, !b, 1).1,
        SUB32 => cpu::add_with_flags32(a as u32, !(b as u32), 1).1,
        ADD64 => cpu::add_with_flags64(a, b, 0).1,
        ADD32 => cpu::add_with_flags32(a as u32, b as u32, 0).1,
        LOGIC64 => cpu::logic_flags64(r),
        LOGIC32 => cpu::logic_flags32(r as u32),
        _ => packed,
    }
}

impl Tx<'_> {
    /// Records a flag-setting op.
    pub(crate) fn set_flags(&mut self, kind: u64, a: Value, b: Value, r: Value) {
        let wide = matches!(kind, SUB64 | ADD64 | LOGIC64);
        let (a64, b64, r64) = if wide {
            (a, b, r)
        } else {
            (self.zext(a), self.zext(b), self.zext(r))
        };
        self.flags = Known::Lazy {
            kind,
            a,
            b,
            r,
            wide: [a64, b64, r64],
            chosen: None,
        };
        self.flags_dirty = true;
    }

    /// Records CCMP's or CCMN's flags: those of the op `kind` of `a` and `b` (result `r`)
    /// where `holds`, else `nzcv` (bits 31..28).
    pub(crate) fn set_chosen(
        &mut self,
        holds: Value,
        nzcv: u64,
        kind: u64,
        a: Value,
        b: Value,
        r: Value,
    ) {
        self.set_flags(kind, a, b, r);
        if let Known::Lazy { chosen, .. } = &mut self.flags {
            *chosen = Some((holds, nzcv));
        }
    }

    /// Records ADCS's or SBCS's flags (see `Known::Adc`).
    pub(crate) fn set_adc(&mut self, a: Value, b: Value, r: Value, cin: Value) {
        self.flags = Known::Adc { a, b, r, cin };
        self.flags_dirty = true;
    }

    /// The carry out of `r = a + b + cin` (an i8 truth value): `r < a`, or `r == a` with a
    /// carry in.
    fn adc_carry(&mut self, a: Value, r: Value, cin: Value) -> Value {
        let lt = self.b.ins().icmp(IntCC::UnsignedLessThan, r, a);
        let eq = self.b.ins().icmp(IntCC::Equal, r, a);
        let cb = self.b.ins().icmp_imm_u(IntCC::NotEqual, cin, 0);
        let eqc = self.b.ins().band(eq, cb);
        self.b.ins().bor(lt, eqc)
    }

    /// NZCV of `r = a + b + cin` (see `Known::Adc`).
    fn adc_nzcv(&mut self, a: Value, b: Value, r: Value, cin: Value) -> Value {
        let wide = self.b.func.dfg.value_type(r) == I64;
        let top = if wide { 63 } else { 31 };
        let c = self.adc_carry(a, r, cin);
        let x1 = self.b.ins().bxor(a, r);
        let x2 = self.b.ins().bxor(b, r);
        let o = self.b.ins().band(x1, x2);
        let v = self.b.ins().ushr_imm_s(o, top);
        let n = self.b.ins().ushr_imm_s(r, top);
        let zb = self.b.ins().icmp_imm_u(IntCC::Equal, r, 0);
        let (v, n) = (self.zext_any(v), self.zext_any(n));
        let z = self.b.ins().uextend(I64, zb);
        let c = self.b.ins().uextend(I64, c);
        let n = self.b.ins().ishl_imm_s(n, 31);
        let z = self.b.ins().ishl_imm_s(z, 30);
        let c = self.b.ins().ishl_imm_s(c, 29);
        let v = self.b.ins().ishl_imm_s(v, 28);
        let nz = self.b.ins().bor(n, z);
        let cv = self.b.ins().bor(c, v);
        self.b.ins().bor(nz, cv)
    }

    /// Sets NZCV itself (bits 31..28 of `v`, the rest zero).
    pub(crate) fn set_packed(&mut self, v: Value) {
        self.flags = Known::Packed(v);
        self.flags_dirty = true;
    }

    /// Stores the flags this block set to the context (where the next block, unit or the
    /// dispatcher takes them).
    pub(crate) fn flush_flags(&mut self) {
        if !std::mem::take(&mut self.flags_dirty) {
            return;
        }
        let store = |tx: &mut Self, v: Value, word: i32| {
            let c = tx.ctx();
            tx.b.ins().store(host_mem(), v, c, CTX_FK + 8 * word);
        };
        let kind = match self.flags {
            Known::Unknown => return,
            Known::Adc { a, b, r, cin } => {
                // NZCV made here and stored as itself (the flags stay recorded: this may be
                // a way out, whose values the code after it does not see)
                let p = self.adc_nzcv(a, b, r, cin);
                store(self, p, 4);
                self.b.ins().iconst(I64, PACKED as i64)
            }
            Known::Carried => {
                for (i, v) in self.loop_flags().into_iter().enumerate() {
                    store(self, v, i as i32);
                }
                return;
            }
            Known::Packed(v) => {
                store(self, v, 4);
                self.b.ins().iconst(I64, PACKED as i64)
            }
            Known::Lazy {
                kind, wide, chosen, ..
            } => {
                for (i, v) in wide.into_iter().enumerate() {
                    store(self, v, 1 + i as i32);
                }
                self.lazy_kind(kind, chosen)
            }
        };
        store(self, kind, 0);
    }

    /// The context's kind word for recorded flags of `kind` (`chosen`: CCMP's, see
    /// `Known::Lazy`). For CCMP's it is PACKED where the condition failed, and the given
    /// NZCV is stored to the context's last word here.
    pub(crate) fn lazy_kind(&mut self, kind: u64, chosen: Option<(Value, u64)>) -> Value {
        let k = self.b.ins().iconst(I64, kind as i64);
        let Some((holds, nzcv)) = chosen else {
            return k;
        };
        let n = self.b.ins().iconst(I64, nzcv as i64);
        let c = self.ctx();
        self.b.ins().store(host_mem(), n, c, CTX_FK + 32);
        let p = self.b.ins().iconst(I64, PACKED as i64);
        self.b.ins().select(holds, k, p)
    }

    /// NZCV as the interpreter keeps it.
    pub(crate) fn packed(&mut self) -> Value {
        match self.flags {
            Known::Packed(v) => v,
            Known::Adc { a, b, r, cin } => {
                let p = self.adc_nzcv(a, b, r, cin);
                self.set_packed(p);
                p
            }
            Known::Carried => {
                // to the context, and read back as any block's flags from before it
                self.flush_flags();
                self.flags = Known::Unknown;
                self.packed()
            }
            Known::Lazy {
                kind,
                a,
                b,
                r,
                chosen,
                ..
            } => {
                let wide = matches!(kind, SUB64 | ADD64 | LOGIC64);
                let top = if wide { 63 } else { 31 };
                let bit = |tx: &mut Self, v: Value| {
                    let s = tx.b.ins().ushr_imm_s(v, top);
                    tx.zext_any(s)
                };
                let n = bit(self, r);
                let zb = self.b.ins().icmp_imm_u(IntCC::Equal, r, 0);
                let z = self.b.ins().uextend(I64, zb);
                let (c, v) = match kind {
                    SUB64 | SUB32 => {
                        let cb = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, a, b);
                        let c = self.b.ins().uextend(I64, cb);
                        let x1 = self.b.ins().bxor(a, b);
                        let x2 = self.b.ins().bxor(a, r);
                        let o = self.b.ins().band(x1, x2);
                        (Some(c), Some(bit(self, o)))
                    }
                    ADD64 | ADD32 => {
                        let cb = self.b.ins().icmp(IntCC::UnsignedLessThan, r, a);
                        let c = self.b.ins().uextend(I64, cb);
                        let x1 = self.b.ins().bxor(a, r);
                        let x2 = self.b.ins().bxor(b, r);
                        let o = self.b.ins().band(x1, x2);
                        (Some(c), Some(bit(self, o)))
                    }
                    _ => (None, None),
                };
                let n = self.b.ins().ishl_imm_s(n, 31);
                let z = self.b.ins().ishl_imm_s(z, 30);
                let mut p = self.b.ins().bor(n, z);
                if let (Some(c), Some(v)) = (c, v) {
                    let c = self.b.ins().ishl_imm_s(c, 29);
                    let v = self.b.ins().ishl_imm_s(v, 28);
                    let cv = self.b.ins().bor(c, v);
                    p = self.b.ins().bor(p, cv);
                }
                if let Some((holds, nzcv)) = chosen {
                    let given = self.b.ins().iconst(I64, nzcv as i64);
                    p = self.b.ins().select(holds, p, given);
                }
                self.set_packed(p);
                p
            }
            Known::Unknown => {
                let f = |tx: &mut Self, i: i32| {
                    let c = tx.ctx();
                    tx.b.ins().load(I64, host_mem(), c, CTX_FK + 8 * i)
                };
                let k = f(self, 0);
                let nz = f(self, 4);
                let lazy = self.b.create_block();
                let done = self.b.create_block();
                let out = self.b.append_block_param(done, I64);
                self.b.ins().brif(k, lazy, &[], done, &[nz.into()]);
                self.b.switch_to_block(lazy);
                let (fa, fb, fr) = (f(self, 1), f(self, 2), f(self, 3));
                let v = self.pack_any(k, fa, fb, fr);
                self.b.ins().jump(done, &[v.into()]);
                self.b.switch_to_block(done);
                // the context holds these flags already
                self.flags = Known::Packed(out);
                out
            }
        }
    }

    /// NZCV of a recorded op whose kind `k` (not `PACKED`) is known only when the code
    /// runs, without a branch: 32-bit kinds (the even ones) are shifted to the top of the
    /// word first, where the 64-bit rules give their flags; C and V are the rule of the
    /// kind's family, and zero for logic ops. (A helper call here, through an adapter that
    /// saves every register, took a tenth of gawk's run: a block that reads the flags a
    /// compare in an earlier block set is common.)
    fn pack_any(&mut self, k: Value, a: Value, b: Value, r: Value) -> Value {
        let odd = self.b.ins().band_imm_s(k, 1);
        let sh = self.b.ins().bxor_imm_s(odd, 1);
        let sh = self.b.ins().ishl_imm_s(sh, 5);
        let a = self.b.ins().ishl(a, sh);
        let b = self.b.ins().ishl(b, sh);
        let r = self.b.ins().ishl(r, sh);
        let n = self.b.ins().ushr_imm_s(r, 63);
        let zb = self.b.ins().icmp_imm_u(IntCC::Equal, r, 0);
        let z = self.b.ins().uextend(I64, zb);
        // subtraction: C = a >= b, V = ((a ^ b) & (a ^ r)) >> 63
        let cs = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, a, b);
        let xab = self.b.ins().bxor(a, b);
        let xar = self.b.ins().bxor(a, r);
        let vs = self.b.ins().band(xab, xar);
        // addition: C = r < a, V = ((a ^ r) & (b ^ r)) >> 63
        let ca = self.b.ins().icmp(IntCC::UnsignedLessThan, r, a);
        let xbr = self.b.ins().bxor(b, r);
        let va = self.b.ins().band(xar, xbr);
        let is_sub = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, k, SUB32 as i64);
        let is_add = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, k, ADD32 as i64);
        let c8 = self.b.ins().select(is_sub, cs, ca);
        let c = self.b.ins().uextend(I64, c8);
        let v = self.b.ins().select(is_sub, vs, va);
        let v = self.b.ins().ushr_imm_s(v, 63);
        let cv = self.b.ins().ishl_imm_s(c, 1);
        let cv = self.b.ins().bor(cv, v);
        let zero = self.b.ins().iconst(I64, 0);
        let cv = self.b.ins().select(is_add, cv, zero);
        let n = self.b.ins().ishl_imm_s(n, 3);
        let z = self.b.ins().ishl_imm_s(z, 2);
        let nz = self.b.ins().bor(n, z);
        let nzcv = self.b.ins().bor(nz, cv);
        self.b.ins().ishl_imm_s(nzcv, 28)
    }

    /// Whether condition `c` holds (an i8 truth value).
    pub(crate) fn cond(&mut self, c: u8) -> Value {
        let c = c & 15;
        if c >= cond::AL {
            return self.b.ins().iconst(cranelift_codegen::ir::types::I8, 1);
        }
        if let Known::Adc { a, r, cin, .. } = self.flags {
            match c {
                0 => return self.b.ins().icmp_imm_u(IntCC::Equal, r, 0),
                1 => return self.b.ins().icmp_imm_u(IntCC::NotEqual, r, 0),
                2 => return self.adc_carry(a, r, cin),
                3 => {
                    let cs = self.adc_carry(a, r, cin);
                    return self.b.ins().bxor_imm_u(cs, 1);
                }
                4 => return self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0),
                5 => {
                    return self
                        .b
                        .ins()
                        .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, r, 0)
                }
                _ => {}
            }
        }
        if let Known::Lazy {
            kind,
            a,
            b,
            r,
            chosen,
            ..
        } = self.flags
        {
            let cc = match kind {
                SUB64 | SUB32 => match c {
                    0 => Some((IntCC::Equal, a, b)),
                    1 => Some((IntCC::NotEqual, a, b)),
                    2 => Some((IntCC::UnsignedGreaterThanOrEqual, a, b)),
                    3 => Some((IntCC::UnsignedLessThan, a, b)),
                    8 => Some((IntCC::UnsignedGreaterThan, a, b)),
                    9 => Some((IntCC::UnsignedLessThanOrEqual, a, b)),
                    10 => Some((IntCC::SignedGreaterThanOrEqual, a, b)),
                    11 => Some((IntCC::SignedLessThan, a, b)),
                    12 => Some((IntCC::SignedGreaterThan, a, b)),
                    13 => Some((IntCC::SignedLessThanOrEqual, a, b)),
                    _ => None,
                },
                // an addition's carry is `r < a` (the sum wrapped): what ADC and ADCS read
                // after ADDS, as a carry chain starts (Go's math/big loops), without NZCV
                ADD64 | ADD32 => match c {
                    2 => Some((IntCC::UnsignedLessThan, r, a)),
                    3 => Some((IntCC::UnsignedGreaterThanOrEqual, r, a)),
                    _ => None,
                },
                _ => None,
            };
            // N and Z of any kind come from the result; a logic op's C and V are clear
            let logic = matches!(kind, LOGIC64 | LOGIC32);
            let zero = |tx: &mut Self, cc: IntCC| tx.b.ins().icmp_imm_s(cc, r, 0);
            let t = match (cc, c) {
                (Some((cc, x, y)), _) => Some(self.b.ins().icmp(cc, x, y)),
                (_, 0) => Some(zero(self, IntCC::Equal)),
                (_, 1) => Some(zero(self, IntCC::NotEqual)),
                (_, 4) => Some(zero(self, IntCC::SignedLessThan)),
                (_, 5) => Some(zero(self, IntCC::SignedGreaterThanOrEqual)),
                (_, 10) if logic => Some(zero(self, IntCC::SignedGreaterThanOrEqual)),
                (_, 11) if logic => Some(zero(self, IntCC::SignedLessThan)),
                (_, 12) if logic => Some(zero(self, IntCC::SignedGreaterThan)),
                (_, 13) if logic => Some(zero(self, IntCC::SignedLessThanOrEqual)),
                _ => None,
            };
            match (t, chosen) {
                (Some(t), None) => return t,
                (Some(t), Some((holds, nzcv))) => {
                    // where CCMP's condition failed: the condition of the given NZCV
                    let g = (cond::TABLE[c as usize] >> (nzcv >> 28)) & 1;
                    let g = self
                        .b
                        .ins()
                        .iconst(cranelift_codegen::ir::types::I8, g as i64);
                    return self.b.ins().select(holds, t, g);
                }
                (None, _) => {}
            }
        }
        let p = self.packed();
        let idx = self.b.ins().ushr_imm_s(p, 28);
        let table = self.b.ins().iconst(I64, cond::TABLE[c as usize] as i64);
        let bit = self.b.ins().ushr(table, idx);
        let bit = self.b.ins().band_imm_s(bit, 1);
        self.b.ins().icmp_imm_u(IntCC::NotEqual, bit, 0)
    }

    /// The carry flag, 0 or 1 (i64).
    pub(crate) fn carry(&mut self) -> Value {
        let c = self.cond(2);
        self.b.ins().uextend(I64, c)
    }
}
