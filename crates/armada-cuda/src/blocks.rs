//! Translated blocks: a batch's hot micro-op sequences as CUDA C, compiled into a build of
//! the kernel for that batch (docs/cuda.md, "Translated blocks").
//!
//! Why: on lanes of real programs (CPython's), a micro-op cost the interpreter's loop about 36
//! warp instructions, most of them the loop's own (the min-PC vote, the budget check, the
//! next micro-op's load and its decode into fields), not the op's work (docs/performance.md,
//! "Where a Python lane's micro-op goes"). A block pays those once: its micro-ops' fields
//! are constants in its code, its registers' offsets fold, and the budget is checked once
//! for the whole block.
//!
//! Which blocks: where the lanes' slices ended (the kernel leaves the micro-op's index in
//! `S_INFO` at a slice's end, a sample of where lanes spend their time), each sample walked
//! back to the micro-op after the branch before it. A block runs from such a head over the
//! micro-ops this file translates, past conditional branches (each a side exit), up to an
//! unconditional branch or `MAX_LEN` micro-ops. The micro-ops' meaning is not written here
//! again: the integer ops' statements are armada-semantics' (as the kernel's own cases are),
//! and the loads, stores and branches are the interpreter loop's fast paths (interp.cu);
//! an access the block does not take (a page outside the lane's four latest translations, a
//! misaligned or page-crossing access) leaves it at that micro-op with every earlier one
//! retired, so results and instruction counts are the interpreter's.
//!
//! Measured on an H100, this form loses: 8,192 Python lanes' kernel took 13-20% longer with
//! 64-256 blocks (docs/performance.md, "Translated blocks on the GPU, a first step"), so the
//! batch builds blocks only when asked (`ARMADA_GPU_BLOCKS=1`).

use armada_isa::ops;
use armada_isa::uop::addr_mode;
use armada_semantics::lang::Lang;
use std::fmt::Write;

/// Micro-ops a block holds at most.
pub const MAX_LEN: usize = 48;
/// Micro-ops a sample is walked back at most to find its block's head.
const MAX_BACK: usize = 48;
/// Blocks a batch's build holds at most (its source and compile time grow with them;
/// `ARMADA_GPU_MAX_BLOCKS` sets another).
pub const MAX_BLOCKS: usize = 512;
/// Share of the samples the chosen blocks cover before the choice stops (per mille).
const COVER_PERMILLE: u64 = 950;

/// A micro-op's fields, as the kernel's loop decodes them.
#[derive(Clone, Copy)]
struct Fields {
    op: u16,
    a: u32,
    b: u32,
    c: u32,
    d: u32,
    e: u32,
    f: u32,
    imm: u64,
}

fn fields(w: [u64; 2]) -> Fields {
    let w0 = w[0];
    Fields {
        op: (w0 & 0xffff) as u16,
        a: ((w0 >> 16) & 63) as u32,
        b: ((w0 >> 24) & 63) as u32,
        c: ((w0 >> 32) & 63) as u32,
        d: ((w0 >> 40) & 0xff) as u32,
        e: ((w0 >> 48) & 0xff) as u32,
        f: ((w0 >> 56) & 0xff) as u32,
        imm: w[1],
    }
}

/// How a block treats a micro-op.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// Not translated: a block ends before it.
    No,
    /// Runs and falls through.
    Straight,
    /// A conditional branch: a side exit, the block goes on.
    Cond,
    /// An unconditional branch: the block's last micro-op.
    Ends,
}

/// The armada-semantics definition of `op` (a fused compare's own compare too).
fn definition(op: u16) -> Option<&'static armada_semantics::def::Def> {
    armada_semantics::definition(op).or_else(|| {
        armada_semantics::definitions()
            .iter()
            .find(|d| armada_isa::fused::with_branch(d.op) == Some(op))
    })
}

