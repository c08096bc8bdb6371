//! Semantics tests of the FP/AdvSIMD micro-ops.
//!
//! The main test replays `testdata/qemu_vectors.txt`: for each instruction of `insns::list()`
//! and a few deterministic random input states (V0-V7, X0-X5, NZCV, FPCR and a 256-byte
//! memory buffer; odd cases hold FP special values only, case 3 has a random FPCR), the
//! state qemu-aarch64 left after executing the instruction. The file is
//! produced by the ignored test `generate_qemu_vectors` (needs aarch64-linux-gnu-gcc and
//! qemu-aarch64):
//!
//! ```text
//! cargo test -p armada-core --lib generate_qemu_vectors -- --ignored
//! ```
//!
//! Each line: `word<TAB>case<TAB>instruction<TAB>changes`, where changes lists the state that
//! differs from the inputs: `vN=<hex>`, `xN=<hex>`, `nzcv=<hex>`, `fpsr=<hex>` (FPSR starts
//! at 0: the cumulative exception flags and QC the instruction set), and memory runs
//! `m<offset>=<hex bytes>`.

mod insns;

use super::*;
use crate::memory::Perm;
use armada_isa::decode;

const BUF: u64 = 0x1000_0000;
const BUF_LEN: usize = 256;
const CASES: u32 = 4;
const VECTORS: &str = include_str!("testdata/qemu_vectors.txt");

// ---------------------------------------------------------------- deterministic inputs

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone)]
struct Inputs {
    v: [u128; 8],
    x: [u64; 6],
    nzcv: u64,
    fpcr: u64,
    mem: Option<[u8; BUF_LEN]>,
}

const F32_SPECIAL: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x3f00_0000,
    0x3fc0_0000,
    0x4020_0000,
    0xc020_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x7fc1_2345,
    0xffc0_0001,
    0x7f80_0001,
    0xff81_2345,
    0x7fa0_0000,
    0x0000_0001,
    0x807f_ffff,
    0x0040_0000,
    0x0020_0000,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x0080_0000,
    0x4040_0000,
    0x4f00_0000,
    0xcf00_0000,
    0x4f80_0000,
    0x4f7f_ffff,
    0x5f00_0000,
    0xdf00_0000,
    0x5f80_0000,
    0x3eff_ffff,
    0xbf00_0000,
    0x3f40_0000,
    0x7e80_0000,
    0x0100_0000,
];

const F64_SPECIAL: &[u64] = &[
    0x0000_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x3fe0_0000_0000_0000,
    0x3ff8_0000_0000_0000,
    0x4004_0000_0000_0000,
    0xc004_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff8_0000_1234_5678,
    0xfff8_0000_0000_0001,
    0x7ff0_0000_0000_0001,
    0xfff4_0000_dead_beef,
    0x0000_0000_0000_0001,
    0x800f_ffff_ffff_ffff,
    0x0008_0000_0000_0000,
    0x0004_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x41e0_0000_0000_0000,
    0xc1e0_0000_0000_0000,
    0x41f0_0000_0000_0000,
    0x41ef_ffff_ffe0_0000,
    0x41df_ffff_ffc0_0000,
    0x43e0_0000_0000_0000,
    0xc3e0_0000_0000_0000,
    0x43f0_0000_0000_0000,
    0x43ef_ffff_ffff_ffff,
    0x3fdf_ffff_ffff_ffff,
    0x36a0_0000_0000_0000,
    0x3810_0000_0000_0000,
    0x47f0_0000_0000_0000,
    0x47ef_ffff_f000_0000,
    0x3e70_0000_0000_0000,
];

fn f32_val(r: &mut Rng) -> u32 {
    match r.below(4) {
        0 | 1 => F32_SPECIAL[r.below(F32_SPECIAL.len() as u64) as usize],
        2 => {
            // a number with a fractional part, some near .5
            let k = (r.below(2001) as f32 - 1000.0) + [0.5, 0.25, 0.75, 0.1][r.below(4) as usize];
            (k * [1.0, 1e3, 1e-3, 0.5][r.below(4) as usize]).to_bits()
        }
        _ => r.next() as u32,
    }
}

