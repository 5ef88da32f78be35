//! PNG copies of the charts, for documents and chats that do not take SVG. The SVG that the page
//! inlines is rendered with `resvg` (pure Rust) at twice its size; its text is drawn with the
//! system's fonts (Debian's `fonts-dejavu-core`), found once per batch of files. Without any
//! font the PNGs are not written, since their axes and legends would be blank.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{Options, Tree};

/// Pixels per SVG unit: sharp on high-density screens and in slides.
const SCALE: f32 = 2.0;

/// Preferred faces for the charts' `sans-serif`, in order; else any installed face.
const SANS: [&str; 3] = ["DejaVu Sans", "Liberation Sans", "Noto Sans"];

/// Turns chart SVGs into PNGs with the fonts it found.
pub(crate) struct Rasterizer {
    options: Options<'static>,
}

impl Rasterizer {
    /// A rasterizer with the system's fonts, or `None` when no font is installed.
    pub(super) fn with_system_fonts() -> Option<Rasterizer> {
        let mut options = Options::default();
        let db = options.fontdb_mut();
        db.load_system_fonts();
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
            .collect();
        let sans = SANS
            .iter()
            .map(|s| s.to_string())
            .find(|s| families.contains(s))
            .or_else(|| families.first().cloned())?;
        db.set_sans_serif_family(sans);
        Some(Rasterizer { options })
    }

    /// The PNG of one SVG document.
    pub(super) fn png(&self, svg: &str) -> Result<Vec<u8>, String> {
        let tree = Tree::from_str(svg, &self.options).map_err(|e| e.to_string())?;
        let size = tree.size().to_int_size().scale_by(SCALE);
        let size = size.ok_or("the chart has no size")?;
        let mut pixmap =
            Pixmap::new(size.width(), size.height()).ok_or("the chart is too large")?;
        resvg::render(
            &tree,
            Transform::from_scale(SCALE, SCALE),
            &mut pixmap.as_mut(),
        );
        pixmap.encode_png().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_an_svg_at_twice_its_size() {
        let Some(r) = Rasterizer::with_system_fonts() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "no font installed, but CI is set"
            );
            return;
        };
        let svg = r##"<svg width="40" height="20" xmlns="http://www.w3.org/2000/svg"><rect width="40" height="20" fill="#1f77b4"/><text x="2" y="15" font-family="sans-serif" font-size="12">ok</text></svg>"##;
        let png = r.png(svg).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (80, 40));
        assert!(r.png("not svg").is_err());
    }
}
