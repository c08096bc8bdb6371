//! The generators: definitions as the interpreter's Rust, the CUDA kernel's C and the WGSL
//! shader's cases. Each operation's spelling in each language is one row of [`SPELLINGS`];
//! a spelling is always one operand (an identifier, a call or a parenthesized expression),
//! so spellings nest without precedence rules. `{0}` and `{1}` are the operands.

use crate::def::{Def, Effect};
use crate::definitions;
use crate::expr::{Bin, Cmp, Conv, Expr, Field, Lane, Operand, Prim, Un, Width};
use crate::lang::{any_of, fill, Lang, HEADER};
use crate::{element_definitions, ElemDef, Shape};

/// An operation, as [`SPELLINGS`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Un(Un),
    Bin(Bin),
    /// By the width converted from.
    Conv(Conv),
    Prim(Prim),
    Shifted,
    Extended,
    IfCond,
    IfGe,
    OnesIf(Cmp),
    IfD,
    IfDIs,
    ElemSext,
}

use Node as N;
use Width::{W as W32, X as X64};

/// How each language spells each operation at each width: Rust, CUDA, WGSL. A missing row
/// is a generator error naming the operation.
#[rustfmt::skip]
pub const SPELLINGS: &[(Node, Width, [&str; 3])] = &[
    (N::Un(Un::Not), W32, ["(!{0})", "((u32)~{0})", "(~{0})"]),
    (N::Un(Un::Not), X64, ["(!{0})", "(~{0})", "(~{0})"]),
    (N::Un(Un::Neg), W32, ["{0}.wrapping_neg()", "((u32)(0u - {0}))", "(0u - {0})"]),
    (N::Un(Un::Neg), X64, ["{0}.wrapping_neg()", "(0ull - {0})", "(0lu - {0})"]),
    (N::Un(Un::Clz), W32, ["{0}.leading_zeros()", "a_clz32({0})", "clz32({0})"]),
    (N::Un(Un::Clz), X64, ["({0}.leading_zeros() as u64)", "((u64)a_clz64({0}))", "u64(clz64({0}))"]),
    (N::Un(Un::Rbit), W32, ["{0}.reverse_bits()", "a_brev32({0})", "reverseBits({0})"]),
    (N::Un(Un::Rbit), X64, ["{0}.reverse_bits()", "a_brev64({0})", "brev64({0})"]),
    (N::Un(Un::Rev), W32, ["{0}.swap_bytes()", "a_bswap32({0})", "bswap32({0})"]),
    (N::Un(Un::Rev), X64, ["{0}.swap_bytes()", "a_bswap64({0})", "bswap64({0})"]),
    (N::Un(Un::Popcnt), W32, ["{0}.count_ones()", "a_popc32({0})", "countOneBits({0})"]),
    (N::Un(Un::Popcnt), X64, ["({0}.count_ones() as u64)", "((u64)a_popc64({0}))", "u64(popc64({0}))"]),
    (N::Bin(Bin::Add), W32, ["{0}.wrapping_add({1})", "((u32)({0} + {1}))", "({0} + {1})"]),
    (N::Bin(Bin::Add), X64, ["{0}.wrapping_add({1})", "({0} + {1})", "({0} + {1})"]),
    (N::Bin(Bin::Sub), W32, ["{0}.wrapping_sub({1})", "((u32)({0} - {1}))", "({0} - {1})"]),
    (N::Bin(Bin::Sub), X64, ["{0}.wrapping_sub({1})", "({0} - {1})", "({0} - {1})"]),
    (N::Bin(Bin::Mul), W32, ["{0}.wrapping_mul({1})", "((u32)({0} * {1}))", "({0} * {1})"]),
    (N::Bin(Bin::Mul), X64, ["{0}.wrapping_mul({1})", "({0} * {1})", "({0} * {1})"]),
    (N::Bin(Bin::And), W32, ["({0} & {1})", "({0} & {1})", "({0} & {1})"]),
    (N::Bin(Bin::And), X64, ["({0} & {1})", "({0} & {1})", "({0} & {1})"]),
    (N::Bin(Bin::Or), W32, ["({0} | {1})", "({0} | {1})", "({0} | {1})"]),
    (N::Bin(Bin::Or), X64, ["({0} | {1})", "({0} | {1})", "({0} | {1})"]),
    (N::Bin(Bin::Xor), W32, ["({0} ^ {1})", "({0} ^ {1})", "({0} ^ {1})"]),
    (N::Bin(Bin::Xor), X64, ["({0} ^ {1})", "({0} ^ {1})", "({0} ^ {1})"]),
    // shift amounts modulo the width: Rust's wrapping shifts and rotates take them so
    (N::Bin(Bin::Lsl), W32, ["{0}.wrapping_shl({1} as u32)", "((u32)({0} << ({1} & 31u)))", "({0} << ({1} & 31u))"]),
    (N::Bin(Bin::Lsl), X64, ["{0}.wrapping_shl({1} as u32)", "({0} << ({1} & 63ull))", "({0} << u32({1} & 63lu))"]),
    (N::Bin(Bin::Lsr), W32, ["{0}.wrapping_shr({1} as u32)", "({0} >> ({1} & 31u))", "({0} >> ({1} & 31u))"]),
    (N::Bin(Bin::Lsr), X64, ["{0}.wrapping_shr({1} as u32)", "({0} >> ({1} & 63ull))", "({0} >> u32({1} & 63lu))"]),
    (N::Bin(Bin::Asr), W32, ["(({0} as i32).wrapping_shr({1} as u32) as u32)", "((u32)((i32){0} >> ({1} & 31u)))", "u32(i32({0}) >> ({1} & 31u))"]),
    (N::Bin(Bin::Asr), X64, ["(({0} as i64).wrapping_shr({1} as u32) as u64)", "((u64)((i64){0} >> ({1} & 63ull)))", "u64(i64({0}) >> u32({1} & 63lu))"]),
    (N::Bin(Bin::Ror), W32, ["{0}.rotate_right({1} as u32)", "ror32({0}, (u32){1})", "ror32({0}, {1})"]),
    (N::Bin(Bin::Ror), X64, ["{0}.rotate_right({1} as u32)", "ror64({0}, (u32){1})", "ror64({0}, u32({1}))"]),
    (N::Bin(Bin::Udiv), W32, ["{0}.checked_div({1}).unwrap_or(0)", "udiv_w({0}, {1})", "udiv_w({0}, {1})"]),
    (N::Bin(Bin::Udiv), X64, ["{0}.checked_div({1}).unwrap_or(0)", "udiv_x({0}, {1})", "udiv_x({0}, {1})"]),
    (N::Bin(Bin::Sdiv), W32, ["armada_semantics::prim::sdiv_w({0}, {1})", "sdiv_w({0}, {1})", "sdiv_w({0}, {1})"]),
    (N::Bin(Bin::Sdiv), X64, ["armada_semantics::prim::sdiv_x({0}, {1})", "sdiv_x({0}, {1})", "sdiv_x({0}, {1})"]),
    (N::Bin(Bin::Umulh), X64, ["armada_semantics::prim::umulh({0}, {1})", "a_umulhi({0}, {1})", "umulhi({0}, {1})"]),
    (N::Bin(Bin::Smulh), X64, ["armada_semantics::prim::smulh({0}, {1})", "((u64)a_mulhi((i64){0}, (i64){1}))", "smulhi({0}, {1})"]),
    (N::Conv(Conv::Zext), W32, ["({0} as u64)", "((u64){0})", "u64({0})"]),
    (N::Conv(Conv::Sext), W32, ["({0} as i32 as i64 as u64)", "((u64)(i64)(i32){0})", "sext(u64({0}), 32u)"]),
    (N::Conv(Conv::Lo), X64, ["({0} as u32)", "((u32){0})", "u32({0})"]),
    (N::Shifted, W32, ["crate::cpu::int::shift32({0}, $u.e, $u.f)", "shift32({0}, e, f)", "shift32({0}, e, f)"]),
    (N::Shifted, X64, ["crate::cpu::int::shift64({0}, $u.e, $u.f)", "shift64({0}, e, f)", "shift64({0}, e, f)"]),
    (N::Extended, X64, ["crate::cpu::int::extend({0}, $u.e, $u.f)", "extend({0}, e, f)", "extend({0}, e, f)"]),
    (N::IfCond, W32, ["(if armada_isa::uop::cond::check($u.e, $nzcv) { {0} } else { {1} })", "(cond_holds(e, nzcv) ? {0} : {1})", "select({1}, {0}, cond_holds(e, nzcv))"]),
    (N::IfCond, X64, ["(if armada_isa::uop::cond::check($u.e, $nzcv) { {0} } else { {1} })", "(cond_holds(e, nzcv) ? {0} : {1})", "select({1}, {0}, cond_holds(e, nzcv))"]),
    (N::IfGe, W32, ["(if {0} >= {1} { {2} } else { {3} })", "({0} >= {1} ? {2} : {3})", "select({3}, {2}, {0} >= {1})"]),
    (N::IfGe, X64, ["(if {0} >= {1} { {2} } else { {3} })", "({0} >= {1} ? {2} : {3})", "select({3}, {2}, {0} >= {1})"]),
    (N::OnesIf(Cmp::Eq), X64, ["mask_if({0} == {1})", "mask_if({0} == {1})", "mask_if({0} == {1})"]),
    (N::OnesIf(Cmp::Ne), X64, ["mask_if({0} != {1})", "mask_if({0} != {1})", "mask_if({0} != {1})"]),
    (N::OnesIf(Cmp::Hi), X64, ["mask_if({0} > {1})", "mask_if({0} > {1})", "mask_if({0} > {1})"]),
    (N::OnesIf(Cmp::Hs), X64, ["mask_if({0} >= {1})", "mask_if({0} >= {1})", "mask_if({0} >= {1})"]),
    (N::OnesIf(Cmp::Gt), X64, ["mask_if(sx({0}, $e) > sx({1}, $e))", "mask_if(esx({0}, e) > esx({1}, e))", "mask_if(esx({0}, e) > esx({1}, e))"]),
    (N::OnesIf(Cmp::Ge), X64, ["mask_if(sx({0}, $e) >= sx({1}, $e))", "mask_if(esx({0}, e) >= esx({1}, e))", "mask_if(esx({0}, e) >= esx({1}, e))"]),
    (N::IfD, X64, ["(if $u.d & {bit} != 0 { {0} } else { {1} })", "((d & {bit}) ? {0} : {1})", "select({1}, {0}, (d & {bit}u) != 0u)"]),
    (N::IfDIs, X64, ["(if $u.d == {v} { {0} } else { {1} })", "((d == {v}) ? {0} : {1})", "select({1}, {0}, d == {v}u)"]),
    (N::ElemSext, X64, ["(sx({0}, $e) as u64)", "((u64)esx({0}, e))", "u64(esx({0}, e))"]),
    (N::Prim(Prim::Crc32), W32, ["armada_semantics::prim::crc32({0}, {1}, $u.e, $u.f)", "crc32_fold({0}, {1}, e, f)", "crc32_fold({0}, {1}, e, f)"]),
];