fn f64_val(r: &mut Rng) -> u64 {
    match r.below(4) {
        0 | 1 => F64_SPECIAL[r.below(F64_SPECIAL.len() as u64) as usize],
        2 => {
            let k = (r.below(2001) as f64 - 1000.0) + [0.5, 0.25, 0.75, 0.1][r.below(4) as usize];
            (k * [1.0, 1e6, 1e-6, 3.0][r.below(4) as usize]).to_bits()
        }
        _ => r.next(),
    }
}

/// One 64-bit half of a vector register; `special`: FP special values and integer extremes
/// only, so that combinations of them (NaN with infinity, infinity times zero ...) are common.
fn lane64(r: &mut Rng, special: bool) -> u64 {
    if special {
        let f32s = |r: &mut Rng| F32_SPECIAL[r.below(F32_SPECIAL.len() as u64) as usize] as u64;
        return match r.below(5) {
            0 | 1 => f32s(r) | f32s(r) << 32,
            2 | 3 => F64_SPECIAL[r.below(F64_SPECIAL.len() as u64) as usize],
            _ => [
                0u64,
                u64::MAX,
                0x8000_0000_8000_0000,
                0x8000_8000_8000_8000,
                0x8080_8080_8080_8080,
                0x8000_0000_0000_0000,
                0x7fff_ffff_7fff_ffff,
                0x7f7f_7f7f_7f7f_7f7f,
            ][r.below(8) as usize],
        };
    }
    match r.below(9) {
        0 | 1 => r.next(),
        2 | 3 => f32_val(r) as u64 | (f32_val(r) as u64) << 32,
        4 | 5 => f64_val(r),
        // small bytes (table indices, shift amounts, counts)
        6 => {
            let mut x = 0u64;
            for i in 0..8 {
                let b = if r.below(3) == 0 {
                    r.below(256)
                } else {
                    r.below(72)
                };
                x |= b << (8 * i);
            }
            x
        }
        // extreme and small signed integers of each size
        7 => {
            let pick = [
                0u64,
                1,
                u64::MAX,
                0x8000_0000_0000_0000,
                0x7fff_ffff_ffff_ffff,
            ];
            let mut x = pick[r.below(5) as usize];
            if r.below(2) == 0 {
                x = 0x8000_7fff_0080_7f80 ^ (r.below(4) * 0x0101_0101_0101_0101);
            }
            x
        }
        _ => {
            let mut x = 0u64;
            for i in 0..4 {
                let h = (r.below(64) as i64 - 32) as u64 & 0xffff;
                x |= h << (16 * i);
            }
            x
        }
    }
}

fn xval(r: &mut Rng) -> u64 {
    match r.below(6) {
        0 | 1 => r.next(),
        2 => r.below(200).wrapping_sub(100),
        3 => [
            0u64,
            u64::MAX,
            0x8000_0000,
            0x7fff_ffff,
            0x8000_0000_0000_0000,
            0xffff_ffff,
        ][r.below(6) as usize],
        4 => f32_val(r) as u64,
        _ => f64_val(r),
    }
}

