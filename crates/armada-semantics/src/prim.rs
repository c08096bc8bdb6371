//! The primitives the interpreter's generated code calls where Rust has no one operator for
//! a definition's operation. (The CUDA kernel's are in `kernel/int.cu` and `armada.cu`, the
//! shader's in `helpers.wgsl`: each engine keeps its own, written for it.)

/// Signed division toward zero, 0 for a zero divisor, MIN for MIN / -1 (SDIV).
#[inline(always)]
pub fn sdiv_w(n: u32, m: u32) -> u32 {
    if m == 0 {
        0
    } else {
        (n as i32).wrapping_div(m as i32) as u32
    }
}

/// [`sdiv_w`] on 64 bits.
#[inline(always)]
pub fn sdiv_x(n: u64, m: u64) -> u64 {
    if m == 0 {
        0
    } else {
        (n as i64).wrapping_div(m as i64) as u64
    }
}

/// The high 64 bits of the unsigned 128-bit product (UMULH).
#[inline(always)]
pub fn umulh(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) >> 64) as u64
}

/// The high 64 bits of the signed 128-bit product (SMULH).
#[inline(always)]
pub fn smulh(a: u64, b: u64) -> u64 {
    ((a as i64 as i128 * b as i64 as i128) >> 64) as u64
}

/// The byte-at-a-time tables of CRC-32 (reflected 0xEDB88320) and CRC-32C (0x82F63B78).
static CRC_TABLES: [[u32; 256]; 2] = [crc_table(0xedb8_8320), crc_table(0x82f6_3b78)];

const fn crc_table(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// CRC32* / CRC32C*: folds the low 2^log2 bytes of `data` into `acc` (no pre/post
/// inversion, as the instructions define it); `castagnoli` 1 for CRC32C.
pub fn crc32(acc: u32, data: u64, log2: u8, castagnoli: u8) -> u32 {
    let t = &CRC_TABLES[(castagnoli & 1) as usize];
    let mut c = acc;
    for i in 0..(1u32 << (log2 & 3)) {
        let byte = (data >> (8 * i)) as u8;
        c = t[((c ^ byte as u32) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_check_string() {
        let check = |castagnoli| {
            let mut c = !0u32;
            for &b in b"123456789" {
                c = crc32(c, b as u64, 0, castagnoli);
            }
            !c
        };
        assert_eq!(check(0), 0xcbf4_3926);
        assert_eq!(check(1), 0xe306_9283);
    }

    #[test]
    fn division_corners() {
        assert_eq!(sdiv_w(0x8000_0000, u32::MAX), 0x8000_0000);
        assert_eq!(sdiv_x(1 << 63, u64::MAX), 1 << 63);
        assert_eq!(sdiv_w(7, 0), 0);
        assert_eq!(sdiv_w(-7i32 as u32, 2), -3i32 as u32);
    }
}
