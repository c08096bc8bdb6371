//! The generators of the FP element functions (`fp_data_processing.rs`): each operation's
//! spelling in each language is one row of [`FP_SPELLINGS`], as `text::SPELLINGS` is for the
//! integer ones. The arithmetic behind each spelling is the engine's own FP code.

use crate::fp_data_processing::{FpCmp, FpDef, FpExpr, FpOp};
use crate::fp_definitions;
use crate::lang::{any_of, fill, Lang, HEADER};

/// How each language spells each FP operation; `{0}` and `{1}` are the operands.
/// - Rust (the interpreter's `cpu/fp/float.rs`): generic in `T`, f32 or f64 as field e says;
///   the caller of `match_with_elements` names the FP context `$cx` and the flags `$fl`.
/// - CUDA (`f_elem` in simd.cu): templates in `E`; `fl` the flags, `ok` false where the
///   kernel leaves the element to the host (a NaN, a result it cannot round exactly).
/// - WGSL (`fp_one` in fp.wgsl): the element size `e` an argument.
#[rustfmt::skip]
pub const FP_SPELLINGS: &[(FpOp, [&str; 3])] = &[
    (FpOp::Add, ["float::add::<T>({0}, {1}, $cx, &mut $fl)", "f_add<E>({0}, {1}, false, fl, ok)", "fp_addsub(e, {0}, {1}, false)"]),
    (FpOp::Sub, ["float::sub::<T>({0}, {1}, $cx, &mut $fl)", "f_add<E>({0}, {1}, true, fl, ok)", "fp_addsub(e, {0}, {1}, true)"]),
    (FpOp::Mul, ["float::mul::<T>({0}, {1}, $cx, &mut $fl)", "f_mul<E>({0}, {1}, fl, ok)", "fp_mul(e, {0}, {1}, false)"]),
    (FpOp::MulX, ["float::mulx::<T>({0}, {1}, $cx, &mut $fl)", "f_mulx<E>({0}, {1}, fl, ok)", "fp_mul(e, {0}, {1}, true)"]),
    (FpOp::Div, ["float::div::<T>({0}, {1}, $cx, &mut $fl)", "f_div<E>({0}, {1}, fl, ok)", "fp_div(e, {0}, {1})"]),
    (FpOp::Max, ["float::max::<T>({0}, {1}, $cx, &mut $fl)", "f_maxmin<E>(OP_F_MAX, {0}, {1}, ok)", "fp_maxmin(e, {0}, {1}, true, false)"]),
    (FpOp::Min, ["float::min::<T>({0}, {1}, $cx, &mut $fl)", "f_maxmin<E>(OP_F_MIN, {0}, {1}, ok)", "fp_maxmin(e, {0}, {1}, false, false)"]),
    (FpOp::MaxNum, ["float::maxnm::<T>({0}, {1}, $cx, &mut $fl)", "f_maxmin<E>(OP_F_MAXNM, {0}, {1}, ok)", "fp_maxmin(e, {0}, {1}, true, true)"]),
    (FpOp::MinNum, ["float::minnm::<T>({0}, {1}, $cx, &mut $fl)", "f_maxmin<E>(OP_F_MINNM, {0}, {1}, ok)", "fp_maxmin(e, {0}, {1}, false, true)"]),
    (FpOp::RecipStep, ["float::recps::<T>({0}, {1}, $cx, &mut $fl)", "f_recps<E>({0}, {1}, fl, ok)", "fp_fused(e, 0lu, {0}, {1}, 1u)"]),
    (FpOp::RSqrtStep, ["float::rsqrts::<T>({0}, {1}, $cx, &mut $fl)", "f_rsqrts<E>({0}, {1}, fl, ok)", "fp_fused(e, 0lu, {0}, {1}, 2u)"]),
    (FpOp::Sqrt, ["float::sqrt::<T>({0}, $cx, &mut $fl)", "f_sqrt<E>({0}, fl, ok)", "fp_sqrt(e, {0})"]),
    (FpOp::RecipEstimate, ["float::recpe::<T>({0}, $cx, &mut $fl)", "f_recpe<E>({0}, fl, ok)", "fp_recpe(e, {0})"]),
    (FpOp::RSqrtEstimate, ["float::rsqrte::<T>({0}, $cx, &mut $fl)", "f_rsqrte<E>({0}, fl, ok)", "fp_rsqrte(e, {0})"]),
    (FpOp::RecipExponent, ["float::recpx::<T>({0}, $cx, &mut $fl)", "f_recpx<E>({0}, ok)", "fp_recpx(e, {0})"]),
];

