//! Why a JavaScript run answered no hit, when the run itself can tell more than "never hit": a
//! page that reached its end with the breakpoint bound or not (and what it loaded), a file no
//! source map covers.

use super::Run;
use crate::debugger::{Code, Failure};
use crate::process::Exit;

impl Run<'_> {
    /// A program that never ends by itself (a page) reached the end of its run (`end`) without
    /// a hit: whether its line is bound, and which scripts it loaded when it is not.
    pub(super) fn not_hit_before(&self, end: &str) -> Failure {
        // Chromium answered the navigation before it failed (seen under load): its error page
        // loaded instead.
        if let Some(url) = &self.unreachable {
            return Failure::new(
                Code::LaunchFailed,
                format!(
                    "the page could not be opened: {url} did not load (is its server running, \
                     at that address?)"
                ),
            );
        }
        let file = self.plan.file.display();
        let hint = if self.bound {
            format!(
                "the breakpoint is bound in {file} but its line did not run before {end}: code \
                 that runs later (a timer, a fetch's answer, a click) needs `until` \"idle\" or \
                 a time in milliseconds, or a session (debug-launch with `url`) to act on the page"
            )
        } else {
            let mut urls = self.loaded.clone();
            urls.dedup();
            let loaded = match urls.len() {
                0 => "no script".to_string(),
                n if n > 8 => format!("{} and {} more", urls[..8].join(", "), n - 8),
                _ => urls.join(", "),
            };
            format!(
                "no script of the page is {file}: it loaded {loaded}. A file matches a script \
                 whose URL's path ends like the file's path (`webRoot` makes it exact), or \
                 whose source map lists it"
            )
        };
        Failure::new(Code::Exited, format!("the page reached {end} without a hit"))
            .with("hint", hint.into())
    }

    pub(super) fn no_map_failure(&self, exit: Exit, timed_out: bool) -> Failure {
        let looked = if self.search.looked_at.is_empty() {
            "no JavaScript file with a source map next to the command's script".to_string()
        } else {
            self.search.looked_at.join("; ")
        };
        let ended = if timed_out {
            format!("the program was killed after {} ms", self.plan.timeout.as_millis())
        } else {
            format!("the program ended ({})", exit.describe())
        };
        Failure::new(
            Code::NoSourceMap,
            format!(
                "no source map covers {}: looked at {looked}. Nor was it compiled while loading \
                 (e.g. `node --import tsx ...`); {ended} without loading it. Build with source \
                 maps (tsc `sourceMap`, esbuild `--sourcemap`), or set the breakpoint in the \
                 JavaScript that runs",
                self.plan.file.display()
            ),
        )
        .with("lookedAt", self.search.looked_at.clone().into())
    }
}