fn fnv(s: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn is_mem(insn: &str) -> bool {
    insn.starts_with("ld") || insn.starts_with("st")
}

fn inputs(insn: &str, case: u32) -> Inputs {
    let mut r = Rng(fnv(insn) ^ (case as u64).wrapping_mul(0x1234_5678_9abc_def1));
    let special = case % 2 == 1;
    let mut v = [0u128; 8];
    for x in v.iter_mut() {
        *x = lane64(&mut r, special) as u128 | (lane64(&mut r, special) as u128) << 64;
    }
    let mut x = [0u64; 6];
    for y in x.iter_mut() {
        *y = xval(&mut r);
    }
    let nzcv = r.below(16) << 28;
    // case 3: a random FPCR (rounding mode, FZ, DN, AHP)
    let fpcr = if case % 4 == 3 {
        (r.below(4) << 22) | (r.below(8) << 24)
    } else if insn.starts_with("frinti") || insn.starts_with("frintx") {
        r.below(4) << 22
    } else {
        0
    };
    let mem = if is_mem(insn) {
        let mut m = [0u8; BUF_LEN];
        for b in m.iter_mut() {
            *b = r.next() as u8;
        }
        x[0] = BUF + 64 + r.below(8);
        x[1] = r.below(65).wrapping_sub(32);
        Some(m)
    } else {
        None
    };
    Inputs {
        v,
        x,
        nzcv,
        fpcr,
        mem,
    }
}

// ---------------------------------------------------------------- running one case here

struct Outcome {
    v: [u128; 8],
    x: [u64; 6],
    nzcv: u64,
    /// FPSR after the instruction (from 0): QC and the cumulative exception flags.
    fpsr: u64,
    mem: Option<[u8; BUF_LEN]>,
}

/// The FPSR bits an instruction can set: QC and the cumulative exception flags.
const FPSR_BITS: u64 = QC | EXC as u64;

fn run_case(word: u32, inp: &Inputs) -> Result<Outcome, String> {
    let u = decode(word, 0x40_0000);
    if u.op < FP_BASE {
        return Err(format!(
            "decodes to op {} ({})",
            u.op,
            armada_isa::ops::name(u.op)
        ));
    }
    let mut st = CpuState::default();
    st.v[..8].copy_from_slice(&inp.v);
    st.x[..6].copy_from_slice(&inp.x);
    st.nzcv = inp.nzcv;
    st.fpcr = inp.fpcr;
    let mut mem = AddressSpace::new();
    mem.map(BUF, 0x2000, Perm::RW).unwrap();
    if let Some(m) = &inp.mem {
        mem.write_bytes(BUF, m).unwrap();
    }
    exec_fp(&mut st, &mut mem, &u).map_err(|f| format!("fault {f}"))?;
    for i in 8..32 {
        if st.v[i] != 0 {
            return Err(format!("v{i} written"));
        }
    }
    for i in 6..31 {
        if st.x[i] != 0 {
            return Err(format!("x{i} written"));
        }
    }
    let mut out = Outcome {
        v: [0; 8],
        x: [0; 6],
        nzcv: st.nzcv,
        fpsr: st.fpsr & FPSR_BITS,
        mem: None,
    };
    out.v.copy_from_slice(&st.v[..8]);
    out.x.copy_from_slice(&st.x[..6]);
    if inp.mem.is_some() {
        let mut m = [0u8; BUF_LEN];
        mem.read_bytes(BUF, &mut m).unwrap();
        out.mem = Some(m);
    }
    Ok(out)
}

/// The changes of an outcome against its inputs, in the vector file's notation.
fn changes(inp: &Inputs, out: &Outcome) -> String {
    let mut s = Vec::new();
    for i in 0..8 {
        if out.v[i] != inp.v[i] {
            s.push(format!("v{i}={:x}", out.v[i]));
        }
    }
    for i in 0..6 {
        if out.x[i] != inp.x[i] {
            s.push(format!("x{i}={:x}", out.x[i]));
        }
    }
    if out.nzcv != inp.nzcv {
        s.push(format!("nzcv={:x}", out.nzcv >> 28));
    }
    if out.fpsr != 0 {
        s.push(format!("fpsr={:x}", out.fpsr));
    }
    if let (Some(a), Some(b)) = (&inp.mem, &out.mem) {
        let mut i = 0;
        while i < BUF_LEN {
            if a[i] != b[i] {
                let start = i;
                while i < BUF_LEN && a[i] != b[i] {
                    i += 1;
                }
                let hex: String = b[start..i].iter().map(|x| format!("{x:02x}")).collect();
                s.push(format!("m{start}={hex}"));
            } else {
                i += 1;
            }
        }
    }
    s.join(" ")
}

#[test]
fn qemu_vectors() {
    let mut failures = Vec::new();
    let mut count = 0;
    for line in VECTORS.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split('\t').collect();
        let word = u32::from_str_radix(parts[0], 16).unwrap();
        let case: u32 = parts[1].parse().unwrap();
        let insn = parts[2];
        let want = parts.get(3).copied().unwrap_or("");
        let inp = inputs(insn, case);
        count += 1;
        match run_case(word, &inp) {
            Ok(out) => {
                let got = changes(&inp, &out);
                if got != want {
                    failures.push(format!(
                        "{insn} ({word:08x}) case {case}\n    inputs v0={:032x} v1={:032x} v2={:032x} v3={:032x} x0={:x} x1={:x} nzcv={:x}\n    want {want}\n    got  {got}",
                        inp.v[0], inp.v[1], inp.v[2], inp.v[3], inp.x[0], inp.x[1], inp.nzcv >> 28
                    ));
                }
            }
            Err(e) => failures.push(format!("{insn} ({word:08x}) case {case}: {e}")),
        }
    }
    assert!(count > 1000, "too few vectors: {count}");
    if !failures.is_empty() {
        let n = failures.len();
        failures.truncate(40);
        panic!(
            "{n} of {count} cases differ from qemu:\n{}",
            failures.join("\n")
        );
    }
}

