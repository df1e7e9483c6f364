"""Type stubs for the Rust extension ``shape_lint._core`` (built by maturin from ``rust/python.rs``)."""

from typing import Any, Literal, NotRequired, TypedDict, type_check_only

__all__ = ["GitIgnore", "analyze_source", "api_json", "api_resolve", "check_source", "check_source_parsed", "check_source_stats", "check_source_undecided", "model_summary",
           "rules", "show_shapes", "syntax_errors", "__version__"]

__version__: str

class GitIgnore:
    """One directory's ``.gitignore`` patterns, matched with git's rules (the ``ignore`` crate)."""

    def __init__(self, root: str, lines: list[str]) -> None: ...
    def check(self, rel: str, is_dir: bool) -> bool | None:
        """True: the last matching pattern ignores ``rel`` (or a directory above it); False: a
        ``!pattern`` re-includes it; None: no pattern matches."""

# The TypedDicts exist for type checkers only (the runtime returns plain dicts).

@type_check_only
class CheckOptions(TypedDict, total=False):
    """Analysis settings accepted by :func:`check_source`; every key is optional."""

    may_fail: bool
    max_paths: int
    max_steps: int
    timeout_ms: int
    check_sites: bool
    """Return each checked site's verdicts in :class:`Stats` (``check_source_stats``)."""
    free_params: bool
    """The SHP902 run: options, constructor defaults and file-decided dataset lengths become
    symbols tagged as free parameters (``may_fail.py``)."""
    param_values: dict[str, int]
    """The concrete run of an SHP902 counterexample: each free parameter bound by its user name
    (``{"--size": 30}``, ``{"heads": 16}``, ``{"len(dataset)": 113}``)."""
    share_scripts: bool
    """Analyse each project script that imports the checked file once per process for all the
    files it loads (default ``True``); ``False`` runs it again for each checked file (to compare)."""

@type_check_only
class Edit(TypedDict):
    """Replace the text from (``row``, ``col``) to (``end_row``, ``end_col``), end exclusive, with
    ``content``. Positions as in :class:`Finding` (1-based rows, code-point columns)."""

    content: str
    row: int
    col: int
    end_row: int
    end_col: int

@type_check_only
class Fix(TypedDict):
    """A suggested fix: one literal number replaced (it may sit on another line than the
    finding: the layer's definition). Offered only where that number alone decides the failing
    check and the fixed file analyses without this finding and without any new one."""

    message: str
    """``use nn.Linear(120, 84)``."""
    applicability: Literal["unsafe"]
    """It changes behaviour (ruff's convention: applied by ``--fix --unsafe-fixes`` only)."""
    edits: list[Edit]

@type_check_only
class Finding(TypedDict):
    """One diagnostic. Positions are 1-based; columns count code points."""

    code: str
    """The rule code, e.g. ``"SHP101"``."""
    name: str
    """The kebab-case rule name, e.g. ``"matmul-shape-mismatch"``."""
    message: str
    """One line, without the code."""
    row: int
    col: int
    end_row: int
    end_col: int
    trace: list[str]
    """Provenance lines (where each dimension came from), shown by the ``full`` format."""
    origins: list[OriginLink]
    """The origin chains of the sizes a shape error's message is about (the trace's first
    lines, as data): empty for the other rules."""
    condition: str | None
    """The path condition under which the line fails, or ``None`` when it always fails."""
    fix: NotRequired[Fix]
    """Present when one literal number fixes the line (the message then ends ``; use ...``)."""
    related: list[Related]
    """The places of the checked file that the trace lines name (the layer that fixes a size)."""

@type_check_only
class OriginLink(TypedDict):
    """One step of a size's origin chain: ``2304 = 64·6·6 from pool (line 9), flattened at line
    16``, then each factor's own chain one ``depth`` deeper."""

    text: str
    value: int | None
    """The size, when it is a number."""
    kind: str
    """``said`` (a layer's or a data source's size), ``written`` (an argument of a call),
    ``output`` (computed by a layer or an op), ``merged`` (a product made one dim), ``product``
    (a product the message shows, such as an element count)."""
    place: str | None
    """Where the size was made (``line 15``, ``model.py:15``); ``None`` for ``said`` and
    ``product``."""
    pos: int
    """Which dim of the tensor made there, counted from the end (1: the last)."""
    by: str | None
    """The layer or function that made it (``pool``, ``torch.randn``)."""
    depth: int

