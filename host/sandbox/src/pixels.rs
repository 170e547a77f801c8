//! Pure image arithmetic for the browser and desktop tools: PNG decoding
//! to RGBA, structural similarity (SSIM) between two screenshots, and a
//! diff image that marks where they differ.

use crate::SandboxError;

/// An 8-bit RGBA image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    /// Row-major, 4 bytes per pixel.
    pub pixels: Vec<u8>,
}

fn bad(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Image {
        reason: format!("{what}: {e}"),
    }
}

impl Rgba {
    /// Decodes a PNG of any colour type and bit depth into 8-bit RGBA.
    pub fn decode_png(bytes: &[u8]) -> Result<Rgba, SandboxError> {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().map_err(|e| bad("not a PNG", e))?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| bad("PNG", "image too large"))?;
        let mut buf = vec![0; size];
        let info = reader
            .next_frame(&mut buf)
            .map_err(|e| bad("PNG data", e))?;
        buf.truncate(info.buffer_size());
        let (w, h) = (info.width, info.height);
        let pixels = match info.color_type {
            png::ColorType::Rgba => buf,
            png::ColorType::Rgb => buf
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
            png::ColorType::GrayscaleAlpha => buf
                .chunks_exact(2)
                .flat_map(|p| [p[0], p[0], p[0], p[1]])
                .collect(),
            png::ColorType::Indexed => return Err(bad("PNG", "palette not expanded")),
        };
        Ok(Rgba {
            width: w,
            height: h,
            pixels,
        })
    }

    pub fn encode_png(&self) -> Result<Vec<u8>, SandboxError> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| bad("encoding PNG", e))?;
        writer
            .write_image_data(&self.pixels)
            .map_err(|e| bad("encoding PNG", e))?;
        writer.finish().map_err(|e| bad("encoding PNG", e))?;
        Ok(out)
    }

    /// The pixel at (x, y) as [r, g, b, a].
    pub fn at(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y as usize) * (self.width as usize) + x as usize) * 4;
        let p = &self.pixels[i..i + 4];
        [p[0], p[1], p[2], p[3]]
    }

    /// Luma (BT.601), one f64 per pixel.
    fn luma(&self) -> Vec<f64> {
        self.pixels
            .chunks_exact(4)
            .map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2]))
            .collect()
    }
}

/// The result of comparing two screenshots.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// Mean SSIM over 8x8 windows (stride 4) of the luma: 1.0 identical.
    pub ssim: f64,
    /// Pixels whose luma differs by more than 8 of 255.
    pub changed_pixels: u64,
    /// The first image in grey with changed pixels painted red.
    pub image: Rgba,
}

const WINDOW: usize = 8;
const STRIDE: usize = 4;

/// Compares two images of the same size.
pub fn diff(a: &Rgba, b: &Rgba) -> Result<Diff, SandboxError> {
    if (a.width, a.height) != (b.width, b.height) {
        return Err(SandboxError::Image {
            reason: format!(
                "the screenshots differ in size: {}x{} and {}x{}",
                a.width, a.height, b.width, b.height
            ),
        });
    }
    let (w, h) = (a.width as usize, a.height as usize);
    let (la, lb) = (a.luma(), b.luma());
    let ssim = mean_ssim(&la, &lb, w, h);
    let mut changed = 0;
    let mut pixels = Vec::with_capacity(a.pixels.len());
    for (x, y) in la.iter().zip(&lb) {
        if (x - y).abs() > 8.0 {
            changed += 1;
            pixels.extend_from_slice(&[255, 0, 0, 255]);
        } else {
            let g = (x * 0.5 + 127.0) as u8;
            pixels.extend_from_slice(&[g, g, g, 255]);
        }
    }
    Ok(Diff {
        ssim,
        changed_pixels: changed,
        image: Rgba {
            width: a.width,
            height: a.height,
            pixels,
        },
    })
}

fn mean_ssim(a: &[f64], b: &[f64], w: usize, h: usize) -> f64 {
    const C1: f64 = (0.01 * 255.0) * (0.01 * 255.0);
    const C2: f64 = (0.03 * 255.0) * (0.03 * 255.0);
    if w < WINDOW || h < WINDOW {
        return if a == b { 1.0 } else { 0.0 };
    }
    let n = (WINDOW * WINDOW) as f64;
    let (mut total, mut count) = (0.0, 0u64);
    let mut y = 0;
    while y + WINDOW <= h {
        let mut x = 0;
        while x + WINDOW <= w {
            let (mut sa, mut sb, mut saa, mut sbb, mut sab) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for dy in 0..WINDOW {
                let row = (y + dy) * w + x;
                for i in row..row + WINDOW {
                    let (p, q) = (a[i], b[i]);
                    sa += p;
                    sb += q;
                    saa += p * p;
                    sbb += q * q;
                    sab += p * q;
                }
            }
            let (ma, mb) = (sa / n, sb / n);
            let va = saa / n - ma * ma;
            let vb = sbb / n - mb * mb;
            let cov = sab / n - ma * mb;
            total += ((2.0 * ma * mb + C1) * (2.0 * cov + C2))
                / ((ma * ma + mb * mb + C1) * (va + vb + C2));
            count += 1;
            x += STRIDE;
        }
        y += STRIDE;
    }
    total / count as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(w: u32, h: u32, rgb: [u8; 3]) -> Rgba {
        Rgba {
            width: w,
            height: h,
            pixels: (0..w * h)
                .flat_map(|_| [rgb[0], rgb[1], rgb[2], 255])
                .collect(),
        }
    }

    #[test]
    fn identical_images_have_ssim_one_and_no_changes() {
        let a = solid(32, 32, [10, 200, 30]);
        let d = diff(&a, &a).unwrap();
        assert!((d.ssim - 1.0).abs() < 1e-9);
        assert_eq!(d.changed_pixels, 0);
    }

    #[test]
    fn a_changed_half_lowers_ssim_and_is_painted_red() {
        let a = solid(32, 32, [255, 255, 255]);
        let mut b = a.clone();
        for y in 0..32 {
            for x in 0..16 {
                let i = (y * 32 + x) * 4;
                b.pixels[i..i + 3].copy_from_slice(&[0, 0, 0]);
            }
        }
        let d = diff(&a, &b).unwrap();
        assert!(d.ssim < 0.6, "ssim {}", d.ssim);
        assert_eq!(d.changed_pixels, 16 * 32);
        assert_eq!(d.image.at(0, 0), [255, 0, 0, 255]);
        assert_ne!(d.image.at(31, 0), [255, 0, 0, 255]);
    }

    #[test]
    fn png_round_trip_and_size_mismatch() {
        let a = solid(9, 5, [1, 2, 3]);
        let back = Rgba::decode_png(&a.encode_png().unwrap()).unwrap();
        assert_eq!(back, a);
        assert!(diff(&a, &solid(5, 9, [1, 2, 3])).is_err());
        assert!(Rgba::decode_png(b"not a png").is_err());
    }
}
