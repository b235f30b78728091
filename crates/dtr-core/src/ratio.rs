//! Correctly rounded quotients of exact integers.
//!
//! The reference computes scores as Python `int / int`, which returns the IEEE
//! double nearest to the exact rational (ties to even). Products such as
//! `size * staleness` exceed 2^64, so we divide 128-bit integers exactly.

/// The f64 nearest to `num / den` (ties to even). `den` must be positive.
pub fn div_round(num: u128, den: u128) -> f64 {
    debug_assert!(den > 0);
    if num == 0 {
        return 0.0;
    }
    // Both operands exact in f64: one IEEE division is correctly rounded.
    const EXACT: u128 = 1 << 53;
    if num <= EXACT && den <= EXACT {
        // Through u64: the 128-bit conversions are software routines.
        return num as u64 as f64 / den as u64 as f64;
    }
    let nbits = 128 - num.leading_zeros() as i32;
    let dbits = 128 - den.leading_zeros() as i32;
    // Scale so the integer quotient has 63 or 64 significant bits: at least
    // 55 (53, a rounding bit and a sticky bit), and few enough for u64, whose
    // conversion to f64 is one correctly rounded instruction. The remainder
    // only decides a sticky bit far below the rounding position.
    let shift = dbits - nbits + 63;
    if shift >= 0 && nbits + shift <= 127 {
        let scaled = num << shift;
        let q = scaled / den;
        // One division: the remainder is nonzero iff q * den falls short.
        let sticky = (q * den != scaled) as u128;
        return scale((q | sticky) as u64 as f64, -shift);
    }
    long_division(num, den)
}

/// `x * 2^e`, exact for the exponents used here (no overflow, no subnormals).
fn scale(x: f64, e: i32) -> f64 {
    let mut x = x;
    let mut e = e;
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e)
}

