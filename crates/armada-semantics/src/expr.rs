//! The expression language definitions are written in: typed values of 32 (`V<W>`) or 64
//! (`V<X>`) bits, built with Rust's operators and a few named functions, so a definition
//! reads as the Arm ARM's pseudocode does and mixing widths is a compile error. A value is a
//! tree ([`Expr`]); the generators and the Cranelift tier walk it.

use std::marker::PhantomData;
use std::ops;

/// A value's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 32 bits (a W register).
    W,
    /// 64 bits (an X register).
    X,
}

impl Width {
    pub const fn bits(self) -> u32 {
        match self {
            Width::W => 32,
            Width::X => 64,
        }
    }
}

/// A register operand: the micro-op field that names it (`uop::MicroOp`'s convention: `b` is
/// Rn, `c` Rm, `d` Ra). The zero register reads 0 in every engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    B,
    C,
    D,
}

/// Operations of one operand; the result has the operand's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Un {
    Not,
    Neg,
    /// Leading zero bits (the width for 0).
    Clz,
    /// Bits in reverse order (RBIT).
    Rbit,
    /// Bytes in reverse order (REV).
    Rev,
    /// Set bits (CNT).
    Popcnt,
}

/// Operations of two operands of one width; the result has that width. Arithmetic wraps;
/// shift amounts are taken modulo the width, as LSLV and its kin take them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Lsl,
    Lsr,
    Asr,
    Ror,
    /// Unsigned division; a zero divisor gives 0.
    Udiv,
    /// Signed division toward zero; a zero divisor gives 0, MIN / -1 gives MIN.
    Sdiv,
    /// The high half of the unsigned double-width product.
    Umulh,
    /// The high half of the signed double-width product.
    Smulh,
}

/// Width changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conv {
    /// 32 -> 64 bits, zero-extended.
    Zext,
    /// 32 -> 64 bits, sign-extended.
    Sext,
    /// 64 -> 32 bits: the low half.
    Lo,
}

/// Operations each engine keeps hand-written (a table walk, a loop), with their operands'
/// and result's widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// CRC32* / CRC32C*: folds the low 2^e bytes of the 64-bit data into the 32-bit
    /// accumulator, with the Castagnoli polynomial where f is 1 (fields e and f of the
    /// micro-op), no inversion before or after.
    Crc32,
}

impl Prim {
    /// The operands' widths, then the result's.
    pub const fn signature(self) -> (&'static [Width], Width) {
        match self {
            Prim::Crc32 => (&[Width::W, Width::X], Width::W),
        }
    }
}

/// A small field of the micro-op read as a value (`e`, `f`: what they hold depends on the op,
/// `uop::MicroOp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    E,
    F,
}

/// An element operand of a SIMD element function: the same element of Vn (field b), of Vm
/// (field c; or one element of Vm broadcast, by-element forms) or of Vd's old value (field
/// a: the accumulator). Each is read zero-extended into 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    N,
    M,
    D,
    /// Vn's element at twice the size (a long op's wide operand: SADDW's Vn).
    W,
}

/// A comparison of two elements, as an element of all ones where it holds, else zero: `Eq`,
/// `Ne`, unsigned `Hi` (higher) and `Hs` (higher or same), signed `Gt` and `Ge` (the elements
/// read as signed integers of the element's size), as CMEQ, CMHI, CMHS, CMGT and CMGE name
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    Ne,
    Hi,
    Hs,
    Gt,
    Ge,
}

