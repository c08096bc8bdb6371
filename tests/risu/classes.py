"""The instruction classes of the risu-style generator (see README.md): what random
instructions each class writes, from what random register values, and the constants of the
program's layout they share with `gen.py`, which writes the program of cases around them.
"""

import random
import struct


M64 = (1 << 64) - 1
WINDOW = 1024          # bytes of the scratch buffer that memory classes use and dump
SP_OFF = 512           # sp = scratch + SP_OFF while a block runs
POOL_QUADS = 1024      # 8 KiB pool the scratch window is initialised from
REC_BASE = 264
REC_FP = 784
REC_FPSR = 792         # REC_FP + FPSR
SP = 32                # register "number" meaning sp/wsp
ZR = 31

CLASSES = [
    "add_sub_imm", "add_sub_shifted", "add_sub_extended", "adc_sbc",
    "logical_imm", "logical_shifted", "move_wide", "pc_rel", "bitfield",
    "extr", "cond_select", "cond_compare", "mul_div", "data_proc_1",
    "shift_reg", "load_store", "load_store_excl", "atomics_lse", "branch",
    "fp_scalar", "fp_convert", "simd_int", "simd_fp", "simd_ldst", "fp_estimate",
]
FP_CLASSES = {"fp_scalar", "fp_convert", "simd_int", "simd_fp", "simd_ldst", "fp_estimate"}
FPCR_RANDOM = {"fp_scalar", "fp_convert", "simd_fp", "fp_estimate"}
FPSR_CLASSES = {"fp_scalar", "fp_convert", "simd_fp", "simd_int", "fp_estimate"}   # record FPSR (cleared before the block): QC of the saturating ops too
MEM_CLASSES = {"load_store", "load_store_excl", "atomics_lse", "simd_ldst"}

CONDS = ["eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc",
         "hi", "ls", "ge", "lt", "gt", "le", "al", "nv"]
CONDS_ALIAS = CONDS[:14] + ["hs", "lo"]   # conditions legal in cset/cinc/... aliases
CONDS_ANY = CONDS + ["hs", "lo"]

# GP registers that may be written by a block (never x28, never sp)
DSTS = [i for i in range(31) if i != 28]

SPECIAL64 = [
    0, 1, 2, M64, M64 - 1, 0x7fffffffffffffff, 0x8000000000000000,
    0x80000000, 0x7fffffff, 0xffffffff, 0x100000000, 0xffffffff80000000,
    0xffffffff7fffffff, 0x5555555555555555, 0xaaaaaaaaaaaaaaaa,
    0x0123456789abcdef, 0xfedcba9876543210, 0x00ff00ff00ff00ff,
    0x8080808080808080, 0x7f7f7f7f7f7f7f7f, 0xffff0000ffff0000,
    0x8000000080000000, 0x00000000ffff8000, 0x000000000000ffff, 0x8000,
    0x3f, 0x40, 0x1f, 0x20, 0x21,
]
SPECIAL32 = [0, 1, 0xffffffff, 0xfffffffe, 0x7fffffff, 0x80000000, 0x8000,
             0x7fff, 0xffff, 0x80, 0x7f, 0xff, 0x55555555, 0xaaaaaaaa,
             0xffff0000, 0x1f, 0x20, 0x3f]

F32_SPECIAL = [
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3f000000, 0xbf000000,
    0x40000000, 0x40400000, 0x3fc00000, 0x40200000, 0xc0200000, 0x40600000,
    0x7f7fffff, 0xff7fffff, 0x00800000, 0x80800000, 0x00000001, 0x80000001,
    0x007fffff, 0x807fffff, 0x00400000, 0x7f800000, 0xff800000, 0x7fc00000,
    0xffc00000, 0x7f800001, 0xff800001, 0x7fa00000, 0x7fc12345, 0xffe54321,
    0x7fbfffff, 0x4f000000, 0xcf000000, 0x4f800000, 0xcf800000, 0x5f000000,
    0xdf000000, 0x5f800000, 0x4effffff, 0xceffffff, 0x3effffff, 0x3f000001,
    0x4b000000, 0x4b7fffff, 0xcb000001, 0x34000000, 0x33800000, 0x477fe000,
    0x477ff000, 0x38800000, 0x33000000, 0x3eaaaaab,
]
F64_SPECIAL = [
    0x0000000000000000, 0x8000000000000000, 0x3ff0000000000000,
    0xbff0000000000000, 0x3fe0000000000000, 0x4000000000000000,
    0x4004000000000000, 0xc004000000000000, 0x3ff8000000000000,
    0x7fefffffffffffff, 0xffefffffffffffff, 0x0010000000000000,
    0x8010000000000000, 0x0000000000000001, 0x8000000000000001,
    0x000fffffffffffff, 0x0008000000000000, 0x7ff0000000000000,
    0xfff0000000000000, 0x7ff8000000000000, 0xfff8000000000000,
    0x7ff0000000000001, 0x7ff4000000000000, 0xfff0000000000001,
    0x7ff8000012345678, 0x7ff7ffffffffffff, 0x41e0000000000000,
    0xc1e0000000000000, 0xc1e0000000200000, 0x41dfffffffc00000,
    0x41efffffffe00000, 0x41f0000000000000, 0x43e0000000000000,
    0xc3e0000000000000, 0x43f0000000000000, 0x43dfffffffffffff,
    0x3fdfffffffffffff, 0x4330000000000000, 0x47efffffe0000000,
    0x47efffff00000000, 0x36a0000000000000, 0x380fffffe0000000,
    0x3810000000000000, 0x3e70000000000000, 0x40f0000000000000,
    0x3fd5555555555555,
]

PRFOPS = [f"{a}{b}{c}" for a in ("pld", "pli", "pst")
          for b in ("l1", "l2", "l3") for c in ("keep", "strm")]

ESIZE = {"8b": 8, "16b": 8, "4h": 16, "8h": 16, "2s": 32, "4s": 32,
         "2d": 64, "1d": 64}
ARR_ALL = ["8b", "16b", "4h", "8h", "2s", "4s", "2d"]
ARR_NO2D = ["8b", "16b", "4h", "8h", "2s", "4s"]
ARR_B = ["8b", "16b"]
ARR_ACROSS = ["8b", "16b", "4h", "8h", "4s"]
ARR_F = ["2s", "4s", "2d"]
# narrow arrangement -> (wide arrangement, is "2" (upper half) variant)
NARROW = {"8b": ("8h", False), "16b": ("8h", True), "4h": ("4s", False),
          "8h": ("4s", True), "2s": ("2d", False), "4s": ("2d", True)}
LANE = {8: "b", 16: "h", 32: "s", 64: "d"}


