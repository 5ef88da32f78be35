//! The one place that talks to `plotters`: a [`Plot`] (lines, markers and reference lines in
//! value space) becomes an SVG document. Text stays `<text>` for the browser or the document
//! editor to render, so no font is read here and the crate needs no fontconfig.

use super::axis::{Axis, Span};
use super::{Line, Mark, Plot, Style};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

/// The size of a chart in SVG units, for a laptop's page and for documents; pages scale it to
/// their width.
pub(crate) const WIDE: (u32, u32) = (800, 420);
/// The size for a phone's page: narrower, so that the same font sizes stay readable when the
/// drawing is scaled down to a phone's width.
pub(crate) const COMPACT: (u32, u32) = (480, 400);
const FONT: &str = "sans-serif";
const CAPTION_PX: u32 = 24;
const LABEL_PX: u32 = 18;
const LINE_WIDTH: u32 = 2;
const MARKER_PX: u32 = 3;

type Ctx<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Span, Span>>;
type DrawResult<T> = Result<T, DrawingAreaErrorKind<std::io::Error>>;
type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;

/// A line (or reference line) with its points already mapped onto the axes.
struct Mapped<'p> {
    label: &'p str,
    color: RGBColor,
    style: Style,
    points: Vec<(f64, f64)>,
}

/// The plot as an SVG document of `size`, or why it could not be drawn.
pub(crate) fn svg(plot: &Plot, size: (u32, u32)) -> Result<String, String> {
    let lines = map_lines(plot);
    let mark_coords = |marks: &[Mark], axis: &Axis| -> Vec<f64> {
        marks.iter().filter_map(|m| axis.coord(m.at)).collect()
    };
    let mut xs = mark_coords(&plot.x_marks, &plot.x);
    let mut ys = mark_coords(&plot.y_marks, &plot.y);
    xs.extend(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    ys.extend(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    let whiskers = plot.extras.whiskers.iter();
    ys.extend(
        whiskers
            .flat_map(|w| [plot.y.coord(w.low), plot.y.coord(w.high)])
            .flatten(),
    );
    let (xspan, yspan) = (x_span(plot, &xs), plot.y.span(&ys, true));
    let marks = map_marks(plot, &xspan, &yspan);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        let drawn = draw(
            &root,
            plot,
            (&xspan, &yspan),
            lines.iter().chain(marks.iter()),
        );
        drawn
            .and_then(|()| root.present())
            .map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// A categorical axis holds each category in a slot of width 1; others fit the values.
fn x_span(plot: &Plot, xs: &[f64]) -> Span {
    let n = plot.extras.categories.len();
    if n == 0 {
        return plot.x.span(xs, false);
    }
    Span {
        lo: -0.5,
        hi: n as f64 - 0.5,
        ticks: (0..n).map(|i| i as f64).collect(),
    }
}

fn map_lines(plot: &Plot) -> Vec<Mapped<'_>> {
    plot.lines
        .iter()
        .map(|line: &Line| Mapped {
            label: &line.label,
            color: line.color,
            style: line.style,
            points: line
                .points
                .iter()
                .filter_map(|&(x, y)| Some((plot.x.coord(x)?, plot.y.coord(y)?)))
                .collect(),
        })
        .collect()
}

/// Reference lines across the whole plot: a limit on y, a rate on x.
fn map_marks<'p>(plot: &'p Plot, x: &Span, y: &Span) -> Vec<Mapped<'p>> {
    let across = |m: &'p Mark, points: Vec<(f64, f64)>| Mapped {
        label: &m.label,
        color: m.color,
        style: Style::Dashed,
        points,
    };
    let horizontal = plot.y_marks.iter().filter_map(|m| {
        let c = plot.y.coord(m.at)?;
        Some(across(m, vec![(x.lo, c), (x.hi, c)]))
    });
    let vertical = plot.x_marks.iter().filter_map(|m| {
        let c = plot.x.coord(m.at)?;
        Some(across(m, vec![(c, y.lo), (c, y.hi)]))
    });
    horizontal.chain(vertical).collect()
}