fn kind(f: &Fields) -> Kind {
    match f.op {
        ops::NOP | ops::PRFM | ops::MSR_NZCV_IMM => Kind::Straight,
        ops::B | ops::BL | ops::BR | ops::BLR => Kind::Ends,
        ops::B_COND
        | ops::CBZ_W
        | ops::CBZ_X
        | ops::CBNZ_W
        | ops::CBNZ_X
        | ops::TBZ
        | ops::TBNZ => Kind::Cond,
        op if (ops::LDR_B..=ops::STR_X).contains(&op) => Kind::Straight,
        ops::LDP_X | ops::STP_X => Kind::Straight,
        op if definition(op).is_some() => Kind::Straight,
        _ => Kind::No,
    }
}

/// Whether `op` is a compare fused with the B.cond after it (`armada_isa::fused`).
fn is_fused(op: u16) -> bool {
    use armada_isa::fused;
    (fused::ADDS_IMM_W_BCOND..fused::FUSED_END).contains(&op)
}

/// The micro-op at index `k` of `code` (two words each).
fn at(code: &[u64], k: usize) -> [u64; 2] {
    [code[2 * k], code[2 * k + 1]]
}

/// The head of the block holding micro-op `k`: walked back over translated micro-ops that
/// are not branches, to the region's start or the micro-op after a branch.
fn head_of(code: &[u64], k: usize) -> Option<usize> {
    if kind(&fields(at(code, k))) == Kind::No {
        return None;
    }
    let mut h = k;
    for _ in 0..MAX_BACK {
        if h == 0 {
            break;
        }
        let before = fields(at(code, h - 1));
        if before.op == ops::END_OF_REGION || kind(&before) != Kind::Straight {
            break;
        }
        h -= 1;
    }
    Some(h)
}

/// The micro-ops of the block at `head`: how many it holds.
fn extent(code: &[u64], head: usize) -> usize {
    let mut n = 0;
    while n < MAX_LEN && 2 * (head + n) + 1 < code.len() {
        match kind(&fields(at(code, head + n))) {
            Kind::No => break,
            Kind::Ends => return n + 1,
            _ => n += 1,
        }
    }
    n
}

/// The blocks to translate, from the samples ((micro-op index, count) where slices ended):
/// the heads holding most of the samples, most first, each with its length; and the share
/// of the samples they hold, per mille.
pub fn choose(code: &[u64], samples: &[(u32, u32)]) -> (Vec<(u32, usize)>, u32) {
    let mut by_head: rustc_hash::FxHashMap<usize, u64> = Default::default();
    let mut total = 0u64;
    for &(k, c) in samples {
        total += c as u64;
        if 2 * k as usize + 1 >= code.len() {
            continue;
        }
        if let Some(h) = head_of(code, k as usize) {
            *by_head.entry(h).or_default() += c as u64;
        }
    }
    let mut heads: Vec<(usize, u64)> = by_head.into_iter().collect();
    heads.sort_unstable_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    let max = std::env::var("ARMADA_GPU_MAX_BLOCKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_BLOCKS);
    let mut out = Vec::new();
    let mut covered = 0u64;
    for (h, c) in heads {
        if out.len() >= max || covered * 1000 >= total * COVER_PERMILLE || c < 2 {
            break;
        }
        // the loop's fused compare reads the B.cond after it from its slot: that slot
        // stays a B.cond
        if h > 0 && is_fused(fields(at(code, h - 1)).op) {
            continue;
        }
        let n = extent(code, h);
        if n >= 2 {
            out.push((h as u32, n));
            covered += c;
        }
    }
    (out, (covered * 1000 / total.max(1)) as u32)
}

/// The blocks worth translating for `samples` of `code` (`choose`): the kernel's source for
/// them, each one's head, and the samples they hold (per mille). None when there is none.
pub fn build(code: &[u64], samples: &[(u32, u32)]) -> Option<(String, Vec<u32>, u32)> {
    let (chosen, covered) = choose(code, samples);
    if chosen.is_empty() {
        return None;
    }
    let text = source(code, &chosen);
    // (to read them, or to compile them without a GPU: nvrtc_check's ARMADA_BLOCKS_FILE)
    if let Some(path) = std::env::var_os("ARMADA_CUDA_BLOCKS_DUMP") {
        let _ = std::fs::write(path, &text);
    }
    Some((text, chosen.iter().map(|b| b.0).collect(), covered))
}

/// `Device::build_blocks` for a device that compiles a build from the blocks' source
/// (`compile`) and keeps it in `builds`, where build k + 1 is the k-th.
pub fn build_into<T>(
    code: &[u64],
    samples: &[(u32, u32)],
    builds: &std::sync::Mutex<Vec<T>>,
    compile: impl FnOnce(&str) -> Result<T, crate::Error>,
) -> Result<Option<armada_gpu::device::BlockBuild>, crate::Error> {
    let Some((text, heads, covered)) = build(code, samples) else {
        return Ok(None);
    };
    let built = compile(&text)?;
    let mut builds = builds.lock().unwrap();
    builds.push(built);
    Ok(Some(armada_gpu::device::BlockBuild {
        build: builds.len() as u64,
        heads,
        covered,
    }))
}

/// The identifiers `text` uses (to declare only the fields a statement reads).
fn uses(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == name)
}

