//! Exact floating-point arithmetic in integers, for every FPCR rounding mode and for FPCR.FZ
//! (flush denormal inputs, flush results that are tiny before rounding) and FPCR.AHP
//! (half-precision conversions). The native-float path in `float` serves round-to-nearest
//! without FZ; this one serves the rest and agrees with it where both apply.
//!
//! Values are bit patterns of a format `Fmt` (H, S, D). NaN operands are dealt with by the
//! callers (`float`); the functions here see numbers, zeros and infinities only.
//!
//! Every operation ORs the FPSR cumulative exception flags it raises into `fl` (the bits
//! below), as the Arm ARM's FPRoundBase and friends do: Inexact; Underflow when the exact
//! result is tiny (below the smallest normal, before rounding) and inexact, or when FZ
//! flushes it to zero (then without Inexact); Overflow (with Inexact); Invalid Operation for
//! the invalid cases (and, in the alternative half-precision format, for what it cannot
//! hold); Divide by Zero; Input Denormal when FZ flushes a denormal operand.

/// FPSR cumulative exception flags (bit positions as in FPSR).
pub(super) const IOC: u32 = 1 << 0;
pub(super) const DZC: u32 = 1 << 1;
pub(super) const OFC: u32 = 1 << 2;
pub(super) const UFC: u32 = 1 << 3;
pub(super) const IXC: u32 = 1 << 4;
pub(super) const IDC: u32 = 1 << 7;

/// A binary interchange format.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Fmt {
    pub ebits: u32,
    pub fbits: u32,
}

pub(super) const H: Fmt = Fmt {
    ebits: 5,
    fbits: 10,
};
pub(super) const S: Fmt = Fmt {
    ebits: 8,
    fbits: 23,
};
pub(super) const D: Fmt = Fmt {
    ebits: 11,
    fbits: 52,
};

impl Fmt {
    pub fn bias(self) -> i32 {
        (1 << (self.ebits - 1)) - 1
    }
    pub fn sign(self) -> u64 {
        1 << (self.ebits + self.fbits)
    }
    pub fn inf(self) -> u64 {
        ((1u64 << self.ebits) - 1) << self.fbits
    }
    pub fn quiet(self) -> u64 {
        1 << (self.fbits - 1)
    }
    pub fn default_nan(self) -> u64 {
        self.inf() | self.quiet()
    }
    fn frac_mask(self) -> u64 {
        (1 << self.fbits) - 1
    }
    fn exp_field(self, b: u64) -> u64 {
        (b >> self.fbits) & ((1 << self.ebits) - 1)
    }
    /// Smallest exponent of a normal number.
    fn emin(self) -> i32 {
        1 - self.bias()
    }
    pub fn is_nan(self, b: u64, ahp: bool) -> bool {
        !ahp && self.exp_field(b) == (1 << self.ebits) - 1 && b & self.frac_mask() != 0
    }
}

/// Rounding selector, as `ops::rmode`: 0 nearest-even, 1 +inf, 2 -inf, 3 zero, 4 nearest-away.
pub(super) type Mode = u8;

/// An unpacked operand: zero, infinity, or `mant * 2^exp` with `mant != 0`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val {
    Zero,
    Inf,
    Num { mant: u128, exp: i32 },
}

/// Unpacks a non-NaN operand; `fz` flushes denormals to zero (raising Input Denormal), `ahp`
/// reads the alternative half-precision format (no infinities).
pub(super) fn unpack(fmt: Fmt, b: u64, fz: bool, ahp: bool, fl: &mut u32) -> (bool, Val) {
    let sign = b & fmt.sign() != 0;
    let e = fmt.exp_field(b);
    let f = b & fmt.frac_mask();
    let emax = (1u64 << fmt.ebits) - 1;
    let v = if e == emax && !ahp {
        Val::Inf
    } else if e == 0 {
        if f == 0 {
            Val::Zero
        } else if fz {
            *fl |= IDC;
            Val::Zero
        } else {
            Val::Num {
                mant: f as u128,
                exp: fmt.emin() - fmt.fbits as i32,
            }
        }
    } else {
        Val::Num {
            mant: (f | 1 << fmt.fbits) as u128,
            exp: e as i32 - fmt.bias() - fmt.fbits as i32,
        }
    };
    (sign, v)
}

