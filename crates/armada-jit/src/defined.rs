//! The micro-ops armada-semantics defines, translated from their definitions: the trees are
//! walked into Cranelift IR when a block is translated, so an op added there runs translated
//! here without a lowering of its own. What the translator knows (the immediate, fields e
//! and f) is folded: constant subtrees become constants, a constant right operand an
//! immediate form, the shift type and extend option a choice made here, as a hand lowering
//! would make them. Flags go to this tier's lazy flags (`flags.rs`): a definition's
//! `a + !b + 1` is recorded as the subtraction it is.

use crate::translate::{host_mem, Tx, FPSR_OFF};
use armada_isa::ops::BY_ELEM;
use armada_isa::uop::sysreg::value::FPSR_QC;
use armada_isa::MicroOp;
use armada_semantics::expr::{Bin, Cmp, Conv, Expr, Lane, Operand, Un, Width};
use armada_semantics::Effect;
use armada_semantics::Shape;
use cranelift_codegen::ir::{condcodes::IntCC, types::I32, types::I64, InstBuilder, Value};

/// The element operands of a SIMD element function being translated, each where the
/// function reads it (none outside one).
#[derive(Default)]
struct Elems {
    n: Option<Value>,
    m: Option<Value>,
    d: Option<Value>,
}

impl Tx<'_> {
    /// Translates `u` as micro-op `op` (its own number, or the base op of a fused one) from
    /// its definition; false where it has none or uses a primitive this tier does not lower
    /// (the caller leaves it to the interpreter).
    pub(crate) fn defined(&mut self, op: u16, u: &MicroOp) -> bool {
        let Some(d) = armada_semantics::definition(op) else {
            return false;
        };
        if !d.values().into_iter().all(|e| lowerable(e, false)) {
            return false;
        }
        let wide = d.width() == Width::X;
        match &d.effect {
            Effect::Rd(v) => {
                let v = self.lower(v, u);
                self.dst(u.a, v, wide);
            }
            Effect::LogicFlags(v) => {
                let v = self.lower(v, u);
                self.logic_flags(u.a, v, wide);
            }
            Effect::AddFlags { a, b, carry, .. } => {
                let x = self.lower(a, u);
                match carry.fold(u.imm, u.e, u.f) {
                    Some(c) => {
                        let (y, sub) = self.addend(b, c != 0, u);
                        self.add_flags(u.a, x, y, sub, wide);
                    }
                    None => {
                        // (ADCS, SBCS: the carry is the flag)
                        let y = self.lower(b, u);
                        let c = self.carry();
                        self.adc_flags(u.a, x, y, c, wide);
                    }
                }
            }
            Effect::CondFlags { a, b, carry } => {
                let holds = self.cond(u.e);
                let x = self.lower(a, u);
                let c = carry
                    .fold(u.imm, u.e, u.f)
                    .expect("a conditional compare's carry in is a constant");
                let (y, sub) = self.addend(b, c != 0, u);
                self.cond_flags(holds, (u.f as u64 & 15) << 28, x, y, sub, wide);
            }
        }
        true
    }

    /// The right operand of `a + b + carry` for this tier's flags, which record an addition
    /// or a subtraction: `b` (carry 0), or with carry 1 the `y` of `a - y` = `a + !y + 1`.
    fn addend(&mut self, b: &Expr, carry: bool, u: &MicroOp) -> (Value, bool) {
        if !carry {
            return (self.lower(b, u), false);
        }
        let y = if let Expr::Un(Un::Not, _, y) = b {
            self.lower(y, u)
        } else if let Some(v) = b.fold(u.imm, u.e, u.f) {
            // (SUBS immediate: the decoder inverted the immediate; y is the one written)
            self.b
                .ins()
                .iconst(ty(b.width()), mask(!v, b.width()) as i64)
        } else {
            let v = self.lower(b, u);
            self.b.ins().bnot(v)
        };
        (y, true)
    }

    fn lower(&mut self, e: &Expr, u: &MicroOp) -> Value {
        self.lower_in(e, u, &Elems::default())
    }

    /// `e` as IR, its element operands (a SIMD element function's) those of `env`.
    fn lower_in(&mut self, e: &Expr, u: &MicroOp, env: &Elems) -> Value {
        if !matches!(e, Expr::Const(..)) {
            if let Some(v) = e.fold(u.imm, u.e, u.f) {
                return self.b.ins().iconst(ty(e.width()), v as i64);
            }
        }
        match e {
            Expr::Reg(r, w) => {
                let field = match r {
                    Operand::B => u.b,
                    Operand::C => u.c,
                    Operand::D => u.d,
                };
                self.src(field, *w == Width::X)
            }
            Expr::Const(v, w) => self.b.ins().iconst(ty(*w), *v as i64),
            Expr::Imm(_) | Expr::Field(..) => unreachable!("folded above"),
            Expr::Carry(w) => {
                let c = self.carry();
                narrow(self, c, *w)
            }
            Expr::Shifted(a) => {
                let v = self.lower_in(a, u, env);
                self.shift(v, u.e, u.f, a.width().bits())
            }
            Expr::Extended(a) => {
                let v = self.lower_in(a, u, env);
                self.extend(v, u.e, u.f)
            }
            Expr::IfGe(v) => {
                // (folded above where the comparison is known, as for the bitfield moves)
                let l = self.lower_in(&v[0], u, env);
                let r = self.lower_in(&v[1], u, env);
                let ge = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, l, r);
                let x = self.lower_in(&v[2], u, env);
                let y = self.lower_in(&v[3], u, env);
                self.b.ins().select(ge, x, y)
            }
            Expr::IfCond(a, b) => {
                let holds = self.cond(u.e);
                let x = self.lower_in(a, u, env);
                let y = self.lower_in(b, u, env);
                self.b.ins().select(holds, x, y)
            }
            Expr::Un(op, _, a) => {
                let a = self.lower_in(a, u, env);
                let ins = self.b.ins();
                match op {
                    Un::Not => ins.bnot(a),
                    Un::Neg => ins.ineg(a),
                    Un::Clz => ins.clz(a),
                    Un::Rbit => ins.bitrev(a),
                    Un::Rev => ins.bswap(a),
                    Un::Popcnt => ins.popcnt(a),
                }
            }
            Expr::Bin(op, w, a, b) => {
                // (a NOT on the right of AND, OR, EOR is the host's and-not, or-not, xor-not)
                if let (Bin::And | Bin::Or | Bin::Xor, Expr::Un(Un::Not, _, nb)) = (op, &**b) {
                    if nb.fold(u.imm, u.e, u.f).is_none() {
                        let x = self.lower_in(a, u, env);
                        let y = self.lower_in(nb, u, env);
                        let ins = self.b.ins();
                        return match op {
                            Bin::And => ins.band_not(x, y),
                            Bin::Or => ins.bor_not(x, y),
                            _ => ins.bxor_not(x, y),
                        };
                    }
                }
                // two left shifts by constants as one (EXTR's), all out when they reach the width
                if let (Bin::Lsl, Expr::Bin(Bin::Lsl, _, inner, c1)) = (op, &**a) {
                    let bits = w.bits() as u64;
                    if let (Some(c1), Some(c2)) =
                        (c1.fold(u.imm, u.e, u.f), b.fold(u.imm, u.e, u.f))
                    {
                        let n = c1 % bits + c2 % bits;
                        if n >= bits {
                            return self.b.ins().iconst(ty(*w), 0);
                        }
                        let v = self.lower_in(inner, u, env);
                        return self.b.ins().ishl_imm_s(v, n as i64);
                    }
                }
                let x = self.lower_in(a, u, env);
                if let Some(c) = b.fold(u.imm, u.e, u.f) {
                    if let Some(v) = self.bin_imm(*op, *w, x, c) {
                        return v;
                    }
                }
                let y = self.lower_in(b, u, env);
                self.bin(*op, *w, x, y)
            }
            Expr::Conv(c, a) => {
                let a = self.lower_in(a, u, env);
                match c {
                    Conv::Zext => self.b.ins().uextend(I64, a),
                    Conv::Sext => self.b.ins().sextend(I64, a),
                    Conv::Lo => self.b.ins().ireduce(I32, a),
                }
            }
            Expr::Elem(l) => match l {
                Lane::N => env.n,
                Lane::M => env.m,
                Lane::D => env.d,
                Lane::W => None,
            }
            .expect("an element operand the op reads (checked by lowerable)"),
            // (field d's variants are known here: only the chosen value is translated)
            Expr::IfD(bit, a, b) => {
                let v = if u.d & bit != 0 { a } else { b };
                self.lower_in(v, u, env)
            }
            Expr::IfDIs(n, a, b) => {
                let v = if u.d == *n { a } else { b };
                self.lower_in(v, u, env)
            }
            Expr::ElemSext(a) => {
                let v = self.lower_in(a, u, env);
                self.elem_sext(v, u.e)
            }
            Expr::OnesIf(c, a, b) => {
                let mut x = self.lower_in(a, u, env);
                let mut y = self.lower_in(b, u, env);
                if matches!(c, Cmp::Gt | Cmp::Ge) {
                    x = self.elem_sext(x, u.e);
                    y = self.elem_sext(y, u.e);
                }
                let cc = match c {
                    Cmp::Eq => IntCC::Equal,
                    Cmp::Ne => IntCC::NotEqual,
                    Cmp::Hi => IntCC::UnsignedGreaterThan,
                    Cmp::Hs => IntCC::UnsignedGreaterThanOrEqual,
                    Cmp::Gt => IntCC::SignedGreaterThan,
                    Cmp::Ge => IntCC::SignedGreaterThanOrEqual,
                };
                let t = self.b.ins().icmp(cc, x, y);
                let t = self.b.ins().uextend(I64, t);
                self.b.ins().ineg(t)
            }
            Expr::Prim(..) => unreachable!("checked by lowerable"),
        }
    }

    /// `u`, a SIMD element function of armada-semantics' of the plain shape (`Shape::Same`:
    /// ADD, SQADD, SSHL, SDOT ...) on words or doublewords, from its definition, an element
    /// at a time in the host's general registers: the tier's vector lowerings (`vec_int`)
    /// come first, and this takes what they leave, which went to the interpreter's code
    /// through a call. Bytes and halfwords stay there: 8 or 16 elements of a tree each would
    /// be more code to compile than the call saves. False leaves `u` to the caller.
    pub(crate) fn elem_defined(&mut self, u: &MicroOp) -> bool {
        let Some(d) = armada_semantics::element_definition(u.op) else {
            return false;
        };
        if d.shape != Shape::Same
            || !(2..=3).contains(&u.e)
            || !(u.e..=4).contains(&u.f)
            || !d.exprs().all(|e| lowerable(e, true))
        {
            return false;
        }
        let count = 1u64 << (u.f - u.e);
        let m_at = |i: u64| {
            if u.imm & BY_ELEM != 0 {
                u.imm & 15
            } else {
                i
            }
        };
        // every element's value first (Vd may be Vn or Vm), then the stores
        let mut values = Vec::with_capacity(count as usize);
        let mut saturated: Option<Value> = None;
        for i in 0..count {
            let env = Elems {
                n: d.reads_n().then(|| self.element(u.b, u.e, i)),
                m: d.reads_m().then(|| self.element(u.c, u.e, m_at(i))),
                d: d.reads_d().then(|| self.element(u.a, u.e, i)),
            };
            values.push(self.lower_in(&d.value, u, &env));
            if let Some(s) = &d.saturated {
                let s = self.lower_in(s, u, &env);
                saturated = Some(match saturated {
                    Some(t) => self.b.ins().bor(t, s),
                    None => s,
                });
            }
        }
        for (i, v) in values.into_iter().enumerate() {
            self.set_element(u.a, u.e, i as u64, v);
        }
        // the bytes of Vd above the elements are 0
        let zero = self.b.ins().iconst(I64, 0);
        let mut at = (count << u.e) as i32;
        while at < 16 {
            let c = self.ctx();
            let off = Self::v_off(u.a) + at;
            if at % 8 == 4 {
                self.b.ins().istore32(host_mem(), zero, c, off);
                at += 4;
            } else {
                self.b.ins().store(host_mem(), zero, c, off);
                at += 8;
            }
        }
        if let Some(s) = saturated {
            // FPSR.QC where any element saturated
            let any = self.b.ins().icmp_imm_u(IntCC::NotEqual, s, 0);
            let qc = self.b.ins().iconst(I64, FPSR_QC as i64);
            let q = self.b.ins().select(any, qc, zero);
            let fpsr = self.load_state(FPSR_OFF);
            let fpsr = self.b.ins().bor(fpsr, q);
            self.store_state(fpsr, FPSR_OFF);
        }
        true
    }

    /// The element of 2^e bytes at the bottom of `v`, sign-extended to 64 bits.
    fn elem_sext(&mut self, v: Value, e: u8) -> Value {
        let by = 64 - (8i64 << e);
        if by == 0 {
            return v;
        }
        let v = self.b.ins().ishl_imm_s(v, by);
        self.b.ins().sshr_imm_s(v, by)
    }

    /// `x op c` with the constant as an immediate, where Cranelift has that form.
    fn bin_imm(&mut self, op: Bin, w: Width, x: Value, c: u64) -> Option<Value> {
        let ins = self.b.ins();
        let n = (c & (w.bits() as u64 - 1)) as i64;
        // (a 32-bit immediate as Cranelift keeps one: sign-extended from its width)
        let k = if w == Width::W {
            c as u32 as i32 as i64
        } else {
            c as i64
        };
        Some(match op {
            Bin::Add => ins.iadd_imm_s(x, k),
            Bin::Sub => ins.iadd_imm_s(x, k.wrapping_neg()),
            Bin::And => ins.band_imm_s(x, k),
            Bin::Or => ins.bor_imm_s(x, k),
            Bin::Xor => ins.bxor_imm_s(x, k),
            Bin::Lsl => ins.ishl_imm_s(x, n),
            Bin::Lsr => ins.ushr_imm_s(x, n),
            Bin::Asr => ins.sshr_imm_s(x, n),
            Bin::Ror => ins.rotr_imm_s(x, n),
            _ => return None,
        })
    }

    fn bin(&mut self, op: Bin, w: Width, x: Value, y: Value) -> Value {
        // Cranelift's shifts and rotates take the amount modulo the width, as these do
        match op {
            Bin::Add => self.b.ins().iadd(x, y),
            Bin::Sub => self.b.ins().isub(x, y),
            Bin::Mul => self.b.ins().imul(x, y),
            Bin::And => self.b.ins().band(x, y),
            Bin::Or => self.b.ins().bor(x, y),
            Bin::Xor => self.b.ins().bxor(x, y),
            Bin::Lsl => self.b.ins().ishl(x, y),
            Bin::Lsr => self.b.ins().ushr(x, y),
            Bin::Asr => self.b.ins().sshr(x, y),
            Bin::Ror => self.b.ins().rotr(x, y),
            Bin::Umulh => self.b.ins().umulhi(x, y),
            Bin::Smulh => self.b.ins().smulhi(x, y),
            Bin::Udiv | Bin::Sdiv => self.divide(op == Bin::Sdiv, w, x, y),
        }
    }

    /// Division as the guest has it: the host traps on a zero divisor and on MIN / -1,
    /// where the guest gets 0 and MIN.
    fn divide(&mut self, signed: bool, w: Width, n: Value, m: Value) -> Value {
        let one = self.b.ins().iconst(ty(w), 1);
        let zero = self.b.ins().iconst(ty(w), 0);
        let is_zero = self.b.ins().icmp_imm_u(IntCC::Equal, m, 0);
        if signed {
            let is_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, m, -1);
            let special = self.b.ins().bor(is_zero, is_m1);
            let safe = self.b.ins().select(special, one, m);
            let q = self.b.ins().sdiv(n, safe);
            let neg = self.b.ins().ineg(n);
            let q = self.b.ins().select(is_m1, neg, q);
            self.b.ins().select(is_zero, zero, q)
        } else {
            let safe = self.b.ins().select(is_zero, one, m);
            let q = self.b.ins().udiv(n, safe);
            self.b.ins().select(is_zero, zero, q)
        }
    }
}