/// The kernel's translated blocks for `blocks` (head, length) of `code`: block k's function
/// `blk_k`, and the tables the loop's `OP_TBLOCK` case reads (`kernel/interp.cu`).
pub fn source(code: &[u64], blocks: &[(u32, usize)]) -> String {
    let mut s = String::from("// ----- generated by armada-cuda (blocks.rs) for one batch\n");
    let mut table = String::new();
    for (k, &(head, n)) in blocks.iter().enumerate() {
        let _ = writeln!(
            s,
            "__device__ __noinline__ BlockExit blk_{k}(u64* x, u32& nzcv, const Tlb& T, u64 pc0) {{"
        );
        let mut ended = false;
        for i in 0..n {
            let f = fields(at(code, head as usize + i));
            op_code(&mut s, &f, i);
            ended |= kind(&f) == Kind::Ends;
        }
        if !ended {
            let _ = writeln!(s, "    return BlockExit{{BX_OUT, {n}, 0}};");
        }
        s.push_str("}\n");
        let w = at(code, head as usize);
        let _ = write!(table, "{:#x}ull, {:#x}ull, {n}ull, ", w[0], w[1]);
    }
    let fns: Vec<String> = (0..blocks.len()).map(|k| format!("blk_{k}")).collect();
    let _ = writeln!(
        s,
        "__device__ const BlockFn BLOCKS[] = {{{}}};",
        fns.join(", ")
    );
    let _ = writeln!(s, "__device__ const u64 BLOCK_TABLE[] = {{{table}}};");
    s
}

/// A branch taken at micro-op `i` to `target` (an expression).
fn taken(i: usize, target: &str) -> String {
    format!("return BlockExit{{BX_JUMP, {i}, {target}}};")
}

