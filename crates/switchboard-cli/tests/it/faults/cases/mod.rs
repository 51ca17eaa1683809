//! The fault matrix's cases, as data, one module per surface: [`HOLD`] run green, each as
//! its own test; [`PENDING`] are open — a defect being fixed on another branch (written as
//! it must behave after the fix) or what the matrix found — and are asserted to still fail,
//! so that each moves to its surface's `CASES` (with a snapshot) the day it holds;
//! [`ELSEWHERE`] are fixed and asserted by another test. `docs/dev/faults.md` lists them
//! all, each area's cases in the order of these tables.
//!
//! Snapshots: `UPDATE_EXPECT=1 cargo test -p switchboard-cli --test it faults`.

use super::table::Case;

mod auth;
mod checker;
mod cli;
mod elsewhere;
mod framing;
mod gateway;
mod http;
mod json_rpc;
mod lifecycle;
mod lists;
mod notifications;
mod results;
mod sandbox;
mod stdio_process;
mod tool_lock;

/// Cases that hold today, surface by surface.
pub(crate) static HOLD: &[&[Case]] = &[
    framing::CASES,
    json_rpc::CASES,
    lifecycle::CASES,
    stdio_process::CASES,
    sandbox::CASES,
    http::CASES,
    auth::CASES,
    lists::CASES,
    results::CASES,
    notifications::CASES,
    gateway::CASES,
    tool_lock::CASES,
    cli::CASES,
    checker::CASES,
];

/// Open cases: asserted to fail today.
/// (None today: a new hostile case that does not hold yet is written here first, with the
/// status `BeingFixed` or `Found`, and moves to its surface's `CASES` with its fix.)
pub(crate) static PENDING: &[Case] = &[];

/// Fixed defects whose hostile input the matrix cannot stage.
pub(crate) use elsewhere::ELSEWHERE;

/// Every case that holds, in table order.
pub(crate) fn holding() -> impl Iterator<Item = &'static Case> {
    HOLD.iter().flat_map(|table| table.iter())
}