fn ty(w: Width) -> cranelift_codegen::ir::Type {
    match w {
        Width::W => I32,
        Width::X => I64,
    }
}

/// `v` within width `w`.
fn mask(v: u64, w: Width) -> u64 {
    match w {
        Width::W => v as u32 as u64,
        Width::X => v,
    }
}

/// The 64-bit `v` at width `w`.
fn narrow(tx: &mut Tx<'_>, v: Value, w: Width) -> Value {
    match w {
        Width::W => tx.b.ins().ireduce(I32, v),
        Width::X => v,
    }
}

/// Whether this tier lowers every operation of `e` (primitives it leaves to the
/// interpreter: CRC32's table walk); the element operands and field d's choices only in an
/// element function (`elements`).
fn lowerable(e: &Expr, elements: bool) -> bool {
    let all = |v: &[&Expr]| v.iter().all(|c| lowerable(c, elements));
    match e {
        Expr::Reg(..) | Expr::Carry(_) => !elements,
        Expr::Const(..) | Expr::Imm(_) | Expr::Field(..) => true,
        Expr::Un(_, _, a) | Expr::Conv(_, a) => all(&[a.as_ref()]),
        Expr::Shifted(a) | Expr::Extended(a) => !elements && all(&[a.as_ref()]),
        Expr::IfCond(a, b) => !elements && all(&[a.as_ref(), b.as_ref()]),
        Expr::Bin(_, _, a, b) => all(&[a.as_ref(), b.as_ref()]),
        Expr::IfGe(v) => v.iter().all(|c| lowerable(c, elements)),
        Expr::Elem(l) => elements && *l != Lane::W,
        Expr::OnesIf(_, a, b) | Expr::IfD(_, a, b) | Expr::IfDIs(_, a, b) => {
            elements && all(&[a.as_ref(), b.as_ref()])
        }
        Expr::ElemSext(a) => elements && all(&[a.as_ref()]),
        Expr::Prim(..) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::lowerable;

    /// Every definition runs translated, but those of a primitive this tier leaves to the
    /// interpreter (CRC32's table walk): an op added to armada-semantics is translated from
    /// its first day, not run through the interpreter without a word.
    #[test]
    fn every_definition_is_translated_but_crc32() {
        let left: Vec<&str> = armada_semantics::definitions()
            .iter()
            .filter(|d| !d.values().into_iter().all(|e| lowerable(e, false)))
            .map(|d| d.name())
            .collect();
        assert_eq!(left, ["CRC32"]);
    }

    /// Every element function of the plain shape is translated (on words and doublewords)
    /// from its definition where no vector lowering takes it: none is left to a primitive.
    #[test]
    fn every_plain_element_function_is_translated() {
        let same: Vec<_> = armada_semantics::element_definitions()
            .iter()
            .filter(|d| d.shape == armada_semantics::Shape::Same)
            .collect();
        assert!(same.len() > 30, "{} element functions", same.len());
        let left: Vec<&str> = same
            .iter()
            .filter(|d| !d.exprs().all(|e| lowerable(e, true)))
            .map(|d| d.name())
            .collect();
        assert_eq!(left, Vec::<&str>::new());
    }
}
