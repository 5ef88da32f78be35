//! A flow's virtual user (docs/flows.md): where it is in the flow, its iteration's draw, its
//! captured variables and the raw answer of a step that reads it. Its own module so the
//! connection that runs its steps (`conn`) and the context that holds the open model's waiting
//! iterations (`ctx`) both read it without importing each other.

use loadbench_plan::Draw;
use std::time::Instant;

/// One virtual user of a flow.
pub(crate) struct Vu {
    /// The step it sends next (or is sending).
    pub(crate) step: u16,
    /// Its iteration's place in the sequence and random number.
    pub(crate) draw: Draw,
    /// When its iteration's first step was due (its intended time).
    pub(crate) started: Instant,
    /// Its captured variables, by the flow's index.
    pub(crate) vars: Vec<Vec<u8>>,
    /// The current step reads its answer: it is kept in `answer` (up to
    /// [`loadbench_plan::MAX_KEPT_RESPONSE`] bytes).
    pub(crate) keep: bool,
    /// The current step's raw answer (head and body), when it reads it.
    pub(crate) answer: Vec<u8>,
    /// Check texts assembled with its values.
    pub(crate) scratch: Vec<u8>,
}