/// The code of micro-op `f`, the block's `i`th.
fn op_code(s: &mut String, f: &Fields, i: usize) {
    let (b, e, imm) = (f.b, f.e, f.imm);
    let line = match f.op {
        ops::NOP | ops::PRFM | ops::MSR_NZCV_IMM => return,
        ops::B => taken(i, &format!("{imm:#x}ull")),
        ops::BL => format!(
            "x[30] = pc0 + {}; {}",
            4 * (i + 1),
            taken(i, &format!("{imm:#x}ull"))
        ),
        ops::BR => taken(i, &format!("x[{b}]")),
        ops::BLR => format!(
            "{{ u64 t_ = x[{b}]; x[30] = pc0 + {}; {} }}",
            4 * (i + 1),
            taken(i, "t_")
        ),
        ops::B_COND => format!(
            "if (cond_holds({e}, nzcv)) {}",
            taken(i, &format!("{imm:#x}ull"))
        ),
        ops::CBZ_W | ops::CBZ_X | ops::CBNZ_W | ops::CBNZ_X => {
            let w = if matches!(f.op, ops::CBZ_W | ops::CBNZ_W) {
                "(u32)"
            } else {
                ""
            };
            let cmp = if matches!(f.op, ops::CBZ_W | ops::CBZ_X) {
                "=="
            } else {
                "!="
            };
            format!(
                "if ({w}x[{b}] {cmp} 0) {}",
                taken(i, &format!("{imm:#x}ull"))
            )
        }
        ops::TBZ | ops::TBNZ => format!(
            "if (((x[{b}] >> {}) & 1) {} 0) {}",
            e & 63,
            if f.op == ops::TBZ { "==" } else { "!=" },
            taken(i, &format!("{imm:#x}ull"))
        ),
        op if (ops::LDR_B..=ops::STR_X).contains(&op) => access(f, i),
        ops::LDP_X | ops::STP_X => pair(f, i),
        op => {
            let d = definition(op).expect("a translated op has a definition");
            let stmt = armada_semantics::text::statement(Lang::Cuda, d);
            let mut decl = String::new();
            for (name, v) in [
                ("a", f.a),
                ("b", f.b),
                ("c", f.c),
                ("d", f.d),
                ("dr", f.d & 63),
                ("e", f.e),
                ("f", f.f),
            ] {
                if uses(&stmt, name) {
                    let _ = write!(decl, "const u32 {name} = {v}; ");
                }
            }
            if uses(&stmt, "imm") {
                let _ = write!(decl, "const u64 imm = {imm:#x}ull; ");
            }
            format!("{{ {decl}{stmt}; }}")
        }
    };
    let _ = writeln!(s, "    {line}");
}

/// The address expression of a load or store, as the interpreter's loop computes it.
fn address(f: &Fields) -> String {
    let (b, c, e, imm) = (f.b, f.c, f.e, f.imm);
    match f.f as u8 {
        addr_mode::OFFSET | addr_mode::PRE => format!("x[{b}] + {imm:#x}ull"),
        addr_mode::POST => format!("x[{b}]"),
        _ => format!("x[{b}] + extend(x[{c}], {}, {})", e >> 3, e & 7),
    }
}

/// The base register's write-back after an access at `ad_`.
fn write_back(f: &Fields) -> String {
    match f.f as u8 {
        addr_mode::PRE => format!("x[{}] = ad_; ", f.b),
        addr_mode::POST => format!("x[{}] = ad_ + {:#x}ull; ", f.b, f.imm),
        _ => String::new(),
    }
}

/// An access of `size` bytes at `ad_` translated into `p_`, or the block left before it for
/// the loop (`blk_tr`: a page not among the lane's latest four, a misaligned or page-crossing
/// access, which the loop's paths take).
fn translate(i: usize, size: u32, write: u32) -> String {
    // (an aligned access of up to 8 bytes is within a page; a pair's second word may not be)
    let off = if size > 8 {
        format!(" || (ad_ & 4095) > {}", 4096 - size)
    } else {
        String::new()
    };
    format!(
        "u8* p_ = blk_tr(T, ad_, {write}); \
         if (!p_ || (ad_ & {}){off}) return BlockExit{{BX_OUT, {i}, 0}}; ",
        size.min(8) - 1
    )
}

