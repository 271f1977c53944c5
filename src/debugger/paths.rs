//! Where an attached program's files are here, when the program runs them from elsewhere (a
//! container's `/app`, another host, a copy): the mapping guessed from the paths the program
//! names when the call gave none, and how a path with no file here is shown. Every runtime that
//! attaches asks the same two questions here; each lists the program's paths its own way.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use crate::debugger::model::{AttachSpec, PathMapping};
use crate::shell::working_dir;

/// What a session knows of where an attached program's files are.
#[derive(Default)]
pub(crate) struct Whereabouts {
    /// The program runs elsewhere (mappings given or guessed, a gdb-remote server's): its paths
    /// that are not here are shown marked [`REMOTE`].
    pub(crate) elsewhere: bool,
    /// The mapping guessed (none was given).
    pub(crate) guessed: Option<PathMapping>,
    /// While nothing is guessed yet, what to guess from: the breakpoints' files, and the
    /// working directory.
    pub(crate) pending: Option<(Vec<PathBuf>, PathBuf)>,
    /// The text of `remote:` files the program stopped in, as its runtime gave it (once
    /// each; `None`: it could not), for the lines around a stop.
    texts: HashMap<String, Option<String>>,
}

impl Whereabouts {
    /// An attached program's: elsewhere when the call gave `pathMappings`, else a guess is
    /// pending (a program attached on this machine keeps its paths as they are).
    pub(crate) fn attached(start: &AttachSpec) -> Whereabouts {
        let given = !start.path_mappings.is_empty();
        let anchors = || start.breakpoints.iter().map(|b| b.file.clone()).collect();
        let pending = (!given).then(|| (anchors(), working_dir(start.cwd.as_deref())));
        Whereabouts { elsewhere: given, pending, ..Whereabouts::default() }
    }

    /// A mapping was guessed: the program runs elsewhere.
    pub(crate) fn found(&mut self, mapping: PathMapping) {
        (self.elsewhere, self.guessed) = (true, Some(mapping));
    }

    /// A program's that runs elsewhere by what its debugger is (a gdb-remote server's).
    pub(crate) fn elsewhere(elsewhere: bool) -> Whereabouts {
        Whereabouts { elsewhere, ..Whereabouts::default() }
    }

    /// `file`, when it is `remote:` and its text has not been asked for yet.
    pub(crate) fn unread(&self, file: Option<&str>) -> Option<String> {
        file.filter(|f| unmarked(f).is_some() && !self.texts.contains_key(*f)).map(String::from)
    }

    /// Keeps the text of a `remote:` file (`None`: the runtime could not give it).
    pub(crate) fn keep(&mut self, file: String, text: Option<String>) {
        self.texts.insert(file, text);
    }

    /// The kept text of a `remote:` file.
    pub(crate) fn text(&self, file: &str) -> Option<String> {
        self.texts.get(file).cloned().flatten()
    }

    /// A path of the program's as answers show it: marked when it runs elsewhere and the file
    /// is not here.
    pub(crate) fn show(&self, path: String) -> String {
        if self.elsewhere {
            shown(path)
        } else {
            path
        }
    }
}

/// The mark of a path the program named that is not a file here (and no mapping says where it
/// is): `remote:/usr/local/lib/python3.12/json/decoder.py`.
pub(crate) const REMOTE: &str = "remote:";

/// How many of the program's paths a guess looks at (each costs a few `stat`s).
const GUESS_PATHS: usize = 4000;

/// A path of an attached program's, as answers show it: as it is when the file is here (or it
/// names no file: `<frozen os>`, `node:fs`), else marked [`REMOTE`].
pub(crate) fn shown(path: String) -> String {
    if !path.starts_with('/') || Path::new(&path).exists() {
        return path;
    }
    format!("{REMOTE}{path}")
}

/// A path given in a call as the program names it (`remote:/app/x.js`, as an answer showed
/// it): the program's own path, to be used as it is.
pub(crate) fn unmarked(path: &str) -> Option<&str> {
    path.strip_prefix(REMOTE).filter(|rest| rest.starts_with('/'))
}

/// The mapping the program's paths (`remote`) suggest when none was given: the folder they
/// share a suffix with here, found under `root` (the session's working directory) or beside one
/// of `anchors` (the files that hold breakpoints). `/app/src/a.js` with `src/a.js` under the
/// root maps `/app` to the root. Each of the program's paths votes for the mapping of its
/// longest such suffix; the mapping with most votes wins (then the longer suffix). A path that
/// is a file here votes only as a copy of an anchor (the same bytes: a program run from a copy
/// of the tree); `None` when nothing votes (the program runs these very files).
pub(crate) fn guess(remote: &[String], anchors: &[PathBuf], root: &Path) -> Option<PathMapping> {
    let anchors: Vec<(&PathBuf, Vec<String>)> = anchors
        .iter()
        .filter(|a| !remote.iter().any(|r| Path::new(r) == a.as_path()))
        .map(|a| (a, components(a)))
        .collect();
    let mut votes: BTreeMap<(String, PathBuf), (usize, usize)> = BTreeMap::new();
    for path in remote.iter().filter(|p| p.starts_with('/')).take(GUESS_PATHS) {
        let parts = components(Path::new(path));
        let Some((shared, local)) = best_suffix(path, &parts, &anchors, root) else { continue };
        let remote = format!("/{}", parts[..parts.len() - shared].join("/"));
        let vote = votes.entry((remote, local)).or_insert((0, 0));
        *vote = (vote.0 + 1, vote.1.max(shared));
    }
    let best = votes.into_iter().max_by_key(|(key, vote)| (*vote, std::cmp::Reverse(key.clone())));
    best.map(|((remote, local), _)| PathMapping { remote, local })
}