fn draw<'p>(
    root: &Area<'_>,
    plot: &Plot,
    (x, y): (&Span, &Span),
    lines: impl Iterator<Item = &'p Mapped<'p>> + Clone,
) -> DrawResult<()> {
    root.fill(&WHITE)?;
    let caption = caption_px(&plot.title, root.dim_in_pixel().0);
    let body = root.titled(&plot.title, (FONT, caption))?;
    let rows = legend_rows(lines.clone(), body.dim_in_pixel().0);
    let (legend, chart) = body.split_vertically(LEGEND_ROW_PX * rows.len() as u32 + 6);
    draw_legend(&legend, &rows)?;
    let mut ctx = ChartBuilder::on(&chart)
        .margin(MARGIN_PX)
        .margin_right(34)
        .x_label_area_size(50)
        .y_label_area_size(Y_LABELS_PX)
        .build_cartesian_2d(x.clone(), y.clone())?;
    bands(&mut ctx, plot, y)?;
    mesh(&mut ctx, plot)?;
    let half = plot.extras.bar_half_width;
    for line in lines {
        series(&mut ctx, line, (half, y.lo))?;
    }
    whiskers(&mut ctx, plot)
}

/// Shaded stretches behind everything else.
fn bands(ctx: &mut Ctx<'_, '_>, plot: &Plot, y: &Span) -> DrawResult<()> {
    let coords = plot.extras.bands.iter().filter_map(|b| {
        let (from, to) = (plot.x.coord(b.from)?, plot.x.coord(b.to)?);
        Some(Rectangle::new(
            [(from, y.lo), (to, y.hi)],
            b.color.mix(0.13).filled(),
        ))
    });
    ctx.draw_series(coords)?;
    Ok(())
}

/// Confidence intervals: a vertical stroke with a cap at each end.
fn whiskers(ctx: &mut Ctx<'_, '_>, plot: &Plot) -> DrawResult<()> {
    let cap = plot.extras.bar_half_width * 0.35;
    let stroke = BLACK.mix(0.75).stroke_width(LINE_WIDTH);
    for w in &plot.extras.whiskers {
        let (Some(lo), Some(hi)) = (plot.y.coord(w.low), plot.y.coord(w.high)) else {
            continue;
        };
        let paths = [
            vec![(w.x, lo), (w.x, hi)],
            vec![(w.x - cap, lo), (w.x + cap, lo)],
            vec![(w.x - cap, hi), (w.x + cap, hi)],
        ];
        ctx.draw_series(paths.into_iter().map(|p| PathElement::new(p, stroke)))?;
    }
    Ok(())
}

fn mesh(ctx: &mut Ctx<'_, '_>, plot: &Plot) -> DrawResult<()> {
    let (x, y, categories) = (&plot.x, &plot.y, &plot.extras.categories);
    let x_label = |c: &f64| match categories.get(c.round().max(0.0) as usize) {
        Some(name) if !categories.is_empty() => name.clone(),
        _ => x.label(*c),
    };
    let y_label = |c: &f64| y.label(*c);
    ctx.configure_mesh()
        .x_desc(x.title)
        .y_desc(y.title)
        .label_style((FONT, LABEL_PX))
        .axis_desc_style((FONT, LABEL_PX))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .bold_line_style(BLACK.mix(0.12))
        .axis_style(BLACK.mix(0.6))
        .draw()
}

/// One line; bars stand on `base` (the bottom of the y span, or zero above it) and are
/// `half` wide either side of their x.
fn series(ctx: &mut Ctx<'_, '_>, line: &Mapped<'_>, (half, base): (f64, f64)) -> DrawResult<()> {
    let color = line.color;
    let stroke = color.stroke_width(LINE_WIDTH);
    let points = line.points.iter().copied();
    match line.style {
        Style::Solid { markers } => {
            let size = if markers { MARKER_PX } else { 0 };
            ctx.draw_series(LineSeries::new(points, stroke).point_size(size))?;
        }
        Style::Dashed => {
            ctx.draw_series(DashedLineSeries::new(points, 8, 5, stroke))?;
        }
        Style::Markers => {
            ctx.draw_series(points.map(|p| Circle::new(p, 5, color.filled())))?;
        }
        Style::Bars => {
            let base = base.max(0.0);
            let bars = points.map(|(x, y)| {
                Rectangle::new([(x - half, base), (x + half, y)], color.mix(0.85).filled())
            });
            ctx.draw_series(bars)?;
        }
    }
    Ok(())
}

