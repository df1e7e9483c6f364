//! The project's scripts that import the checked file (`project::importer_scripts`), each
//! analysed once per process for every project file it loads, rather than once per checked
//! file.
//!
//! When a file of a project is checked, the scripts that import it run as its entries (step 3
//! of `entry.rs`), and what they find in the file is reported there ("found running train.py,
//! which imports this file"). A training script imports every model file of its project, so it
//! would run again for each of them. Instead it runs once as an analysis of its own
//! (`analyse`): on a fresh interpreter whose checked file is empty, the script loaded as
//! `__main__` as step 3 loads it, and *each* project file the run loads treated as the checked
//! file:
//! - the report rule judges the sites of each file apart (`report::findings_in`,
//!   `undecided_in`), with that file's line index and text (fixes, SHP312's reading of the
//!   file's own saves);
//! - a device mismatch reports at the call of each file that handed the tensor in
//!   (`ModelCtx::entry_sites`), as each file's own analysis would;
//! - places (`line 12`, `model.py:12`) are rendered as tokens (`Tokens`) and rendered for each
//!   file when it takes its findings (`View`): `line 12` in the file itself, another file's path
//!   relative to the file's folder (else the project's), and the related places of a trace
//!   found among them (`shapes::related_among`).
//!
//! The script itself, when it is checked and defines no class (so that no `forward` entry
//! starts from its final state), takes its own step 1 from the same run (`Shared::take_own`):
//! a training script and the N files it imports cost one run, not N + 1. The run judges
//! SHP302 (an optimizer never stepped) at the script's own sites as the script's analysis
//! would, and keeps the script's line where a budget ran out for its notice.
//!
//! A result (`ScriptResult`) holds each loaded file's findings and undecided checks, and a
//! hash of the bytes of every file the run asked to load, as it read them (the script first;
//! `project::read_stamped`). It is kept per process
//! (`RESULTS`), keyed by the analysis settings, the script and the project's top folder, and
//! used while every one of those files has the same content on disk: a changed file makes the
//! next user run the script again. A file checked with a text other than its content on disk
//! (an editor's buffer, stdin, a fix being verified), or one the run asked to load but did not
//! (`Project::load`'s limits), runs the script inside its own analysis, as before. The
//! analyses that record more than findings (shapes, coverage, SHP902's runs, per-site
//! statistics, observed events) do too.
//!
//! The run happens on a thread of its own, so the thread-local state of the models
//! (`optim::begin_program`, `rules::training::begin_program`, `device::set_defaults`, the read
//! log of call summaries) of the analysis that asked is left alone, and starts afresh as every
//! analysis does: a result depends neither on which file asked first nor on the thread. Other
//! threads that need the same script meanwhile wait for it (one lock per script).
//!
//! What differs from running the script inside each file's analysis: it has its own budgets
//! (steps, time, loaded files, import steps, loops cut short) rather than what the file's own
//! entries left; its imports search its own folder and the project's top folder (not also the
//! checked file's folder, which Python would not search either); the defaults that sources
//! change (`device::note_source`: autocast, a default device) are those of the files it loads,
//! not also of the ones only the checked file's own entries loaded; and the symbols of its SMT
//! queries are numbered from its own start (the same queries up to a renaming).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};

use super::interp::{Ctx, Interp};
use super::project::{FIRST_FILE, ProjectPaths};
use super::report;
use super::shapes::{PlaceAt, place_of, related_among};
use crate::ir::{FileId, Span};
use crate::parse::ParsedFile;
use crate::value::State;
use crate::diagnostics::OriginLink;
use crate::{Finding, Settings, Undecided};

/// The places a shared run rendered, each as a token: `\u{E000}k\u{E001}` for the `k`-th
/// span (characters of Unicode's private use area, which no message text holds).
#[derive(Default)]
pub struct Tokens {
    spans: RefCell<Vec<Span>>,
    index: RefCell<HashMap<Span, usize>>,
}

const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

impl Tokens {
    /// The token of a span (the same for the same span).
    pub fn token(&self, span: Span) -> String {
        let mut index = self.index.borrow_mut();
        let k = *index.entry(span).or_insert_with(|| {
            let mut spans = self.spans.borrow_mut();
            spans.push(span);
            spans.len() - 1
        });
        format!("{OPEN}{k}{CLOSE}")
    }
}

