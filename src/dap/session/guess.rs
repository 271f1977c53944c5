//! An attached program that runs its files from elsewhere and was given no `pathMappings`:
//! where the adapter lists the program's source files before it runs (Delve's `dlv sources`,
//! lldb's line tables of a gdb-remote server's program), the mapping is guessed from them
//! (`debugger::paths`) and handed to the adapter, before the session's breakpoints are placed
//! through it.

use super::Dap;
use crate::dap::flavour::Flavour;
use crate::debugger::paths;

impl<F: Flavour> Dap<F> {
    /// Guesses the mapping with the pending guess's anchors (the breakpoints' files) and root
    /// (the session's working directory) as the local tree; a guess the adapter refuses is
    /// dropped.
    pub(super) fn guess_paths(&mut self) {
        let Some((anchors, root)) = self.files.pending.take() else { return };
        let names: Vec<&str> = anchors.iter().filter_map(|a| a.file_name()?.to_str()).collect();
        let Some(request) = self.flavour.sources_request(&names) else { return };
        let Ok(answer) = self.request("evaluate", request) else { return };
        let files: Vec<String> = self.flavour.sources(&answer);
        let Some(mapping) = paths::guess(&files, &anchors, &root) else { return };
        let Some(request) = self.flavour.map_paths_request(&mapping) else { return };
        match self.request("evaluate", request) {
            Ok(_) => self.files.found(mapping),
            Err(failure) => crate::log::warn(format_args!("guessed {mapping:?}: {failure:?}")),
        }
    }
}
