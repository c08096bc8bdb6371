//! Each micro-op's meaning, written once.
//!
//! A definition ([`Def`]) says what a micro-op writes ([`Effect`]: Rd, the flags), as typed
//! expressions over its operands ([`expr`]): `wa() + wn() * wm()` is MADD of W registers. From the same table:
//! - [`text`] generates the CPU interpreter's Rust, the CUDA kernel's C and the WGSL shader's
//!   cases at build time (the crates' `build.rs`), so the three cannot drift apart;
//! - the Cranelift tier walks the trees when it translates (`armada-jit/src/defined.rs`).
//!
//! Why Rust values and not a DSL file: the definitions are type-checked by rustc (a W value
//! cannot meet an X value without `zext`/`sext`/`lo`), need no parser, and read as the
//! manual's pseudocode through operators; the generators are plain functions of the trees.
//! docs/semantics.md says which ops are defined here and which stay hand-written.

pub mod dp_immediate;
pub mod dp_register;
pub mod expr;
pub mod prim;
pub mod text;

use expr::{Bits, Expr, Width, V};
use std::sync::OnceLock;

/// What a micro-op does to the registers and flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Rd (field a) = the value, a 32-bit one zero-extended.
    Rd(Expr),
    /// Rd = a + b + carry, and NZCV = that addition's flags (ADDS; SUBS as a + !b + 1; ADCS,
    /// SBCS with the carry flag). `compare`: a compare, which CmpLog records (ADCS and SBCS
    /// are not).
    AddFlags {
        a: Expr,
        b: Expr,
        carry: Expr,
        compare: bool,
    },
    /// Rd = the value, and NZCV = its N and Z with C and V clear (ANDS, BICS).
    LogicFlags(Expr),
    /// NZCV = the flags of a + b + carry if the condition in field e holds, else field f
    /// (CCMP, CCMN). Writes no register.
    CondFlags { a: Expr, b: Expr, carry: Expr },
}

/// One micro-op's meaning.
#[derive(Clone, Debug)]
pub struct Def {
    /// The micro-op (`armada_isa::ops`).
    pub op: u16,
    /// What it does, in the manual's words.
    pub doc: &'static str,
    pub effect: Effect,
}

impl Def {
    /// Rd = `rd`.
    pub fn new<T: Bits>(op: u16, doc: &'static str, rd: V<T>) -> Def {
        Def {
            op,
            doc,
            effect: Effect::Rd(rd.into_expr()),
        }
    }

    /// Rd = `a + b + carry`, NZCV its flags; a compare unless the carry is the flag.
    pub fn add_flags<T: Bits>(op: u16, doc: &'static str, a: V<T>, b: V<T>, carry: V<T>) -> Def {
        let carry = carry.into_expr();
        Def {
            op,
            doc,
            effect: Effect::AddFlags {
                a: a.into_expr(),
                b: b.into_expr(),
                compare: !matches!(carry, Expr::Carry(_)),
                carry,
            },
        }
    }

    /// Rd = `v`, NZCV its N and Z.
    pub fn logic_flags<T: Bits>(op: u16, doc: &'static str, v: V<T>) -> Def {
        Def {
            op,
            doc,
            effect: Effect::LogicFlags(v.into_expr()),
        }
    }

    /// NZCV = the flags of `a + b + carry` where the condition in e holds, else field f.
    pub fn cond_flags<T: Bits>(op: u16, doc: &'static str, a: V<T>, b: V<T>, carry: V<T>) -> Def {
        Def {
            op,
            doc,
            effect: Effect::CondFlags {
                a: a.into_expr(),
                b: b.into_expr(),
                carry: carry.into_expr(),
            },
        }
    }

    /// The width it computes at.
    pub fn width(&self) -> Width {
        match &self.effect {
            Effect::Rd(v) | Effect::LogicFlags(v) => v.width(),
            Effect::AddFlags { a, .. } | Effect::CondFlags { a, .. } => a.width(),
        }
    }

    /// Every value it computes.
    pub fn values(&self) -> Vec<&Expr> {
        match &self.effect {
            Effect::Rd(v) | Effect::LogicFlags(v) => vec![v],
            Effect::AddFlags { a, b, carry, .. } | Effect::CondFlags { a, b, carry } => {
                vec![a, b, carry]
            }
        }
    }

    /// The micro-op's name (`MADD_W`).
    pub fn name(&self) -> &'static str {
        armada_isa::ops::name(self.op)
    }
}

/// Every definition, in the order the generators write them.
pub fn definitions() -> &'static [Def] {
    static ALL: OnceLock<Vec<Def>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = dp_immediate::definitions();
        all.extend(dp_register::definitions());
        all
    })
}

/// The definition of micro-op `op`, if it has one here.
pub fn definition(op: u16) -> Option<&'static Def> {
    static BY_OP: OnceLock<Vec<Option<usize>>> = OnceLock::new();
    let by_op = BY_OP.get_or_init(|| {
        let all = definitions();
        let top = all.iter().map(|d| d.op as usize + 1).max().unwrap_or(0);
        let mut v = vec![None; top];
        for (i, d) in all.iter().enumerate() {
            v[d.op as usize] = Some(i);
        }
        v
    });
    let i = (*by_op.get(op as usize)?)?;
    Some(&definitions()[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each op is defined once, and every definition's operands have the widths its
    /// operations take (the typed front makes this so; the check guards the trees).
    #[test]
    fn definitions_are_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for d in definitions() {
            assert!(seen.insert(d.op), "{} defined twice", d.name());
            assert_ne!(d.name(), "?", "op {} has no name", d.op);
            let w = d.width();
            for v in d.values() {
                assert_eq!(v.width(), w, "{}: {v:?}", d.name());
                check(v);
            }
            assert_eq!(definition(d.op).unwrap().op, d.op);
        }
        assert!(definition(armada_isa::ops::NOP).is_none());
    }

    fn check(e: &Expr) {
        use expr::{Conv, Expr::*};
        match e {
            Reg(..) | Imm(_) | Field(..) | Carry(_) => {}
            Shifted(a) => check(a),
            Extended(a) => {
                assert_eq!(a.width(), Width::X, "{e:?}");
                check(a)
            }
            IfCond(a, b) => {
                assert_eq!(a.width(), b.width(), "{e:?}");
                check(a);
                check(b)
            }
            IfGe(v) => {
                assert_eq!(v[0].width(), v[1].width(), "{e:?}");
                assert_eq!(v[2].width(), v[3].width(), "{e:?}");
                v.iter().for_each(check)
            }
            Const(v, w) => assert!(*w == Width::X || *v >> 32 == 0, "{e:?}"),
            Un(_, w, a) => {
                assert_eq!(a.width(), *w, "{e:?}");
                check(a)
            }
            Bin(_, w, a, b) => {
                assert_eq!((a.width(), b.width()), (*w, *w), "{e:?}");
                check(a);
                check(b)
            }
            Conv(c, a) => {
                let from = if *c == Conv::Lo { Width::X } else { Width::W };
                assert_eq!(a.width(), from, "{e:?}");
                check(a)
            }
            Prim(p, args) => {
                let (takes, _) = p.signature();
                let got: Vec<Width> = args.iter().map(Expr::width).collect();
                assert_eq!(got, takes, "{e:?}");
                args.iter().for_each(check)
            }
        }
    }
}