/// A value, untyped: what the generators walk.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A general register, read at the width (a W read is the low 32 bits).
    Reg(Operand, Width),
    /// A constant, within the width.
    Const(u64, Width),
    /// The micro-op's immediate (a W read is its low 32 bits).
    Imm(Width),
    /// Field e or f, zero-extended to the width.
    Field(Field, Width),
    /// The carry flag, 0 or 1.
    Carry(Width),
    /// The value shifted by the type in field e (LSL, LSR, ASR, ROR) and the amount in f,
    /// modulo the width: the shifted-register operand.
    Shifted(Box<Expr>),
    /// The 64-bit value extended by the option in field e (UXTB .. SXTX), then shifted left
    /// by field f: the extended-register operand.
    Extended(Box<Expr>),
    /// The first value if the condition in field e holds on the flags, else the second.
    IfCond(Box<Expr>, Box<Expr>),
    /// The third value if the first >= the second (unsigned, of one width), else the fourth.
    IfGe(Box<[Expr; 4]>),
    Un(Un, Width, Box<Expr>),
    Bin(Bin, Width, Box<Expr>, Box<Expr>),
    Conv(Conv, Box<Expr>),
    Prim(Prim, Vec<Expr>),
    /// An element operand (64 bits, the element zero-extended): SIMD element functions only.
    Elem(Lane),
    /// All ones (64 bits; the element's bits once stored) where the comparison holds, else 0.
    OnesIf(Cmp, Box<Expr>, Box<Expr>),
    /// The first value where field d has the bit (a mask) set, else the second: the SIMD
    /// ops' variants (unsigned, accumulating) the decoder puts in d.
    IfD(u8, Box<Expr>, Box<Expr>),
    /// The first value where field d is the number, else the second: a SIMD op's choice
    /// among more than two (CMP0's condition).
    IfDIs(u8, Box<Expr>, Box<Expr>),
    /// The value's element (its low bits, the element size in field e) sign-extended to 64.
    ElemSext(Box<Expr>),
}

impl Expr {
    /// The value's width.
    pub fn width(&self) -> Width {
        match self {
            Expr::Reg(_, w)
            | Expr::Const(_, w)
            | Expr::Imm(w)
            | Expr::Field(_, w)
            | Expr::Carry(w)
            | Expr::Un(_, w, _)
            | Expr::Bin(_, w, ..) => *w,
            Expr::Elem(_) | Expr::OnesIf(..) | Expr::ElemSext(_) => Width::X,
            Expr::Shifted(a) | Expr::IfCond(a, _) | Expr::IfD(_, a, _) | Expr::IfDIs(_, a, _) => {
                a.width()
            }
            Expr::IfGe(v) => v[2].width(),
            Expr::Extended(_) => Width::X,
            Expr::Conv(Conv::Lo, _) => Width::W,
            Expr::Conv(..) => Width::X,
            Expr::Prim(p, _) => p.signature().1,
        }
    }

    /// The values this one is made of (none for a leaf): the one walk of the tree's shape
    /// that the questions about a whole tree ([`Expr::operands`], `ElemDef::reads_d` ...)
    /// go through.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Reg(..)
            | Expr::Const(..)
            | Expr::Imm(_)
            | Expr::Field(..)
            | Expr::Carry(_)
            | Expr::Elem(_) => vec![],
            Expr::Un(_, _, a)
            | Expr::Conv(_, a)
            | Expr::Shifted(a)
            | Expr::Extended(a)
            | Expr::ElemSext(a) => vec![a],
            Expr::Bin(_, _, a, b)
            | Expr::IfCond(a, b)
            | Expr::OnesIf(_, a, b)
            | Expr::IfD(_, a, b)
            | Expr::IfDIs(_, a, b) => vec![a, b],
            Expr::IfGe(v) => v.iter().collect(),
            Expr::Prim(_, args) => args.iter().collect(),
        }
    }

    /// Every register operand the value reads.
    pub fn operands(&self, out: &mut Vec<Operand>) {
        if let Expr::Reg(r, _) = self {
            if !out.contains(r) {
                out.push(*r)
            }
        }
        self.children().into_iter().for_each(|c| c.operands(out));
    }
}

/// The 32-bit width, as a type.
#[derive(Clone, Copy, Debug)]
pub struct W;
/// The 64-bit width, as a type.
#[derive(Clone, Copy, Debug)]
pub struct X;

/// A width as a type.
pub trait Bits: Copy {
    const WIDTH: Width;
}
impl Bits for W {
    const WIDTH: Width = Width::W;
}
impl Bits for X {
    const WIDTH: Width = Width::X;
}

/// A value of width `T`.
#[derive(Clone, Debug)]
pub struct V<T>(Expr, PhantomData<T>);