/// The compares, as masks: Rust's `float::cmp_*` (a bool), the kernel's on its floats once
/// both are ordered, the shader's `fp_cmp(e, a, b, eq, ge)`.
#[rustfmt::skip]
const CMP_SPELLINGS: &[(FpCmp, [&str; 3])] = &[
    (FpCmp::Eq, ["(if float::cmp_eq::<T>({0}, {1}, $cx, &mut $fl) { u64::MAX } else { 0 })", "(f_ordered<E>({0}, {1}, ok) ? mask_if(fv<E>({0}) == fv<E>({1})) : 0)", "fp_cmp(e, {0}, {1}, true, false)"]),
    (FpCmp::Ge, ["(if float::cmp_ge::<T>({0}, {1}, $cx, &mut $fl) { u64::MAX } else { 0 })", "(f_ordered<E>({0}, {1}, ok) ? mask_if(fv<E>({0}) >= fv<E>({1})) : 0)", "fp_cmp(e, {0}, {1}, false, true)"]),
    (FpCmp::Gt, ["(if float::cmp_gt::<T>({0}, {1}, $cx, &mut $fl) { u64::MAX } else { 0 })", "(f_ordered<E>({0}, {1}, ok) ? mask_if(fv<E>({0}) > fv<E>({1})) : 0)", "fp_cmp(e, {0}, {1}, false, false)"]),
];

/// FPNeg and FPAbs, the sign bit's flip and clear, in each language.
const NEG: [&str; 3] = [
    "float::neg::<T>({0})",
    "({0} ^ F_SIGN)",
    "({0} ^ f_sign(e))",
];
const ABS: [&str; 3] = [
    "float::abs::<T>({0})",
    "({0} & ~F_SIGN)",
    "({0} & ~f_sign(e))",
];

/// `e` in `lang`: Vn's element is `x`, Vm's `y` in every language.
fn expr(lang: Lang, e: &FpExpr) -> String {
    let col = lang as usize;
    match e {
        FpExpr::N => "x".to_string(),
        FpExpr::M => "y".to_string(),
        FpExpr::Op(op, args) => {
            let row = FP_SPELLINGS
                .iter()
                .find(|r| r.0 == *op)
                .unwrap_or_else(|| panic!("no spelling of {op:?}"));
            let args: Vec<String> = args.iter().map(|a| expr(lang, a)).collect();
            fill(row.1[col], &args)
        }
        FpExpr::Neg(a) => fill(NEG[col], &[expr(lang, a)]),
        FpExpr::Abs(a) => fill(ABS[col], &[expr(lang, a)]),
        FpExpr::OnesIf(c, a, b) => {
            let row = CMP_SPELLINGS
                .iter()
                .find(|r| r.0 == *c)
                .expect("a spelling");
            fill(row.1[col], &[expr(lang, a), expr(lang, b)])
        }
    }
}

/// The interpreter's arms of the FP element functions, for `match_with_elements`: each the
/// element loop over a closure of the definition, at single or double precision as field e
/// says (`$e`), as the hand-written arms were.
pub fn rust_arms() -> String {
    let mut s = String::new();
    for d in fp_definitions() {
        let body = expr(Lang::Rust, &d.value);
        let at = |t: &str| body.replace("<T>", &format!("<{t}>"));
        let call = if d.reads_m() {
            format!(
                "map2($st, $u, |x, y| if $e == 2 {{ {} }} else {{ {} }})",
                at("f32"),
                at("f64")
            )
        } else {
            format!(
                "map1($st, $u, |x| if $e == 2 {{ {} }} else {{ {} }})",
                at("f32"),
                at("f64")
            )
        };
        s.push_str(&format!(
            "            // {}\n            armada_isa::ops::{} => {call},\n",
            d.doc,
            d.name()
        ));
    }
    s
}

/// The ops of the FP element functions that read no Vm, as `test` spells each.
fn unary(test: impl Fn(&FpDef) -> String) -> String {
    any_of(fp_definitions().iter().filter(|d| !d.reads_m()).map(test))
}

/// Whether the kernel runs `d` out of line (`f_arith`, `__noinline__`): the two-operand
/// arithmetic, whose code is large (each a rounding check of its own), out of the element
/// loop; the compares, the one-operand ops and the steps inline in `f_elem`, as they were
/// written by hand. Measured on an H100: all of them out of line made nbody's kernel 9%
/// slower (docs/performance.md).
fn cuda_out_of_line(d: &FpDef) -> bool {
    let mut v = &d.value;
    while let FpExpr::Neg(a) | FpExpr::Abs(a) = v {
        v = a;
    }
    matches!(
        v,
        FpExpr::Op(
            FpOp::Add
                | FpOp::Sub
                | FpOp::Mul
                | FpOp::MulX
                | FpOp::Div
                | FpOp::Max
                | FpOp::Min
                | FpOp::MaxNum
                | FpOp::MinNum,
            _
        )
    )
}