@type_check_only
class Related(TypedDict):
    """A place a trace line names (``120 from out_features of fc1 (line 8)``): the span the
    core rendered as ``line 8``, with that trace line as ``message``."""

    message: str
    row: int
    col: int
    end_row: int
    end_col: int

@type_check_only
class TensorView(TypedDict):
    """One tensor seen at a span: ``shape`` as messages show it (``[B, 120]``, ``*`` for an
    unknown list of leading dims, ``?`` for an unknown dim), torch's dtype and device names
    when known, and ``origins``: ``"120 from out_features of fc1 (line 8)"`` per dim with one."""

    shape: str
    dtype: str | None
    device: str | None
    origins: list[str]

@type_check_only
class SpanShapes(TypedDict):
    """The tensors a span of the file evaluated to, over every path and entry point."""

    row: int
    col: int
    end_row: int
    end_col: int
    name: str | None
    """The name bound there, for an assignment target; ``None`` for an expression."""
    views: list[TensorView]
    """At most 8 distinct tensors (several: several paths or entry points)."""

@type_check_only
class Analysis(TypedDict):
    findings: list[Finding]
    undecided: list[UndecidedCheck]
    shapes: list[SpanShapes]

@type_check_only
class UndecidedCheck(Finding):
    """A check the core could not decide, on a path where a failure would be reported.

    The :class:`Finding` keys are what would be reported if the check fails on every execution
    of its path (``condition``: that path's condition). The Z3 bridge (``shape_lint.solver``)
    reports it when ``smt`` is satisfiable and ``smt`` plus ``(assert precondition)`` is not.
    """

    smt: str
    """SMT-LIB 2 (QF_NIA): a ``declare-fun`` per symbol, the symbols' ranges, the equalities
    the core solved and the path condition."""
    precondition: str
    """An SMT-LIB term over those symbols: what torch needs for the call not to raise."""

@type_check_only
class Stats(TypedDict):
    """Statistics of one analysis (:func:`check_source_stats`).

    A *check* is one precondition evaluated on one path (``Interp::check`` in the core): the
    core decided it (``holds``: torch does not raise, ``violated``: it does) or left it
    ``undecided``; ``exported`` of the undecided went to the Z3 bridge as a query, and
    ``witnessed`` did not: values of its symbols showed that the check passes on some execution
    of its path, which is what the bridge would have answered. Counting costs four integer
    increments per check.
    """

    entries: int
    abandoned: int
    steps: int
    script_runs: int
    """The project scripts importing the file that this call analysed (each script runs once
    per process for all the files it loads; later files take its result)."""
    holds: int
    violated: int
    undecided: int
    exported: int
    witnessed: int
    check_sites: list[tuple[int, int, int, int, int, int]]
    """With the ``check_sites`` option: ``(row, col, holds, violated, undecided, exported)``
    per checked site of the file, in source order (the checks of code the file runs in other
    files the core models, such as torchvision's, count at the call in this file that reached
    them; those in the project's other files are not counted). Empty otherwise."""

@type_check_only
class RuleInfo(TypedDict):
    """One entry of the rule registry."""

    code: str
    name: str
    summary: str
    messages: list[str]
    """The templates of the messages the rule renders (``format!`` strings over named fields)."""
    doc: str
    """Markdown in ruff's section order (What it does, Why is this bad?, Example, ...)."""
    default_enabled: bool
    """``False`` for the opt-in SHP9xx rules."""
    raises: bool
    """Torch raises at the reported line; ``False`` for the patterns that run but train the wrong
    thing (SHP301-SHP308), which are warnings (``output.level``)."""
    status: Literal["stable", "preview", "removed"]

