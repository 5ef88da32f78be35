//! What a running load looks like, for any front end (the CLI's terminal dashboard, the live
//! web page, an agent): what the running load is called ([`heading`]: the target's name and
//! the bench step), the view model of one load built from the engine's pulses ([`view`]),
//! each flow step's or mix request's counts and a flow's iterations ([`endpoints`]), the
//! find-max step table ([`steps`]), the bench matrix with the latest resource sample
//! ([`matrix`]), the live web page that serves the HTML report while a load runs ([`web`]), and the live
//! series for Prometheus ([`metrics`]) and their remote write ([`remote_write`]).
//! Drawing on a terminal stays in the CLI; nothing here touches the engine's hot path.

pub mod endpoints;
pub mod heading;
pub mod matrix;
pub mod metrics;
pub mod remote_write;
pub mod steps;
pub mod view;
pub mod web;