pub(super) fn zero(fmt: Fmt, sign: bool) -> u64 {
    if sign {
        fmt.sign()
    } else {
        0
    }
}

pub(super) fn inf(fmt: Fmt, sign: bool) -> u64 {
    zero(fmt, sign) | fmt.inf()
}

fn msb(m: u128) -> i32 {
    127 - m.leading_zeros() as i32
}

/// Rounding selector of `round_pack` beyond `ops::rmode`: round to odd (FCVTXN).
pub(super) const ODD: Mode = 5;

/// Rounds `(mant + sticky) * 2^exp` (sticky: a nonzero amount below the lowest bit of mant)
/// to `fmt` in `mode`, raising Inexact, Underflow and Overflow in `fl`. `fz` flushes results
/// that are tiny before rounding to zero; `ahp` packs the alternative half-precision format
/// (overflow saturates and is an Invalid Operation).
#[allow(clippy::too_many_arguments)]
pub(super) fn round_pack(
    fmt: Fmt,
    sign: bool,
    mant: u128,
    exp: i32,
    sticky: bool,
    mode: Mode,
    fz: bool,
    ahp: bool,
    fl: &mut u32,
) -> u64 {
    if mant == 0 && !sticky {
        return zero(fmt, sign);
    }
    let fb = fmt.fbits as i32;
    // a lone sticky bit stands for a value far below everything
    let (mant, exp) = if mant == 0 {
        (1u128, exp - 200)
    } else {
        (mant, exp)
    };
    let top = exp + msb(mant);
    // tiny before rounding: the exact value is below the smallest normal
    let tiny = top < fmt.emin();
    if tiny && fz {
        *fl |= UFC;
        return zero(fmt, sign);
    }
    let mut q = top.max(fmt.emin()) - fb;
    let sh = q - exp;
    let (mut m, rbit, st) = if sh <= 0 {
        (mant << (-sh) as u32, false, sticky)
    } else if sh > 128 {
        (0u128, false, true)
    } else {
        let m = if sh == 128 { 0 } else { mant >> sh as u32 };
        let rbit = (mant >> (sh - 1) as u32) & 1 == 1;
        let below = if sh == 1 {
            0
        } else {
            mant & ((1u128 << (sh - 1) as u32) - 1)
        };
        (m, rbit, sticky || below != 0)
    };
    let inexact = rbit || st;
    let up = match mode {
        0 => rbit && (st || m & 1 == 1),
        1 => inexact && !sign,
        2 => inexact && sign,
        3 | ODD => false,
        _ => rbit,
    };
    if up {
        m += 1;
        if m >> (fb + 1) != 0 {
            m >>= 1;
            q += 1;
        }
    }
    if mode == ODD && inexact {
        m |= 1;
    }
    let s = zero(fmt, sign);
    let e_field: i64 = if m >> fb == 0 {
        0
    } else {
        (q + fb + fmt.bias()) as i64
    };
    let e_max_normal = if ahp {
        (1i64 << fmt.ebits) - 1
    } else {
        (1i64 << fmt.ebits) - 2
    };
    if e_field > e_max_normal {
        if ahp {
            *fl |= IOC;
            return s | (fmt.sign() - 1);
        }
        *fl |= OFC | IXC;
        let to_inf = match mode {
            0 | 4 => true,
            1 => !sign,
            2 => sign,
            _ => false,
        };
        return if to_inf {
            inf(fmt, sign)
        } else {
            s | (fmt.inf() - 1)
        };
    }
    if inexact {
        *fl |= if tiny { UFC | IXC } else { IXC };
    }
    if m == 0 {
        return s;
    }
    s | (e_field as u64) << fmt.fbits | (m as u64 & fmt.frac_mask())
}