/// One file a shared run asked to load.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: PathBuf,
    /// Its stamp when the run read it (`project::read_stamped`: a hash of its bytes; `None`:
    /// unreadable).
    pub hash: Option<u64>,
    /// Loaded and run (else its import was Unknown).
    pub loaded: bool,
    /// Its findings and undecided checks, places as tokens and without related places.
    pub findings: Vec<Finding>,
    pub undecided: Vec<Undecided>,
}

/// Where the span of a token is.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceOut {
    /// The index of its file in `ScriptResult::files`; `None`: the (empty) checked file, which
    /// stands for the file that takes the result.
    pub file: Option<usize>,
    pub offsets: (u32, u32),
    pub start: (usize, usize),
    pub end: (usize, usize),
}

/// What a script's shared run found, for each file it loaded.
#[derive(Debug, Clone, Default)]
pub struct ScriptResult {
    /// Every file the run asked to load: the loaded ones in the order they were loaded (the
    /// script first), then the others by path.
    pub files: Vec<Seen>,
    /// The tokens' places, in the order they were first rendered.
    pub places: Vec<PlaceOut>,
    /// The script was loaded and run.
    pub entry: bool,
    /// The budget it spent, if it did (`abandoned`); the checked file's analysis-incomplete
    /// notice names it.
    pub spent: Option<super::interp::Budget>,
    /// Where in the script its run was when the budget ran out (the innermost statement of the
    /// script then, as offsets): the script's own notice names that line when the result is
    /// the script's own step 1 (`Shared::take_own`).
    pub spent_at: Option<(u32, u32)>,
    pub steps: u64,
    /// It ran past its wall-clock deadline: a loaded machine says nothing about the script, so
    /// such a result is not kept across processes (`script_cache`).
    pub timed_out: bool,
}

impl ScriptResult {
    /// It spent a budget: it reports nothing.
    pub fn abandoned(&self) -> bool {
        self.spent.is_some()
    }
}

impl ScriptResult {
    /// Whether every file the run asked to load has the same content now.
    pub fn current(&self) -> bool {
        self.files.iter().all(|f| super::project::read_stamped(&f.path).0 == f.hash)
    }
}

/// A 64-bit hash of some bytes: a file's content, to tell a change (not a defence against
/// crafted collisions). rustc-hash's byte hash, which reads 16 bytes at a step: FNV-1a, a
/// byte at a step, was 2% of the CPU time on a large project, whose files every analysis
/// reads again.
pub fn hash_of(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(bytes);
    h.write_usize(bytes.len());
    h.finish()
}

pub fn text_hash(text: &str) -> u64 {
    hash_of(text.as_bytes())
}

/// The hash of the file's text as the core decodes it, if it can.
fn content_hash(path: &Path) -> Option<u64> {
    super::encoding::read_python_source(path).map(|t| text_hash(&t))
}

/// What a shared result depends on besides the files' contents: the script, the project's
/// top folder and the settings that change an analysis.
type Key = (PathBuf, PathBuf, String);

fn key_of(s: &Settings, script: &Path, top: &Path) -> Key {
    let settings = format!("{} {} {} {} {} {} {} {}", s.may_fail, s.max_paths, s.max_steps, s.timeout_ms, s.prune, s.export_undecided, s.memo, s.switches);
    (script.to_path_buf(), top.to_path_buf(), settings)
}

type Slot = Arc<Mutex<Option<Arc<ScriptResult>>>>;

/// The shared results of this process, one slot per key (its lock held while the script runs).
static RESULTS: OnceLock<Mutex<HashMap<Key, Slot>>> = OnceLock::new();

/// Forget the shared results of the project whose top folder is `top` (a result is used only
/// while its files are unchanged, so this only frees memory, or makes the next check take the
/// result from the disk as another process would).
pub fn forget_results(top: &Path) {
    if let Some(m) = RESULTS.get() {
        m.lock().unwrap_or_else(|e| e.into_inner()).retain(|k, _| k.1 != top);
    }
}

