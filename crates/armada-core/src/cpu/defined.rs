//! The micro-ops armada-semantics defines, as the interpreter runs them: arms of the loop's
//! `match`, generated at build time from the definitions (build.rs), so this engine, the
//! Cranelift tier, the CUDA kernel and the shader run one meaning.

include!(concat!(env!("OUT_DIR"), "/defined.rs"));

#[cfg(test)]
mod tests {
    use armada_isa::{ops, MicroOp};

    /// The outlined arms (UBFM, SBFM) agree with the shift pairs the engine runs in their
    /// place (`fused::bitfield`), over every immr/imms of both widths.
    #[test]
    fn outlined_bitfields_agree_with_the_shift_pairs() {
        let values = [
            0u64,
            1,
            0x8000_0000,
            0xdead_beef_8765_4321,
            u64::MAX,
            1 << 63,
        ];
        for op in [ops::UBFM_W, ops::UBFM_X, ops::SBFM_W, ops::SBFM_X] {
            let wide = matches!(op, ops::UBFM_X | ops::SBFM_X);
            let size = if wide { 64 } else { 32 };
            for r in 0..size {
                for s in 0..size {
                    let u = MicroOp::new(op).a(0).b(1).c(0).e(r as u8).f(s as u8);
                    let pair = super::super::fused::bitfield(&u).unwrap();
                    for &v in &values {
                        let mut x = [0u64; 64];
                        x[1] = v;
                        super::outlined(&u, &mut x);
                        let shifted = v << pair.e;
                        let want = match op {
                            ops::UBFM_W | ops::UBFM_X => shifted >> pair.f,
                            ops::SBFM_X => ((shifted as i64) >> pair.f) as u64,
                            _ => (((shifted as i64) >> pair.f) as u64) & 0xffff_ffff,
                        };
                        assert_eq!(x[0], want, "op {op} r {r} s {s} of {v:#x}");
                    }
                }
            }
        }
    }
}