def f32bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bitmask_imm(r, sf):
    """A random valid logical (bitmask) immediate for a 32/64-bit op."""
    size = r.choice([2, 4, 8, 16, 32, 64] if sf else [2, 4, 8, 16, 32])
    ones = r.randint(1, size - 1)
    rot = r.randint(0, size - 1)
    m = (1 << size) - 1
    pat = (1 << ones) - 1
    pat = ((pat >> rot) | (pat << (size - rot))) & m
    v = 0
    for i in range((64 if sf else 32) // size):
        v |= pat << (i * size)
    return v


def fmov_imm(r):
    """A random value encodable as an 8-bit FP immediate."""
    n = r.randint(16, 31)
    e = r.randint(-3, 4)
    v = n / 16.0 * (2.0 ** e)
    if r.random() < 0.5:
        v = -v
    return repr(v)


class Gen:
    def __init__(self, cls, seed):
        self.cls = cls
        self.r = random.Random(f"risu:{cls}:{seed}")
        self.case = 0
        self.lab = 0

    # ---------------------------------------------------------------- basics
    def ch(self, seq):
        return self.r.choice(seq)

    def ri(self, a, b):
        return self.r.randint(a, b)

    def p(self, prob):
        return self.r.random() < prob

    def label(self, tag="L"):
        self.lab += 1
        return f".L{tag}{self.case}_{self.lab}"

    @staticmethod
    def R(n, sf=1):
        if n == ZR:
            return "xzr" if sf else "wzr"
        if n == SP:
            return "sp" if sf else "wsp"
        return ("x%d" if sf else "w%d") % n

    def d(self, zr=True, excl=()):
        """destination GP register number (31 = zr, only if zr)"""
        if zr and ZR not in excl and self.p(0.06):
            return ZR
        return self.ch([i for i in DSTS if i not in excl])

    def s(self, zr=True, sp=False, excl=()):
        """source GP register number (31 = zr, 32 = sp)"""
        x = self.r.random()
        if sp and SP not in excl and x < 0.12:
            return SP
        if zr and ZR not in excl and x > 0.94:
            return ZR
        return self.ch([i for i in range(31) if i not in excl])

    def sf(self):
        return self.ri(0, 1)

    # ---------------------------------------------------------------- values
    def gp_value(self):
        r = self.r
        k = r.randrange(12)
        if k <= 1:
            return r.choice(SPECIAL64)
        if k == 2:
            return r.randint(0, 255)
        if k == 3:
            return (-r.randint(1, 300)) & M64
        if k == 4:
            return 1 << r.randrange(64)
        if k == 5:
            v = (1 << r.randrange(1, 64)) - 1
            return v ^ M64 if r.random() < 0.4 else v
        if k == 6:
            return r.getrandbits(32)
        if k == 7:
            v = r.getrandbits(32)
            return v | 0xffffffff00000000 if v >> 31 else v
        if k == 8:
            hi = r.getrandbits(32) if r.random() < 0.5 else 0
            return r.choice(SPECIAL32) | (hi << 32)
        return r.getrandbits(64)

    def f32(self):
        r = self.r
        k = r.randrange(11)
        if k <= 2:
            return r.choice(F32_SPECIAL)
        if k == 3:
            return f32bits(float(r.randint(-2**34, 2**34)))
        if k == 4:
            return f32bits(r.randint(-300, 300) / r.choice([1, 2, 4, 8, 10, 3]))
        if k == 5:
            return f32bits(r.uniform(-1e6, 1e6))
        if k == 6:
            e = r.choice([0, 0, 1, 2, r.randint(100, 160), 253, 254, 255])
            return (r.getrandbits(1) << 31) | (e << 23) | r.getrandbits(23)
        if k == 7:
            return r.getrandbits(32)
        if k == 8:
            return f32bits(r.uniform(-4, 4))
        if k == 9:
            return f32bits(float(r.choice([-1, 1]) * r.randint(0, 2**24)) + r.choice([0, 0.5, 0.25, 0.75]))
        return (r.getrandbits(1) << 31) | (r.randint(0x60, 0xa0) << 23) | r.getrandbits(23)

    def f64(self):
        r = self.r
        k = r.randrange(12)
        if k <= 2:
            return r.choice(F64_SPECIAL)
        if k == 3:
            return f64bits(float(r.randint(-2**66, 2**66)))
        if k == 4:
            return f64bits(r.randint(-300, 300) / r.choice([1, 2, 4, 8, 10, 3]))
        if k == 5:
            return f64bits(r.uniform(-1e12, 1e12))
        if k == 6:
            e = r.choice([0, 0, 1, 2, r.randint(900, 1150), 2045, 2046, 2047])
            return (r.getrandbits(1) << 63) | (e << 52) | r.getrandbits(52)
        if k == 7:
            return r.getrandbits(64)
        if k == 8:
            return f64bits(r.uniform(-4, 4))
        if k == 9:  # float32-representable doubles and float32 range edges
            b = self.f32()
            x = struct.unpack("<f", struct.pack("<I", b))[0]
            return f64bits(x)
        if k == 10:
            return f64bits(float(r.choice([-1, 1]) * r.randint(0, 2**53)) + r.choice([0, 0.5, 0.25, 0.75]))
        return (r.getrandbits(1) << 63) | (r.randint(0x380, 0x480) << 52) | r.getrandbits(52)

    def lanes(self, bits, fn):
        v = 0
        for i in range(128 // bits):
            v |= (fn() & ((1 << bits) - 1)) << (i * bits)
        return v

    def int_lane(self, bits):
        m = (1 << bits) - 1
        h = 1 << (bits - 1)
        return self.ch([0, 1, m, h, h - 1, m - 1, 2, self.r.getrandbits(bits),
                        self.r.getrandbits(bits), self.r.getrandbits(bits) & 0x3f])

    def v_value(self):
        r = self.r
        if self.cls in ("fp_scalar", "fp_convert", "simd_fp", "fp_estimate"):
            kinds = ["f32"] * 6 + ["f64"] * 6 + ["mix"] * 3 + ["rand", "int", "small"]
        elif self.cls == "simd_int":
            kinds = ["int"] * 6 + ["rand"] * 4 + ["small"] * 3 + ["f32", "f64"]
        else:
            kinds = ["rand"] * 4 + ["int", "f32", "f64"]
        k = r.choice(kinds)
        if k == "f32":
            return self.lanes(32, self.f32)
        if k == "f64":
            return self.lanes(64, self.f64)
        if k == "mix":
            return self.f64() | (self.f32() << 64) | (self.f32() << 96) if r.random() < .5 \
                else self.f32() | (r.getrandbits(32) << 32) | (self.f64() << 64)
        if k == "int":
            bits = r.choice([8, 16, 32, 64])
            return self.lanes(bits, lambda: self.int_lane(bits))
        if k == "small":
            if r.random() < 0.6:
                return self.lanes(8, lambda: r.randint(0, 66))
            return self.lanes(8, lambda: r.randint(-70, 70))
        return r.getrandbits(128)

    def pool_quad(self):
        k = self.r.randrange(5)
        if k == 0:
            return self.f64()
        if k == 1:
            return self.f32() | (self.f32() << 32)
        if k == 2:
            return self.r.getrandbits(64)
        return self.gp_value()

    def fpcr_value(self):
        if self.cls not in FPCR_RANDOM or self.p(0.4):
            return 0
        v = self.ri(0, 3) << 22          # RMode
        if self.p(0.3):
            v |= 1 << 24                 # FZ
        if self.p(0.3):
            v |= 1 << 25                 # DN
        if self.p(0.2):
            v |= 1 << 26                 # AHP
        return v

    # ------------------------------------------------------- memory helpers
    def set_base(self, rb, B):
        """lines that make x<rb> = scratch + B"""
        if 0 <= B < 4096 and self.p(0.3):
            return [f"add x{rb}, x28, #{B}"]
        if -4096 < B < 0 and self.p(0.3):
            return [f"sub x{rb}, x28, #{-B}"]
        return [f"mov x{rb}, #{B}", f"add x{rb}, x28, x{rb}"]

    def addr_T(self, size, align):
        a = align if align > 1 else (size if self.p(0.6) else 1)
        return self.ri(0, (WINDOW - size) // a) * a

    def mem_imm(self, kind, size, scale, writeback_ok, used, align=1):
        """Operand for an immediate-offset access.
        kind: 'uoff' (unsigned scaled imm12), 'simm9' (unscaled), 'pre',
        'post', 'pair' (signed imm7 scaled), 'pairpre', 'pairpost', 'none'.
        Returns (setup_lines, operand_text, base_reg)."""
        r = self.r
        wb = kind in ("pre", "post", "pairpre", "pairpost")
        if kind == "uoff":
            k = self.ch([0, r.randint(0, 7), r.randint(0, 63), r.randint(0, 4095), r.randint(0, 4095), 4095])
            imm = k * scale
        elif kind in ("simm9", "pre", "post"):
            imm = self.ch([0, r.randint(-256, 255), r.randint(-256, 255), r.randint(-16, 16), -256, 255])
            if align > 1:
                imm -= imm % align
        elif kind in ("pair", "pairpre", "pairpost"):
            imm = self.ch([0, r.randint(-64, 63), r.randint(-64, 63), r.randint(-4, 4), -64, 63]) * scale
        else:
            imm = 0
        fmt_imm = "" if (imm == 0 and kind in ("uoff", "simm9", "pair", "none") and self.p(0.5)) \
            else f", #{imm}"
        if kind == "none":
            fmt_imm = ""
        # choose base
        choice = r.random()
        if not wb and choice < 0.12:
            T = SP_OFF + imm
            if 0 <= T <= WINDOW - size and T % align == 0:
                return [], f"[sp{fmt_imm}]", SP
        if not wb and choice < 0.25:
            T = imm
            if 0 <= T <= WINDOW - size and T % align == 0:
                return [], f"[x28{fmt_imm}]", 28
        rb = self.ch([i for i in DSTS if i not in used])
        T = self.addr_T(size, align)
        if kind in ("post", "pairpost"):
            B = T
            op = f"[x{rb}]{fmt_imm if fmt_imm else ', #0'}"
        else:
            B = T - imm
            op = f"[x{rb}{fmt_imm}]" + ("!" if kind in ("pre", "pairpre") else "")
        return self.set_base(rb, B), op, rb

    def mem_reg(self, size, used, shift_choices):
        """Register-offset operand.  Returns (setup_lines, operand, base, index)."""
        ext = self.ch(["lsl", "lsl", "uxtw", "sxtw", "sxtx"])
        s = self.ch(shift_choices)       # (text, amount)
        stext, amt = s
        ri = self.ch([i for i in DSTS if i not in used])
        used = tuple(used) + (ri,)
        wide = ext in ("lsl", "sxtx")
        reg = f"x{ri}" if wide else f"w{ri}"
        setup = [f"and {reg}, {reg}, #0x3f"]
        neg = ext != "uxtw" and self.p(0.4)
        if neg:
            setup.append(f"neg {reg}, {reg}")
        if not wide and self.p(0.5):
            setup.append(f"movk x{ri}, #{self.ri(0, 0xffff)}, lsl #{self.ch([32, 48])}")
        maxoff = 63 << amt
        lo, hi = (maxoff, WINDOW - size) if neg else (0, WINDOW - size - maxoff)
        if ext == "lsl":
            etext = f", lsl #{amt}" if stext else ""
        else:
            etext = f", {ext}" + (f" #{amt}" if stext else "")
        c = self.r.random()
        if c < 0.15 and lo <= SP_OFF <= hi:
            return setup, f"[sp, {reg}{etext}]", SP, ri
        if c < 0.3 and lo == 0:
            return setup, f"[x28, {reg}{etext}]", 28, ri
        rb = self.ch([i for i in DSTS if i not in used])
        T = self.ri(lo, hi)
        return setup + self.set_base(rb, T), f"[x{rb}, {reg}{etext}]", rb, ri

    @staticmethod
    def reg_shifts(size):
        lg = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}[size]
        if size == 1:
            return [("", 0), ("#0", 0)]
        return [("", 0), ("#s", lg), ("#s", lg)]

    # =========================================================== classes
    # Each i_<class>() returns one "item": a list of assembler lines.

    def i_add_sub_imm(self):
        sf = self.sf()
        op = self.ch(["add", "adds", "sub", "subs", "cmp", "cmn", "movsp"])
        imm = self.ch([0, 1, 4095, self.ri(0, 4095), self.ri(0, 4095), self.ri(0, 31)])
        sh = self.ch(["", "", ", lsl #0", ", lsl #12"])
        rn = self.s(zr=False, sp=True)
        if op in ("cmp", "cmn"):
            return [f"{op} {self.R(rn, sf)}, #{imm}{sh}"]
        if op == "movsp":
            return [f"mov {self.R(self.d(zr=False), sf)}, {self.R(SP, sf)}"]
        fl = op.endswith("s")
        rd = self.d(zr=fl)
        return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, #{imm}{sh}"]

    def i_add_sub_shifted(self):
        sf = self.sf()
        op = self.ch(["add", "adds", "sub", "subs", "add", "adds", "sub", "subs",
                      "neg", "negs", "cmp", "cmn"])
        rd, rn, rm = self.d(), self.s(), self.s()
        sh = ""
        if self.p(0.75):
            amt = self.ri(0, 63 if sf else 31)
            if self.p(0.2):
                amt = self.ch([0, 1, 31] + ([63, 32] if sf else []))
            sh = f", {self.ch(['lsl', 'lsr', 'asr'])} #{amt}"
        if op in ("neg", "negs"):
            return [f"{op} {self.R(rd, sf)}, {self.R(rm, sf)}{sh}"]
        if op in ("cmp", "cmn"):
            return [f"{op} {self.R(rn, sf)}, {self.R(rm, sf)}{sh}"]
        return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}{sh}"]

    def i_add_sub_extended(self):
        sf = self.sf()
        op = self.ch(["add", "adds", "sub", "subs", "cmp", "cmn"])
        fl = op != "add" and op != "sub"
        rn = self.s(zr=False, sp=True)
        rm = self.s()
        ext = self.ch(["uxtb", "uxth", "uxtw", "uxtx", "sxtb", "sxth", "sxtw", "sxtx"])
        amt = self.ri(0, 4)
        amt_s = "" if amt == 0 and self.p(0.5) else f" #{amt}"
        msf = 1 if sf and ext in ("uxtx", "sxtx") else 0
        if rn == SP and ((sf and ext == "uxtx") or (not sf and ext == "uxtw")) and self.p(0.4):
            ext_s = f"lsl #{amt}" if amt or self.p(0.5) else ""
            tail = f", {self.R(rm, msf)}" + (f", {ext_s}" if ext_s else "")
        else:
            tail = f", {self.R(rm, msf)}, {ext}{amt_s}"
        if op in ("cmp", "cmn"):
            return [f"{op} {self.R(rn, sf)}{tail}"]
        rd = self.d(zr=fl)
        return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}{tail}"]

    def i_adc_sbc(self):
        sf = self.sf()
        op = self.ch(["adc", "adcs", "sbc", "sbcs", "adc", "adcs", "sbc", "sbcs", "ngc", "ngcs"])
        rd, rn, rm = self.d(), self.s(), self.s()
        if op.startswith("ngc"):
            return [f"{op} {self.R(rd, sf)}, {self.R(rm, sf)}"]
        return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}"]

    def i_logical_imm(self):
        sf = self.sf()
        op = self.ch(["and", "orr", "eor", "ands", "and", "orr", "eor", "ands", "tst", "movorr"])
        imm = bitmask_imm(self.r, sf)
        rn = self.s()
        if op == "tst":
            return [f"tst {self.R(rn, sf)}, #{imm:#x}"]
        if op == "movorr":
            return [f"orr {self.R(self.d(zr=False), sf)}, {self.R(ZR, sf)}, #{imm:#x}"]
        rd = self.d(zr=(op == "ands"))
        return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, #{imm:#x}"]

    def i_logical_shifted(self):
        sf = self.sf()
        op = self.ch(["and", "bic", "orr", "orn", "eor", "eon", "ands", "bics",
                      "mvn", "tst", "mov"])
        rd, rn, rm = self.d(), self.s(), self.s()
        sh = ""
        if self.p(0.75):
            sh = f", {self.ch(['lsl', 'lsr', 'asr', 'ror'])} #{self.ri(0, 63 if sf else 31)}"
        if op == "mov":
            return [f"mov {self.R(rd, sf)}, {self.R(rm, sf)}"]
        if op == "mvn":
            return [f"mvn {self.R(rd, sf)}, {self.R(rm, sf)}{sh}"]
        if op == "tst":
            return [f"tst {self.R(rn, sf)}, {self.R(rm, sf)}{sh}"]
        return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}{sh}"]

    def i_move_wide(self):
        sf = self.sf()
        op = self.ch(["movz", "movn", "movk", "movk"])
        hw = self.ri(0, 3 if sf else 1)
        imm = self.ch([0, 0xffff, 0x8000, 0x7fff, 1, self.ri(0, 0xffff), self.ri(0, 0xffff)])
        sh = "" if hw == 0 and self.p(0.5) else f", lsl #{16 * hw}"
        rd = self.d()
        return [f"{op} {self.R(rd, sf)}, #{imm:#x}{sh}"]

    def block_pc_rel(self, k):
        c = self.case
        n = k
        lines = []
        for i in range(n):
            lines.append(f".Lpc{c}_{i}:")
            rd = self.d(zr=False)
            if self.p(0.5):
                t = self.ri(0, n)
                tgt = self.ch([
                    f".Lpc{c}_{t}" if t < n else f"risu_post_{c}",
                    f". + {self.ri(-(1 << 20), (1 << 20) - 1)}",
                    f". + {self.ri(-64, 64)}",
                    f"risu_blk_{c}", f"risu_case_{c}",
                ])
                lines.append(f"adr x{rd}, {tgt}")
            else:
                tgt = self.ch([
                    "risu_scratch", "risu_rec", "risu_pool", f"risu_tab_{c}",
                    "_start", f".Lpc{c}_{self.ri(0, n - 1)}",
                    f"risu_scratch + {self.ri(0, 1 << 20)}",
                    f". + {self.ri(-(1 << 32) + 8192, (1 << 32) - 8192)}",
                    f". - {self.ri(0, 1 << 24)}",
                ])
                lines.append(f"adrp x{rd}, {tgt}")
        return lines

    def i_bitfield(self):
        sf = self.sf()
        size = 64 if sf else 32
        rd, rn = self.d(), self.s()
        D, N = self.R(rd, sf), self.R(rn, sf)
        k = self.ri(0, 9)
        if k <= 2:
            op = self.ch(["sbfm", "bfm", "ubfm"])
            return [f"{op} {D}, {N}, #{self.ri(0, size - 1)}, #{self.ri(0, size - 1)}"]
        if k == 3:
            if sf:
                op = self.ch(["sxtb", "sxth", "sxtw"])
                return [f"{op} {D}, {self.R(rn, 0)}"]
            op = self.ch(["sxtb", "sxth", "uxtb", "uxth"])
            return [f"{op} {D}, {N}"]
        if k == 4:
            op = self.ch(["lsl", "lsr", "asr"])
            return [f"{op} {D}, {N}, #{self.ri(0, size - 1)}"]
        lsb = self.ri(0, size - 1)
        width = self.ri(1, size - lsb)
        if self.p(0.2):
            width = size - lsb
        op = self.ch(["bfi", "bfxil", "ubfx", "sbfx", "sbfiz", "ubfiz", "bfc"])
        if op == "bfc":
            return [f"bfc {D}, #{lsb}, #{width}"]
        return [f"{op} {D}, {N}, #{lsb}, #{width}"]

    def i_extr(self):
        sf = self.sf()
        size = 64 if sf else 32
        rd, rn, rm = self.d(), self.s(), self.s()
        lsb = self.ri(0, size - 1)
        if self.p(0.25):
            return [f"ror {self.R(rd, sf)}, {self.R(rn, sf)}, #{lsb}"]
        return [f"extr {self.R(rd, sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}, #{lsb}"]

    def i_cond_select(self):
        sf = self.sf()
        rd, rn, rm = self.d(), self.s(), self.s()
        D, N, M = self.R(rd, sf), self.R(rn, sf), self.R(rm, sf)
        op = self.ch(["csel", "csinc", "csinv", "csneg"] * 2 +
                     ["cset", "csetm", "cinc", "cinv", "cneg"])
        if op in ("cset", "csetm"):
            return [f"{op} {D}, {self.ch(CONDS_ALIAS)}"]
        if op in ("cinc", "cinv", "cneg"):
            return [f"{op} {D}, {N}, {self.ch(CONDS_ALIAS)}"]
        return [f"{op} {D}, {N}, {M}, {self.ch(CONDS_ANY)}"]

    def i_cond_compare(self):
        sf = self.sf()
        op = self.ch(["ccmp", "ccmn"])
        rn = self.s()
        nzcv = self.ri(0, 15)
        cond = self.ch(CONDS_ANY)
        if self.p(0.5):
            return [f"{op} {self.R(rn, sf)}, #{self.ri(0, 31)}, #{nzcv}, {cond}"]
        return [f"{op} {self.R(rn, sf)}, {self.R(self.s(), sf)}, #{nzcv}, {cond}"]

    def i_mul_div(self):
        k = self.ri(0, 9)
        if k <= 1:
            sf = self.sf()
            rd, rn, rm, ra = self.d(), self.s(), self.s(), self.s()
            op = self.ch(["madd", "msub", "mul", "mneg"])
            if op in ("mul", "mneg"):
                return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}"]
            return [f"{op} {self.R(rd, sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}, {self.R(ra, sf)}"]
        if k <= 3:
            rd, rn, rm, ra = self.d(), self.s(), self.s(), self.s()
            op = self.ch(["smaddl", "umaddl", "smsubl", "umsubl", "smull", "umull", "smnegl", "umnegl"])
            if op.endswith("ll") or op.endswith("gl"):
                return [f"{op} {self.R(rd)}, {self.R(rn, 0)}, {self.R(rm, 0)}"]
            return [f"{op} {self.R(rd)}, {self.R(rn, 0)}, {self.R(rm, 0)}, {self.R(ra)}"]
        if k <= 4:
            op = self.ch(["smulh", "umulh"])
            return [f"{op} {self.R(self.d())}, {self.R(self.s())}, {self.R(self.s())}"]
        sf = self.sf()
        op = self.ch(["sdiv", "udiv"])
        pre = []
        if self.p(0.35):
            rn = self.d(zr=False)
            rm = self.d(zr=True, excl=(rn,))
            if rm != ZR:
                pre.append(self.ch([f"mov {self.R(rm, sf)}, #0", f"mov {self.R(rm, sf)}, #-1",
                                    f"mov {self.R(rm, sf)}, #-1", f"mov {self.R(rm, sf)}, #1"]))
            pre.append(f"movz {self.R(rn, sf)}, #0x8000, lsl #{48 if sf else 16}")
        else:
            rn, rm = self.s(), self.s()
        return pre + [f"{op} {self.R(self.d(), sf)}, {self.R(rn, sf)}, {self.R(rm, sf)}"]

    def i_data_proc_1(self):
        sf = self.sf()
        op = self.ch(["clz", "cls", "rbit", "rev", "rev16", "rev32"])
        if op == "rev32":
            sf = 1
        return [f"{op} {self.R(self.d(), sf)}, {self.R(self.s(), sf)}"]

    def i_shift_reg(self):
        if self.p(0.2):  # CRC32{B,H,W,X} and CRC32C*: data-processing (2 source) too
            size = self.ch("bhwx")
            op = self.ch(["crc32", "crc32c"]) + size
            return [f"{op} {self.R(self.d(), 0)}, {self.R(self.s(), 0)}, {self.R(self.s(), int(size == 'x'))}"]
        sf = self.sf()
        op = self.ch(["lslv", "lsrv", "asrv", "rorv", "lsl", "lsr", "asr", "ror"])
        return [f"{op} {self.R(self.d(), sf)}, {self.R(self.s(), sf)}, {self.R(self.s(), sf)}"]

    # ---------------------------------------------------------- load_store
    LS_SINGLE = [  # (mnemonic, is_load, reg sf, size)
        ("ldrb", 1, 0, 1), ("ldrh", 1, 0, 2), ("ldr", 1, 0, 4), ("ldr", 1, 1, 8),
        ("ldrsb", 1, 0, 1), ("ldrsb", 1, 1, 1), ("ldrsh", 1, 0, 2), ("ldrsh", 1, 1, 2),
        ("ldrsw", 1, 1, 4),
        ("strb", 0, 0, 1), ("strh", 0, 0, 2), ("str", 0, 0, 4), ("str", 0, 1, 8),
    ]
    LS_PAIR = [  # (mnemonic, is_load, sf, size, allows writeback)
        ("ldp", 1, 0, 4, 1), ("ldp", 1, 1, 8, 1), ("ldpsw", 1, 1, 4, 1),
        ("stp", 0, 0, 4, 1), ("stp", 0, 1, 8, 1),
        ("ldnp", 1, 0, 4, 0), ("ldnp", 1, 1, 8, 0), ("stnp", 0, 0, 4, 0), ("stnp", 0, 1, 8, 0),
    ]

    def i_load_store(self):
        k = self.r.random()
        if k < 0.05:
            return self.ls_prfm()
        if k < 0.28:
            return self.ls_pair()
        mn, ld, sf, size = self.ch(self.LS_SINGLE)
        rt = self.d() if ld else self.s()
        used = (rt,)
        mode = self.ch(["uoff", "uoff", "simm9", "pre", "post", "reg", "reg", "unpriv", "lit"])
        if mode == "lit" and mn not in ("ldr", "ldrsw"):
            mode = "uoff"
        if mode == "lit":
            off = self.ri(0, (64 - size) // 4) * 4
            return [f"{mn} {self.R(rt, sf)}, .Llit{self.case} + {off}"]
        if mode == "reg":
            setup, op, _, _ = self.mem_reg(size, used, self.reg_shifts(size))
            return setup + [f"{mn} {self.R(rt, sf)}, {op}"]
        if mode in ("simm9", "unpriv"):
            mn = mn.replace("ldr", "ldur" if mode == "simm9" else "ldtr").replace(
                "str", "stur" if mode == "simm9" else "sttr")
            setup, op, _ = self.mem_imm("simm9", size, 1, False, used)
        else:
            setup, op, _ = self.mem_imm(mode, size, size, True, used)
        return setup + [f"{mn} {self.R(rt, sf)}, {op}"]

    def ls_pair(self):
        mn, ld, sf, size, wbok = self.ch(self.LS_PAIR)
        if ld:
            rt = self.d()
            rt2 = self.d(excl=(rt,))
            if rt2 == rt:  # both zr
                rt2 = self.d(zr=False)
        else:
            rt, rt2 = self.s(), self.s()
        mode = self.ch(["pair", "pairpre", "pairpost"]) if wbok else "pair"
        setup, op, _ = self.mem_imm(mode, 2 * size, size, True, (rt, rt2))
        return setup + [f"{mn} {self.R(rt, sf)}, {self.R(rt2, sf)}, {op}"]

    def ls_prfm(self):
        prf = self.ch(PRFOPS)
        k = self.ri(0, 3)
        if k == 0:
            return [f"prfm {prf}, .Llit{self.case} + {self.ri(0, 15) * 4}"]
        if k == 1:
            setup, op, _, _ = self.mem_reg(8, (), self.reg_shifts(8))
            return setup + [f"prfm {prf}, {op}"]
        if k == 2:
            setup, op, _ = self.mem_imm("simm9", 8, 1, False, ())
            return setup + [f"prfum {prf}, {op}"]
        setup, op, _ = self.mem_imm("uoff", 8, 8, False, ())
        return setup + [f"prfm {prf}, {op}"]

    # ----------------------------------------------------- load_store_excl
    def i_load_store_excl(self):
        k = self.ri(0, 9)
        szs = [("b", 0, 1), ("h", 0, 2), ("", 0, 4), ("", 1, 8)]
        if k <= 3:   # ldxr/ldaxr ... stxr/stlxr pair to the same address
            suf, sf, size = self.ch(szs)
            ldm = self.ch(["ldxr", "ldaxr"]) + suf
            stm = self.ch(["stxr", "stlxr"]) + suf
            rt = self.d()
            setup, op, rb = self.mem_imm("none", size, size, False, (rt,), align=size)
            used = (rt, rb)
            rv = self.s(excl=(rb,))
            mid = []
            if rt != ZR and self.p(0.5):
                mid = [f"add {self.R(rt, sf)}, {self.R(rt, sf)}, #{self.ri(1, 4095)}"]
                rv = rt if self.p(0.6) else rv
            ws = self.d(excl=(rv, rb))
            return setup + [f"{ldm} {self.R(rt, sf)}, {op}"] + mid + \
                [f"{stm} {self.R(ws, 0)}, {self.R(rv, sf)}, {op}"]
        if k <= 5:   # exclusive pairs
            sf = self.sf()
            size = 8 if sf else 4
            ldm = self.ch(["ldxp", "ldaxp"])
            stm = self.ch(["stxp", "stlxp"])
            rt = self.d(zr=False)
            rt2 = self.d(excl=(rt,))
            setup, op, rb = self.mem_imm("none", 2 * size, 2 * size, False, (rt, rt2), align=2 * size)
            lines = setup + [f"{ldm} {self.R(rt, sf)}, {self.R(rt2, sf)}, {op}"]
            if self.p(0.2):
                lines.append("clrex")   # makes the store-exclusive fail
            rv = self.s(excl=(rb,))
            rv2 = self.s(excl=(rb,))
            ws = self.d(zr=False, excl=(rv, rv2, rb))
            return lines + [f"{stm} {self.R(ws, 0)}, {self.R(rv, sf)}, {self.R(rv2, sf)}, {op}"]
        if k <= 6:   # store-exclusive with the monitor open: must fail
            suf, sf, size = self.ch(szs)
            stm = self.ch(["stxr", "stlxr"]) + suf
            rv = self.s()
            setup, op, rb = self.mem_imm("none", size, size, False, (rv,), align=size)
            ws = self.d(zr=False, excl=(rv, rb))
            return setup + ["clrex", f"{stm} {self.R(ws, 0)}, {self.R(rv, sf)}, {op}"]
        # load-acquire / store-release
        suf, sf, size = self.ch(szs)
        if self.p(0.5):
            rt = self.d()
            setup, op, rb = self.mem_imm("none", size, size, False, (rt,), align=size)
            return setup + [f"ldar{suf} {self.R(rt, sf)}, {op}"]
        rt = self.s()
        setup, op, rb = self.mem_imm("none", size, size, False, (rt,), align=size)
        return setup + [f"stlr{suf} {self.R(rt, sf)}, {op}"]

    # ---------------------------------------------------------- atomics_lse
    def i_atomics_lse(self):
        k = self.ri(0, 9)
        szs = [("b", 0, 1), ("h", 0, 2), ("", 0, 4), ("", 1, 8)]
        order = self.ch(["", "a", "l", "al"])
        if k <= 2:   # cas
            suf, sf, size = self.ch(szs)
            rs = self.d()
            rt = self.s(excl=(rs,))
            setup, op, rb = self.mem_imm("none", size, size, False, (rs, rt), align=size)
            pre = []
            if rs != ZR and self.p(0.5):
                ldm = {"b": "ldrb", "h": "ldrh", "": "ldr"}[suf]
                pre = [f"{ldm} {self.R(rs, sf)}, {op}"]
            return setup + pre + [f"cas{order}{suf} {self.R(rs, sf)}, {self.R(rt, sf)}, {op}"]
        if k == 3:   # casp
            sf = self.sf()
            size = 8 if sf else 4
            rs = self.ch(list(range(0, 27, 2)))
            rt = self.ch(list(range(0, 29, 2)))
            setup, op, rb = self.mem_imm("none", 2 * size, 2 * size, False,
                                         (rs, rs + 1, rt, rt + 1), align=2 * size)
            pre = []
            if self.p(0.5):
                pre = [f"ldp {self.R(rs, sf)}, {self.R(rs + 1, sf)}, {op}"]
            return setup + pre + [f"casp{order} {self.R(rs, sf)}, {self.R(rs + 1, sf)}, "
                                  f"{self.R(rt, sf)}, {self.R(rt + 1, sf)}, {op}"]
        suf, sf, size = self.ch(szs)
        if k == 4:
            rs = self.s()
            rt = self.d(excl=(rs,))
            setup, op, rb = self.mem_imm("none", size, size, False, (rs, rt), align=size)
            return setup + [f"swp{order}{suf} {self.R(rs, sf)}, {self.R(rt, sf)}, {op}"]
        aop = self.ch(["add", "clr", "eor", "set", "smax", "smin", "umax", "umin"])
        rs = self.s()
        if self.p(0.2):   # st<op> alias (Rt = zr), only none/l orderings
            order = self.ch(["", "l"])
            setup, op, rb = self.mem_imm("none", size, size, False, (rs,), align=size)
            return setup + [f"st{aop}{order}{suf} {self.R(rs, sf)}, {op}"]
        rt = self.d(excl=(rs,))
        setup, op, rb = self.mem_imm("none", size, size, False, (rs, rt), align=size)
        return setup + [f"ld{aop}{order}{suf} {self.R(rs, sf)}, {self.R(rt, sf)}, {op}"]

    # --------------------------------------------------------------- branch
    def block_branch(self, k):
        c = self.case
        fillers = [self.i_add_sub_imm, self.i_add_sub_shifted, self.i_logical_imm,
                   self.i_cond_compare, self.i_move_wide, self.i_cond_select]
        items = []   # (lines, is_branch)
        for i in range(k):
            if self.p(0.45):
                items.append((self.ch(fillers)(), False))
                continue
            kind = self.ri(0, 11)
            if kind <= 2:
                items.append(([f"b.{self.ch(CONDS_ANY)} {{T}}"], True))
            elif kind <= 4:
                sf = self.sf()
                items.append(([f"{self.ch(['cbz', 'cbnz'])} {self.R(self.s(), sf)}, {{T}}"], True))
            elif kind <= 6:
                sf = self.sf()
                bit = self.ri(0, 63 if sf else 31)
                items.append(([f"{self.ch(['tbz', 'tbnz'])} {self.R(self.s(), sf)}, #{bit}, {{T}}"], True))
            elif kind == 7:
                items.append((["b {T}"], True))
            elif kind == 8:
                items.append((["bl {T}"], True))
            else:
                how = self.ch(["br", "blr", "ret", "retx30"])
                if how == "retx30":
                    items.append((["adr x30, {T}", "ret"], True))
                else:
                    rn = self.d(zr=False)
                    items.append(([f"adr x{rn}, {{T}}", f"{how} x{rn}"], True))
        # conditional branches (and b/bl) skip at least one register-writing
        # instruction when taken, so taken/not-taken is visible in the record
        items = [(ls + (self.ch(fillers)() if br and len(ls) == 1 and self.p(0.85) else []), br)
                 for (ls, br) in items]
        n = len(items)
        lines = []
        for i, (ls, br) in enumerate(items):
            lines.append(f".Lbr{c}_{i}:")
            if br:
                j = self.ri(i + 1, n)
                if self.p(0.5):
                    j = min(n, i + 1 + self.ri(0, 2))
                tgt = f".Lbr{c}_{j}"
                ls = [x.replace("{T}", tgt) for x in ls]
            lines += ls
        lines.append(f".Lbr{c}_{n}:")
        return lines

    # ------------------------------------------------------------ fp_scalar
    def i_fp_scalar(self):
        t = self.ch("sd")

        def V():
            return f"{t}{self.ri(0, 31)}"
        k = self.ri(0, 11)
        if k <= 4:
            op = self.ch(["fadd", "fsub", "fmul", "fdiv", "fnmul", "fmax", "fmin",
                          "fmaxnm", "fminnm", "fabd"])
            return [f"{op} {V()}, {V()}, {V()}"]
        if k == 5:
            return [f"{self.ch(['fabs', 'fneg', 'fsqrt', 'fsqrt', 'fmov'])} {V()}, {V()}"]
        if k <= 7:
            op = self.ch(["fmadd", "fmsub", "fnmadd", "fnmsub"])
            return [f"{op} {V()}, {V()}, {V()}, {V()}"]
        if k == 8:
            op = self.ch(["fcmp", "fcmpe"])
            return [f"{op} {V()}, " + (f"{V()}" if self.p(0.7) else "#0.0")]
        if k == 9:
            op = self.ch(["fccmp", "fccmpe"])
            return [f"{op} {V()}, {V()}, #{self.ri(0, 15)}, {self.ch(CONDS_ANY)}"]
        return [f"fcsel {V()}, {V()}, {V()}, {self.ch(CONDS_ANY)}"]

    # ----------------------------------------------------------- fp_convert
    def i_fp_convert(self):
        k = self.ri(0, 13)
        vr = lambda: self.ri(0, 31)
        if k <= 1:
            a, b = self.ch([("s", "d"), ("d", "s"), ("s", "d"), ("d", "s"),
                            ("h", "s"), ("h", "d"), ("s", "h"), ("d", "h")])
            return [f"fcvt {a}{vr()}, {b}{vr()}"]
        if k <= 3:   # int -> fp
            op = self.ch(["scvtf", "ucvtf"])
            t = self.ch("sd")
            sf = self.sf()
            fb = ""
            if self.p(0.35):
                fb = f", #{self.ri(1, 64 if sf else 32)}"
            return [f"{op} {t}{vr()}, {self.R(self.s(), sf)}{fb}"]
        if k <= 6:   # fp -> int
            op = self.ch(["fcvtzs", "fcvtzu", "fcvtns", "fcvtnu", "fcvtas", "fcvtau",
                          "fcvtms", "fcvtmu", "fcvtps", "fcvtpu"])
            t = self.ch("sd")
            sf = self.sf()
            fb = ""
            if op in ("fcvtzs", "fcvtzu") and self.p(0.35):
                fb = f", #{self.ri(1, 64 if sf else 32)}"
            return [f"{op} {self.R(self.d(), sf)}, {t}{vr()}{fb}"]
        if k <= 8:   # fmov
            form = self.ri(0, 7)
            if form == 0:
                return [f"fmov s{vr()}, {self.R(self.s(), 0)}"]
            if form == 1:
                return [f"fmov {self.R(self.d(), 0)}, s{vr()}"]
            if form == 2:
                return [f"fmov d{vr()}, {self.R(self.s(), 1)}"]
            if form == 3:
                return [f"fmov {self.R(self.d(), 1)}, d{vr()}"]
            if form == 4:
                return [f"fmov v{vr()}.d[1], {self.R(self.s(), 1)}"]
            if form == 5:
                return [f"fmov {self.R(self.d(), 1)}, v{vr()}.d[1]"]
            if form == 6:
                return [f"fmov {self.ch('sd')}{vr()}, #{fmov_imm(self.r)}"]
            t = self.ch("sd")
            return [f"fmov {t}{vr()}, {t}{vr()}"]
        if k <= 11:
            op = self.ch(["frintn", "frinta", "frintm", "frintp", "frintz", "frinti", "frintx"])
            t = self.ch("sd")
            return [f"{op} {t}{vr()}, {t}{vr()}"]
        # Advanced SIMD scalar conversions
        op = self.ch(["scvtf", "ucvtf", "fcvtzs", "fcvtzu", "fcvtns", "fcvtnu",
                      "fcvtas", "fcvtau", "fcvtms", "fcvtmu", "fcvtps", "fcvtpu"])
        t = self.ch("sd")
        fb = ""
        if op in ("scvtf", "ucvtf", "fcvtzs", "fcvtzu") and self.p(0.4):
            fb = f", #{self.ri(1, 32 if t == 's' else 64)}"
        return [f"{op} {t}{vr()}, {t}{vr()}{fb}"]

    # ------------------------------------------------------------- simd_int
    SIMD_3SAME = {
        "add": ARR_ALL, "sub": ARR_ALL, "mul": ARR_NO2D, "mla": ARR_NO2D, "mls": ARR_NO2D,
        "cmeq": ARR_ALL, "cmge": ARR_ALL, "cmgt": ARR_ALL, "cmhi": ARR_ALL, "cmhs": ARR_ALL,
        "cmtst": ARR_ALL, "umax": ARR_NO2D, "umin": ARR_NO2D, "smax": ARR_NO2D,
        "smin": ARR_NO2D, "umaxp": ARR_NO2D, "uminp": ARR_NO2D, "smaxp": ARR_NO2D,
        "sminp": ARR_NO2D, "addp": ARR_ALL, "ushl": ARR_ALL, "sshl": ARR_ALL,
        "uabd": ARR_NO2D, "sabd": ARR_NO2D, "uaba": ARR_NO2D, "saba": ARR_NO2D,
        "shadd": ARR_NO2D, "uhadd": ARR_NO2D, "srhadd": ARR_NO2D, "urhadd": ARR_NO2D,
        "shsub": ARR_NO2D, "uhsub": ARR_NO2D,
        "sqadd": ARR_ALL, "uqadd": ARR_ALL,
        "sqsub": ARR_ALL, "uqsub": ARR_ALL,
        "sqshl": ARR_ALL, "uqshl": ARR_ALL, "srshl": ARR_ALL, "urshl": ARR_ALL,
        "sqrshl": ARR_ALL, "uqrshl": ARR_ALL,
        "sqdmulh": ["4h", "8h", "2s", "4s"], "sqrdmulh": ["4h", "8h", "2s", "4s"],
        "pmul": ARR_B,
        "and": ARR_B, "orr": ARR_B, "eor": ARR_B, "bic": ARR_B, "orn": ARR_B,
        "bif": ARR_B, "bit": ARR_B, "bsl": ARR_B,
        "uzp1": ARR_ALL, "uzp2": ARR_ALL, "zip1": ARR_ALL, "zip2": ARR_ALL,
        "trn1": ARR_ALL, "trn2": ARR_ALL,
    }
    SIMD_2MISC = {
        "neg": ARR_ALL, "abs": ARR_ALL, "cnt": ARR_B, "not": ARR_B, "mvn": ARR_B,
        "rev64": ARR_NO2D, "rev32": ["8b", "16b", "4h", "8h"], "rev16": ARR_B,
        "clz": ARR_NO2D, "cls": ARR_NO2D, "rbit": ARR_B,
        "sqabs": ARR_ALL, "sqneg": ARR_ALL, "suqadd": ARR_ALL, "usqadd": ARR_ALL,
        "urecpe": ["2s", "4s"], "ursqrte": ["2s", "4s"],
    }
    # scalar forms of some of them (register letter: element size)
    SIMD_SCALAR_SAT = ["sqadd", "uqadd", "sqsub", "uqsub", "sqabs", "sqneg", "sqdmulh",
                       "sqrdmulh", "suqadd", "usqadd"]

    def vreg(self):
        return self.ri(0, 31)

    def i_simd_int(self):
        v = self.vreg
        k = self.ri(0, 21)
        if k <= 4:
            op = self.ch(list(self.SIMD_3SAME))
            a = self.ch(self.SIMD_3SAME[op])
            return [f"{op} v{v()}.{a}, v{v()}.{a}, v{v()}.{a}"]
        if k == 5:
            op = self.ch(list(self.SIMD_2MISC))
            if self.p(0.15):
                # a saturating op on one element of any size (b, h, s or d registers)
                op = self.ch(self.SIMD_SCALAR_SAT)
                r = self.ch("hs" if "dmulh" in op else "bhsd")
                srcs = 1 if op in ("sqabs", "sqneg", "suqadd", "usqadd") else 2
                return [f"{op} {r}{v()}, " + ", ".join(f"{r}{v()}" for _ in range(srcs))]
            a = self.ch(self.SIMD_2MISC[op])
            return [f"{op} v{v()}.{a}, v{v()}.{a}"]
        if k == 6:
            op = self.ch(["cmeq", "cmge", "cmgt", "cmle", "cmlt"])
            a = self.ch(ARR_ALL)
            return [f"{op} v{v()}.{a}, v{v()}.{a}, #0"]
        if k == 7:
            op = self.ch(["addv", "umaxv", "uminv", "smaxv", "sminv", "saddlv", "uaddlv"])
            a = self.ch(ARR_ACROSS)
            es = ESIZE[a]
            if op.endswith("lv"):
                es *= 2
            return [f"{op} {LANE[es]}{v()}, v{v()}.{a}"]
        if k == 8:
            op = self.ch(["shl", "ushr", "sshr", "sli", "sri",
                          "srshr", "urshr", "ssra", "usra", "srsra", "ursra",
                          "sqshl", "uqshl", "sqshlu"])
            left = op in ("shl", "sli", "sqshl", "uqshl", "sqshlu")
            if self.p(0.2) and op not in ("shl", "sli", "sri"):
                # the scalar forms: the saturating left shifts at every size, the right
                # shifts on doublewords only (a shift by all 64 bits included)
                if left:
                    r = self.ch("bhsd")
                    es = {"b": 8, "h": 16, "s": 32, "d": 64}[r]
                    return [f"{op} {r}{v()}, {r}{v()}, #{self.ri(0, es - 1)}"]
                return [f"{op} d{v()}, d{v()}, #{self.ri(1, 64)}"]
            a = self.ch(ARR_ALL)
            es = ESIZE[a]
            sh = self.ri(0, es - 1) if left else self.ri(1, es)
            return [f"{op} v{v()}.{a}, v{v()}.{a}, #{sh}"]
        if k == 9:
            na = self.ch(list(NARROW))
            wa, two = NARROW[na]
            es = ESIZE[na]
            t = self.ri(0, 4)
            # the scalar forms of the saturating narrows: b from h, h from s, s from d
            nl, wl = self.ch([("b", "h"), ("h", "s"), ("s", "d")])
            scalar = self.p(0.2)
            if t == 0:
                op = self.ch(["shrn", "rshrn", "sqshrn", "uqshrn", "sqshrun", "sqrshrn",
                              "uqrshrn", "sqrshrun"])
                if scalar and op.startswith(("sq", "uq")):
                    sh = self.ri(1, {"b": 8, "h": 16, "s": 32}[nl])
                    return [f"{op} {nl}{v()}, {wl}{v()}, #{sh}"]
                return [f"{op}{'2' if two else ''} v{v()}.{na}, v{v()}.{wa}, #{self.ri(1, es)}"]
            if t == 1:
                op = self.ch(["xtn", "sqxtn", "uqxtn", "sqxtun"])
                if scalar and op != "xtn":
                    return [f"{op} {nl}{v()}, {wl}{v()}"]
                return [f"{op}{'2' if two else ''} v{v()}.{na}, v{v()}.{wa}"]
            if t == 2:
                op = self.ch(["addhn", "raddhn", "subhn", "rsubhn"]) + ("2" if two else "")
                return [f"{op} v{v()}.{na}, v{v()}.{wa}, v{v()}.{wa}"]
            if self.p(0.25):
                op = self.ch(["uxtl", "sxtl"]) + ("2" if two else "")
                return [f"{op} v{v()}.{wa}, v{v()}.{na}"]
            op = self.ch(["ushll", "sshll"]) + ("2" if two else "")
            return [f"{op} v{v()}.{wa}, v{v()}.{na}, #{self.ri(0, es - 1)}"]
        if k == 10:
            a = self.ch(ARR_B)
            return [f"ext v{v()}.{a}, v{v()}.{a}, v{v()}.{a}, #{self.ri(0, 7 if a == '8b' else 15)}"]
        if k == 11:
            op = self.ch(["tbl", "tbx"])
            a = self.ch(ARR_B)
            n = self.ri(1, 4)
            first = v()
            regs = ", ".join(f"v{(first + i) % 32}.16b" for i in range(n))
            return [f"{op} v{v()}.{a}, {{{regs}}}, v{v()}.{a}"]
        if k == 12:   # dup
            a = self.ch(ARR_ALL)
            es = ESIZE[a]
            if self.p(0.5):
                return [f"dup v{v()}.{a}, v{v()}.{LANE[es]}[{self.ri(0, 128 // es - 1)}]"]
            if self.p(0.15):
                return [f"dup {LANE[es]}{v()}, v{v()}.{LANE[es]}[{self.ri(0, 128 // es - 1)}]"]
            return [f"dup v{v()}.{a}, {self.R(self.s(), 1 if es == 64 else 0)}"]
        if k == 13:   # ins
            es = self.ch([8, 16, 32, 64])
            L = LANE[es]
            n = 128 // es
            if self.p(0.5):
                return [f"{self.ch(['ins', 'mov'])} v{v()}.{L}[{self.ri(0, n - 1)}], v{v()}.{L}[{self.ri(0, n - 1)}]"]
            return [f"{self.ch(['ins', 'mov'])} v{v()}.{L}[{self.ri(0, n - 1)}], {self.R(self.s(), 1 if es == 64 else 0)}"]
        if k == 14:   # umov / smov
            if self.p(0.5):
                es = self.ch([8, 16, 32, 64])
                return [f"umov {self.R(self.d(), 1 if es == 64 else 0)}, v{v()}.{LANE[es]}[{self.ri(0, 128 // es - 1)}]"]
            es = self.ch([8, 16, 32])
            sf = 1 if es == 32 else self.sf()
            return [f"smov {self.R(self.d(), sf)}, v{v()}.{LANE[es]}[{self.ri(0, 128 // es - 1)}]"]
        if k <= 16:
            return self.simd_movi()
        if k == 17:   # widening
            op = self.ch(["uaddw", "saddw", "usubw", "ssubw", "usubl", "ssubl", "uaddl", "saddl",
                          "umull", "smull", "umull", "smull", "umlal", "smlal", "umlsl", "smlsl",
                          "uabdl", "sabdl", "uabal", "sabal", "sqdmull", "sqdmlal", "sqdmlsl"])
            # (the saturating doubling ones take halfwords and words only)
            na = self.ch([n for n in NARROW if not op.startswith("sqd") or n[-1] in "hs"])
            wa, two = NARROW[na]
            if op in ("smull", "umull", "smlal", "umlal", "smlsl", "umlsl", "sqdmull", "sqdmlal",
                      "sqdmlsl") and na[-1] in "hs" and self.p(0.3):
                # by element: Vm one element (v0-v15 for halfwords)
                es = ESIZE[na]
                m = self.ri(0, 15) if es == 16 else v()
                idx = self.ri(0, 128 // es - 1)
                op += "2" if two else ""
                return [f"{op} v{v()}.{wa}, v{v()}.{na}, v{m}.{LANE[es]}[{idx}]"]
            op += "2" if two else ""
            if op.rstrip("2").endswith("w"):
                return [f"{op} v{v()}.{wa}, v{v()}.{wa}, v{v()}.{na}"]
            return [f"{op} v{v()}.{wa}, v{v()}.{na}, v{v()}.{na}"]
        if k == 18:   # by element
            if self.p(0.25):
                # FEAT_DotProd: words from bytes, Vm's word broadcast or whole
                op = self.ch(["sdot", "udot"])
                a, b = self.ch([("2s", "8b"), ("4s", "16b")])
                m = f"v{v()}.4b[{self.ri(0, 3)}]" if self.p(0.5) else f"v{v()}.{b}"
                return [f"{op} v{v()}.{a}, v{v()}.{b}, {m}"]
            op = self.ch(["mul", "mla", "mls"])
            a = self.ch(["4h", "8h", "2s", "4s"])
            if ESIZE[a] == 16:
                return [f"{op} v{v()}.{a}, v{v()}.{a}, v{self.ri(0, 15)}.h[{self.ri(0, 7)}]"]
            return [f"{op} v{v()}.{a}, v{v()}.{a}, v{v()}.s[{self.ri(0, 3)}]"]
        if k == 19:   # scalar d forms
            op = self.ch(["add", "sub", "cmeq", "cmgt", "cmhi", "ushl", "sshl", "sqadd", "uqsub"])
            return [f"{op} d{v()}, d{v()}, d{v()}"]
        op = self.ch(list(self.SIMD_3SAME))
        a = self.ch(self.SIMD_3SAME[op])
        return [f"{op} v{v()}.{a}, v{v()}.{a}, v{v()}.{a}"]

    def simd_movi(self):
        v = self.vreg
        imm8 = self.ch([0, 0xff, 0x80, 0x7f, self.ri(0, 255), self.ri(0, 255)])
        k = self.ri(0, 7)
        if k == 0:
            return [f"movi v{v()}.{self.ch(ARR_B)}, #{imm8:#x}"]
        if k == 1:
            a = self.ch(["4h", "8h"])
            op = self.ch(["movi", "mvni", "orr", "bic"])
            return [f"{op} v{v()}.{a}, #{imm8:#x}, lsl #{self.ch([0, 8])}"]
        if k <= 3:
            a = self.ch(["2s", "4s"])
            op = self.ch(["movi", "mvni", "orr", "bic"])
            return [f"{op} v{v()}.{a}, #{imm8:#x}, lsl #{self.ch([0, 8, 16, 24])}"]
        if k == 4:
            a = self.ch(["2s", "4s"])
            op = self.ch(["movi", "mvni"])
            return [f"{op} v{v()}.{a}, #{imm8:#x}, msl #{self.ch([8, 16])}"]
        b = 0
        for i in range(8):
            if self.p(0.5):
                b |= 0xff << (8 * i)
        if k == 5:
            return [f"movi d{v()}, #{b:#x}"]
        return [f"movi v{v()}.2d, #{b:#x}"]

    # -------------------------------------------------------------- simd_fp
    def i_simd_fp(self):
        v = self.vreg
        k = self.ri(0, 15)
        a = self.ch(ARR_F)
        es = ESIZE[a]
        L = LANE[es]
        if k <= 5:
            op = self.ch(["fadd", "fsub", "fmul", "fdiv", "fmla", "fmls", "fmax", "fmin",
                          "fmaxnm", "fminnm", "faddp", "fmaxp", "fminp", "fmaxnmp", "fminnmp",
                          "fabd", "fcmeq", "fcmge", "fcmgt", "facge", "facgt", "fmulx"])
            return [f"{op} v{v()}.{a}, v{v()}.{a}, v{v()}.{a}"]
        if k <= 7:
            op = self.ch(["fabs", "fneg", "fsqrt", "frintn", "frinta", "frintm", "frintp",
                          "frintz", "frinti", "frintx", "fcvtzs", "fcvtzu", "fcvtns", "fcvtnu",
                          "fcvtas", "fcvtau", "fcvtms", "fcvtmu", "fcvtps", "fcvtpu", "scvtf",
                          "ucvtf", "fcvtzs", "fcvtzu", "scvtf", "ucvtf"])
            return [f"{op} v{v()}.{a}, v{v()}.{a}"]
        if k == 8:
            op = self.ch(["fcmeq", "fcmge", "fcmgt", "fcmle", "fcmlt"])
            return [f"{op} v{v()}.{a}, v{v()}.{a}, #0.0"]
        if k == 9:
            op = self.ch(["fcvtzs", "fcvtzu", "scvtf", "ucvtf"])
            return [f"{op} v{v()}.{a}, v{v()}.{a}, #{self.ri(1, es)}"]
        if k == 10:
            op = self.ch(["fmaxnmv", "fminnmv", "fmaxv", "fminv"])
            return [f"{op} s{v()}, v{v()}.4s"]
        if k == 11:
            op = self.ch(["faddp", "fmaxp", "fminp", "fmaxnmp", "fminnmp"])
            if self.p(0.5):
                return [f"{op} s{v()}, v{v()}.2s"]
            return [f"{op} d{v()}, v{v()}.2d"]
        if k <= 13:   # by element
            op = self.ch(["fmul", "fmla", "fmls", "fmulx"])
            return [f"{op} v{v()}.{a}, v{v()}.{a}, v{v()}.{L}[{self.ri(0, 128 // es - 1)}]"]
        if k == 14:
            return [f"fmov v{v()}.{a}, #{fmov_imm(self.r)}"]
        t = self.ri(0, 2)
        two = self.p(0.5)
        if t == 0:
            return [f"fcvtl{'2' if two else ''} v{v()}.2d, v{v()}.{'4s' if two else '2s'}"]
        op = "fcvtn" if t == 1 else "fcvtxn"
        return [f"{op}{'2' if two else ''} v{v()}.{'4s' if two else '2s'}, v{v()}.2d"]

    # ------------------------------------------------------------ simd_ldst
    SL_SIZES = [("b", 1), ("h", 2), ("s", 4), ("d", 8), ("q", 16)]

    def i_simd_ldst(self):
        v = self.vreg
        k = self.ri(0, 11)
        if k <= 3:   # ldr/str single register
            t, size = self.ch(self.SL_SIZES)
            ld = self.p(0.5)
            mn = "ldr" if ld else "str"
            mode = self.ch(["uoff", "uoff", "simm9", "pre", "post", "reg", "reg", "lit"])
            if mode == "lit" and (not ld or size < 4):
                mode = "uoff"
            if mode == "lit":
                return [f"ldr {t}{v()}, .Llit{self.case} + {self.ri(0, (64 - size) // 4) * 4}"]
            if mode == "reg":
                setup, op, _, _ = self.mem_reg(size, (), self.reg_shifts(size))
                return setup + [f"{mn} {t}{v()}, {op}"]
            if mode == "simm9":
                setup, op, _ = self.mem_imm("simm9", size, 1, False, ())
                return setup + [f"{'ldur' if ld else 'stur'} {t}{v()}, {op}"]
            setup, op, _ = self.mem_imm(mode, size, size, True, ())
            return setup + [f"{mn} {t}{v()}, {op}"]
        if k <= 5:   # pairs
            t, size = self.ch(self.SL_SIZES[2:])
            ld = self.p(0.5)
            nt = self.p(0.2)
            mn = ("ldnp" if ld else "stnp") if nt else ("ldp" if ld else "stp")
            r1 = v()
            r2 = self.ch([i for i in range(32) if i != r1]) if ld else v()
            mode = "pair" if nt else self.ch(["pair", "pairpre", "pairpost"])
            setup, op, _ = self.mem_imm(mode, 2 * size, size, True, ())
            return setup + [f"{mn} {t}{r1}, {t}{r2}, {op}"]
        ld = self.p(0.5)
        if k <= 7:   # ld1/st1 multiple
            n = self.ri(1, 4)
            a = self.ch(ARR_ALL + ["1d"])
            mn = "ld1" if ld else "st1"
            nbytes = n * (16 if a in ("16b", "8h", "4s", "2d") else 8)
        elif k <= 9:   # ldN/stN multiple structures
            n = self.ri(2, 4)
            a = self.ch(ARR_ALL)
            mn = f"ld{n}" if ld else f"st{n}"
            nbytes = n * (16 if a in ("16b", "8h", "4s", "2d") else 8)
        elif k == 10:   # replicate
            n = self.ri(1, 4)
            a = self.ch(ARR_ALL + ["1d"])
            mn = f"ld{n}r"
            nbytes = n * ESIZE[a] // 8
        else:   # single lane
            n = self.ri(1, 4)
            es = self.ch([8, 16, 32, 64])
            mn = f"ld{n}" if ld else f"st{n}"
            nbytes = n * es // 8
            first = v()
            regs = ", ".join(f"v{(first + i) % 32}.{LANE[es]}" for i in range(n))
            lst = f"{{{regs}}}[{self.ri(0, 128 // es - 1)}]"
            return self.simd_struct_addr(mn, lst, nbytes)
        first = v()
        regs = ", ".join(f"v{(first + i) % 32}.{a}" for i in range(n))
        return self.simd_struct_addr(mn, f"{{{regs}}}", nbytes)

    def simd_struct_addr(self, mn, lst, nbytes):
        post = self.ri(0, 2)
        if post == 0:
            setup, op, _ = self.mem_imm("none", nbytes, 1, False, ())
            return setup + [f"{mn} {lst}, {op}"]
        rb = self.d(zr=False)
        T = self.addr_T(nbytes, 1)
        setup = self.set_base(rb, T)
        if post == 1:
            return setup + [f"{mn} {lst}, [x{rb}], #{nbytes}"]
        rm = self.s(zr=False, excl=(rb,))
        return setup + [f"{mn} {lst}, [x{rb}], x{rm}"]

    # ---------------------------------------------------------- fp_estimate
    def i_fp_estimate(self):
        """The reciprocal and reciprocal square root estimates and Newton steps."""
        v = self.vreg
        k = self.ri(0, 9)
        if k <= 2:   # scalar
            t = self.ch("sd")

            def V():
                return f"{t}{self.ri(0, 31)}"
            if k == 0:
                return [f"{self.ch(['frecpe', 'frsqrte', 'frecpx'])} {V()}, {V()}"]
            return [f"{self.ch(['frecps', 'frsqrts'])} {V()}, {V()}, {V()}"]
        if k == 8:
            a = self.ch(["2s", "4s"])
            return [f"{self.ch(['urecpe', 'ursqrte'])} v{v()}.{a}, v{v()}.{a}"]
        a = self.ch(ARR_F)
        if k <= 4:
            return [f"{self.ch(['frecpe', 'frsqrte'])} v{v()}.{a}, v{v()}.{a}"]
        if k <= 7:
            return [f"{self.ch(['frecps', 'frsqrts'])} v{v()}.{a}, v{v()}.{a}, v{v()}.{a}"]
        # a Newton step as code writes it: estimate, step, multiply
        x, e, s = v(), v(), v()
        est, step = self.ch([("frecpe", "frecps"), ("frsqrte", "frsqrts")])
        return [f"{est} v{e}.{a}, v{x}.{a}", f"{step} v{s}.{a}, v{x}.{a}, v{e}.{a}",
                f"fmul v{e}.{a}, v{e}.{a}, v{s}.{a}"]

    # ============================================================ program
    def block(self, k):
        if self.cls == "pc_rel":
            return self.block_pc_rel(k)
        if self.cls == "branch":
            return self.block_branch(k)
        fn = getattr(self, "i_" + self.cls)
        lines = []
        for _ in range(k):
            lines += fn()
        return lines
