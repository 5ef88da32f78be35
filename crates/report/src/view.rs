//! Per kind of result, what the reports show, worked out once for every format: the numbers,
//! rows and sentences of a run ([`run`], [`distribution`], [`endpoints`]), a find-max search
//! ([`find_max`]) and a bench ([`bench`], [`queueing`], [`profile`]). Plain text and values:
//! the renderers lay them out and escape them.

pub(crate) mod bench;
pub(crate) mod distribution;
pub(crate) mod endpoints;
pub(crate) mod find_max;
pub(crate) mod gates;
pub(crate) mod profile;
pub(crate) mod queueing;
pub(crate) mod run;
