//! Markup helpers, one module per format that needs them: Markdown tables and escaping,
//! HTML escaping and page parts, CSV quoting and shared columns, aligned text columns, the JUnit XML document. Each
//! renderer of a format uses its helpers here rather than those of another renderer.

pub(crate) mod csv;
pub(crate) mod html;
pub(crate) mod junit;
pub mod markdown;
pub(crate) mod text;
