//! The micro-ops armada-semantics defines, translated from their definitions: the tree of
//! each is walked into Cranelift IR, so an op added there runs translated here without a
//! hand lowering (alu.rs keeps hand lowerings only for ops defined nowhere else).

use crate::translate::Tx;
use armada_isa::MicroOp;
use armada_semantics::expr::{Bin, Conv, Expr, Operand, Un, Width};
use cranelift_codegen::ir::{condcodes::IntCC, types::I32, types::I64, InstBuilder, Value};

impl Tx<'_> {
    /// Translates `u` from its definition; false where it has none or uses a primitive this
    /// tier does not lower (the caller leaves it to the interpreter).
    pub(crate) fn defined(&mut self, u: &MicroOp) -> bool {
        let Some(d) = armada_semantics::definition(u.op) else {
            return false;
        };
        if !lowerable(&d.rd) {
            return false;
        }
        let v = self.lower(&d.rd, u);
        self.dst(u.a, v, d.width() == Width::X);
        true
    }

    fn lower(&mut self, e: &Expr, u: &MicroOp) -> Value {
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
            Expr::Un(op, _, a) => {
                let a = self.lower(a, u);
                let ins = self.b.ins();
                match op {
                    Un::Not => ins.bnot(a),
                    Un::Neg => ins.ineg(a),
                    Un::Clz => ins.clz(a),
                    Un::Rbit => ins.bitrev(a),
                    Un::Rev => ins.bswap(a),
                }
            }
            Expr::Bin(op, w, a, b) => {
                let x = self.lower(a, u);
                // a constant right operand as an immediate, as a hand lowering writes it
                if let Expr::Const(c, _) = **b {
                    if let Some(v) = self.bin_imm(*op, *w, x, c) {
                        return v;
                    }
                }
                let y = self.lower(b, u);
                self.bin(*op, *w, x, y)
            }
            Expr::Conv(c, a) => {
                let a = self.lower(a, u);
                match c {
                    Conv::Zext => self.b.ins().uextend(I64, a),
                    Conv::Sext => self.b.ins().sextend(I64, a),
                    Conv::Lo => self.b.ins().ireduce(I32, a),
                }
            }
            Expr::Prim(..) => unreachable!("checked by lowerable"),
        }
    }

    /// `x op c` with the constant as an immediate, where Cranelift has that form.
    fn bin_imm(&mut self, op: Bin, w: Width, x: Value, c: u64) -> Option<Value> {
        let ins = self.b.ins();
        let n = (c & (w.bits() as u64 - 1)) as i64;
        Some(match op {
            Bin::Add => ins.iadd_imm_s(x, c as i64),
            Bin::Sub => ins.iadd_imm_s(x, (c as i64).wrapping_neg()),
            Bin::And => ins.band_imm_s(x, c as i64),
            Bin::Or => ins.bor_imm_s(x, c as i64),
            Bin::Xor => ins.bxor_imm_s(x, c as i64),
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

/// Whether this tier lowers every operation of `e` (primitives it leaves to the
/// interpreter: CRC32's table walk).
fn lowerable(e: &Expr) -> bool {
    match e {
        Expr::Reg(..) | Expr::Const(..) => true,
        Expr::Un(_, _, a) | Expr::Conv(_, a) => lowerable(a),
        Expr::Bin(_, _, a, b) => lowerable(a) && lowerable(b),
        Expr::Prim(..) => false,
    }
}