impl<T: Bits> V<T> {
    fn of(e: Expr) -> Self {
        V(e, PhantomData)
    }
    pub fn expr(&self) -> &Expr {
        &self.0
    }
    pub fn into_expr(self) -> Expr {
        self.0
    }
    fn un(self, op: Un) -> Self {
        Self::of(Expr::Un(op, T::WIDTH, Box::new(self.0)))
    }
    fn bin(self, op: Bin, r: impl Into<V<T>>) -> Self {
        Self::of(Expr::Bin(
            op,
            T::WIDTH,
            Box::new(self.0),
            Box::new(r.into().0),
        ))
    }
}

impl V<W> {
    /// Zero-extended to 64 bits.
    pub fn zext(self) -> V<X> {
        V::of(Expr::Conv(Conv::Zext, Box::new(self.0)))
    }
    /// Sign-extended to 64 bits.
    pub fn sext(self) -> V<X> {
        V::of(Expr::Conv(Conv::Sext, Box::new(self.0)))
    }
}

impl V<X> {
    /// The low 32 bits.
    pub fn lo(self) -> V<W> {
        V::of(Expr::Conv(Conv::Lo, Box::new(self.0)))
    }
}

// Constants: a literal takes the width of the value it meets. (i32 is what an unsuffixed
// literal falls back to; a negative one is sign-extended to the width.)
impl From<u32> for V<W> {
    fn from(v: u32) -> Self {
        V::of(Expr::Const(v as u64, Width::W))
    }
}
impl From<i32> for V<W> {
    fn from(v: i32) -> Self {
        V::of(Expr::Const(v as u32 as u64, Width::W))
    }
}
impl From<u64> for V<X> {
    fn from(v: u64) -> Self {
        V::of(Expr::Const(v, Width::X))
    }
}
impl From<i32> for V<X> {
    fn from(v: i32) -> Self {
        V::of(Expr::Const(v as i64 as u64, Width::X))
    }
}

macro_rules! binary_operators {
    ($($trait:ident $method:ident $op:ident),*) => {$(
        impl<T: Bits, R: Into<V<T>>> ops::$trait<R> for V<T> {
            type Output = V<T>;
            fn $method(self, r: R) -> V<T> {
                self.bin(Bin::$op, r)
            }
        }
    )*};
}
binary_operators!(
    Add add Add, Sub sub Sub, Mul mul Mul, BitAnd bitand And, BitOr bitor Or,
    BitXor bitxor Xor, Shl shl Lsl, Shr shr Lsr
);

impl<T: Bits> ops::Not for V<T> {
    type Output = V<T>;
    fn not(self) -> V<T> {
        self.un(Un::Not)
    }
}
impl<T: Bits> ops::Neg for V<T> {
    type Output = V<T>;
    fn neg(self) -> V<T> {
        self.un(Un::Neg)
    }
}

/// Register Rn (field b) at width `T`.
pub fn rn<T: Bits>() -> V<T> {
    V::of(Expr::Reg(Operand::B, T::WIDTH))
}
/// Register Rm (field c) at width `T`.
pub fn rm<T: Bits>() -> V<T> {
    V::of(Expr::Reg(Operand::C, T::WIDTH))
}
/// Register Ra (field d) at width `T`.
pub fn ra<T: Bits>() -> V<T> {
    V::of(Expr::Reg(Operand::D, T::WIDTH))
}

/// Wn, Wm, Wa: the 32-bit views of Rn, Rm, Ra.
pub fn wn() -> V<W> {
    rn()
}
pub fn wm() -> V<W> {
    rm()
}
pub fn wa() -> V<W> {
    ra()
}
/// Xn, Xm, Xa.
pub fn xn() -> V<X> {
    rn()
}
pub fn xm() -> V<X> {
    rm()
}
pub fn xa() -> V<X> {
    ra()
}

