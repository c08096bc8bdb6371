//! Each micro-op's meaning, written once.
//!
//! A definition ([`Def`]) says what a micro-op writes, as a typed expression over its
//! operands ([`expr`]): `wa() + wn() * wm()` is MADD of W registers. From the same table:
//! - [`text`] generates the CPU interpreter's Rust, the CUDA kernel's C and the WGSL shader's
//!   cases at build time (the crates' `build.rs`), so the three cannot drift apart;
//! - the Cranelift tier walks the trees when it translates (`armada-jit/src/defined.rs`).
//!
//! Why Rust values and not a DSL file: the definitions are type-checked by rustc (a W value
//! cannot meet an X value without `zext`/`sext`/`lo`), need no parser, and read as the
//! manual's pseudocode through operators; the generators are plain functions of the trees.
//! docs/semantics.md says which ops are defined here and which stay hand-written.

pub mod data_processing;
pub mod expr;
pub mod prim;
pub mod text;

use expr::{Bits, Expr, Width, V};
use std::sync::OnceLock;

/// One micro-op's meaning: it writes `rd` to register Rd (field a), a 32-bit value
/// zero-extended. Fields e and f are read only by primitives that say so.
#[derive(Clone, Debug)]
pub struct Def {
    /// The micro-op (`armada_isa::ops`).
    pub op: u16,
    /// What it does, in the manual's words.
    pub doc: &'static str,
    /// The value written to Rd.
    pub rd: Expr,
}

impl Def {
    pub fn new<T: Bits>(op: u16, doc: &'static str, rd: V<T>) -> Def {
        Def {
            op,
            doc,
            rd: rd.into_expr(),
        }
    }

    /// The width of what it writes.
    pub fn width(&self) -> Width {
        self.rd.width()
    }

    /// The micro-op's name (`MADD_W`).
    pub fn name(&self) -> &'static str {
        armada_isa::ops::name(self.op)
    }
}

/// Every definition, in the order the generators write them.
pub fn definitions() -> &'static [Def] {
    static ALL: OnceLock<Vec<Def>> = OnceLock::new();
    ALL.get_or_init(data_processing::definitions)
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
            check(&d.rd);
            assert_eq!(definition(d.op).unwrap().op, d.op);
        }
        assert!(definition(armada_isa::ops::NOP).is_none());
    }

    fn check(e: &Expr) {
        use expr::{Conv, Expr::*};
        match e {
            Reg(..) => {}
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