/// The longest tail of `parts` (the program's `path`) that names a file under `root`, or ends
/// one of `anchors`: its length, and the local folder it hangs from. The tail never takes the
/// whole path (a mapping of `/` maps nothing).
fn best_suffix(
    path: &str,
    parts: &[String],
    anchors: &[(&PathBuf, Vec<String>)],
    root: &Path,
) -> Option<(usize, PathBuf)> {
    let here = Path::new(path).is_file();
    let under_root = (1..parts.len())
        .rev()
        .find(|&n| !here && root.join(parts[parts.len() - n..].join("/")).is_file())
        .map(|n| (n, root.to_path_buf()));
    let beside_anchor = anchors.iter().filter_map(|(anchor, names)| {
        let shared = parts.iter().rev().zip(names.iter().rev()).take_while(|(a, b)| a == b).count();
        let fits = shared >= 1 && shared < parts.len() && shared < names.len();
        let copy = || same_bytes(Path::new(path), anchor);
        (fits && (!here || copy())).then(|| {
            (shared, PathBuf::from(format!("/{}", names[..names.len() - shared].join("/"))))
        })
    });
    under_root.into_iter().chain(beside_anchor).max_by_key(|(shared, _)| *shared)
}

/// Whether two files hold the same bytes (sizes first: a path the program names may be any
/// file here).
fn same_bytes(a: &Path, b: &Path) -> bool {
    let size = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len());
    size(a).is_some() && size(a) == size(b) && std::fs::read(a).ok() == std::fs::read(b).ok()
}

/// A guessed mapping as answers say it.
pub(crate) fn guessed_json(mapping: &PathMapping) -> Value {
    json!([{"remote": mapping.remote, "local": mapping.local.display().to_string(), "guessed": true}])
}

/// The normal components of a path (`..` and `.` dropped), as text.
pub(crate) fn components(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local tree under a scratch folder: `src/a.js`, `src/b.js`, `index.js`.
    fn tree(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("dmcp-paths-{}-{name}", std::process::id()));
        std::fs::create_dir_all(root.join("src")).unwrap();
        for file in ["src/a.js", "src/b.js", "index.js"] {
            std::fs::write(root.join(file), "").unwrap();
        }
        root
    }

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn a_mapping_is_guessed_from_the_suffix_the_paths_share_with_the_tree() {
        let root = tree("root");
        let remote = paths(&["/app/src/a.js", "/app/src/b.js", "/usr/lib/node/x/index.js"]);
        let mapping = guess(&remote, &[], &root).unwrap();
        assert_eq!((mapping.remote.as_str(), mapping.local.as_path()), ("/app", root.as_path()));
        // A tie is won by the longer suffix: `src/a.js` over a library's `index.js`.
        let remote = paths(&["/usr/lib/node/x/index.js", "/srv/app/src/a.js"]);
        assert_eq!(guess(&remote, &[], &root).unwrap().remote, "/srv/app");
        // Paths that are here (the program runs on this machine), or end like nothing here.
        let here = root.join("src/a.js").display().to_string();
        assert_eq!(guess(std::slice::from_ref(&here), &[], &root), None);
        // A file here is a copy of a breakpoint's file only with the same bytes.
        let copy = root.join("copy");
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::write(copy.join("a.js"), "").unwrap();
        std::fs::write(copy.join("index.js"), "other").unwrap();
        let anchor = root.join("src/a.js");
        let copied = |file: &str| vec![copy.join(file).display().to_string()];
        let mapping =
            guess(&copied("a.js"), std::slice::from_ref(&anchor), Path::new("/")).unwrap();
        assert_eq!(
            (Path::new(&mapping.remote), mapping.local.as_path()),
            (copy.as_path(), root.join("src").as_path())
        );
        assert_eq!(guess(&copied("index.js"), &[root.join("index.js")], Path::new("/")), None);
        // A breakpoint's file that the program runs itself needs no mapping.
        assert_eq!(guess(&[here], &[anchor], Path::new("/")), None);
        assert_eq!(guess(&paths(&["/app/lib/c.js", "relative.js"]), &[], &root), None);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_breakpoint_file_anchors_the_guess_outside_the_root() {
        let nowhere = Path::new("/nonexistent-dmcp-root");
        let anchor = PathBuf::from("/home/me/project/fixtures/hang.js");
        let mapping = guess(&paths(&["/tmp/copy/app/hang.js"]), &[anchor], nowhere).unwrap();
        assert_eq!(mapping.remote, "/tmp/copy/app");
        assert_eq!(mapping.local, Path::new("/home/me/project/fixtures"));
        assert_eq!(guessed_json(&mapping)[0]["guessed"], true);
    }

    #[test]
    fn paths_not_here_are_marked_remote_and_read_back() {
        assert_eq!(shown("/nonexistent-dmcp/app.py".into()), "remote:/nonexistent-dmcp/app.py");
        assert_eq!(shown("/".into()), "/");
        assert_eq!(shown("<frozen os>".into()), "<frozen os>");
        assert_eq!(unmarked("remote:/app/x.js"), Some("/app/x.js"));
        assert_eq!(unmarked("remote:x.js"), None);
        assert_eq!(unmarked("/app/x.js"), None);
    }
}