/// Arithmetic shift right, the amount modulo the width.
pub fn asr<T: Bits>(v: V<T>, n: impl Into<V<T>>) -> V<T> {
    v.bin(Bin::Asr, n)
}
/// Rotate right, the amount modulo the width.
pub fn ror<T: Bits>(v: V<T>, n: impl Into<V<T>>) -> V<T> {
    v.bin(Bin::Ror, n)
}
/// Unsigned division, 0 for a zero divisor.
pub fn udiv<T: Bits>(n: V<T>, m: V<T>) -> V<T> {
    n.bin(Bin::Udiv, m)
}
/// Signed division toward zero, 0 for a zero divisor, MIN for MIN / -1.
pub fn sdiv<T: Bits>(n: V<T>, m: V<T>) -> V<T> {
    n.bin(Bin::Sdiv, m)
}
/// The high 64 bits of the unsigned 128-bit product.
pub fn umulh(a: V<X>, b: V<X>) -> V<X> {
    a.bin(Bin::Umulh, b)
}
/// The high 64 bits of the signed 128-bit product.
pub fn smulh(a: V<X>, b: V<X>) -> V<X> {
    a.bin(Bin::Smulh, b)
}
/// Leading zero bits.
pub fn clz<T: Bits>(v: V<T>) -> V<T> {
    v.un(Un::Clz)
}
/// The bits reversed.
pub fn rbit<T: Bits>(v: V<T>) -> V<T> {
    v.un(Un::Rbit)
}
/// The bytes reversed.
pub fn rev<T: Bits>(v: V<T>) -> V<T> {
    v.un(Un::Rev)
}
/// The set bits counted.
pub fn popcnt<T: Bits>(v: V<T>) -> V<T> {
    v.un(Un::Popcnt)
}
/// CRC32 of the low 2^e bytes of `data` into `acc` (see [`Prim::Crc32`]).
pub fn crc32(acc: V<W>, data: V<X>) -> V<W> {
    V::of(Expr::Prim(Prim::Crc32, vec![acc.0, data.0]))
}

/// Vn's element (SIMD element functions: see [`Lane`]).
pub fn en() -> V<X> {
    V::of(Expr::Elem(Lane::N))
}
/// Vm's element.
pub fn em() -> V<X> {
    V::of(Expr::Elem(Lane::M))
}
/// Vd's element before the op (the accumulator).
pub fn ed() -> V<X> {
    V::of(Expr::Elem(Lane::D))
}
/// Vn's element at twice the element size, in a long op (SADDW, SSUBW: the wide operand).
pub fn en_wide() -> V<X> {
    V::of(Expr::Elem(Lane::W))
}
/// All ones where `cmp` holds between two elements, else 0 (see [`Cmp`]).
pub fn ones_if(cmp: Cmp, a: V<X>, b: V<X>) -> V<X> {
    V::of(Expr::OnesIf(cmp, Box::new(a.0), Box::new(b.0)))
}

/// `then` where field d has `bit` set, else `otherwise` (see [`Expr::IfD`]).
pub fn if_d(bit: u8, then: V<X>, otherwise: V<X>) -> V<X> {
    V::of(Expr::IfD(bit, Box::new(then.0), Box::new(otherwise.0)))
}

/// `then` where field d is `value`, else `otherwise` (see [`Expr::IfDIs`]).
pub fn if_d_is(value: u8, then: V<X>, otherwise: V<X>) -> V<X> {
    V::of(Expr::IfDIs(value, Box::new(then.0), Box::new(otherwise.0)))
}

/// The element's bits (SIMD element functions): 8 << field e.
pub fn esize() -> V<X> {
    V::from(8) << field_e()
}
/// All ones in the element's bits (the element size in field e).
pub fn emask() -> V<X> {
    V::from(-1) >> (V::from(64) - esize())
}

/// The element `v` holds (the element size in field e), sign-extended to 64 bits.
pub fn elem_sext(v: V<X>) -> V<X> {
    V::of(Expr::ElemSext(Box::new(v.0)))
}