/// LDR/STR of one general register (the loop's fast path).
fn access(f: &Fields, i: usize) -> String {
    let op = f.op;
    let size: u32 = match op {
        ops::LDR_B | ops::LDRSB_W | ops::LDRSB_X | ops::STR_B => 1,
        ops::LDR_H | ops::LDRSH_W | ops::LDRSH_X | ops::STR_H => 2,
        ops::LDR_W | ops::LDRSW | ops::STR_W => 4,
        _ => 8,
    };
    let write = (op >= ops::STR_B) as u32;
    let ty = match size {
        1 => "u8",
        2 => "u16",
        4 => "u32",
        _ => "u64",
    };
    let mut s = format!("{{ u64 ad_ = {}; {}", address(f), translate(i, size, write));
    if write == 1 {
        let _ = write!(s, "*({ty}*)p_ = ({ty})x[{}]; {}", f.a, write_back(f));
    } else {
        let ext = match op {
            ops::LDRSB_W => "v_ = (u32)(i32)(signed char)(u8)v_; ",
            ops::LDRSB_X => "v_ = (u64)(i64)(signed char)(u8)v_; ",
            ops::LDRSH_W => "v_ = (u32)(i32)(short)(u16)v_; ",
            ops::LDRSH_X => "v_ = (u64)(i64)(short)(u16)v_; ",
            ops::LDRSW => "v_ = (u64)(i64)(i32)(u32)v_; ",
            _ => "",
        };
        let _ = write!(
            s,
            "u64 v_ = *(const {ty}*)p_; {ext}{}x[{}] = v_; ",
            write_back(f),
            f.a
        );
    }
    s.push('}');
    s
}

/// LDP/STP of two general registers (the loop's fast path: the pair within one page).
fn pair(f: &Fields, i: usize) -> String {
    let (a, dr) = (f.a, f.d & 63);
    let write = (f.op == ops::STP_X) as u32;
    let mut s = format!("{{ u64 ad_ = {}; {}", address(f), translate(i, 16, write));
    if write == 1 {
        let _ = write!(
            s,
            "((u64*)p_)[0] = x[{a}]; ((u64*)p_)[1] = x[{dr}]; {}",
            write_back(f)
        );
    } else {
        let _ = write!(
            s,
            "u64 v0_ = ((const u64*)p_)[0], v1_ = ((const u64*)p_)[1]; {}x[{a}] = v0_; x[{dr}] = v1_; ",
            write_back(f)
        );
    }
    s.push('}');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_isa::decode;

    fn code_of(words: &[u32]) -> Vec<u64> {
        let mut code = vec![ops::END_OF_REGION as u64, 0];
        for (k, &w) in words.iter().enumerate() {
            let u = decode(w, 0x1000 + 4 * k as u64);
            code.extend_from_slice(&[u.fields_word(), u.imm]);
        }
        code.extend_from_slice(&[ops::END_OF_REGION as u64, 0]);
        code
    }

    /// A sample inside a loop's body is walked back to the micro-op after the branch before
    /// it, and the block runs over the conditional branch to the unconditional one.
    #[test]
    fn heads_and_extents() {
        // add x0, x0, #1; cbz x1, .+8; ldr x2, [x3, #8]; add x2, x2, x0; str x2, [x3, #8];
        // b .-20; svc #0
        let code = code_of(&[
            0x91000400, 0xb4000041, 0xf9400462, 0x8b000042, 0xf9000462, 0x17fffffb, 0xd4000001,
        ]);
        // micro-op 1 is the first instruction (0 is the sentinel before the region)
        assert_eq!(head_of(&code, 4), Some(3));
        assert_eq!(head_of(&code, 1), Some(1));
        assert_eq!(extent(&code, 1), 6);
        assert_eq!(extent(&code, 3), 4);
        assert_eq!(head_of(&code, 7), None);
        let (chosen, covered) = choose(&code, &[(4, 10), (5, 3), (1, 4)]);
        assert_eq!(chosen, vec![(3, 4), (1, 6)]);
        assert_eq!(covered, 1000);
        let text = source(&code, &chosen);
        assert!(text.contains("blk_0(") && text.contains("blk_1("));
        assert!(text.contains("return BlockExit{BX_JUMP, 3,"), "{text}");
        assert!(text.contains("blk_tr(T, ad_, 1)"), "{text}");
    }
}
