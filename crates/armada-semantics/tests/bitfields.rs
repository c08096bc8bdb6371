//! The bitfield moves' definitions (two shifts chosen by comparing immr and imms) against
//! the manual's formulation, written as the interpreter had it before (UBFX/UBFIZ, SBFX/SBFIZ,
//! BFXIL/BFI by cases, with masks of the field's width), over random fields and registers.
//! The definitions are evaluated by `Expr::fold` with the registers put in as constants.

use armada_isa::ops::*;
use armada_semantics::expr::{Expr, Operand};
use proptest::prelude::*;

fn ones(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

fn sext(v: u64, width: u32) -> u64 {
    if width >= 64 {
        v
    } else {
        (((v << (64 - width)) as i64) >> (64 - width)) as u64
    }
}

fn ubfm(src: u64, r: u32, s: u32, size: u32) -> u64 {
    let src = src & ones(size);
    if s >= r {
        (src >> r) & ones(s - r + 1)
    } else {
        ((src & ones(s + 1)) << (size - r)) & ones(size)
    }
}

fn sbfm(src: u64, r: u32, s: u32, size: u32) -> u64 {
    let src = src & ones(size);
    let v = if s >= r {
        sext((src >> r) & ones(s - r + 1), s - r + 1)
    } else {
        sext(src & ones(s + 1), s + 1) << (size - r)
    };
    v & ones(size)
}

fn bfm(dst: u64, src: u64, r: u32, s: u32, size: u32) -> u64 {
    let v = if s >= r {
        let w = s - r + 1;
        (dst & !ones(w)) | ((src >> r) & ones(w))
    } else {
        let w = s + 1;
        let pos = size - r;
        (dst & !(ones(w) << pos)) | ((src & ones(w)) << pos)
    };
    v & ones(size)
}

/// `e` with registers Rn = `n` and Rm = `m` (at their widths), as constants.
fn with_regs(e: &Expr, n: u64, m: u64) -> Expr {
    use Expr::*;
    let b = |x: &Expr| Box::new(with_regs(x, n, m));
    match e {
        Reg(r, w) => {
            let v = if *r == Operand::B { n } else { m };
            let v = if *w == armada_semantics::expr::Width::W {
                v as u32 as u64
            } else {
                v
            };
            Const(v, *w)
        }
        Const(..) | Imm(_) | Field(..) | Carry(_) | Elem(_) => e.clone(),
        Un(o, w, a) => Un(*o, *w, b(a)),
        Bin(o, w, x, y) => Bin(*o, *w, b(x), b(y)),
        Conv(c, a) => Conv(*c, b(a)),
        Shifted(a) => Shifted(b(a)),
        Extended(a) => Extended(b(a)),
        IfCond(x, y) => IfCond(b(x), b(y)),
        IfGe(v) => IfGe(Box::new(v.clone().map(|x| with_regs(&x, n, m)))),
        Prim(p, args) => Prim(*p, args.iter().map(|x| with_regs(x, n, m)).collect()),
        OnesIf(c, x, y) => OnesIf(*c, b(x), b(y)),
        IfD(k, x, y) => IfD(*k, b(x), b(y)),
        IfDIs(k, x, y) => IfDIs(*k, b(x), b(y)),
        ElemSext(a) => ElemSext(b(a)),
    }
}

fn run(op: u16, n: u64, m: u64, r: u32, s: u32) -> u64 {
    let d = armada_semantics::definition(op).unwrap();
    let armada_semantics::Effect::Rd(v) = &d.effect else {
        panic!("{} writes Rd", d.name())
    };
    with_regs(v, n, m)
        .fold(0, r as u8, s as u8)
        .unwrap_or_else(|| panic!("{} folds", d.name()))
}

proptest! {
    #[test]
    fn bitfield_moves_match_the_manual(n: u64, dst: u64, r in 0u32..64, s in 0u32..64, wide: bool) {
        let size = if wide { 64 } else { 32 };
        let (r, s) = (r % size, s % size);
        let (u, sb, b) = if wide { (UBFM_X, SBFM_X, BFM_X) } else { (UBFM_W, SBFM_W, BFM_W) };
        prop_assert_eq!(run(u, n, 0, r, s), ubfm(n, r, s, size), "UBFM r={} s={}", r, s);
        prop_assert_eq!(run(sb, n, 0, r, s), sbfm(n, r, s, size), "SBFM r={} s={}", r, s);
        // (BFM reads Rd from field c)
        prop_assert_eq!(run(b, n, dst, r, s), bfm(dst, n, r, s, size), "BFM r={} s={}", r, s);
    }

    #[test]
    fn extract_matches_the_manual(n: u64, m: u64, lsb in 0u32..64, wide: bool) {
        let (op, want) = if wide {
            (EXTR_X, if lsb == 0 { m } else { (m >> lsb) | (n << (64 - lsb)) })
        } else {
            let lsb = lsb % 32;
            let v = ((n as u32 as u64) << 32) | (m as u32 as u64);
            return {
                prop_assert_eq!(run(EXTR_W, n, m, lsb, 0), (v >> lsb) & 0xffff_ffff);
                Ok(())
            };
        };
        prop_assert_eq!(run(op, n, m, lsb, 0), want, "lsb={}", lsb);
    }
}