/// Exact sum of two signed numbers: (sign, mant, exp, sticky), or None if exactly zero.
fn sum(
    s1: bool,
    m1: u128,
    e1: i32,
    s2: bool,
    m2: u128,
    e2: i32,
) -> Option<(bool, u128, i32, bool)> {
    let t = (e1 + msb(m1)).max(e2 + msb(m2));
    let e0 = t - 124;
    let align = |m: u128, e: i32| -> (u128, bool) {
        if e >= e0 {
            (m << (e - e0) as u32, false)
        } else {
            let sh = (e0 - e) as u32;
            if sh >= 128 {
                (0, true)
            } else {
                (m >> sh, m & ((1u128 << sh) - 1) != 0)
            }
        }
    };
    let (a, la) = align(m1, e1);
    let (b, lb) = align(m2, e2);
    let lost = la || lb;
    if s1 == s2 {
        return Some((s1, a + b, e0, lost));
    }
    // the truncated operand (if any) is the smaller one
    if a > b {
        if lb {
            Some((s1, a - b - 1, e0, true))
        } else {
            Some((s1, a - b, e0, false))
        }
    } else if b > a {
        if la {
            Some((s2, b - a - 1, e0, true))
        } else {
            Some((s2, b - a, e0, false))
        }
    } else if lost {
        // equal after truncation: the truncated one is bigger by a fraction
        Some((if la { s1 } else { s2 }, 0, e0, true))
    } else {
        None
    }
}

/// Rounding context: mode, flush-to-zero, alternative half precision.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rnd {
    pub mode: Mode,
    pub fz: bool,
}

fn exact_zero_sign(r: Rnd) -> bool {
    r.mode == 2
}

/// a + b for non-NaN operands (InvalidOp cases return the default NaN).
pub(super) fn add(fmt: Fmt, a: u64, b: u64, r: Rnd, fl: &mut u32) -> u64 {
    let (sa, va) = unpack(fmt, a, r.fz, false, fl);
    let (sb, vb) = unpack(fmt, b, r.fz, false, fl);
    match (va, vb) {
        (Val::Inf, Val::Inf) => {
            if sa == sb {
                inf(fmt, sa)
            } else {
                *fl |= IOC;
                fmt.default_nan()
            }
        }
        (Val::Inf, _) => inf(fmt, sa),
        (_, Val::Inf) => inf(fmt, sb),
        (Val::Zero, Val::Zero) => zero(fmt, if sa == sb { sa } else { exact_zero_sign(r) }),
        (Val::Zero, Val::Num { mant, exp }) => {
            round_pack(fmt, sb, mant, exp, false, r.mode, r.fz, false, fl)
        }
        (Val::Num { mant, exp }, Val::Zero) => {
            round_pack(fmt, sa, mant, exp, false, r.mode, r.fz, false, fl)
        }
        (Val::Num { mant: m1, exp: e1 }, Val::Num { mant: m2, exp: e2 }) => {
            match sum(sa, m1, e1, sb, m2, e2) {
                Some((s, m, e, st)) => round_pack(fmt, s, m, e, st, r.mode, r.fz, false, fl),
                None => zero(fmt, exact_zero_sign(r)),
            }
        }
    }
}

pub(super) fn mul(fmt: Fmt, a: u64, b: u64, r: Rnd, fl: &mut u32) -> u64 {
    let (sa, va) = unpack(fmt, a, r.fz, false, fl);
    let (sb, vb) = unpack(fmt, b, r.fz, false, fl);
    let s = sa != sb;
    match (va, vb) {
        (Val::Inf, Val::Zero) | (Val::Zero, Val::Inf) => {
            *fl |= IOC;
            fmt.default_nan()
        }
        (Val::Inf, _) | (_, Val::Inf) => inf(fmt, s),
        (Val::Zero, _) | (_, Val::Zero) => zero(fmt, s),
        (Val::Num { mant: m1, exp: e1 }, Val::Num { mant: m2, exp: e2 }) => {
            round_pack(fmt, s, m1 * m2, e1 + e2, false, r.mode, r.fz, false, fl)
        }
    }
}

