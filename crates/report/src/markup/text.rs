//! Aligned columns for the terminal reports: cells two spaces apart after a two-space indent,
//! widths counted in characters (`µ` is one column, two bytes), text to the left and numbers
//! to the right; and a mix's per-request table, which a run and a find-max search both print.

use crate::view::endpoints;
use loadbench_model::RunResult;

const INDENT: &str = "  ";

/// The per-request table of a mix, aligned (numbers to the right); empty without a mix.
pub(crate) fn endpoint_table(r: &RunResult) -> Vec<String> {
    use endpoints::{HEAD, NUMERIC};
    let rows = endpoints::rows(r);
    if rows.is_empty() {
        return Vec::new();
    }
    let mut all = vec![HEAD.map(String::from).to_vec()];
    all.extend(rows);
    let widths: Vec<usize> = (0..HEAD.len())
        .map(|c| width(&all.iter().map(|r| r[c].clone()).collect::<Vec<_>>()))
        .collect();
    let line = |row: &Vec<String>| {
        let cells = row
            .iter()
            .zip(&widths)
            .zip(NUMERIC)
            .map(|((cell, &w), num)| {
                if num {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            });
        format!("{INDENT}{}", cells.collect::<Vec<_>>().join("  "))
            .trim_end()
            .to_string()
    };
    all.iter().map(line).collect()
}

/// Display width of the widest cell (`µ` is one column, two bytes).
pub(crate) fn width(cells: &[String]) -> usize {
    cells.iter().map(|c| c.chars().count()).max().unwrap_or(0)
}

/// Columns two spaces apart, indented by two; columns in `left` are left-aligned, the others
/// (numbers) right-aligned.
pub(crate) fn aligned(rows: &[Vec<String>], left: &[usize]) -> Vec<String> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width = |c: usize| {
        let cells = rows.iter().filter_map(|r| r.get(c));
        cells.map(|s| s.chars().count()).max().unwrap_or(0)
    };
    let widths: Vec<usize> = (0..cols).map(width).collect();
    rows.iter()
        .map(|row| {
            let cells = row.iter().zip(&widths).enumerate().map(|(i, (c, &w))| {
                if left.contains(&i) {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            });
            format!("  {}", cells.collect::<Vec<_>>().join("  "))
                .trim_end()
                .to_string()
        })
        .collect()
}