/// Bit-by-bit division for operands too wide for the fast path.
fn long_division(num: u128, den: u128) -> f64 {
    // Find e with 2^e <= num/den < 2^(e+1), working on (num, den) scaled so
    // neither overflows: compare num against den shifted.
    let nbits = 128 - num.leading_zeros() as i32;
    let dbits = 128 - den.leading_zeros() as i32;
    let mut e = nbits - dbits;
    let ge = |e: i32| -> bool {
        // num >= den * 2^e ?
        if e >= 0 {
            (den << e as u32) <= num
        } else {
            den <= (num << (-e) as u32)
        }
    };
    if !ge(e) {
        e -= 1;
    }
    // 66 quotient bits with a remainder: r/d in [1, 2) initially.
    // Keep r and d aligned: r = num * 2^-e (as a fraction over den).
    let (mut r, d) = if e >= 0 { (num, den << e as u32) } else { (num << (-e) as u32, den) };
    let mut q: u128 = 0;
    for _ in 0..66 {
        q <<= 1;
        if r >= d {
            r -= d;
            q |= 1;
        }
        // r < d; doubling stays below 2d, which fits since d < 2^127.
        r <<= 1;
    }
    let sticky = (r != 0) as u128;
    scale((q | sticky) as f64, e - 65)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (numerator, denominator, bits of Python's `numerator / denominator`),
    /// random operands up to 2^72 / 2^110 plus ties and wide edge cases.
    const PYTHON_QUOTIENTS: &[(u128, u128, u64)] = &[
        (665496014308, 108729892840529, 0x3f7911f3835490a6),
        (840, 338787163211036157970, 0x3c46de6528170e73),
        (232, 691672907343361485, 0x3cb82b61d6e8f5bb),
        (5033613272634523, 194804717, 0x4178a46ae2d276bf),
        (1937998524099880372774, 2120406186648956664868, 0x3fed3f48c69a33c0),
        (147, 36875956164706073106965, 0x3bb2d32fa47207a6),
        (25008886, 1367515703230186428108, 0x3d14971b3588007e),
        (9740127453439652, 37416, 0x424e4e22d4343da5),
        (895759484248, 179996523723736888056747404, 0x3cf6698eac8d6b75),
        (12495588, 4488, 0x40a5c071a02bceb7),
        (288, 159, 0x3ffcfb2b78c13522),
        (66627625, 240540662221678874923553123, 0x3c147036d1723f1b),
        (1286194966288, 172803909013776729, 0x3edf37f4df2d2b74),
        (3411833895, 11727181, 0x40722ef10aa4a51b),
        (351564607, 9343740666728786239574, 0x3d252e6e9f0a5590),
        (7897282833696, 135759445245, 0x404d15e830b12aef),
        (120, 58383245912536914153, 0x3c42f523807fb891),
        (16416017773909, 361623101239487594, 0x3f07ccdd5962e9fa),
        (782, 4146626890753463407603, 0x3c0bd49db8e45c29),
        (1526174204482, 17474479759310, 0x3fb65bbd0eb52926),
        (484208458558239441, 3870, 0x42dc72da69564cc8),
        (23511073321, 56570704956974727797397171, 0x3cbdf28f9486d5fc),
        (634139589761, 88078046084243685716371878, 0x3d00365f06565370),
        (752838562353800, 33092819922696, 0x4036bfd245823b9b),
        (193746586134622761, 35629769834690070052217, 0x3ed6cec38cf3de0e),
        (206220972, 99339759824, 0x3f610182c826087a),
        (1708957520, 1962271416022995, 0x3ead390a8c5d993a),
        (3068916285533387239, 158365272813742199, 0x403360f3cbdfc535),
        (12384039257, 11293991961596989416800418966193, 0x3b94b66ca9741fab),
        (6463049549028170, 296403452939144930782770694, 0x3db7f98917fa405b),
        (162050095, 361, 0x411b65f0eb6f55ce),
        (243224, 18761076815249803258358251, 0x3bce9c6e5fe3c637),
        (4408156, 17197451098, 0x3f30cc7052f388a4),
        (6651880140370945, 576116141514125005798674, 0x3e48cb859625dfac),
        (90504, 850167114516773999539459903143703, 0x3a20de4d53768e79),
        (58, 1004658664998250923217598206135, 0x3a124bb3018b844a),
        (1888910984076485390755, 1084290708367405, 0x413a94f69e20a6a4),
        (858426790869288, 505, 0x4278bc7415c80553),
        (59139937, 230537, 0x4070087fdc9b92fc),
        (925998072585, 4, 0x424af33928612000),
        (562685, 7774, 0x40521857fd5d967e),
        (3588933673632, 896, 0x41edd7e5a385b6db),
        (82418944, 357140053583774, 0x3e8ef95d16fc191d),
        (4103703932, 37123595627060019187881, 0x3d3f1d5dbc061504),
        (27817, 9018825293094976219, 0x3cebc7f8e3be1669),
        (557823379440872552, 154987694495, 0x414b75952000a4f4),
        (12282, 4658924333158, 0x3e26a522070fb17e),
        (3191548544329702843, 1082832, 0x428571fa06dea3ee),
        (1, 205618524280388833078, 0x3bb6f775ac8510aa),
        (885942561412001133891, 202517602697502235399, 0x40117fa2dd958842),
        (2851, 589486582056719969899456423817737, 0x39d8860591adc340),
        (1491897, 518276342872910593452359086632, 0x3b0bd7014475fde8),
        (11740281409835953346, 595364761634296031032161, 0x3ef4ad681acf40ff),
        (27047509, 1757356620, 0x3f8f8553978ce9a7),
        (3617860289581415, 214660301, 0x417012b7e3901ea2),
        (98792691569791529834, 16, 0x43d56c189639f89c),
        (12, 19208124814, 0x3e05773b948ea82d),
        (23237180, 135165644690210500258825, 0x3ca8c697b81657d2),
        (34290825620445, 31027189654940, 0x3ff1aed7da57d4ca),
        (3716, 778769608463832542, 0x3cf57d506fe0cce0),
        (1, 3541774862152233910272, 0x3b75555555555555),
        (12345678901234567, 98765432109876543210, 0x3f20624dd0706dc7),
        (1000000007, 18446744073709551629, 0x3dcdcd6503800000),
        (1152921504606846977, 42535295865117307932921825928971026432, 0x3be0000000000000),
        (10633823966279328163822077199654060032, 1180591620717411303424, 0x4340000000000000),
        (9007199254740993, 1, 0x4340000000000000),
        (9007199254740995, 1, 0x4340000000000002),
    ];

    #[test]
    fn matches_python_true_division() {
        for &(n, d, bits) in PYTHON_QUOTIENTS {
            assert_eq!(div_round(n, d).to_bits(), bits, "{n} / {d}");
        }
    }

    #[test]
    fn long_division_agrees_with_python() {
        for &(n, d, bits) in PYTHON_QUOTIENTS {
            if n > 0 {
                assert_eq!(long_division(n, d).to_bits(), bits, "{n} / {d}");
            }
        }
    }
}
