//! Deep display images (half floats, read back from an `Rgba16Float` target) → the pixel
//! formats of 16-bit PNG and EXR.

use half::f16;

fn halves(texels: &[u8]) -> impl Iterator<Item = f32> + '_ {
    texels
        .chunks_exact(2)
        .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
}

/// Half-float sRGB values → `u16` (native-endian bytes), 0..1 → 0..65535, rounded.
pub fn sixteen_bits(texels: &[u8], out: &mut Vec<u8>) {
    for v in halves(texels) {
        let code = (v.clamp(0.0, 1.0) * 65535.0).round() as u16;
        out.extend_from_slice(&code.to_ne_bytes());
    }
}

/// Half-float linear light → `f32` (native-endian bytes), unclamped (HDR); NaN becomes 0.
pub fn floats(texels: &[u8], out: &mut Vec<u8>) {
    for v in halves(texels) {
        let v = if v.is_nan() { 0.0 } else { v };
        out.extend_from_slice(&v.to_ne_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(vals: &[f32]) -> Vec<u8> {
        vals.iter()
            .flat_map(|&v| f16::from_f32(v).to_le_bytes())
            .collect()
    }

    #[test]
    fn ends_and_middle_of_the_sixteen_bit_range() {
        let mut out = Vec::new();
        sixteen_bits(&le(&[0.0, 1.0, 0.5, 2.0, -1.0]), &mut out);
        let codes: Vec<u16> = out
            .chunks_exact(2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(codes, [0, 65535, 32768, 65535, 0]);
    }

    #[test]
    fn linear_light_keeps_values_above_one() {
        let mut out = Vec::new();
        floats(&le(&[0.25, 7.5, f32::NAN]), &mut out);
        let v: Vec<f32> = out
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(v, [0.25, 7.5, 0.0]);
    }
}