/// The kernel's FP element functions (`fp_elements.cu`, included in simd.cu before `f_elem`,
/// whose parameters are the elements `x` and `y`): `f_arith`, the out-of-line ones' function;
/// `FP_ARITH_CASES`, its labels; `FP_INLINE_ELEMENTS`, the cases of the others for `f_elem`'s
/// switch; and `FP_ELEMENT_CASES`, every label, and `FP_ELEMENT_UNARY(op)`, which read no Vm,
/// for the case that runs their element loop.
pub fn cuda_fp_elements() -> String {
    let mut s = format!("// ----- {HEADER}\n");
    let labels = |pick: &dyn Fn(&FpDef) -> bool| {
        fp_definitions()
            .iter()
            .filter(|d| pick(d))
            .map(|d| format!("case OP_{}:", d.name()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    s.push_str(&format!("#define FP_ELEMENT_CASES {}\n", labels(&|_| true)));
    s.push_str(&format!(
        "#define FP_ELEMENT_UNARY(op) ({})\n",
        unary(|d| format!("(op) == OP_{}", d.name()))
    ));
    s.push_str(&format!(
        "#define FP_ARITH_CASES {}\n",
        labels(&cuda_out_of_line)
    ));
    s.push_str(
        "template <int E> __device__ __noinline__ u64 f_arith(u32 op, u64 x, u64 y, u32& fl, bool& ok) {\n    switch (op) {\n",
    );
    for d in fp_definitions().iter().filter(|d| cuda_out_of_line(d)) {
        s.push_str(&format!(
            "    case OP_{}: return {}; // {}\n",
            d.name(),
            expr(Lang::Cuda, &d.value),
            d.doc
        ));
    }
    s.push_str("    default: ok = false; return 0;\n    }\n}\n");
    s.push_str("#define FP_INLINE_ELEMENTS \\\n");
    for d in fp_definitions().iter().filter(|d| !cuda_out_of_line(d)) {
        // (a line comment would swallow the macro's next line: a block comment instead)
        s.push_str(&format!(
            "    case OP_{}: return {}; /* {} */ \\\n",
            d.name(),
            expr(Lang::Cuda, &d.value),
            d.doc.replace("*/", "* /")
        ));
    }
    s.push_str("    /* (end of FP_INLINE_ELEMENTS) */\n");
    s
}

/// The value the shader's `fp_one` returns for `d`, and the sign operation its caller applies
/// after: fp_one may leave its result's rounding to the caller (fp.wgsl's `pack_later`), so
/// an FPNeg or FPAbs of the whole result (FNMUL, FABD) comes after that rounding.
fn wgsl_split(d: &FpDef) -> (&FpExpr, Option<&'static str>) {
    match &d.value {
        FpExpr::Neg(a) => (a, Some(NEG[Lang::Wgsl as usize])),
        FpExpr::Abs(a) => (a, Some(ABS[Lang::Wgsl as usize])),
        v => (v, None),
    }
}

/// The shader's FP element functions, for `// @generated fp elements` in `fp_one`'s switch
/// (fp.wgsl).
pub fn wgsl_fp_elements() -> String {
    let mut s = format!("        // ----- {HEADER}\n");
    for d in fp_definitions() {
        let (value, _) = wgsl_split(d);
        s.push_str(&format!(
            "        case OP_{}: {{ return {}; }} // {}\n",
            d.name(),
            expr(Lang::Wgsl, value),
            d.doc
        ));
    }
    s
}

/// The shader's `fp_after(op, e, v)`, for `// @generated fp after` (fp.wgsl): an element's
/// value once rounded, with the sign operation `wgsl_split` left for after; and
/// `fp_element_unary(op)`, which FP element functions read no Vm.
pub fn wgsl_fp_after() -> String {
    let mut s =
        format!("// {HEADER}\nfn fp_after(op: u32, e: u32, v: u64) -> u64 {{\n    switch op {{\n");
    for d in fp_definitions() {
        if let (_, Some(after)) = wgsl_split(d) {
            s.push_str(&format!(
                "        case OP_{}: {{ return {}; }}\n",
                d.name(),
                fill(after, &["v".to_string()])
            ));
        }
    }
    s.push_str("        default: { return v; }\n    }\n}\n");
    // which read no Vm, for exec_fp's loop
    s.push_str(&format!(
        "fn fp_element_unary(op: u32) -> bool {{\n    return {};\n}}\n",
        unary(|d| format!("op == OP_{}", d.name()))
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation and compare is spelled in every language, and FNMUL reads as the
    /// manual's composition in each.
    #[test]
    fn spelled_in_every_language() {
        for d in fp_definitions() {
            for lang in [Lang::Rust, Lang::Cuda, Lang::Wgsl] {
                let s = expr(lang, &d.value);
                assert!(
                    !s.contains("{0}") && !s.contains("{1}"),
                    "{}: {s}",
                    d.name()
                );
            }
        }
        let nmul = fp_definitions()
            .iter()
            .find(|d| d.op == armada_isa::ops::F_NMUL)
            .unwrap();
        assert_eq!(
            expr(Lang::Cuda, &nmul.value),
            "(f_mul<E>(x, y, fl, ok) ^ F_SIGN)"
        );
        assert_eq!(wgsl_split(nmul).1, Some("({0} ^ f_sign(e))"));
    }
}
