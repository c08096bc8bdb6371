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

pub mod def;
pub mod dp_immediate;
pub mod dp_register;
pub mod expr;
pub mod fp_data_processing;
pub mod lang;
pub mod prim;
pub mod simd_across_lanes;
pub mod simd_shift_immediate;
pub mod simd_three_different;
pub mod simd_three_same;
pub mod simd_two_reg_misc;
pub mod text;
pub mod text_fp;

pub use def::{Def, Effect, ElemDef, Shape};
use std::sync::OnceLock;

/// Every definition, in the order the generators write them.
pub fn definitions() -> &'static [Def] {
    static ALL: OnceLock<Vec<Def>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = dp_immediate::definitions();
        all.extend(dp_register::definitions());
        all
    })
}

/// Every SIMD element function, in the order the generators write them.
pub fn element_definitions() -> &'static [ElemDef] {
    static ALL: OnceLock<Vec<ElemDef>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = simd_three_same::definitions();
        all.extend(simd_two_reg_misc::definitions());
        all.extend(simd_shift_immediate::definitions());
        all.extend(simd_three_different::definitions());
        all.extend(simd_across_lanes::definitions());
        all
    })
}

/// Every FP element function (FADD ... FRECPX), in the order the generators write them.
pub fn fp_definitions() -> &'static [fp_data_processing::FpDef] {
    static ALL: OnceLock<Vec<fp_data_processing::FpDef>> = OnceLock::new();
    ALL.get_or_init(fp_data_processing::definitions)
}

/// Each op's index in a table of definitions (`ops`, in the table's order), by op number.
fn index_by_op(ops: impl Iterator<Item = u16> + Clone) -> Vec<Option<usize>> {
    let top = ops.clone().map(|op| op as usize + 1).max().unwrap_or(0);
    let mut v = vec![None; top];
    for (i, op) in ops.enumerate() {
        v[op as usize] = Some(i);
    }
    v
}

/// The element function of micro-op `op`, if it has one here.
pub fn element_definition(op: u16) -> Option<&'static ElemDef> {
    static BY_OP: OnceLock<Vec<Option<usize>>> = OnceLock::new();
    let by_op = BY_OP.get_or_init(|| index_by_op(element_definitions().iter().map(|d| d.op)));
    let i = (*by_op.get(op as usize)?)?;
    Some(&element_definitions()[i])
}

/// The definition of micro-op `op`, if it has one here.
pub fn definition(op: u16) -> Option<&'static Def> {
    static BY_OP: OnceLock<Vec<Option<usize>>> = OnceLock::new();
    let by_op = BY_OP.get_or_init(|| index_by_op(definitions().iter().map(|d| d.op)));
    let i = (*by_op.get(op as usize)?)?;
    Some(&definitions()[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use expr::{Expr, Width};

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

    /// Each element function is defined once, is 64 bits wide, and is spelled in every
    /// language (the generators panic on an operation without a spelling).
    #[test]
    fn element_definitions_are_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for d in element_definitions() {
            assert!(seen.insert(d.op), "{} defined twice", d.name());
            assert!(
                definition(d.op).is_none(),
                "{} is also an integer op",
                d.name()
            );
            for v in d.exprs() {
                assert_eq!(v.width(), Width::X, "{}", d.name());
                check(v);
            }
        }
        let rust = text::rust_elements();
        let cuda = text::cuda_elements();
        let wgsl =
            text::wgsl_elements() + &text::wgsl_long_elements() + &text::wgsl_narrow_elements();
        for d in element_definitions() {
            assert!(
                rust.contains(&format!("ops::{} =>", d.name())),
                "{}",
                d.name()
            );
            assert!(
                cuda.contains(&format!("case OP_{}:", d.name())),
                "{}",
                d.name()
            );
            assert!(
                wgsl.contains(&format!("case OP_{}:", d.name())),
                "{}",
                d.name()
            );
        }
        // an accumulating op runs the three-operand loop, the others the two-operand one
        assert!(
            rust.contains("V_MLA => map3($st, $u, |o, x, y| o.wrapping_add("),
            "{rust}"
        );
        assert!(
            rust.contains("V_ADD => map2($st, $u, |x, y| x.wrapping_add(y))"),
            "{rust}"
        );
        assert!(
            cuda.contains("case OP_V_CMGT: return mask_if(esx(xx, e) > esx(y, e));"),
            "{cuda}"
        );
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
            Elem(_) => {}
            ElemSext(a) => {
                assert_eq!(a.width(), Width::X, "{e:?}");
                check(a)
            }
            OnesIf(_, a, b) | IfD(_, a, b) | IfDIs(_, a, b) => {
                assert_eq!((a.width(), b.width()), (Width::X, Width::X), "{e:?}");
                check(a);
                check(b)
            }
        }
    }
}