def check_source(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> list[Finding]:
    """Analyse one file's text. Syntax errors give ``[]``; analyser bugs give an SHP001 finding."""

def check_source_undecided(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> tuple[list[Finding], list[UndecidedCheck]]:
    """:func:`check_source`, plus the undecided checks at sites it does not report."""

def check_source_parsed(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> tuple[list[Finding], list[UndecidedCheck], list[tuple[str, int, int, int, int]]]:
    """:func:`check_source_undecided`, plus the parser's syntax errors (as :func:`syntax_errors`
    gives them) from the same parse: a file with syntax errors has no findings and no undecided
    checks, and the CLI reports these errors without parsing each file a second time."""

def check_source_stats(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> tuple[list[Finding], list[UndecidedCheck], Stats]:
    """:func:`check_source_undecided` with the analysis statistics (``bench/decisions.py``)."""


class CoverageOrigin(TypedDict):
    kind: str  # "value" (an Unknown value), "rank" or "dtype" (of a tensor)
    label: str
    count: int  # distinct sites of the file
    row: int  # the first site
    col: int


class Coverage(TypedDict, total=False):
    error: str  # the analysis failed (then no other key)
    findings: int
    exprs: int  # non-constant expressions evaluated (distinct spans)
    unknown: int  # of those, Unknown on some path
    tensors: int  # expressions that evaluated to a tensor
    rank_known: int
    dtype_known: int
    device_known: int
    backward: int  # x.backward sites
    backward_graph_known: int
    backward_optimizer_known: int
    incomplete: bool  # an entry point was cut by a budget
    origins: list[CoverageOrigin]


def coverage_source(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> Coverage:
    """The Unknown-cause report of one file (``shape-lint coverage``)."""


def analyze_source(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> Analysis:
    """:func:`check_source_undecided` and the tensors of every span, from ONE analysis run (the
    language server's diagnostics, hover and inlay hints). Syntax errors give empty lists."""


def show_shapes(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> list[tuple[int, str]]:
    """The ``--show-shapes`` view: ``(line, "name: [shape] dtype")`` for lines assigning tensors."""

def syntax_errors(source: str) -> list[tuple[str, int, int, int, int]]:
    """The parser's syntax errors, ``(message, row, col, end_row, end_col)`` each (ruff's
    wording); ``[]`` when the text parses. :func:`check_source` has no findings for such a file."""

@type_check_only
class SummaryLayer(TypedDict):
    """One leaf layer call of a model call: what a torch forward hook sees."""

    name: str | None
    """The qualified name in the model (``features.0``); ``None`` when the model does not hold it."""
    type: str
    """torch's class name (``Conv2d``)."""
    output_shape: list[int | str] | None
    """Ints, or strings for symbolic dims; ``None`` when the output is not one tensor of known rank."""
    params: int | None
    depth: int

@type_check_only
class ModelCall(TypedDict):
    """One model call (a call of a user module or a container made while no other runs)."""

    model: str
    line: int
    input_ranks: list[int | None] | None
    """With ``model``: the rank of each ``forward`` input this record reads it at (one record
    per reading where the core takes the inputs at several ranks); ``None`` for a script's call."""
    output_shape: list[int | str] | None
    total_params: int | None
    layers: list[SummaryLayer]
    incomplete: list[str]
    """Why the record may differ from what torch's hooks see (empty: complete)."""
    accepts: list[Contract]
    """With ``model`` and no ``input_size``: the input contract, one per way through
    ``forward`` (``engine/contract.rs``; ``summary.solve`` asks Z3 about it)."""

@type_check_only
class Clause(TypedDict):
    text: str
    """``16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304``."""
    line: int | None
    fixed: bool
    """An equation that fixes an input size, shown in the input's shape."""
    smt: str | None
    """The condition as an SMT-LIB term (``None``: not encodable)."""

@type_check_only
class Contract(TypedDict):
    names: list[str]
    """The names of ``forward``'s inputs (empty when not known)."""
    inputs: list[str | None]
    """Each input's shape (``[N, 1, H, W]``; ``None``: not a tensor)."""
    dims: list[list[str] | None]
    """Each input's dims as shown (``None``: not a tensor, or of unknown rank)."""
    params: list[str]
    """The model's own sizes the contract names (not sizes of the inputs)."""
    clauses: list[Clause]
    smt: str
    """The SMT-LIB context: ``in_I_J`` is declared equal to dim ``J`` of input ``I``."""

def model_summary(
    source: str,
    filename: str,
    model: str | None = None,
    options: CheckOptions | dict[str, Any] | None = None,
) -> list[ModelCall]:
    """``shape-lint summary``: the model calls of the script run, in call order, or with
    ``model`` the call of that class's ``forward`` with inputs of unknown shapes."""

def rules() -> list[RuleInfo]:
    """Every rule of the registry."""

def api_json() -> str:
    """The registry of modelled APIs as JSON: a list of objects with `name` (qualified),
    `kind` (function, method, module), `params` and `call_params` (each a list of objects with
    `name`, `kind`, `default`, `read`), `twin` and `checks` (rule codes)."""

def api_resolve(path: str) -> str | None:
    """The qualified name of the registry entry that a call of the library path ``path`` resolves
    to, through the aliases the core accepts (``torch.concat``, ``torch.nn.modules.linear.Linear``,
    ``torchvision.models.resnet.resnet18``); ``None`` when it is not modelled."""
