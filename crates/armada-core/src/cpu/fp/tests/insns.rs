//! The instructions checked against qemu-aarch64 (see `tests.rs`). Operands: V registers
//! v0..v7 and general registers x0..x5; memory forms use x0 as the base and x1 as the
//! post-index register.

/// `pat` with `T` replaced by each of `ts`.
fn each(out: &mut Vec<String>, pat: &str, ts: &[&str]) {
    for t in ts {
        out.push(pat.replace('T', t));
    }
}

/// Every op of `ops` through `pat` (`OP` replaced), for each of `ts`.
fn ops(out: &mut Vec<String>, names: &str, pat: &str, ts: &[&str]) {
    for op in names.split_whitespace() {
        each(out, &pat.replace("OP", op), ts);
    }
}

const ANY: &[&str] = &["8b", "16b", "4h", "8h", "2s", "4s", "2d"];
const NOD: &[&str] = &["8b", "16b", "4h", "8h", "2s", "4s"];
const HS: &[&str] = &["4h", "8h", "2s", "4s"];
const BYTES: &[&str] = &["8b", "16b"];
const FV: &[&str] = &["2s", "4s", "2d"];
const SD: &[&str] = &["s", "d"];
const BHSD: &[&str] = &["b", "h", "s", "d"];

pub(super) fn list() -> Vec<String> {
    let mut v = Vec::new();
    let o = &mut v;

    // ---- scalar floating point
    ops(
        o,
        "fadd fsub fmul fdiv fnmul fmax fmin fmaxnm fminnm",
        "OP T0, T1, T2",
        SD,
    );
    ops(o, "fmadd fmsub fnmadd fnmsub", "OP T0, T1, T2, T3", SD);
    ops(
        o,
        "fabs fneg fsqrt frintn frintp frintm frintz frinta frintx frinti fmov",
        "OP T0, T1",
        SD,
    );
    ops(o, "fcmp fcmpe", "OP T1, T2", SD);
    ops(o, "fcmp fcmpe", "OP T1, #0.0", SD);
    ops(o, "fccmp fccmpe", "OP T1, T2, #0x5, ne", SD);
    ops(o, "fccmp", "OP T1, T2, #0xa, ge", SD);
    ops(o, "fcsel", "OP T0, T1, T2, lt", SD);
    ops(o, "fcsel", "OP T0, T1, T2, eq", SD);
    for s in [
        "fcvt d0, s1",
        "fcvt s0, d1",
        "fcvt h0, s1",
        "fcvt s0, h1",
        "fcvt h0, d1",
        "fcvt d0, h1",
        "fmov s0, w1",
        "fmov d0, x1",
        "fmov w0, s1",
        "fmov x0, d1",
        "fmov x0, v1.d[1]",
        "fmov v0.d[1], x1",
        "fmov s0, #1.0",
        "fmov s0, #-31.0",
        "fmov d0, #0.125",
        "fmov d0, #-1.9375",
        "fmov s0, wzr",
    ] {
        o.push(s.into());
    }
    for cv in [
        "fcvtns", "fcvtnu", "fcvtps", "fcvtpu", "fcvtms", "fcvtmu", "fcvtzs", "fcvtzu", "fcvtas",
        "fcvtau",
    ] {
        for (r, s) in [("w0", "s1"), ("w0", "d1"), ("x0", "s1"), ("x0", "d1")] {
            o.push(format!("{cv} {r}, {s}"));
        }
        each(o, &format!("{cv} T0, T1"), SD);
        each(o, &format!("{cv} v0.T, v1.T"), FV);
    }
    for cv in ["scvtf", "ucvtf"] {
        for (r, s) in [("s0", "w1"), ("d0", "w1"), ("s0", "x1"), ("d0", "x1")] {
            o.push(format!("{cv} {r}, {s}"));
        }
        each(o, &format!("{cv} T0, T1"), SD);
        each(o, &format!("{cv} v0.T, v1.T"), FV);
        for s in [
            "s0, w1, #5",
            "d0, w1, #32",
            "s0, x1, #40",
            "d0, x1, #64",
            "s0, s1, #3",
            "d0, d1, #50",
        ] {
            o.push(format!("{cv} {s}"));
        }
        for s in [
            "v0.4s, v1.4s, #7",
            "v0.2s, v1.2s, #32",
            "v0.2d, v1.2d, #30",
            "v0.2d, v1.2d, #64",
        ] {
            o.push(format!("{cv} {s}"));
        }
    }
    for cv in ["fcvtzs", "fcvtzu"] {
        for s in [
            "w0, s1, #5",
            "w0, d1, #32",
            "x0, s1, #40",
            "x0, d1, #64",
            "s0, s1, #3",
            "d0, d1, #50",
            "v0.4s, v1.4s, #7",
            "v0.2s, v1.2s, #32",
            "v0.2d, v1.2d, #30",
            "v0.2d, v1.2d, #64",
        ] {
            o.push(format!("{cv} {s}"));
        }
    }

    // ---- vector floating point
    ops(
        o,
        "fadd fsub fmul fdiv fmulx fmax fmin fmaxnm fminnm fabd fmla fmls frecps frsqrts faddp \
         fmaxp fminp fmaxnmp fminnmp fcmeq fcmge fcmgt facge facgt",
        "OP v0.T, v1.T, v2.T",
        FV,
    );
    ops(
        o,
        "fabs fneg fsqrt frintn frintp frintm frintz frinta frintx frinti frecpe frsqrte",
        "OP v0.T, v1.T",
        FV,
    );
    ops(
        o,
        "fcmeq fcmge fcmgt fcmle fcmlt",
        "OP v0.T, v1.T, #0.0",
        FV,
    );
    ops(o, "fcmeq fcmge fcmgt fcmle fcmlt", "OP T0, T1, #0.0", SD);
    ops(
        o,
        "fmulx fcmeq fcmge fcmgt facge facgt fabd frecps frsqrts",
        "OP T0, T1, T2",
        SD,
    );
    ops(o, "frecpe frsqrte frecpx", "OP T0, T1", SD);
    for s in [
        "fcvtl v0.4s, v1.4h",
        "fcvtl2 v0.4s, v1.8h",
        "fcvtl v0.2d, v1.2s",
        "fcvtl2 v0.2d, v1.4s",
        "fcvtn v0.4h, v1.4s",
        "fcvtn2 v0.8h, v1.4s",
        "fcvtn v0.2s, v1.2d",
        "fcvtn2 v0.4s, v1.2d",
        "fcvtxn v0.2s, v1.2d",
        "fcvtxn2 v0.4s, v1.2d",
        "fcvtxn s0, d1",
        "fmul v0.4s, v1.4s, v2.s[3]",
        "fmul v0.2s, v1.2s, v2.s[1]",
        "fmul v0.2d, v1.2d, v2.d[1]",
        "fmla v0.4s, v1.4s, v2.s[2]",
        "fmla v0.2d, v1.2d, v2.d[0]",
        "fmls v0.2s, v1.2s, v2.s[3]",
        "fmls v0.2d, v1.2d, v2.d[1]",
        "fmulx v0.4s, v1.4s, v2.s[0]",
        "fmulx v0.2d, v1.2d, v2.d[1]",
        "fmul s0, s1, v2.s[3]",
        "fmul d0, d1, v2.d[1]",
        "fmla s0, s1, v2.s[1]",
        "fmla d0, d1, v2.d[1]",
        "fmls s0, s1, v2.s[2]",
        "fmulx s0, s1, v2.s[1]",
        "fmulx d0, d1, v2.d[0]",
        "fmaxv s0, v1.4s",
        "fminv s0, v1.4s",
        "fmaxnmv s0, v1.4s",
        "fminnmv s0, v1.4s",
        "faddp s0, v1.2s",
        "faddp d0, v1.2d",
        "fmaxp s0, v1.2s",
        "fmaxp d0, v1.2d",
        "fminp s0, v1.2s",
        "fmaxnmp d0, v1.2d",
        "fminnmp s0, v1.2s",
        "fminnmp d0, v1.2d",
        "fmov v0.4s, #1.5",
        "fmov v0.2s, #-0.5",
        "fmov v0.2d, #3.0",
    ] {
        o.push(s.into());
    }

    // ---- vector integer
    ops(
        o,
        "add sub cmeq cmge cmgt cmhi cmhs cmtst sshl ushl sqshl uqshl srshl urshl sqrshl uqrshl \
         sqadd uqadd sqsub uqsub addp",
        "OP v0.T, v1.T, v2.T",
        ANY,
    );
    ops(
        o,
        "mul mla mls shadd uhadd srhadd urhadd shsub uhsub smax smin umax umin sabd uabd saba uaba \
         smaxp sminp umaxp uminp",
        "OP v0.T, v1.T, v2.T",
        NOD,
    );
    ops(o, "sqdmulh sqrdmulh", "OP v0.T, v1.T, v2.T", HS);
    ops(
        o,
        "pmul and bic orr orn eor bsl bit bif",
        "OP v0.T, v1.T, v2.T",
        BYTES,
    );
    ops(o, "abs neg sqabs sqneg suqadd usqadd", "OP v0.T, v1.T", ANY);
    ops(o, "cmeq cmge cmgt cmle cmlt", "OP v0.T, v1.T, #0", ANY);
    ops(o, "cls clz", "OP v0.T, v1.T", NOD);
    ops(o, "cnt not rbit rev16", "OP v0.T, v1.T", BYTES);
    ops(o, "rev64", "OP v0.T, v1.T", NOD);
    ops(o, "rev32", "OP v0.T, v1.T", &["8b", "16b", "4h", "8h"]);
    ops(o, "urecpe ursqrte", "OP v0.T, v1.T", &["2s", "4s"]);
    for op in ["saddlp", "uaddlp", "sadalp", "uadalp"] {
        for (w, n) in [
            ("4h", "8b"),
            ("8h", "16b"),
            ("2s", "4h"),
            ("4s", "8h"),
            ("1d", "2s"),
            ("2d", "4s"),
        ] {
            o.push(format!("{op} v0.{w}, v1.{n}"));
        }
    }
    for (op, op2) in [
        ("xtn", "xtn2"),
        ("sqxtn", "sqxtn2"),
        ("uqxtn", "uqxtn2"),
        ("sqxtun", "sqxtun2"),
    ] {
        for (n, n2, w) in [("8b", "16b", "8h"), ("4h", "8h", "4s"), ("2s", "4s", "2d")] {
            o.push(format!("{op} v0.{n}, v1.{w}"));
            o.push(format!("{op2} v0.{n2}, v1.{w}"));
        }
    }
    for s in [
        "shll v0.8h, v1.8b, #8",
        "shll2 v0.4s, v1.8h, #16",
        "shll v0.2d, v1.2s, #32",
        "sqxtn b0, h1",
        "sqxtn h0, s1",
        "sqxtn s0, d1",
        "uqxtn b0, h1",
        "uqxtn s0, d1",
        "sqxtun h0, s1",
        "sqxtun s0, d1",
    ] {
        o.push(s.into());
    }
    for op in ["addv", "smaxv", "sminv", "umaxv", "uminv"] {
        for (r, t) in [
            ("b0", "8b"),
            ("b0", "16b"),
            ("h0", "4h"),
            ("h0", "8h"),
            ("s0", "4s"),
        ] {
            o.push(format!("{op} {r}, v1.{t}"));
        }
    }
    for op in ["saddlv", "uaddlv"] {
        for (r, t) in [
            ("h0", "8b"),
            ("h0", "16b"),
            ("s0", "4h"),
            ("s0", "8h"),
            ("d0", "4s"),
        ] {
            o.push(format!("{op} {r}, v1.{t}"));
        }
    }
    // shifts by immediate
    for (t, sh_r, sh_l) in [
        ("8b", 3, 5),
        ("16b", 8, 1),
        ("4h", 1, 15),
        ("8h", 16, 7),
        ("2s", 31, 3),
        ("4s", 32, 20),
        ("2d", 64, 63),
        ("2d", 1, 33),
    ] {
        for op in [
            "sshr", "ushr", "ssra", "usra", "srshr", "urshr", "srsra", "ursra", "sri",
        ] {
            o.push(format!("{op} v0.{t}, v1.{t}, #{sh_r}"));
        }
        for op in ["shl", "sli", "sqshl", "uqshl", "sqshlu"] {
            o.push(format!("{op} v0.{t}, v1.{t}, #{sh_l}"));
        }
    }
    for (n, n2, w, sh) in [
        ("8b", "16b", "8h", 3),
        ("4h", "8h", "4s", 16),
        ("2s", "4s", "2d", 1),
        ("2s", "4s", "2d", 31),
    ] {
        for op in [
            "shrn", "rshrn", "sqshrn", "sqrshrn", "uqshrn", "uqrshrn", "sqshrun", "sqrshrun",
        ] {
            o.push(format!("{op} v0.{n}, v1.{w}, #{sh}"));
            o.push(format!("{op}2 v0.{n2}, v1.{w}, #{sh}"));
        }
    }
    for (n, n2, w, sh) in [
        ("8b", "16b", "8h", 3),
        ("4h", "8h", "4s", 15),
        ("2s", "4s", "2d", 0),
        ("2s", "4s", "2d", 31),
    ] {
        for op in ["sshll", "ushll"] {
            o.push(format!("{op} v0.{w}, v1.{n}, #{sh}"));
            o.push(format!("{op}2 v0.{w}, v1.{n2}, #{sh}"));
        }
    }
    for s in [
        "sxtl v0.8h, v1.8b",
        "uxtl2 v0.4s, v1.8h",
        "uxtl v0.2d, v1.2s",
    ] {
        o.push(s.into());
    }
    // three different
    for op in [
        "saddl", "uaddl", "ssubl", "usubl", "smull", "umull", "smlal", "umlal", "smlsl", "umlsl",
        "sabdl", "uabdl", "sabal", "uabal",
    ] {
        for (w, n, n2) in [("8h", "8b", "16b"), ("4s", "4h", "8h"), ("2d", "2s", "4s")] {
            o.push(format!("{op} v0.{w}, v1.{n}, v2.{n}"));
            o.push(format!("{op}2 v0.{w}, v1.{n2}, v2.{n2}"));
        }
    }
    for op in ["saddw", "uaddw", "ssubw", "usubw"] {
        for (w, n, n2) in [("8h", "8b", "16b"), ("4s", "4h", "8h"), ("2d", "2s", "4s")] {
            o.push(format!("{op} v0.{w}, v1.{w}, v2.{n}"));
            o.push(format!("{op}2 v0.{w}, v1.{w}, v2.{n2}"));
        }
    }
    for op in ["addhn", "raddhn", "subhn", "rsubhn"] {
        for (w, n, n2) in [("8h", "8b", "16b"), ("4s", "4h", "8h"), ("2d", "2s", "4s")] {
            o.push(format!("{op} v0.{n}, v1.{w}, v2.{w}"));
            o.push(format!("{op}2 v0.{n2}, v1.{w}, v2.{w}"));
        }
    }
    for op in ["sqdmull", "sqdmlal", "sqdmlsl"] {
        for (w, n, n2) in [("4s", "4h", "8h"), ("2d", "2s", "4s")] {
            o.push(format!("{op} v0.{w}, v1.{n}, v2.{n}"));
            o.push(format!("{op}2 v0.{w}, v1.{n2}, v2.{n2}"));
        }
        o.push(format!("{op} s0, h1, h2"));
        o.push(format!("{op} d0, s1, s2"));
        o.push(format!("{op} v0.4s, v1.4h, v2.h[5]"));
        o.push(format!("{op}2 v0.2d, v1.4s, v2.s[1]"));
        o.push(format!("{op} s0, h1, v2.h[7]"));
        o.push(format!("{op} d0, s1, v2.s[3]"));
    }
    for s in [
        "pmull v0.8h, v1.8b, v2.8b",
        "pmull2 v0.8h, v1.16b, v2.16b",
        "pmull v0.1q, v1.1d, v2.1d",
        "pmull2 v0.1q, v1.2d, v2.2d",
    ] {
        o.push(s.into());
    }
    // by element
    for s in [
        "mul v0.4s, v1.4s, v2.s[1]",
        "mul v0.8h, v1.8h, v2.h[7]",
        "mul v0.4h, v1.4h, v2.h[2]",
        "mla v0.2s, v1.2s, v2.s[3]",
        "mla v0.8h, v1.8h, v2.h[0]",
        "mls v0.4s, v1.4s, v2.s[2]",
        "mls v0.4h, v1.4h, v2.h[6]",
        "smull v0.4s, v1.4h, v2.h[3]",
        "umull2 v0.2d, v1.4s, v2.s[3]",
        "smlal2 v0.4s, v1.8h, v2.h[4]",
        "umlal v0.2d, v1.2s, v2.s[1]",
        "smlsl v0.2d, v1.2s, v2.s[0]",
        "umlsl2 v0.4s, v1.8h, v2.h[7]",
        "sqdmulh v0.4s, v1.4s, v2.s[2]",
        "sqrdmulh v0.4h, v1.4h, v2.h[5]",
        "sqdmulh v0.8h, v1.8h, v2.h[1]",
        "sqrdmulh v0.2s, v1.2s, v2.s[3]",
        "sqdmulh s0, s1, v2.s[1]",
        "sqrdmulh h0, h1, v2.h[6]",
    ] {
        o.push(s.into());
    }
    // scalar integer
    ops(
        o,
        "add sub cmeq cmge cmgt cmhi cmhs cmtst sshl ushl srshl urshl",
        "OP d0, d1, d2",
        &[""],
    );
    ops(
        o,
        "sqadd uqadd sqsub uqsub sqshl uqshl sqrshl uqrshl",
        "OP T0, T1, T2",
        BHSD,
    );
    ops(o, "sqdmulh sqrdmulh", "OP T0, T1, T2", &["h", "s"]);
    ops(o, "abs neg", "OP d0, d1", &[""]);
    ops(o, "sqabs sqneg suqadd usqadd", "OP T0, T1", BHSD);
    ops(o, "cmeq cmge cmgt cmle cmlt", "OP d0, d1, #0", &[""]);
    for sh in [1, 17, 64] {
        ops(
            o,
            "sshr ushr ssra usra srshr urshr srsra ursra sri",
            &format!("OP d0, d1, #{sh}"),
            &[""],
        );
    }
    for sh in [0, 9, 63] {
        ops(o, "shl sli", &format!("OP d0, d1, #{sh}"), &[""]);
    }
    for (r, sh) in [("b", 3), ("h", 9), ("s", 20), ("d", 40)] {
        ops(
            o,
            "sqshl uqshl sqshlu",
            &format!("OP {r}0, {r}1, #{sh}"),
            &[""],
        );
    }
    for (d, n, sh) in [("b", "h", 3), ("h", "s", 16), ("s", "d", 1), ("s", "d", 32)] {
        ops(
            o,
            "sqshrn sqrshrn uqshrn uqrshrn sqshrun sqrshrun",
            &format!("OP {d}0, {n}1, #{sh}"),
            &[""],
        );
    }
    o.push("addp d0, v1.2d".into());

    // ---- copies, immediates, permutes, tables
    for s in [
        "dup v0.16b, v1.b[5]",
        "dup v0.8b, v1.b[15]",
        "dup v0.4h, v1.h[7]",
        "dup v0.8h, v1.h[0]",
        "dup v0.2s, v1.s[3]",
        "dup v0.4s, v1.s[1]",
        "dup v0.2d, v1.d[1]",
        "dup v0.16b, w1",
        "dup v0.8b, w1",
        "dup v0.4h, w1",
        "dup v0.4s, w1",
        "dup v0.2d, x1",
        "dup v0.2s, wzr",
        "mov b0, v1.b[15]",
        "mov h0, v1.h[3]",
        "mov s0, v1.s[2]",
        "mov d0, v1.d[1]",
        "mov v0.b[3], w1",
        "mov v0.h[7], w1",
        "mov v0.s[1], w1",
        "mov v0.d[1], x1",
        "mov v0.b[3], v1.b[9]",
        "mov v0.h[2], v1.h[7]",
        "mov v0.s[3], v1.s[0]",
        "mov v0.d[0], v1.d[1]",
        "umov w0, v1.b[7]",
        "umov w0, v1.h[3]",
        "mov w0, v1.s[2]",
        "mov x0, v1.d[1]",
        "smov w0, v1.b[3]",
        "smov w0, v1.h[1]",
        "smov x0, v1.b[12]",
        "smov x0, v1.h[7]",
        "smov x0, v1.s[3]",
        "mov v0.16b, v1.16b",
        "mov v0.8b, v1.8b",
        "movi v0.16b, #0x55",
        "movi v0.8b, #0xff",
        "movi v0.4h, #0x12, lsl #8",
        "movi v0.8h, #0x9a",
        "movi v0.4s, #0x34, lsl #24",
        "movi v0.2s, #0x56, lsl #16",
        "movi v0.2s, #0x12, msl #8",
        "movi v0.4s, #0x12, msl #16",
        "movi d0, #0xff00ff0000ff00ff",
        "movi v0.2d, #0xff0000000000ff00",
        "mvni v0.4s, #0x12, lsl #16",
        "mvni v0.8h, #0x1",
        "mvni v0.2s, #0x12, msl #8",
        "mvni v0.4h, #0x80, lsl #8",
        "orr v0.4s, #0x12, lsl #8",
        "orr v0.8h, #0x34",
        "orr v0.2s, #0x7f, lsl #24",
        "bic v0.4s, #0xff",
        "bic v0.4h, #0x12, lsl #8",
        "bic v0.8h, #0xf0",
        "ext v0.16b, v1.16b, v2.16b, #3",
        "ext v0.8b, v1.8b, v2.8b, #5",
        "ext v0.16b, v1.16b, v2.16b, #15",
        "ext v0.16b, v1.16b, v2.16b, #0",
        "tbl v0.16b, {v1.16b}, v2.16b",
        "tbl v0.8b, {v1.16b, v2.16b}, v3.8b",
        "tbl v0.16b, {v1.16b, v2.16b, v3.16b}, v4.16b",
        "tbl v0.16b, {v1.16b, v2.16b, v3.16b, v4.16b}, v5.16b",
        "tbx v0.16b, {v1.16b}, v2.16b",
        "tbx v0.8b, {v1.16b, v2.16b}, v3.8b",
        "tbx v0.16b, {v1.16b, v2.16b, v3.16b, v4.16b}, v5.16b",
        "tbl v0.16b, {v0.16b}, v0.16b",
    ] {
        o.push(s.into());
    }
    ops(
        o,
        "uzp1 uzp2 zip1 zip2 trn1 trn2",
        "OP v0.T, v1.T, v2.T",
        ANY,
    );
    ops(o, "zip1 uzp2 trn1", "OP v0.T, v0.T, v1.T", &["4s", "8b"]);

    // ---- structure loads and stores
    for s in [
        "ld1 {v0.16b}, [x0]",
        "ld1 {v0.8b, v1.8b}, [x0], #16",
        "ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0], x1",
        "ld1 {v0.2d, v1.2d, v2.2d}, [x0]",
        "ld1 {v0.1d}, [x0]",
        "ld1 {v0.4h, v1.4h, v2.4h}, [x0], #24",
        "ld2 {v0.8h, v1.8h}, [x0]",
        "ld2 {v0.2s, v1.2s}, [x0], #16",
        "ld2 {v0.2d, v1.2d}, [x0], x1",
        "ld3 {v0.16b, v1.16b, v2.16b}, [x0]",
        "ld3 {v0.4h, v1.4h, v2.4h}, [x0], x1",
        "ld3 {v0.2d, v1.2d, v2.2d}, [x0], #48",
        "ld4 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0], #64",
        "ld4 {v0.8b, v1.8b, v2.8b, v3.8b}, [x0]",
        "ld1 {v0.s}[1], [x0]",
        "ld1 {v0.b}[15], [x0], #1",
        "ld1 {v0.d}[1], [x0], x1",
        "ld1 {v0.h}[3], [x0]",
        "ld2 {v0.s, v1.s}[3], [x0]",
        "ld3 {v0.h, v1.h, v2.h}[5], [x0], #6",
        "ld4 {v0.b, v1.b, v2.b, v3.b}[9], [x0], x1",
        "ld2 {v0.d, v1.d}[0], [x0], #16",
        "ld4 {v0.s, v1.s, v2.s, v3.s}[2], [x0]",
        "ld1r {v0.4s}, [x0]",
        "ld1r {v0.8b}, [x0], #1",
        "ld1r {v0.1d}, [x0], x1",
        "ld2r {v0.8h, v1.8h}, [x0], x1",
        "ld3r {v0.2d, v1.2d, v2.2d}, [x0]",
        "ld4r {v0.2s, v1.2s, v2.2s, v3.2s}, [x0], #16",
        "st1 {v0.16b}, [x0]",
        "st1 {v0.8b, v1.8b, v2.8b, v3.8b}, [x0], #32",
        "st1 {v1.2d, v2.2d}, [x0], x1",
        "st1 {v2.1d, v3.1d, v4.1d}, [x0]",
        "st2 {v0.4s, v1.4s}, [x0]",
        "st2 {v3.4h, v4.4h}, [x0], x1",
        "st3 {v0.8b, v1.8b, v2.8b}, [x0], #24",
        "st3 {v1.2d, v2.2d, v3.2d}, [x0]",
        "st4 {v0.8h, v1.8h, v2.8h, v3.8h}, [x0]",
        "st4 {v4.2s, v5.2s, v6.2s, v7.2s}, [x0], #32",
        "st1 {v0.s}[2], [x0], #4",
        "st1 {v0.d}[1], [x0]",
        "st1 {v3.b}[13], [x0], x1",
        "st1 {v0.h}[6], [x0]",
        "st2 {v0.b, v1.b}[7], [x0], x1",
        "st3 {v0.s, v1.s, v2.s}[1], [x0]",
        "st4 {v0.h, v1.h, v2.h, v3.h}[6], [x0], #8",
        "st2 {v5.d, v6.d}[1], [x0]",
    ] {
        o.push(s.into());
    }
    v
}