/// The shared result of `script` for the project at `top`, current for the files on disk: kept,
/// or run now (then `ran` is counted up). `None` when no thread could be started for the run.
fn result_for(script: &Path, top: &Path, paths: &ProjectPaths, s: &Settings, ran: &mut usize) -> Option<Arc<ScriptResult>> {
    let key = key_of(s, script, top);
    let slot = {
        let mut map = RESULTS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.clone()).or_default().clone()
    };
    let mut kept = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = kept.as_ref()
        && r.current()
    {
        return Some(r.clone());
    }
    // across processes: the project's cache, when the front end keeps one
    // (`engine::script_cache`)
    let disk = match (&s.script_cache, &paths.root) {
        (Some(salt), Some(root)) => super::project::listing_hash(paths).map(|listing| (root, format!("{salt}\0{}\0{}\0{}\0{listing:x}", key.0.display(), key.1.display(), key.2))),
        _ => None,
    };
    if let Some((root, key)) = &disk
        && let Some(r) = super::script_cache::load(root, key)
        && r.current()
    {
        let r = Arc::new(r);
        *kept = Some(r.clone());
        return Some(r);
    }
    let r = Arc::new(run_on_own_thread(script, top, paths, s)?);
    *ran += 1;
    if let Some((root, key)) = &disk
        && !r.timed_out
    {
        super::script_cache::store(root, key, &r);
    }
    *kept = Some(r.clone());
    Some(r)
}

/// `analyse` on a thread of its own (a large stack, as every analysis has, and thread-local
/// state of its own). A panic there is raised again here, as if the script had run inside the
/// asking file's analysis.
fn run_on_own_thread(script: &Path, top: &Path, paths: &ProjectPaths, s: &Settings) -> Option<ScriptResult> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new().name("shape-lint-script".into()).stack_size(crate::STACK_SIZE).spawn_scoped(scope, || analyse(script, top, paths, s));
        match worker {
            Ok(handle) => match handle.join() {
                Ok(r) => Some(r),
                Err(payload) => std::panic::resume_unwind(payload),
            },
            Err(_) => None,
        }
    })
}

/// Run `script` as `__main__`, every project file it loads treated as the checked file. The
/// search path: the script's folder, then `top`; `paths` gives the project's root or loose
/// folder (`ProjectPaths`), and `s` the settings (its `project` is not used).
pub fn analyse(script: &Path, top: &Path, paths: &ProjectPaths, s: &Settings) -> ScriptResult {
    let dir = script.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut dirs = vec![dir.clone()];
    if top != dir {
        dirs.push(top.to_path_buf());
    }
    // the checked file is an empty one that no import names
    let project = ProjectPaths { file: top.join("<shape-lint: the scripts' shared run>"), dirs, root: paths.root.clone(), loose: paths.loose.clone() };
    let settings = Settings { project: Some(project), ..s.clone() };
    let empty = crate::parse::parse("");
    let mut interp = Interp::new(&empty, &settings);
    interp.shared_run = Some(Tokens::default());
    crate::models::torch::device::set_defaults("");
    crate::models::torch::optim::begin_program();
    crate::rules::training::begin_program();
    let mut out = ScriptResult::default();
    if let Some(i) = interp.project.load(script, "__main__") {
        out.entry = true;
        let module = interp.project.loaded[i].module.clone();
        let mut st = State::new();
        let package = super::project::package_of(script).unwrap_or_default();
        let scope = super::interp::module_scope(&mut st, None, &package, Some(script));
        interp.begin_sys_modules(&mut st);
        let ctx = Ctx { scope, module_scope: scope, class_body: None, method_class: None, self_val: None, globals: Rc::new(Vec::new()) };
        let finals = interp.block(&module.body, st, &ctx);
        // (`abandon` records the budget whenever it abandons)
        let spent = interp.spent.filter(|_| interp.abandoned);
        out.spent = spent.map(|(b, _)| b);
        out.spent_at = spent.and_then(|(_, at)| at).filter(|at| at.file.0 == FIRST_FILE).map(|at| (at.start, at.end));
        if !out.abandoned() {
            // SHP302 as the script's own analysis judges it (`entry::never_stepped`), at the
            // script's sites only: the script's own step 1 is taken from this run
            if !finals.is_empty() {
                super::entry::never_stepped(&mut interp, &[], |at| at.file.0 == FIRST_FILE);
            }
            report::settle(&mut interp);
        }
    }
    out.steps = interp.steps;
    out.timed_out = std::time::Instant::now() > interp.deadline;
    let reports = out.entry && !out.abandoned();
    let stamps: HashMap<PathBuf, Option<u64>> = interp.project.attempts().map(|(p, _, stamp)| (p.clone(), stamp)).collect();
    for (k, l) in interp.project.loaded.iter().enumerate() {
        let file = FileId(FIRST_FILE + k as u32);
        let (findings, undecided) = if reports {
            (report::findings_in(&interp, &interp.outcomes, file), report::undecided_in(&interp, &interp.outcomes, &interp.undecided, file))
        } else {
            Default::default()
        };
        out.files.push(Seen { path: l.path.clone(), hash: stamps.get(&l.path).copied().flatten(), loaded: true, findings, undecided });
    }
    let mut others: Vec<PathBuf> = interp.project.attempts().filter(|(_, i, _)| i.is_none()).map(|(p, _, _)| p.clone()).collect();
    others.sort();
    for path in others {
        let hash = stamps.get(&path).copied().flatten();
        out.files.push(Seen { path, hash, loaded: false, findings: Vec::new(), undecided: Vec::new() });
    }
    let spans = interp.shared_run.take().map(|t| t.spans.into_inner()).unwrap_or_default();
    out.places = spans
        .into_iter()
        .map(|span| {
            let offsets = (span.start, span.end);
            match interp.project.module_of(span.file) {
                Some(m) => PlaceOut { file: Some((span.file.0 - FIRST_FILE) as usize), offsets, start: m.lines.location(span.start), end: m.lines.location(span.end) },
                None => PlaceOut { file: None, offsets, start: (0, 0), end: (0, 0) },
            }
        })
        .collect();
    out
}