pub(super) fn div(fmt: Fmt, a: u64, b: u64, r: Rnd, fl: &mut u32) -> u64 {
    let (sa, va) = unpack(fmt, a, r.fz, false, fl);
    let (sb, vb) = unpack(fmt, b, r.fz, false, fl);
    let s = sa != sb;
    match (va, vb) {
        (Val::Inf, Val::Inf) | (Val::Zero, Val::Zero) => {
            *fl |= IOC;
            fmt.default_nan()
        }
        (Val::Inf, _) => inf(fmt, s),
        (_, Val::Zero) => {
            *fl |= DZC;
            inf(fmt, s)
        }
        (Val::Zero, _) | (_, Val::Inf) => zero(fmt, s),
        (Val::Num { mant: m1, exp: e1 }, Val::Num { mant: m2, exp: e2 }) => {
            let k = 126 - msb(m1);
            let n = m1 << k as u32;
            let (q, rem) = (n / m2, n % m2);
            round_pack(fmt, s, q, e1 - k - e2, rem != 0, r.mode, r.fz, false, fl)
        }
    }
}

fn isqrt(n: u128) -> u128 {
    if n == 0 {
        return 0;
    }
    let mut x = (n as f64).sqrt() as u128;
    // Newton steps from the float estimate, then exact correction.
    for _ in 0..4 {
        if x == 0 {
            x = 1;
        }
        x = (x + n / x) / 2;
    }
    loop {
        match x.checked_mul(x) {
            Some(s) if s <= n => break,
            _ => x -= 1,
        }
    }
    while let Some(s) = (x + 1).checked_mul(x + 1) {
        if s > n {
            break;
        }
        x += 1;
    }
    x
}

pub(super) fn sqrt(fmt: Fmt, a: u64, r: Rnd, fl: &mut u32) -> u64 {
    let (sa, va) = unpack(fmt, a, r.fz, false, fl);
    match va {
        Val::Zero => zero(fmt, sa),
        _ if sa => {
            *fl |= IOC;
            fmt.default_nan()
        }
        Val::Inf => inf(fmt, false),
        Val::Num { mut mant, mut exp } => {
            if exp & 1 != 0 {
                mant <<= 1;
                exp -= 1;
            }
            let k = (125 - msb(mant)) & !1;
            let n = mant << k as u32;
            let root = isqrt(n);
            round_pack(
                fmt,
                false,
                root,
                (exp - k) / 2,
                root * root != n,
                r.mode,
                r.fz,
                false,
                fl,
            )
        }
    }
}