// ---------------------------------------------------------------- generating the vectors

/// Per-case layout of the guest's output record.
const OUT_REGS: usize = 8 * 16 + 6 * 8 + 8 + 8 + 8;

#[test]
#[ignore = "needs aarch64-linux-gnu-gcc and qemu-aarch64; rewrites testdata/qemu_vectors.txt"]
fn generate_qemu_vectors() {
    use std::fmt::Write as _;
    use std::process::Command;

    let list = insns::list();
    let ncases: u32 = std::env::var("ARMADA_FP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    let mut asm = String::new();
    let mut data = String::new();
    let mut cases: Vec<(String, u32, Inputs)> = Vec::new();
    asm.push_str(
        ".arch armv8.2-a+crypto+fp16\n.text\n.global _start\n_start:\n\
         \tmov x0, #0x10000000\n\tmov x1, #0x2000\n\tmov x2, #3\n\tmov x3, #0x32\n\
         \tmov x4, #-1\n\tmov x5, #0\n\tmov x8, #222\n\tsvc #0\n\
         \tadrp x27, indata\n\tadd x27, x27, :lo12:indata\n\
         \tadrp x28, outdata\n\tadd x28, x28, :lo12:outdata\n",
    );
    let mut out_size = 0usize;
    for insn in &list {
        for case in 0..ncases {
            let inp = inputs(insn, case);
            let id = cases.len();
            // inputs: v0-v7, x0-x5, nzcv, fpcr, then the memory image
            for v in inp.v {
                writeln!(data, "\t.quad {:#x}, {:#x}", v as u64, (v >> 64) as u64).unwrap();
            }
            for x in inp.x {
                writeln!(data, "\t.quad {x:#x}").unwrap();
            }
            writeln!(data, "\t.quad {:#x}, {:#x}", inp.nzcv, inp.fpcr).unwrap();
            let in_size = 8 * 16 + 6 * 8 + 16;
            let mut in_total = in_size;
            let mem_case = inp.mem.is_some();
            if let Some(m) = &inp.mem {
                for chunk in m.chunks(8) {
                    writeln!(
                        data,
                        "\t.quad {:#x}",
                        u64::from_le_bytes(chunk.try_into().unwrap())
                    )
                    .unwrap();
                }
                in_total += BUF_LEN;
            }
            if mem_case {
                write!(
                    asm,
                    "\tadd x10, x27, #{in_size}\n\tmov x11, #0x10000000\n\tmov x12, #{BUF_LEN}\n\
                     1:\tldr x13, [x10], #8\n\tstr x13, [x11], #8\n\tsubs x12, x12, #8\n\tb.ne 1b\n"
                )
                .unwrap();
            }
            write!(
                asm,
                "\tldp q0, q1, [x27]\n\tldp q2, q3, [x27, #32]\n\tldp q4, q5, [x27, #64]\n\
                 \tldp q6, q7, [x27, #96]\n\tldr x9, [x27, #176]\n\tmsr nzcv, x9\n\
                 \tldr x9, [x27, #184]\n\tmsr fpcr, x9\n\tmsr fpsr, xzr\n"
            )
            .unwrap();
            write!(
                asm,
                "\tldp x0, x1, [x27, #128]\n\tldp x2, x3, [x27, #144]\n\tldp x4, x5, [x27, #160]\n\
                 insn_{id}:\n\t{insn}\n\
                 \tstp q0, q1, [x28]\n\tstp q2, q3, [x28, #32]\n\tstp q4, q5, [x28, #64]\n\
                 \tstp q6, q7, [x28, #96]\n\tstp x0, x1, [x28, #128]\n\tstp x2, x3, [x28, #144]\n\
                 \tstp x4, x5, [x28, #160]\n\tmrs x9, nzcv\n\tstr x9, [x28, #176]\n\
                 \tmrs x9, fpsr\n\tstr x9, [x28, #184]\n\tadr x9, insn_{id}\n\tldr w9, [x9]\n\
                 \tstr x9, [x28, #192]\n\tmov x9, #0\n\tmsr fpcr, x9\n"
            )
            .unwrap();
            let mut this_out = OUT_REGS;
            if mem_case {
                write!(
                    asm,
                    "\tadd x10, x28, #{OUT_REGS}\n\tmov x11, #0x10000000\n\tmov x12, #{BUF_LEN}\n\
                     1:\tldr x13, [x11], #8\n\tstr x13, [x10], #8\n\tsubs x12, x12, #8\n\tb.ne 1b\n"
                )
                .unwrap();
                this_out += BUF_LEN;
            }
            write!(
                asm,
                "\tadd x27, x27, #{in_total}\n\tadd x28, x28, #{this_out}\n"
            )
            .unwrap();
            out_size += this_out;
            cases.push((insn.clone(), case, inp));
        }
    }
    write!(
        asm,
        "\tmov x0, #1\n\tadrp x1, outdata\n\tadd x1, x1, :lo12:outdata\n\tldr x2, =outsize\n\
         \tmov x8, #64\n\tsvc #0\n\tmov x0, #0\n\tmov x8, #93\n\tsvc #0\n\
         \t.ltorg\n\t.set outsize, {out_size}\n\
         .data\n.balign 16\nindata:\n{data}\n.bss\n.balign 16\noutdata:\n\t.skip {out_size}\n"
    )
    .unwrap();

    let dir = std::env::temp_dir().join(format!("armada-fp-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("t.s");
    let exe = dir.join("t");
    std::fs::write(&src, asm).unwrap();
    let st = Command::new("aarch64-linux-gnu-gcc")
        .args(["-nostdlib", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("aarch64-linux-gnu-gcc");
    assert!(st.success(), "assembling {} failed", src.display());
    let out = Command::new("qemu-aarch64")
        .arg(&exe)
        .output()
        .expect("qemu-aarch64");
    assert!(out.status.success(), "qemu-aarch64 failed");
    let bytes = out.stdout;
    assert_eq!(bytes.len(), out_size);

    let rd64 = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let mut text = String::from(
        "# FP/AdvSIMD results of qemu-aarch64; generated by `generate_qemu_vectors` (tests.rs).\n",
    );
    let mut off = 0usize;
    for (insn, case, inp) in &cases {
        let mut o = Outcome {
            v: [0; 8],
            x: [0; 6],
            nzcv: rd64(off + 176),
            fpsr: rd64(off + 184) & FPSR_BITS,
            mem: None,
        };
        for i in 0..8 {
            o.v[i] = rd64(off + 16 * i) as u128 | (rd64(off + 16 * i + 8) as u128) << 64;
        }
        for i in 0..6 {
            o.x[i] = rd64(off + 128 + 8 * i);
        }
        let word = rd64(off + 192) as u32;
        off += OUT_REGS;
        if inp.mem.is_some() {
            let mut m = [0u8; BUF_LEN];
            m.copy_from_slice(&bytes[off..off + BUF_LEN]);
            o.mem = Some(m);
            off += BUF_LEN;
        }
        writeln!(text, "{word:08x}\t{case}\t{insn}\t{}", changes(inp, &o)).unwrap();
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/cpu/fp/testdata/qemu_vectors.txt");
    std::fs::write(&path, text).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- hand-written checks

fn exec_one(st: &mut CpuState, u: MicroOp) {
    let mut mem = AddressSpace::new();
    exec_fp(st, &mut mem, &u).unwrap();
}

#[test]
fn scalar_results_zero_the_upper_bits() {
    let mut st = CpuState::default();
    st.v[0] = u128::MAX;
    st.v[1] = 0xffff_ffff_ffff_ffff_ffff_ffff_3f80_0000;
    st.v[2] = 0x4000_0000;
    exec_one(&mut st, MicroOp::new(F_ADD).a(0).b(1).c(2).e(2).f(2));
    assert_eq!(st.v[0], 0x4040_0000);
}

#[test]
fn fcmp_flags() {
    let mut st = CpuState::default();
    let cmp = |st: &mut CpuState, x: f64, y: f64| {
        st.v[1] = x.to_bits() as u128;
        st.v[2] = y.to_bits() as u128;
        exec_one(st, MicroOp::new(F_CMP).b(1).c(2).e(3));
        st.nzcv >> 28
    };
    assert_eq!(cmp(&mut st, 1.0, 2.0), 0b1000);
    assert_eq!(cmp(&mut st, 2.0, 2.0), 0b0110);
    assert_eq!(cmp(&mut st, 3.0, 2.0), 0b0010);
    assert_eq!(cmp(&mut st, f64::NAN, 2.0), 0b0011);
}

#[test]
fn structure_load_post_index() {
    let mut st = CpuState::default();
    let mut mem = AddressSpace::new();
    mem.map(BUF, 0x1000, Perm::RW).unwrap();
    let data: Vec<u8> = (0..64).collect();
    mem.write_bytes(BUF, &data).unwrap();
    st.x[31] = BUF; // SP as the base
                    // ld2 {v0.8b, v1.8b}, [sp], #16
    let u = decode(0x0cdf83e0, 0);
    assert_eq!(u.op, V_LD_MULTI);
    exec_fp(&mut st, &mut mem, &u).unwrap();
    assert_eq!(st.v[0], 0x0e0c_0a08_0604_0200);
    assert_eq!(st.v[1], 0x0f0d_0b09_0705_0301);
    assert_eq!(st.x[31], BUF + 16);
}

// ---------------------------------------------------------------- random words against qemu

/// Guest loop for `random_words_vs_qemu`: reads records (v0-v31, word, nzcv, fpcr, x0-x25)
/// from stdin, patches the word into a code slot, runs it with those registers and writes the
/// resulting record to stdout. x27/x28 hold the record address, so tested words must not
/// touch general registers above x25.
const RANDOM_GUEST: &str = r#"
.text
.global _start
_start:
    mov x0, #0
    mov x1, #0x10000
    mov x2, #7
    mov x3, #0x22
    mov x4, #-1
    mov x5, #0
    mov x8, #222
    svc #0
    mov x20, x0
    adr x1, tmpl_start
    adr x2, tmpl_end
    mov x3, x20
1:  ldr w4, [x1], #4
    str w4, [x3], #4
    cmp x1, x2
    b.lo 1b
    adrp x28, rec
    add x28, x28, :lo12:rec
    add x27, x28, #512
    br x20
tmpl_start:
loop:
    mov x21, #744
    mov x22, x28
2:  mov x0, #0
    mov x1, x22
    mov x2, x21
    mov x8, #63
    svc #0
    cmp x0, #0
    b.le done
    add x22, x22, x0
    sub x21, x21, x0
    cbnz x21, 2b
    ldr w9, [x27]
    adr x10, slot
    str w9, [x10]
    dc cvau, x10
    dsb ish
    ic ivau, x10
    dsb ish
    isb
    ldr x9, [x27, #8]
    msr nzcv, x9
    ldr x9, [x27, #16]
    msr fpcr, x9
    msr fpsr, xzr
    ldp q0, q1, [x28, #0]
    ldp q2, q3, [x28, #32]
    ldp q4, q5, [x28, #64]
    ldp q6, q7, [x28, #96]
    ldp q8, q9, [x28, #128]
    ldp q10, q11, [x28, #160]
    ldp q12, q13, [x28, #192]
    ldp q14, q15, [x28, #224]
    ldp q16, q17, [x28, #256]
    ldp q18, q19, [x28, #288]
    ldp q20, q21, [x28, #320]
    ldp q22, q23, [x28, #352]
    ldp q24, q25, [x28, #384]
    ldp q26, q27, [x28, #416]
    ldp q28, q29, [x28, #448]
    ldp q30, q31, [x28, #480]
    ldp x0, x1, [x27, #24]
    ldp x2, x3, [x27, #40]
    ldp x4, x5, [x27, #56]
    ldp x6, x7, [x27, #72]
    ldp x8, x9, [x27, #88]
    ldp x10, x11, [x27, #104]
    ldp x12, x13, [x27, #120]
    ldp x14, x15, [x27, #136]
    ldp x16, x17, [x27, #152]
    ldp x18, x19, [x27, #168]
    ldp x20, x21, [x27, #184]
    ldp x22, x23, [x27, #200]
    ldp x24, x25, [x27, #216]
slot:
    nop
    stp q0, q1, [x28, #0]
    stp q2, q3, [x28, #32]
    stp q4, q5, [x28, #64]
    stp q6, q7, [x28, #96]
    stp q8, q9, [x28, #128]
    stp q10, q11, [x28, #160]
    stp q12, q13, [x28, #192]
    stp q14, q15, [x28, #224]
    stp q16, q17, [x28, #256]
    stp q18, q19, [x28, #288]
    stp q20, q21, [x28, #320]
    stp q22, q23, [x28, #352]
    stp q24, q25, [x28, #384]
    stp q26, q27, [x28, #416]
    stp q28, q29, [x28, #448]
    stp q30, q31, [x28, #480]
    stp x0, x1, [x27, #24]
    stp x2, x3, [x27, #40]
    stp x4, x5, [x27, #56]
    stp x6, x7, [x27, #72]
    stp x8, x9, [x27, #88]
    stp x10, x11, [x27, #104]
    stp x12, x13, [x27, #120]
    stp x14, x15, [x27, #136]
    stp x16, x17, [x27, #152]
    stp x18, x19, [x27, #168]
    stp x20, x21, [x27, #184]
    stp x22, x23, [x27, #200]
    stp x24, x25, [x27, #216]
    mrs x9, nzcv
    str x9, [x27, #8]
    mrs x9, fpsr
    str x9, [x27, #16]
    msr fpcr, xzr
    mov x0, #1
    mov x1, x28
    mov x2, #744
    mov x8, #64
    svc #0
    b loop
done:
    mov x0, #0
    mov x8, #93
    svc #0
tmpl_end:
.bss
.balign 16
rec:
    .skip 1024
"#;

/// Whether a decoded word can run in the random-word guest: an FP/SIMD op that is not a
/// structure load/store and uses no general register above x25.
fn random_word_ok(u: &MicroOp) -> bool {
    use armada_isa::uop::reg;
    let low = |r: u8| r < 26 || r == reg::ZR || r == reg::SINK;
    match u.op {
        op if op < FP_BASE => false,
        V_LD_MULTI | V_ST_MULTI | V_LD_SINGLE | V_ST_SINGLE | V_LD_REPL => false,
        V_DUP_GEN | V_INS_GEN | INT_TO_F => low(u.b),
        V_UMOV | V_SMOV | F_TO_INT => low(u.a),
        _ => true,
    }
}

/// Random FP/SIMD words with random registers, all 32 V registers and x0-x25 as inputs,
/// compared with qemu-aarch64. ARMADA_FP_RANDOM sets the number of words (default 20000),
/// ARMADA_FP_SEED the seed; ARMADA_FP_FPCR=random gives every word a random FPCR (rounding
/// mode, FZ, DN, AHP); ARMADA_FP_SOFT=1 runs round-to-nearest on the soft-float path too.
#[test]
#[ignore = "needs aarch64-linux-gnu-gcc and qemu-aarch64"]
fn random_words_vs_qemu() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    let n: usize = std::env::var("ARMADA_FP_RANDOM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20000);
    let seed: u64 = std::env::var("ARMADA_FP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let random_fpcr = std::env::var("ARMADA_FP_FPCR").is_ok_and(|v| v == "random");
    if std::env::var("ARMADA_FP_SOFT").is_ok_and(|v| v == "1") {
        float::FORCE_SOFT.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut r = Rng(seed);
    let mut recs: Vec<(u32, CpuState)> = Vec::new();
    while recs.len() < n {
        // bits 27:25 = 111: the scalar FP and AdvSIMD encoding space
        let word = (r.next() as u32) | 0x0e00_0000;
        let u = decode(word, 0x40_0000);
        if !random_word_ok(&u) {
            continue;
        }
        let special = r.below(2) == 0;
        let mut st = CpuState::default();
        for v in st.v.iter_mut() {
            *v = lane64(&mut r, special) as u128 | (lane64(&mut r, special) as u128) << 64;
        }
        for x in st.x.iter_mut().take(26) {
            *x = xval(&mut r);
        }
        st.nzcv = r.below(16) << 28;
        if random_fpcr {
            st.fpcr = (r.below(4) << 22) | (r.below(8) << 24);
        } else if u.op == F_RINT
            && (u.d == armada_isa::ops::rmode::FPCR || u.d == armada_isa::ops::rmode::FPCR_EXACT)
        {
            st.fpcr = r.below(4) << 22;
        }
        recs.push((word, st));
    }

    let dir = std::env::temp_dir().join(format!("armada-fp-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("g.s");
    let exe = dir.join("g");
    std::fs::write(&src, RANDOM_GUEST).unwrap();
    let ok = Command::new("aarch64-linux-gnu-gcc")
        .args(["-nostdlib", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("aarch64-linux-gnu-gcc")
        .success();
    assert!(ok);
    let mut input = Vec::with_capacity(n * 744);
    for (word, st) in &recs {
        for v in &st.v {
            input.extend_from_slice(&v.to_le_bytes());
        }
        input.extend_from_slice(&(*word as u64).to_le_bytes());
        input.extend_from_slice(&st.nzcv.to_le_bytes());
        input.extend_from_slice(&st.fpcr.to_le_bytes());
        for x in &st.x[..26] {
            input.extend_from_slice(&x.to_le_bytes());
        }
    }
    let mut child = Command::new("qemu-aarch64")
        .arg(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("qemu-aarch64");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(&input).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.stdout.len(), n * 744, "guest output size");

    let mut bad = Vec::new();
    for (i, (word, inp)) in recs.iter().enumerate() {
        let o = &out.stdout[i * 744..(i + 1) * 744];
        let rd64 = |k: usize| u64::from_le_bytes(o[k..k + 8].try_into().unwrap());
        let mut want = inp.clone();
        for (k, v) in want.v.iter_mut().enumerate() {
            *v = rd64(16 * k) as u128 | (rd64(16 * k + 8) as u128) << 64;
        }
        want.nzcv = rd64(520);
        let want_fpsr = rd64(528) & FPSR_BITS;
        for k in 0..26 {
            want.x[k] = rd64(536 + 8 * k);
        }
        let mut got = inp.clone();
        got.fpcr = inp.fpcr;
        let mut mem = AddressSpace::new();
        let u = decode(*word, 0x40_0000);
        exec_fp(&mut got, &mut mem, &u).unwrap();
        let got_fpsr = got.fpsr & FPSR_BITS;
        let mut diffs = Vec::new();
        for k in 0..32 {
            if got.v[k] != want.v[k] {
                diffs.push(format!(
                    "v{k}: in {:032x} want {:032x} got {:032x}",
                    inp.v[k], want.v[k], got.v[k]
                ));
            }
        }
        for k in 0..26 {
            if got.x[k] != want.x[k] {
                diffs.push(format!(
                    "x{k}: want {:016x} got {:016x}",
                    want.x[k], got.x[k]
                ));
            }
        }
        if got.nzcv != want.nzcv {
            diffs.push(format!(
                "nzcv: want {:x} got {:x}",
                want.nzcv >> 28,
                got.nzcv >> 28
            ));
        }
        if got_fpsr != want_fpsr {
            diffs.push(format!("fpsr: want {want_fpsr:#x} got {got_fpsr:#x}"));
        }
        if !diffs.is_empty() {
            let (_, name) = armada_isa::decode_named(*word, 0);
            bad.push(format!(
                "{word:08x} {name} {u:?} fpcr={:#x}\n    {}\n    inputs v[b]={:032x} v[c]={:032x}",
                inp.fpcr,
                diffs.join("\n    "),
                inp.v[u.b as usize & 31],
                inp.v[u.c as usize & 31]
            ));
        }
    }
    if !bad.is_empty() {
        let k = bad.len();
        bad.truncate(30);
        panic!(
            "{k} of {n} random words differ from qemu:\n{}",
            bad.join("\n")
        );
    }
}