/// The legend sits in its own strip between the title and the plot, entries flowing left to
/// right and onto more rows as the width requires, so it never hides data.
const LEGEND_ROW_PX: u32 = 24;
const SWATCH_PX: i32 = 24;
const MARGIN_PX: u32 = 14;
const Y_LABELS_PX: u32 = 84;

/// A legend entry and where its row starts it.
type Entry<'p> = (&'p Mapped<'p>, i32);

/// Entries of the lines that have points, placed in rows no wider than `width`.
fn legend_rows<'p>(lines: impl Iterator<Item = &'p Mapped<'p>>, width: u32) -> Vec<Vec<Entry<'p>>> {
    let left = (MARGIN_PX + Y_LABELS_PX) as i32;
    let right = width as i32 - MARGIN_PX as i32;
    let mut rows: Vec<Vec<Entry<'p>>> = vec![Vec::new()];
    let mut x = left;
    for line in lines.filter(|l| !l.points.is_empty()) {
        let w = SWATCH_PX + 8 + text_width(line.label) + 22;
        if x + w > right && x > left {
            rows.push(Vec::new());
            x = left;
        }
        rows.last_mut().expect("one row at least").push((line, x));
        x += w;
    }
    rows.retain(|r| !r.is_empty());
    rows
}

/// The title's font size: [`CAPTION_PX`], or smaller so that a long title fits the drawing's
/// width (centred titles wider than the drawing are clipped on both sides on a phone).
fn caption_px(title: &str, width: u32) -> u32 {
    // A generous width per character in the browser's sans-serif, in font sizes.
    let per_char = 0.6 * title.chars().count().max(1) as f64;
    let fit = f64::from(width.saturating_sub(2 * MARGIN_PX)) / per_char;
    (fit.floor() as u32).clamp(10, CAPTION_PX)
}

/// A generous estimate of the text's width in the browser's sans-serif.
fn text_width(text: &str) -> i32 {
    let px = f64::from(LABEL_PX) / 1.24;
    (text.chars().count() as f64 * px * 0.56).ceil() as i32
}

fn draw_legend(area: &Area<'_>, rows: &[Vec<Entry<'_>>]) -> DrawResult<()> {
    let font = (FONT, LABEL_PX)
        .into_font()
        .color(&BLACK.mix(0.85))
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, row) in rows.iter().enumerate() {
        let y = (LEGEND_ROW_PX as i32) * i as i32 + LEGEND_ROW_PX as i32 / 2 + 2;
        for &(line, x) in row {
            swatch(area, line, (x, y))?;
            area.draw(&Text::new(line.label, (x + SWATCH_PX + 8, y), font.clone()))?;
        }
    }
    Ok(())
}

/// A short stretch of the line as it is drawn: solid, dashed, or a dot.
fn swatch(area: &Area<'_>, line: &Mapped<'_>, (x, y): (i32, i32)) -> DrawResult<()> {
    let stroke = line.color.stroke_width(3);
    let mid = x + SWATCH_PX / 2;
    match line.style {
        Style::Solid { markers } => {
            area.draw(&PathElement::new([(x, y), (x + SWATCH_PX, y)], stroke))?;
            if markers {
                area.draw(&Circle::new((mid, y), MARKER_PX, stroke))?;
            }
        }
        Style::Dashed => {
            area.draw(&PathElement::new([(x, y), (x + 9, y)], stroke))?;
            area.draw(&PathElement::new([(x + 15, y), (x + SWATCH_PX, y)], stroke))?;
        }
        Style::Markers => area.draw(&Circle::new((mid, y), 5, line.color.filled()))?,
        Style::Bars => area.draw(&Rectangle::new(
            [(x + 4, y - 7), (x + SWATCH_PX - 4, y + 7)],
            line.color.mix(0.85).filled(),
        ))?,
    }
    Ok(())
}

/// A span is a linear plotters axis whose grid lines and labels are exactly its ticks.
impl Ranged for Span {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = (value - self.lo) / (self.hi - self.lo);
        let share = if share.is_finite() { share } else { 0.5 };
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}