/// addend + n * m with one rounding; `halve` divides the exact result by two first
/// (FRSQRTS). NaN operands and the QNaN-addend rule are the caller's.
pub(super) fn muladd(
    fmt: Fmt,
    addend: u64,
    n: u64,
    m: u64,
    halve: bool,
    r: Rnd,
    fl: &mut u32,
) -> u64 {
    let (sc, vc) = unpack(fmt, addend, r.fz, false, fl);
    let (sa, va) = unpack(fmt, n, r.fz, false, fl);
    let (sb, vb) = unpack(fmt, m, r.fz, false, fl);
    let sp = sa != sb;
    let h = halve as i32;
    // the product
    let prod = match (va, vb) {
        (Val::Inf, Val::Zero) | (Val::Zero, Val::Inf) => {
            *fl |= IOC;
            return fmt.default_nan();
        }
        (Val::Inf, _) | (_, Val::Inf) => Val::Inf,
        (Val::Zero, _) | (_, Val::Zero) => Val::Zero,
        (Val::Num { mant: m1, exp: e1 }, Val::Num { mant: m2, exp: e2 }) => Val::Num {
            mant: m1 * m2,
            exp: e1 + e2,
        },
    };
    match (prod, vc) {
        (Val::Inf, Val::Inf) => {
            if sp == sc {
                inf(fmt, sp)
            } else {
                *fl |= IOC;
                fmt.default_nan()
            }
        }
        (Val::Inf, _) => inf(fmt, sp),
        (_, Val::Inf) => inf(fmt, sc),
        (Val::Zero, Val::Zero) => zero(fmt, if sp == sc { sp } else { exact_zero_sign(r) }),
        (Val::Zero, Val::Num { mant, exp }) => {
            round_pack(fmt, sc, mant, exp - h, false, r.mode, r.fz, false, fl)
        }
        (Val::Num { mant, exp }, Val::Zero) => {
            round_pack(fmt, sp, mant, exp - h, false, r.mode, r.fz, false, fl)
        }
        (Val::Num { mant: m1, exp: e1 }, Val::Num { mant: m2, exp: e2 }) => {
            match sum(sp, m1, e1, sc, m2, e2) {
                Some((s, mm, e, st)) => round_pack(fmt, s, mm, e - h, st, r.mode, r.fz, false, fl),
                None => zero(fmt, exact_zero_sign(r)),
            }
        }
    }
}

/// Rounds to an integral value in `mode` (FRINT*); `exact` (FRINTX) raises Inexact when the
/// result differs from the operand.
pub(super) fn round_int(fmt: Fmt, a: u64, mode: Mode, fz: bool, exact: bool, fl: &mut u32) -> u64 {
    let (s, v) = unpack(fmt, a, fz, false, fl);
    match v {
        Val::Zero => zero(fmt, s),
        Val::Inf => inf(fmt, s),
        Val::Num { mant, exp } => {
            if exp >= 0 {
                return a;
            }
            let (iv, inexact) = int_round(s, mant, exp, mode);
            if inexact && exact {
                *fl |= IXC;
            }
            if iv == 0 {
                zero(fmt, s)
            } else {
                // an integer of at most the format's precision: exact
                round_pack(fmt, s, iv, 0, false, 0, false, false, &mut 0)
            }
        }
    }
}

/// |value| = mant * 2^exp rounded to an integer in `mode` (sign given for directed modes),
/// and whether that was inexact.
fn int_round(sign: bool, mant: u128, exp: i32, mode: Mode) -> (u128, bool) {
    if exp >= 0 {
        return (mant << exp.min(64) as u32, false);
    }
    let sh = -exp as u32;
    let (iv, rbit, st) = if sh > 127 {
        (0u128, false, true)
    } else {
        let iv = mant >> sh;
        let rbit = (mant >> (sh - 1)) & 1 == 1;
        let below = if sh == 1 {
            0
        } else {
            mant & ((1u128 << (sh - 1)) - 1)
        };
        (iv, rbit, below != 0)
    };
    let inexact = rbit || st;
    let up = match mode {
        0 => rbit && (st || iv & 1 == 1),
        1 => inexact && !sign,
        2 => inexact && sign,
        3 => false,
        _ => rbit,
    };
    (iv + up as u128, inexact)
}

/// Integer (already sign- or zero-extended to 64 bits) times 2^-fbits to `fmt`.
pub(super) fn from_int(fmt: Fmt, x: u64, unsigned: bool, fbits: u32, r: Rnd, fl: &mut u32) -> u64 {
    let (s, mag) = if !unsigned && (x as i64) < 0 {
        (true, (x as i64).unsigned_abs())
    } else {
        (false, x)
    };
    round_pack(
        fmt,
        s,
        mag as u128,
        -(fbits as i32),
        false,
        r.mode,
        r.fz,
        false,
        fl,
    )
}