/// Shown in a message: `path` relative to the first of `dirs` it is in, else whole.
fn display(path: &Path, dirs: &[PathBuf]) -> String {
    match dirs.iter().find_map(|b| path.strip_prefix(b).ok()) {
        Some(rel) => rel.to_string_lossy().into_owned(),
        None => path.to_string_lossy().into_owned(),
    }
}

/// A shared result as the file `me` of it sees it: its places rendered for that file.
struct View<'a> {
    result: &'a ScriptResult,
    me: usize,
    dirs: &'a [PathBuf],
    main: &'a ParsedFile<'a>,
}

impl View<'_> {
    fn text(&self, k: usize) -> String {
        let p = &self.result.places[k];
        match p.file {
            Some(i) if i == self.me => format!("line {}", p.start.0),
            Some(i) => format!("{}:{}", display(&self.result.files[i].path, self.dirs), p.start.0),
            None => format!("line {}", self.main.row(p.offsets.0)),
        }
    }

    fn at(&self, k: usize) -> PlaceAt {
        let p = &self.result.places[k];
        match p.file {
            Some(i) if i == self.me => (None, p.start, p.end),
            Some(i) => (Some(self.result.files[i].path.display().to_string()), p.start, p.end),
            None => (None, self.main.location(p.offsets.0), self.main.location(p.offsets.1)),
        }
    }

    /// `text` with its tokens rendered.
    fn render(&self, text: &str) -> String {
        if !text.contains(OPEN) {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find(OPEN) {
            out.push_str(&rest[..i]);
            let after = &rest[i + OPEN.len_utf8()..];
            match after.find(CLOSE).and_then(|j| Some((j, after[..j].parse::<usize>().ok()?))) {
                Some((j, k)) if k < self.result.places.len() => {
                    out.push_str(&self.text(k));
                    rest = &after[j + CLOSE.len_utf8()..];
                }
                _ => {
                    out.push(OPEN);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A finding with its places rendered and its related places found among `places`.
    fn finding(&self, f: &Finding, places: &BTreeMap<String, PlaceAt>) -> Finding {
        let trace: Vec<String> = f.trace.iter().map(|t| self.render(t)).collect();
        let related = if places.is_empty() { Vec::new() } else { related_among(places.iter().map(|(t, at)| (t.as_str(), at)), &trace, |at| (*at).clone()) };
        let origins = f.origins.iter().map(|o| OriginLink { text: self.render(&o.text), place: o.place.as_ref().map(|p| self.render(p)), ..o.clone() }).collect();
        Finding { message: self.render(&f.message), condition: f.condition.as_ref().map(|c| self.render(c)), trace, origins, related, ..f.clone() }
    }
}

/// What the checked file takes from one script's shared result.
#[derive(Default)]
pub(super) struct Taken {
    pub findings: Vec<Finding>,
    pub undecided: Vec<Undecided>,
    /// The script ran (an entry of the file).
    pub entry: bool,
    /// The budget that abandoned it, if one did.
    pub spent: Option<super::interp::Budget>,
    /// Shared runs made for it (0: the result was there).
    pub ran: usize,
    /// The steps the run took (`take_own`: they count against the file's budget).
    pub steps: u64,
    /// The script's statement running when the budget ran out (`take_own`).
    pub spent_at: Option<Span>,
}

/// Step 3 of a file's analysis (`entry.rs`) taking the shared results of its scripts.
pub(super) struct Shared {
    settings: Settings,
    paths: ProjectPaths,
    top: PathBuf,
    /// The places the scripts taken so far rendered, for this file (the first place of each
    /// text), as if they had run in its analysis.
    places: BTreeMap<String, PlaceAt>,
}

impl Shared {
    /// For the analysis `interp` with settings `s`, when its scripts may take shared results:
    /// it records findings only (no shapes, coverage or observed events: `observed`), it is
    /// not one of SHP902's runs, and the file is in a project.
    pub(super) fn new(interp: &Interp, s: &Settings, observed: bool) -> Option<Shared> {
        let plain = !observed && interp.shape_log.is_none() && interp.span_log.is_none() && interp.coverage.is_none() && interp.summary.is_none();
        if !(plain && s.share_scripts) || s.free_params || !s.param_values.is_empty() || s.check_sites {
            return None;
        }
        let paths = s.project.clone()?;
        let top = paths.root.clone().or_else(|| paths.loose.clone())?;
        // a text other than the file's on disk (an editor's buffer, stdin, a fix being
        // verified) is not what the shared runs load
        if content_hash(&paths.file) != Some(text_hash(interp.file.source)) {
            return None;
        }
        Some(Shared { settings: s.clone(), paths, top, places: BTreeMap::new() })
    }

    /// Step 1 of the checked file, a script of its project (`project::is_script`), taken from
    /// its own shared run, which the files it imports share: the findings and undecided checks
    /// of the script in it (none named "found running"), its budget and the line where it ran
    /// out; `None` when the file must run itself (as `take`).
    pub(super) fn take_own(&mut self, interp: &Interp) -> Option<Taken> {
        let own = self.paths.file.clone();
        // (a script its shared run could not load runs itself)
        self.take_from(interp, &own, None).filter(|t| t.entry)
    }

    /// The findings and undecided checks the shared run of `script` gives the checked file;
    /// `None` when it must run the script itself: its text is not the file's content on disk,
    /// or the shared run asked to load it and could not.
    pub(super) fn take(&mut self, interp: &Interp, script: &Path) -> Option<Taken> {
        let shown = display(script, &self.paths.dirs);
        self.take_from(interp, script, Some(format!("found running {shown}, which imports this file")))
    }

    /// `take`, the findings' traces ending with `note` when there is one.
    fn take_from(&mut self, interp: &Interp, script: &Path, note: Option<String>) -> Option<Taken> {
        let mut ran = 0;
        let r = result_for(script, &self.top, &self.paths, &self.settings, &mut ran)?;
        let spent_at = r.spent_at.map(|(start, end)| Span { file: FileId::MAIN, start, end });
        let base = Taken { entry: r.entry, spent: r.spent, ran, steps: r.steps, spent_at, ..Taken::default() };
        let Some(me) = r.files.iter().position(|f| f.path == self.paths.file) else {
            // the script's run never imports the file: nothing of it to report
            return Some(base);
        };
        // (its text is the file's on disk, `new`, which the current result loaded)
        let seen = &r.files[me];
        if !seen.loaded {
            return None;
        }
        if !r.entry || r.abandoned() {
            return Some(base);
        }
        let view = View { result: &r, me, dirs: &self.paths.dirs, main: interp.file };
        for k in 0..r.places.len() {
            self.places.entry(view.text(k)).or_insert_with(|| view.at(k));
        }
        // the places the file's own entries rendered come first
        let mut places = self.places.clone();
        for (text, span) in interp.places.borrow().iter() {
            places.insert(text.clone(), place_of(interp, *span));
        }
        let findings = seen
            .findings
            .iter()
            .map(|f| {
                let mut f = view.finding(f, &places);
                f.trace.extend(note.clone());
                f
            })
            .collect();
        let undecided = seen.undecided.iter().map(|u| Undecided { finding: view.finding(&u.finding, &places), ..u.clone() }).collect();
        Some(Taken { findings, undecided, ..base })
    }
}