/// The micro-op's immediate at width `T`.
pub fn imm<T: Bits>() -> V<T> {
    V::of(Expr::Imm(T::WIDTH))
}
/// Field e of the micro-op as a value of width `T`.
pub fn field_e<T: Bits>() -> V<T> {
    V::of(Expr::Field(Field::E, T::WIDTH))
}
/// Field f of the micro-op as a value of width `T`.
pub fn field_f<T: Bits>() -> V<T> {
    V::of(Expr::Field(Field::F, T::WIDTH))
}
/// `then` if `a >= b` (unsigned), else `otherwise`.
pub fn if_ge<T: Bits, U: Bits>(a: V<T>, b: V<T>, then: V<U>, otherwise: V<U>) -> V<U> {
    V::of(Expr::IfGe(Box::new([a.0, b.0, then.0, otherwise.0])))
}
/// The carry flag (0 or 1) at width `T`.
pub fn carry<T: Bits>() -> V<T> {
    V::of(Expr::Carry(T::WIDTH))
}
/// `v` shifted by the type in field e and the amount in field f (the shifted-register form).
pub fn shifted<T: Bits>(v: V<T>) -> V<T> {
    V::of(Expr::Shifted(Box::new(v.0)))
}
/// `v` extended by the option in field e, then shifted left by field f (the
/// extended-register form).
pub fn extended(v: V<X>) -> V<X> {
    V::of(Expr::Extended(Box::new(v.0)))
}
/// `then` if the condition in field e holds on the flags, else `otherwise`.
pub fn if_cond<T: Bits>(then: V<T>, otherwise: V<T>) -> V<T> {
    V::of(Expr::IfCond(Box::new(then.0), Box::new(otherwise.0)))
}
/// A constant of width `T` (where the width is not clear from what it meets).
pub fn lit<T: Bits>(v: impl Into<V<T>>) -> V<T> {
    v.into()
}

impl Expr {
    /// The value where it reads no register and no flag: constants, the immediate and the
    /// fields, through the operations of one and two operands and the width changes (what a
    /// translator knows when it translates). None otherwise.
    pub fn fold(&self, imm: u64, e: u8, f: u8) -> Option<u64> {
        let mask = |w: Width, v: u64| if w == Width::W { v as u32 as u64 } else { v };
        Some(match self {
            Expr::Const(v, w) => mask(*w, *v),
            Expr::Imm(w) => mask(*w, imm),
            Expr::Field(Field::E, _) => e as u64,
            Expr::Field(Field::F, _) => f as u64,
            Expr::Un(op, w, a) => {
                let a = a.fold(imm, e, f)?;
                let bits = w.bits();
                mask(
                    *w,
                    match op {
                        Un::Not => !a,
                        Un::Neg => a.wrapping_neg(),
                        Un::Clz => (a << (64 - bits)).leading_zeros().min(bits) as u64,
                        Un::Rbit => a.reverse_bits() >> (64 - bits),
                        Un::Rev => a.swap_bytes() >> (64 - bits),
                        Un::Popcnt => (a << (64 - bits)).count_ones() as u64,
                    },
                )
            }
            Expr::Bin(op, w, a, b) => {
                let (a, b) = (a.fold(imm, e, f)?, b.fold(imm, e, f)?);
                let bits = w.bits();
                let n = (b % bits as u64) as u32;
                let sext = |v: u64| ((v << (64 - bits)) as i64) >> (64 - bits);
                mask(
                    *w,
                    match op {
                        Bin::Add => a.wrapping_add(b),
                        Bin::Sub => a.wrapping_sub(b),
                        Bin::Mul => a.wrapping_mul(b),
                        Bin::And => a & b,
                        Bin::Or => a | b,
                        Bin::Xor => a ^ b,
                        Bin::Lsl => a << n,
                        Bin::Lsr => a >> n,
                        Bin::Asr => (sext(a) >> n) as u64,
                        Bin::Ror if n == 0 => a,
                        Bin::Ror => (a >> n) | (a << (bits - n)),
                        // (left to run time: a translator has no use for these folded)
                        Bin::Udiv | Bin::Sdiv | Bin::Umulh | Bin::Smulh => return None,
                    },
                )
            }
            Expr::IfGe(v) => {
                if v[0].fold(imm, e, f)? >= v[1].fold(imm, e, f)? {
                    v[2].fold(imm, e, f)?
                } else {
                    v[3].fold(imm, e, f)?
                }
            }
            Expr::Conv(c, a) => {
                let v = a.fold(imm, e, f)?;
                match c {
                    Conv::Zext | Conv::Lo => v as u32 as u64,
                    Conv::Sext => v as u32 as i32 as i64 as u64,
                }
            }
            Expr::Reg(..)
            | Expr::Carry(_)
            | Expr::Shifted(_)
            | Expr::Extended(_)
            | Expr::IfCond(..)
            | Expr::Prim(..)
            | Expr::Elem(_)
            | Expr::OnesIf(..)
            | Expr::IfD(..)
            | Expr::IfDIs(..)
            | Expr::ElemSext(_) => return None,
        })
    }
}
