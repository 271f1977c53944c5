//! An attached program that runs its files from elsewhere (a container's `/app`) and was given
//! no `pathMappings`: the mapping is guessed from the files it names (`debugger::paths`): its
//! main script and modules, as it says them, and the scripts it has loaded; before the
//! session's breakpoints are placed by it.

use serde_json::{json, Value};

use super::Cdp;
use crate::cdp::urls::file_url_to_path;
use crate::cdp::Origin;
use crate::debugger::backend::Backend;
use crate::debugger::paths;

/// The files the program names itself: Node's main script and CommonJS modules (`require` is
/// the console's), Deno's main module. A program paused before its first line (`--inspect-brk`)
/// has parsed none of them yet.
const NAMED: &str = "(() => { const files = []; \
    if (typeof Deno === 'object') { files.push(Deno.mainModule); } \
    else if (typeof process === 'object') { files.push(process.argv[1]); \
      try { files.push(...Object.keys(require.cache)); } catch (e) {} } \
    return files.filter((f) => typeof f === 'string'); })()";

impl Cdp {
    /// On attaching: the scripts the program had loaded are told by `scriptParsed` events that
    /// came before `Debugger.enable`'s answer, still unread (what else they say is kept for the
    /// actor); then the guess.
    pub(super) fn guess_on_attach(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            if let Some(happening) = self.take(event) {
                self.early.push(happening);
            }
        }
        self.guess_paths();
    }

    /// Guesses where the program's files are here from the files it names (`NAMED`) and the
    /// `file://` scripts it loaded, with the pending guess's anchors (the breakpoints' files)
    /// and root (the session's working directory) as the local tree. Called on attaching, and
    /// again at the program's start pause (`--inspect-brk`: its main script has been parsed by
    /// then) while nothing was found: breakpoints placed before are placed again by the mapping.
    pub(super) fn guess_paths(&mut self) {
        let Some((anchors, root)) = self.files.pending.take() else { return };
        let asked =
            json!({"expression": NAMED, "returnByValue": true, "includeCommandLineAPI": true});
        let named = self.request_at(&Origin::default(), "Runtime.evaluate", asked);
        let named = named.ok().and_then(|n| n.pointer("/result/value").cloned());
        let Some(target) = self.targets.get(&Origin::default()) else { return };
        let named = named.as_ref().and_then(Value::as_array).into_iter().flatten();
        let named = named.filter_map(Value::as_str).map(String::from);
        let loaded = target.scripts.urls().into_iter().filter(|url| url.starts_with("file://"));
        let loaded: Vec<String> = named.chain(loaded).map(|url| file_url_to_path(&url)).collect();
        let Some(mapping) = paths::guess(&loaded, &anchors, &root) else {
            self.files.pending = Some((anchors, root));
            return;
        };
        crate::log::info(format_args!("guessed pathMappings: {mapping:?}"));
        self.runtime.map_paths(mapping.clone());
        for target in self.targets.values_mut() {
            target.scripts.set_urls(self.runtime.urls());
        }
        self.files.found(mapping);
        for (id, spec) in self.specs.clone() {
            let placed = self.remove_breakpoint(&id).and_then(|()| self.set_breakpoint(&id, &spec));
            if let Err(failure) = placed {
                crate::log::warn(format_args!(
                    "breakpoint {id} by the guessed mapping: {failure:?}"
                ));
            }
        }
    }
}