/// FPConvert of a non-NaN value between formats. Denormal inputs are flushed only for single
/// and double (`fz`), results only when the destination is single or double; `ahp` selects
/// the alternative half-precision format on the half side (an infinity converted to it is
/// an Invalid Operation). `r.mode` may be `ODD`.
pub(super) fn convert(from: Fmt, to: Fmt, a: u64, r: Rnd, ahp: bool, fl: &mut u32) -> u64 {
    let in_ahp = ahp && from == H;
    let out_ahp = ahp && to == H;
    let (s, v) = unpack(from, a, r.fz && from != H, in_ahp, fl);
    match v {
        Val::Zero => zero(to, s),
        Val::Inf => {
            if out_ahp {
                *fl |= IOC;
                zero(to, s) | (to.sign() - 1)
            } else {
                inf(to, s)
            }
        }
        Val::Num { mant, exp } => round_pack(
            to,
            s,
            mant,
            exp,
            false,
            r.mode,
            r.fz && to != H,
            out_ahp,
            fl,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RN: Rnd = Rnd { mode: 0, fz: false };

    fn c64(x: f64) -> u64 {
        if x.is_nan() {
            D.default_nan()
        } else {
            x.to_bits()
        }
    }

    fn c32(x: f32) -> u64 {
        if x.is_nan() {
            S.default_nan()
        } else {
            x.to_bits() as u64
        }
    }

    #[test]
    fn agrees_with_native_round_to_nearest() {
        let vals: [f64; 12] = [
            1.0,
            -2.5,
            3.0e-310,
            1.0e300,
            -7.25,
            0.1,
            1.0 / 3.0,
            5.0e-324,
            2.0,
            -0.0,
            123456.789,
            1e-5,
        ];
        for &x in &vals {
            for &y in &vals {
                let (a, b) = (x.to_bits(), y.to_bits());
                assert_eq!(add(D, a, b, RN, &mut 0), c64(x + y), "{x} + {y}");
                assert_eq!(mul(D, a, b, RN, &mut 0), c64(x * y), "{x} * {y}");
                if y != 0.0 {
                    assert_eq!(div(D, a, b, RN, &mut 0), c64(x / y), "{x} / {y}");
                }
                let (fa, fb) = (x as f32, y as f32);
                let (a, b) = (fa.to_bits() as u64, fb.to_bits() as u64);
                assert_eq!(add(S, a, b, RN, &mut 0), c32(fa + fb), "{fa} + {fb}");
                assert_eq!(mul(S, a, b, RN, &mut 0), c32(fa * fb), "{fa} * {fb}");
                assert_eq!(
                    muladd(S, a, b, a, false, RN, &mut 0),
                    c32(fb.mul_add(fa, fa))
                );
            }
            if x >= 0.0 {
                assert_eq!(sqrt(D, x.to_bits(), RN, &mut 0), c64(x.sqrt()), "sqrt {x}");
            }
        }
    }

    #[test]
    fn directed_rounding() {
        let one = 1.0f32.to_bits() as u64;
        let tiny = 1.0e-10f32.to_bits() as u64;
        let up = Rnd { mode: 1, fz: false };
        let down = Rnd { mode: 2, fz: false };
        assert_eq!(add(S, one, tiny, up, &mut 0), 0x3f80_0001);
        assert_eq!(add(S, one, tiny, down, &mut 0), 0x3f80_0000);
        assert_eq!(add(S, one, tiny | S.sign(), down, &mut 0), 0x3f7f_ffff);
        // exact zero sum is -0 when rounding down
        assert_eq!(add(S, one, one | S.sign(), down, &mut 0), 0x8000_0000);
        // overflow: max finite unless rounding towards the infinity
        let big = f32::MAX.to_bits() as u64;
        assert_eq!(
            add(S, big, big, Rnd { mode: 3, fz: false }, &mut 0),
            0x7f7f_ffff
        );
        assert_eq!(add(S, big, big, up, &mut 0), 0x7f80_0000);
        // flush to zero
        let fz = Rnd { mode: 0, fz: true };
        assert_eq!(add(S, 1, 1, fz, &mut 0), 0);
        assert_eq!(mul(S, 0x0080_0000, 0x3f00_0000, fz, &mut 0), 0);
    }
}