/// The leaves (a register, a constant, the immediate, a field, the carry) and the effects,
/// per language; leaves by width (W, X).
struct Leaves {
    reg: [&'static str; 2],
    names: [&'static str; 3],
    konst: [&'static str; 2],
    imm: [&'static str; 2],
    field: [&'static str; 2],
    carry: [&'static str; 2],
    /// Rd = {0}.
    write: [&'static str; 2],
    /// Rd = {a} + {b} + {c}, NZCV its flags; `{log}` where a compare is logged.
    add_flags: [&'static str; 2],
    /// A compare's operands to CmpLog ({bits}).
    log: &'static str,
    /// Rd = {0}, NZCV its N and Z.
    logic_flags: [&'static str; 2],
    /// NZCV = cond ? flags of {a} + {b} + {c} : field f.
    cond_flags: [&'static str; 2],
    /// A SIMD element function's operands: Vn's, Vm's and Vd's element, and Vn's wide one in
    /// a long op (`Lane`).
    elems: [&'static str; 4],
}

const LEAVES: [Leaves; 3] = [
    Leaves {
        reg: ["($x[{r}] as u32)", "$x[{r}]"],
        names: ["$b", "$c", "$d"],
        konst: ["{v}u32", "{v}u64"],
        imm: ["($u.imm as u32)", "$u.imm"],
        field: ["($u.{f} as u32)", "($u.{f} as u64)"],
        carry: ["(($nzcv >> 29) as u32 & 1)", "(($nzcv >> 29) & 1)"],
        write: ["$x[$a] = {0} as u64", "$x[$a] = {0}"],
        add_flags: [
            "{ let (p, q, k) = ({a}, {b}, {c}); {log}let (r, n) = crate::cpu::int::add_with_flags32(p, q, k); $x[$a] = r as u64; $nzcv = n; }",
            "{ let (p, q, k) = ({a}, {b}, {c}); {log}let (r, n) = crate::cpu::int::add_with_flags64(p, q, k); $x[$a] = r; $nzcv = n; }",
        ],
        log: "$log!(p, q, k, {bits}); ",
        logic_flags: [
            "{ let r = {0}; $x[$a] = r as u64; $nzcv = crate::cpu::int::logic_flags32(r); }",
            "{ let r = {0}; $x[$a] = r; $nzcv = crate::cpu::int::logic_flags64(r); }",
        ],
        cond_flags: [
            "$nzcv = if armada_isa::uop::cond::check($u.e, $nzcv) { let (p, q, k) = ({a}, {b}, {c}); {log}crate::cpu::int::add_with_flags32(p, q, k).1 } else { ($u.f as u64 & 15) << 28 }",
            "$nzcv = if armada_isa::uop::cond::check($u.e, $nzcv) { let (p, q, k) = ({a}, {b}, {c}); {log}crate::cpu::int::add_with_flags64(p, q, k).1 } else { ($u.f as u64 & 15) << 28 }",
        ],
        // (the closure's parameters: `map2`'s |x, y|, `map3`'s |o, x, y|, `long_op`'s
        // |x, y, w, o|)
        elems: ["x", "y", "o", "w"],
    },
    Leaves {
        reg: ["((u32)x[{r}])", "x[{r}]"],
        names: ["b", "c", "dr"],
        konst: ["{v}u", "{v}ull"],
        imm: ["((u32)imm)", "imm"],
        field: ["{f}", "((u64){f})"],
        carry: ["((nzcv >> 29) & 1u)", "((u64)((nzcv >> 29) & 1u))"],
        write: ["x[a] = (u64){0};", "x[a] = {0};"],
        add_flags: [
            "x[a] = (u64)add_flags32({a}, {b}, {c}, nzcv);",
            "x[a] = add_flags64({a}, {b}, {c}, nzcv);",
        ],
        log: "",
        logic_flags: [
            "{ u32 r = {0}; x[a] = r; nzcv = logic_flags32(r); }",
            "{ u64 r = {0}; x[a] = r; nzcv = logic_flags64(r); }",
        ],
        cond_flags: [
            "if (cond_holds(e, nzcv)) add_flags32({a}, {b}, {c}, nzcv); else nzcv = (f & 15) << 28;",
            "if (cond_holds(e, nzcv)) add_flags64({a}, {b}, {c}, nzcv); else nzcv = (f & 15) << 28;",
        ],
        // (`int_elem`'s and `long_elem`'s parameters, simd.cu)
        elems: ["xx", "y", "o", "w"],
    },
    Leaves {
        reg: ["u32(x[{r}])", "x[{r}]"],
        names: ["b", "c", "dr"],
        konst: ["{v}u", "{v}lu"],
        imm: ["u32(imm)", "imm"],
        field: ["{f}", "u64({f})"],
        carry: ["((nzcv >> 29u) & 1u)", "u64((nzcv >> 29u) & 1u)"],
        write: ["x[a] = u64({0});", "x[a] = {0};"],
        add_flags: [
            "x[a] = u64(add_flags32({a}, {b}, {c}));",
            "x[a] = add_flags64({a}, {b}, {c});",
        ],
        log: "",
        logic_flags: [
            "let r = {0}; x[a] = u64(r); nzcv = logic_flags32(r);",
            "let r = {0}; x[a] = r; nzcv = logic_flags64(r);",
        ],
        cond_flags: [
            "if cond_holds(e, nzcv) { add_flags32({a}, {b}, {c}); } else { nzcv = (f & 15u) << 28u; }",
            "if cond_holds(e, nzcv) { add_flags64({a}, {b}, {c}); } else { nzcv = (f & 15u) << 28u; }",
        ],
        // (`int_elem`'s and `long_elem`'s parameters, simd.wgsl)
        elems: ["xx", "y", "o", "w"],
    },
];

fn by_width(w: Width) -> usize {
    (w == Width::X) as usize
}

/// The spelling of `node` at `width` in `lang`.
pub fn spelling(lang: Lang, node: Node, width: Width) -> &'static str {
    SPELLINGS
        .iter()
        .find(|(n, w, _)| *n == node && *w == width)
        .map(|(_, _, s)| s[lang.column()])
        .unwrap_or_else(|| panic!("armada-semantics: no spelling of {node:?} at {width:?}"))
}

/// `e` as one operand in `lang`.
pub fn expr(lang: Lang, e: &Expr) -> String {
    let leaves = &LEAVES[lang.column()];
    match e {
        Expr::Reg(r, w) => {
            let name = leaves.names[match r {
                Operand::B => 0,
                Operand::C => 1,
                Operand::D => 2,
            }];
            leaves.reg[by_width(*w)].replace("{r}", name)
        }
        Expr::Const(v, w) => leaves.konst[by_width(*w)].replace("{v}", &format!("{v:#x}")),
        Expr::Imm(w) => leaves.imm[by_width(*w)].to_string(),
        Expr::Field(f, w) => {
            let name = if *f == Field::E { "e" } else { "f" };
            leaves.field[by_width(*w)].replace("{f}", name)
        }
        Expr::Carry(w) => leaves.carry[by_width(*w)].to_string(),
        Expr::Shifted(a) => fill(spelling(lang, N::Shifted, a.width()), &[expr(lang, a)]),
        Expr::Extended(a) => fill(spelling(lang, N::Extended, Width::X), &[expr(lang, a)]),
        Expr::IfGe(v) => {
            let args: Vec<String> = v.iter().map(|a| expr(lang, a)).collect();
            fill(spelling(lang, N::IfGe, v[2].width()), &args)
        }
        Expr::IfCond(a, b) => fill(
            spelling(lang, N::IfCond, a.width()),
            &[expr(lang, a), expr(lang, b)],
        ),
        Expr::Un(op, w, a) => fill(spelling(lang, N::Un(*op), *w), &[expr(lang, a)]),
        Expr::Bin(op, w, a, b) => fill(
            spelling(lang, N::Bin(*op), *w),
            &[expr(lang, a), expr(lang, b)],
        ),
        Expr::Conv(c, a) => fill(spelling(lang, N::Conv(*c), a.width()), &[expr(lang, a)]),
        Expr::Prim(p, args) => {
            let args: Vec<String> = args.iter().map(|a| expr(lang, a)).collect();
            fill(spelling(lang, N::Prim(*p), p.signature().1), &args)
        }
        Expr::Elem(l) => leaves.elems[match l {
            Lane::N => 0,
            Lane::M => 1,
            Lane::D => 2,
            Lane::W => 3,
        }]
        .to_string(),
        Expr::OnesIf(c, a, b) => fill(
            spelling(lang, N::OnesIf(*c), Width::X),
            &[expr(lang, a), expr(lang, b)],
        ),
        Expr::IfDIs(v, a, b) => fill(
            &spelling(lang, N::IfDIs, a.width()).replace("{v}", &v.to_string()),
            &[expr(lang, a), expr(lang, b)],
        ),
        Expr::ElemSext(a) => fill(spelling(lang, N::ElemSext, Width::X), &[expr(lang, a)]),
        Expr::IfD(bit, a, b) => fill(
            &spelling(lang, N::IfD, a.width()).replace("{bit}", &bit.to_string()),
            &[expr(lang, a), expr(lang, b)],
        ),
    }
}

/// The statement that runs `d` in `lang`.
pub fn statement(lang: Lang, d: &Def) -> String {
    let l = &LEAVES[lang.column()];
    let w = by_width(d.width());
    let add = |template: &str, a: &Expr, b: &Expr, c: &Expr, compare: bool| {
        let log = if compare {
            l.log.replace("{bits}", &d.width().bits().to_string())
        } else {
            String::new()
        };
        template
            .replace("{log}", &log)
            .replace("{a}", &expr(lang, a))
            .replace("{b}", &expr(lang, b))
            .replace("{c}", &expr(lang, c))
    };
    match &d.effect {
        Effect::Rd(v) => l.write[w].replace("{0}", &expr(lang, v)),
        Effect::LogicFlags(v) => l.logic_flags[w].replace("{0}", &expr(lang, v)),
        Effect::AddFlags {
            a,
            b,
            carry,
            compare,
        } => add(l.add_flags[w], a, b, carry, *compare),
        // (CCMP and CCMN are compares)
        Effect::CondFlags { a, b, carry } => add(l.cond_flags[w], a, b, carry, true),
    }
}

/// The interpreter's `match` on the micro-op (`cpu/defined.rs`): a macro that takes the
/// loop's own arms and puts the defined ops' arms before them, so every op is one arm of one
/// `match` (a second `match` in a shared arm cost the interpreter 30% on ALU-heavy loops).
///
/// The ops in `outlined` (ones that write only Rd) get an arm that calls a cold function,
/// `outlined`, generated beside the macro: for ops an engine rewrites before they run, whose
/// code in the loop's one big function only moves its hot arms about.
pub fn rust_match(outlined: &[u16]) -> String {
    let mut s = format!(
        "// {HEADER}\n\n\
         /// `match $u.op` with the arms of the ops armada-semantics defines, then the caller's.\n\
         macro_rules! match_with_defined {{\n\
         \x20   (($x:ident, $nzcv:expr, $a:ident, $b:ident, $c:ident, $d:ident, $log:ident),\n\
         \x20    match $u:ident.op {{ $($arms:tt)* }}) => {{\n\
         \x20       #[allow(unused_parens, unused_braces, clippy::all)]\n\
         \x20       match $u.op {{\n"
    );
    let mut cold = String::new();
    for d in definitions() {
        let stmt = statement(Lang::Rust, d);
        if outlined.contains(&d.op) {
            assert!(
                matches!(d.effect, Effect::Rd(_)),
                "{}: only ops that write Rd alone are outlined",
                d.name()
            );
            s.push_str(&format!(
                "            armada_isa::ops::{} => defined::outlined($u, $x),\n",
                d.name()
            ));
            // the same statement, the macro's names the function's locals
            let local = stmt.replace('$', "");
            cold.push_str(&format!(
                "        // {}\n        armada_isa::ops::{} => {local},\n",
                d.doc,
                d.name()
            ));
        } else {
            s.push_str(&format!(
                "            // {}\n            armada_isa::ops::{} => {stmt},\n",
                d.doc,
                d.name()
            ));
        }
    }
    s.push_str("            $($arms)*\n        }\n    };\n}\npub(super) use match_with_defined;\n");
    s.push_str(&format!(
        "\n/// The outlined ops' arms (see `match_with_defined`).\n\
         #[cold]\n\
         #[inline(never)]\n\
         #[allow(unused_parens, unused_braces, dead_code, clippy::all)]\n\
         pub(super) fn outlined(u: &armada_isa::MicroOp, x: &mut [u64]) {{\n\
         \x20   let (a, b, c) = (u.a as usize & 63, u.b as usize & 63, u.c as usize & 63);\n\
         \x20   let _ = c;\n\
         \x20   match u.op {{\n{cold}\
         \x20       _ => unreachable!(\"not an outlined op: {{}}\", u.op),\n\
         \x20   }}\n\
         }}\n"
    ));
    s
}

/// The interpreter's SIMD element functions (`cpu/fp/elements.rs`): a macro that takes
/// `exec_fp`'s `match` and puts an arm for each defined element function first, each the
/// element loop (`map2`; `map3` where it reads Vd, `map1` where it reads only Vn; `long_op`,
/// `narrow_op`, `pair2`, `across` and `across_long` for the other shapes) over a closure of the
/// definition, as the hand-written arms were; then the FP element functions' arms (`text_fp`).
/// Its caller names the state `$st`, the micro-op `$u`, the element size `$e`, the QC flag
/// `$qc`, the FP context `$cx` and the FP flags `$fl` (the closures' parameters are the
/// macro's own).
pub fn rust_elements() -> String {
    let mut s = format!(
        "// {HEADER}\n\n\
         /// `match $m.op` with the arms of the SIMD element functions armada-semantics defines,\n\
         /// then the caller's.\n\
         macro_rules! match_with_elements {{\n\
         \x20   (($st:ident, $u:ident, $e:ident, $qc:ident, $cx:ident, $fl:ident), match $m:ident.op {{ $($arms:tt)* }}) => {{\n\
         \x20       #[allow(unused_parens, clippy::all)]\n\
         \x20       match $m.op {{\n"
    );
    for d in element_definitions() {
        let mut body = expr(Lang::Rust, &d.value);
        if let Some(sat) = &d.saturated {
            // (FPSR.QC: the caller's flag, which it ORs into FPSR)
            body = format!("{{ $qc |= ({}) != 0; {body} }}", expr(Lang::Rust, sat));
        }
        let call = match d.shape {
            Shape::Pairwise => format!("pair2($st, $u, |x, y| {body})"),
            Shape::Across => format!("across($st, $u, |x, y| {body})"),
            Shape::AcrossLong => format!("across_long($st, $u, |x, y| {body})"),
            Shape::Long => {
                // (each operand named only where it is read)
                let name = |read: bool, n: &'static str| if read { n } else { "_" };
                format!(
                    "long_op($st, $u, |{}, {}, {}, {}| {body})",
                    name(d.reads_n(), "x"),
                    name(d.reads_m(), "y"),
                    name(d.reads_wide(), "w"),
                    name(d.reads_d(), "o")
                )
            }
            Shape::Narrow => {
                let y = if d.reads_m() { "y" } else { "_" };
                format!("narrow_op($st, $u, |x, {y}| {body})")
            }
            Shape::Same if d.reads_d() => {
                // (Vm named only where it is read: SLI and SRI read Vd and Vn)
                let y = if d.reads_m() { "y" } else { "_" };
                format!("map3($st, $u, |o, x, {y}| {body})")
            }
            Shape::Same if d.reads_m() => format!("map2($st, $u, |x, y| {body})"),
            Shape::Same => format!("map1($st, $u, |x| {body})"),
        };
        s.push_str(&format!(
            "            // {}\n            armada_isa::ops::{} => {call},\n",
            d.doc,
            d.name()
        ));
    }
    // the FP element functions (fp_data_processing.rs)
    s.push_str(&crate::text_fp::rust_arms());
    s.push_str(
        "            $($arms)*\n        }\n    };\n}\npub(super) use match_with_elements;\n",
    );
    s
}

/// The element function `d` as a `case` of `int_elem`'s switch in the kernel or the shader.
/// A saturating one sets the loop's QC flag (`qc` in the kernel, `simd_qc` in the shader),
/// which the loop ORs into FPSR.
fn element_case(lang: Lang, d: &ElemDef) -> String {
    let v = expr(lang, &d.value);
    let sat = d.saturated.as_ref().map(|e| expr(lang, e));
    match (lang, sat) {
        (Lang::Wgsl, None) => format!("case OP_{}: {{ return {v}; }} // {}", d.name(), d.doc),
        (Lang::Wgsl, Some(q)) => format!(
            "case OP_{}: {{ if ({q}) != 0lu {{ simd_qc = true; }} return {v}; }} // {}",
            d.name(),
            d.doc
        ),
        (_, None) => format!("case OP_{}: return {v}; // {}", d.name(), d.doc),
        (_, Some(q)) => format!(
            "case OP_{}: qc |= ({q}) != 0; return {v}; // {}",
            d.name(),
            d.doc
        ),
    }
}

/// The element functions of one shape.
fn of_shape(shape: Shape) -> impl Iterator<Item = &'static ElemDef> {
    element_definitions()
        .iter()
        .filter(move |d| d.shape == shape)
}

/// The element functions whose element is the same size as their operands': all but the
/// long and the narrowing ones (the kernel's and the shader's `int_elem`).
fn same_size() -> impl Iterator<Item = &'static ElemDef> {
    element_definitions()
        .iter()
        .filter(|d| d.shape != Shape::Long && d.shape != Shape::Narrow)
}

/// The kernel's element functions (`elements.cu`, included in `int_elem`'s switch in
/// simd.cu), and `ELEMENT_CASES`, `PAIR_CASES`, `ACROSS_CASES` and `ACROSS_LONG_CASES`, the
/// labels of the element-wise, pairwise and across-lanes ones, for the cases that run their
/// loops.
///
/// The long ones go into macros for `long_elem` (simd.cu, after `int_elem`): `LONG_CASES`,
/// their labels, and `LONG_ELEMENTS`, their cases; the narrowing ones likewise into
/// `NARROW_CASES` and `NARROW_ELEMENTS` for `narrow_elem`.
pub fn cuda_elements() -> String {
    let mut s = format!("    // ----- {HEADER}\n");
    let labels = |shape| {
        of_shape(shape)
            .map(|d| format!("case OP_{}:", d.name()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    s.push_str(&format!("#define ELEMENT_CASES {}\n", labels(Shape::Same)));
    s.push_str(&format!("#define PAIR_CASES {}\n", labels(Shape::Pairwise)));
    s.push_str(&format!("#define ACROSS_CASES {}\n", labels(Shape::Across)));
    s.push_str(&format!(
        "#define ACROSS_LONG_CASES {}\n",
        labels(Shape::AcrossLong)
    ));
    s.push_str(&format!(
        "#define ELEMENT_UNARY(op) ({})\n",
        unary_test(|d| format!("op == OP_{}", d.name()))
    ));
    for (shape, name) in [(Shape::Long, "LONG"), (Shape::Narrow, "NARROW")] {
        s.push_str(&format!("#define {name}_CASES {}\n", labels(shape)));
        s.push_str(&format!("#define {name}_ELEMENTS \\\n"));
        for d in of_shape(shape) {
            // (a line comment would swallow the macro's next line: a block comment instead)
            let case = element_case(Lang::Cuda, d);
            let case = match case.split_once(" // ") {
                Some((code, doc)) => format!("{code} /* {} */", doc.replace("*/", "* /")),
                None => case,
            };
            s.push_str(&format!("    {case} \\\n"));
        }
        s.push_str(&format!("    /* (end of {name}_ELEMENTS) */\n"));
    }
    for d in same_size() {
        s.push_str(&format!("    {}\n", element_case(Lang::Cuda, d)));
    }
    s
}

/// The shader's element functions, for `// @generated elements` in `int_elem`'s switch
/// (simd.wgsl).
pub fn wgsl_elements() -> String {
    wgsl_element_cases(same_size())
}

/// The shader's cases of `defs`, one a line, under the generated header.
fn wgsl_element_cases(defs: impl Iterator<Item = &'static ElemDef>) -> String {
    let mut s = format!("        // ----- {HEADER}\n");
    for d in defs {
        s.push_str(&format!("        {}\n", element_case(Lang::Wgsl, d)));
    }
    s
}

/// The shader's long element functions, for `// @generated long elements` in `long_elem`'s
/// switch (simd.wgsl).
pub fn wgsl_long_elements() -> String {
    wgsl_element_cases(of_shape(Shape::Long))
}

/// The shader's long element functions' selectors, for `/* @generated long ops */` in the
/// case that runs the long element loop (simd.wgsl).
pub fn wgsl_long_selectors() -> String {
    selectors(Shape::Long)
}

/// The shader's narrowing element functions, for `// @generated narrow elements` in
/// `narrow_elem`'s switch (simd.wgsl).
pub fn wgsl_narrow_elements() -> String {
    wgsl_element_cases(of_shape(Shape::Narrow))
}

/// The shader's narrowing element functions' selectors, for `/* @generated narrow ops */` in
/// the case that runs the narrowing loop (simd.wgsl).
pub fn wgsl_narrow_selectors() -> String {
    selectors(Shape::Narrow)
}

/// Whether an element function reads no Vm (the loop then reads no broadcast element of it),
/// as an expression of `op` made by `test` from each such definition.
fn unary_test(test: impl Fn(&ElemDef) -> String) -> String {
    any_of(of_shape(Shape::Same).filter(|d| !d.reads_m()).map(test))
}

/// The shader's `element_unary(op)`, for `// @generated element unary` (simd.wgsl): whether
/// the element function reads no Vm.
pub fn wgsl_element_unary() -> String {
    format!(
        "fn element_unary(op: u32) -> bool {{\n    return {};\n}}\n",
        unary_test(|d| format!("op == OP_{}", d.name()))
    )
}

/// The shader's element functions' selectors, `OP_V_ADD, OP_V_SUB, ...`, for
/// `/* @generated element ops */` in the case that runs the element loop (simd.wgsl).
pub fn wgsl_element_selectors() -> String {
    selectors(Shape::Same)
}

/// The shader's pairwise element functions' selectors, for `/* @generated pair ops */` in
/// the case that runs the pairwise loop (simd.wgsl).
pub fn wgsl_pair_selectors() -> String {
    selectors(Shape::Pairwise)
}

/// The shader's across-lanes reductions' selectors, for `/* @generated across ops */` in
/// the case that runs the fold (simd.wgsl).
pub fn wgsl_across_selectors() -> String {
    selectors(Shape::Across)
}

/// The shader's long across-lanes reductions' selectors, for `/* @generated across long ops
/// */` in the case that runs the long fold (simd.wgsl).
pub fn wgsl_across_long_selectors() -> String {
    selectors(Shape::AcrossLong)
}

/// `OP_A, OP_B, ...` of the element functions of `shape`.
fn selectors(shape: Shape) -> String {
    of_shape(shape)
        .map(|d| format!("OP_{}", d.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The fused compare-and-branch ops (`armada_isa::fused`) and the definitions of the
/// compares they run: (the fused op's name, the compare's definition).
pub fn fused() -> Vec<(String, &'static Def)> {
    definitions()
        .iter()
        .filter(|d| armada_isa::fused::with_branch(d.op).is_some())
        .map(|d| (format!("{}_BCOND", d.name()), d))
        .collect()
}

/// A `case` a definition in the kernel (`Lang::Cuda`) or the shader (`Lang::Wgsl`), each
/// labelled `OP_` and its name, indented for where it goes.
fn cases<'a>(lang: Lang, indent: &str, defs: impl Iterator<Item = (String, &'a Def)>) -> String {
    let mut s = format!("{indent}// ----- {HEADER}\n");
    for (name, d) in defs {
        let stmt = statement(lang, d);
        let case = match lang {
            Lang::Wgsl => format!("case OP_{name}: {{ {stmt} }}"),
            _ => format!("case OP_{name}: {stmt} break;"),
        };
        s.push_str(&format!("{indent}{case} // {}\n", d.doc));
    }
    s
}

fn all() -> impl Iterator<Item = (String, &'static Def)> {
    definitions().iter().map(|d| (d.name().to_string(), d))
}

/// The kernel's cases of the definitions whose names `keep` takes, for a `switch (op)`: the
/// interpreter loop's (`kernel/interp.cu`) for the ops the kernel runs inline, and the out of
/// line function's (`kernel/cold.cu`) for the rest.
pub fn cuda_cases(keep: impl Fn(&str) -> bool) -> String {
    cases(Lang::Cuda, "        ", all().filter(|(name, _)| keep(name)))
}

/// The shader's cases, for the loop's `switch op` (`shader/armada.wgsl`).
pub fn wgsl_cases() -> String {
    cases(Lang::Wgsl, "                ", all())
}

/// The kernel's cases for the compare half of the fused ops, for the `switch (op)` inside
/// their case (`kernel/interp.cu`).
pub fn cuda_fused() -> String {
    cases(Lang::Cuda, "            ", fused().into_iter())
}

/// The shader's cases for the compare half of the fused ops (`shader/armada.wgsl`).
pub fn wgsl_fused() -> String {
    cases(Lang::Wgsl, "                        ", fused().into_iter())
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_isa::ops;

    #[test]
    fn every_operation_used_is_spelled_in_every_language() {
        for d in definitions() {
            for lang in [Lang::Rust, Lang::Cuda, Lang::Wgsl] {
                statement(lang, d);
            }
        }
    }

    #[test]
    fn madd_reads_as_each_language_writes_it() {
        let d = crate::definition(ops::MADD_W).unwrap();
        assert_eq!(
            statement(Lang::Rust, d),
            "$x[$a] = ($x[$d] as u32).wrapping_add(($x[$b] as u32).wrapping_mul(($x[$c] as u32))) as u64"
        );
        assert_eq!(
            statement(Lang::Cuda, d),
            "x[a] = (u64)((u32)(((u32)x[dr]) + ((u32)(((u32)x[b]) * ((u32)x[c])))));"
        );
        assert_eq!(
            statement(Lang::Wgsl, d),
            "x[a] = u64((u32(x[dr]) + (u32(x[b]) * u32(x[c]))));"
        );
    }
}
