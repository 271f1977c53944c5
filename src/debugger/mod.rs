//! The runtime-neutral core of debug-mcp. For now it holds what every runtime and every tool
//! shares about failures: the error codes ([`Code`]) and [`Failure`]. The typed model, the
//! backend seam and the one session actor are to follow (ARCHITECTURE.md).

mod error;

pub(crate) use error::{Code, Failure};
