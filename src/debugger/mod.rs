//! The runtime-neutral core of debug-mcp: the typed model every runtime answers in
//! (`model.rs`), the error codes and failures (`error.rs`), the seam a runtime plugs into
//! (`backend.rs`, the [`Backend`] trait) and the one session actor that drives any backend
//! (`session.rs`).

pub(crate) mod backend;
pub(crate) mod calls;
mod error;
pub(crate) mod hang;
pub(crate) mod limits;
pub(crate) mod model;
pub(crate) mod paths;
pub(crate) mod runs;
pub(crate) mod script;
pub(crate) mod session;
pub(crate) mod trim;
pub(crate) mod turns;

pub(crate) use error::{Code, Failure};
