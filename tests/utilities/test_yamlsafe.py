"""The bounded YAML loader (utilities/yamlsafe.py): each rule on both parsers (libyaml and
pure Python), every hostile corpus case in process with a bound on its message, and the JSON
door's integer reader (``_int``) on values YAML can no longer produce."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import yaml

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.scenario import check_scenario, load_scenarios, parse_scenario
from tests.corpus.hostile import BASE, CASES, CORPUS_DIR, FILE_CASES, readme
from tests.sim._scenarios import scenario_dict
from utilities import yamlsafe
from utilities.errors import MAX_MESSAGE_CHARS, InputError, clip_message, preview
from utilities.yamlsafe import BACKENDS, MAX_BYTES, MAX_DEPTH, load_yaml, read_capped

ROOT = Path(__file__).resolve().parents[2]
#: Every message of the loader and the validators on the corpus stays under this (the guard in
#: utilities.errors.clip_message is MAX_MESSAGE_CHARS).
MESSAGE_BOUND = 200
#: CPU seconds a refusal of a small text may take, whatever it contains (CPU, not wall time: the
#: 2 shared cores make wall time depend on the neighbours).
FAST_S = 0.5


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


def refusal(text: bytes | str, backend: str, **limits) -> str:
    """The one-line message ``load_yaml`` refuses ``text`` with (checked to be one short line)."""
    with pytest.raises(InputError) as info:
        load_yaml(text, backend=backend, **limits)
    message = str(info.value)
    assert message.isprintable() and len(message) <= MAX_MESSAGE_CHARS, message
    return message


def test_both_parsers_are_tested():
    if BACKENDS != ("libyaml", "python"):
        pytest.skip("PyYAML built without libyaml: only the pure-Python parser was tested")
    assert yamlsafe.BoundedCLoader.__mro__[1] is yamlsafe._BoundedLoading


# --- what is accepted ------------------------------------------------------------------------


def test_load_yaml_returns_json_shaped_data(backend):
    text = (
        "a: 1\nb: -2.5\nc: true\nd: ~\ne: text\nf: [1, {g: h}]\nbig: 9223372036854775807\n"
        "exp: 1e12\nexp2: 15.6e12\nday: 2024-01-02\nyes_: yes\nquoted: '12'\nempty:\n"
    )
    assert load_yaml(text, backend=backend) == {
        "a": 1,
        "b": -2.5,
        "c": True,
        "d": None,
        "e": "text",
        "f": [1, {"g": "h"}],
        "big": 2**63 - 1,
        "exp": 1e12,  # YAML 1.2: PyYAML alone reads '1e12' as a string
        "exp2": 15.6e12,  # the docs' `tokens: 15.6e12`
        "day": "2024-01-02",  # dates stay strings (JSON has none)
        "yes_": True,
        "quoted": "12",
        "empty": None,
    }


def test_load_yaml_reads_every_repository_yaml_file_like_safe_load(backend):
    from scenarios.sim.calibration import fitted_dir

    paths = [
        *sorted(fitted_dir().glob("*.yaml")),
        *sorted((ROOT / "docs").glob("**/*.yaml")),
        ROOT / "topology" / "fixtures" / "catalog.yaml",
    ]
    assert len(paths) >= 2
    for path in paths:
        data = path.read_bytes()
        assert load_yaml(data, backend=backend) == yaml.safe_load(data), path


def test_load_yaml_reads_core_tags_and_a_leading_bom(backend):
    text = "\ufeffa: !!str 12\nb: !!float 1\nc: !!int '7'\nd: !!null ''\ne: !!bool yes\nf: ! 3\n"
    assert load_yaml(text.encode(), backend=backend) == {
        "a": "12",
        "b": 1.0,
        "c": 7,
        "d": None,
        "e": True,
        "f": 3,  # `! 3` resolves like a plain 3, as in yaml.safe_load
    }


def test_load_yaml_empty_text_is_none(backend):
    assert load_yaml(b"", backend=backend) is None
    assert load_yaml(b"# only a comment\n\n", backend=backend) is None


def test_bounded_loader_works_with_yaml_load():
    assert yaml.load("a: [1, 2]", Loader=yamlsafe.BoundedPythonLoader) == {"a": [1, 2]}
    with pytest.raises(InputError, match="anchors and aliases"):
        yaml.load("a: &x 1\nb: *x", Loader=yamlsafe.BoundedPythonLoader)


# --- bytes: size, encoding, characters ---------------------------------------------------------


def test_load_yaml_refuses_text_past_the_size_limit(backend):
    assert (
        refusal(b"#" * (MAX_BYTES + 1), backend) == "file: 1,048,577 bytes, more than the 1,048,576 allowed"
    )
    assert refusal("é" * 600, backend, max_bytes=1000, source="yaml").startswith(
        "yaml: 1,200 bytes, more than"
    )


def test_read_capped_never_reads_past_the_limit(tmp_path):
    started = time.process_time()
    with pytest.raises(InputError, match=r"^file: more bytes, more than the 1,048,576 allowed$"):
        read_capped("/dev/zero")  # endless: only a capped read returns
    assert time.process_time() - started < FAST_S
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (3 * MAX_BYTES))
    with pytest.raises(InputError, match=r"^file: 3,145,728 bytes, more than the 1,048,576 allowed$"):
        read_capped(path)


def test_the_loaders_error_is_the_base_of_the_scenario_error():
    assert issubclass(ScenarioError, InputError) and issubclass(InputError, ValueError)


def test_load_scenarios_raises_the_loaders_refusal_as_a_scenario_error_word_for_word(tmp_path):
    """``except ScenarioError`` around ``load_scenarios`` still catches a file that is not YAML."""
    path = tmp_path / "alias.yaml"
    path.write_text("a: &x 1\nb: *x\n", encoding="utf-8")
    with pytest.raises(InputError) as loader:
        yamlsafe.load_yaml_file(path)
    assert type(loader.value) is InputError
    with pytest.raises(ScenarioError) as scenario:
        load_scenarios(path)
    assert str(scenario.value) == str(loader.value) == "a: anchors and aliases are not allowed (&x) (line 1)"


def test_load_scenarios_names_an_unreadable_path(tmp_path):
    with pytest.raises(
        ScenarioError, match=r"^file: cannot read .*missing.yaml \(No such file or directory\)$"
    ):
        load_scenarios(tmp_path / "missing.yaml")
    with pytest.raises(ScenarioError, match=r"^file: cannot read .* \(Is a directory\)$"):
        load_scenarios(tmp_path)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"name: caf\xe9\n", "file: not UTF-8 text (invalid byte 0xe9 at offset 9, line 1)"),
        (b"a: 1\nb: \xc0\xaf\n", "file: not UTF-8 text (invalid byte 0xc0 at offset 8, line 2)"),
        (b"a: \xed\xa0\x80", "file: not UTF-8 text (invalid byte 0xed at offset 3, line 1)"),
        (b"a: \xe2\x82", "file: not UTF-8 text (invalid byte 0xe2 at offset 3, line 1)"),
        (
            "a: 1".encode("utf-16"),
            "file: not UTF-8 text (invalid byte 0xff at offset 0, line 1; it starts with a UTF-16",
        ),
    ],
)
def test_load_yaml_refuses_non_utf8_naming_the_offset(backend, data, expected):
    assert refusal(data, backend).startswith(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\nb: x\x00y\n", "file: line 2, column 5: NUL character U+0000 is not allowed"),
        ("a: \x1b[2J\n", "file: line 1, column 4: control character U+001B is not allowed"),
        ("a: 1\n\ufeffb: 2\n", "file: line 2, column 1: byte-order mark U+FEFF is only allowed at the start"),
        ("a: \ud800\n", "file: line 1, column 4: unpaired surrogate U+D800 is not allowed"),
        ('a: "\\e[2J"\n', "a: character U+001B is not allowed (got '\\x1b[2J') (line 1)"),
        ('a: "x\\0"\n', "a: character U+0000 is not allowed (got 'x\\x00') (line 1)"),
    ],
)
def test_load_yaml_refuses_control_characters(backend, text, expected):
    assert refusal(text, backend).startswith(expected)


def test_load_yaml_keeps_tabs_and_newlines_in_quoted_text(backend):
    assert load_yaml('a: "x\\ty\\nz"', backend=backend) == {"a": "x\ty\nz"}


# --- structure: depth, aliases, documents, values -------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, "a: " + "[" * 100_000, "- " * 100_000 + "1", "{a: " * 50_000, "[\n" * 100_000],
    ids=["flow", "flow-in-mapping", "block-sequences", "flow-mappings", "flow-one-per-line"],
)
def test_load_yaml_refuses_100000_deep_nesting_fast_in_one_line(backend, text):
    started = time.process_time()
    message = refusal(text, backend)
    assert time.process_time() - started < FAST_S
    assert message.endswith(f"nested deeper than {MAX_DEPTH} levels"), message


def test_load_yaml_depth_limit_is_exact(backend):
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH, backend=backend) is not None
    assert (
        refusal("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), backend)
        == "file: line 1: nested deeper than 64 levels"
    )
    assert load_yaml("a: {b: [1]}", backend=backend, max_depth=3) == {"a": {"b": [1]}}
    assert refusal("a: {b: [[1]]}", backend, max_depth=3) == "file: line 1: nested deeper than 3 levels"
    pyramid = "".join(" " * i + "k:\n" for i in range(70))
    assert refusal(pyramid, backend) == "file: line 65: nested deeper than 64 levels"


def billion_laughs(key: str) -> str:
    rows = [f'{key}:\n  - &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    rows += [f"  - &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)]
    return "".join(rows) + "  - *i\n"


@pytest.mark.parametrize("key", ["description", "name", "slow_nodes"])
def test_load_yaml_refuses_an_alias_bomb_before_expanding_it(backend, key):
    started = time.process_time()
    message = refusal(billion_laughs(key), backend)
    assert time.process_time() - started < FAST_S
    assert message == f"{key}[0]: anchors and aliases are not allowed (&a) (line 2)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: &x 1\nb: *x\n", "a: anchors and aliases are not allowed (&x) (line 1)"),
        ("a: *nowhere\n", "a: anchors and aliases are not allowed (*nowhere) (line 1)"),
        ("job:\n  model: &m {layers: 2}\n", "job.model: anchors and aliases are not allowed (&m) (line 2)"),
        ("- &x [*x]\n", "[0]: anchors and aliases are not allowed (&x) (line 1)"),
        (f"a: &{'n' * 500} 1\n", f"a: anchors and aliases are not allowed (&{'n' * 40}…) (line 1)"),
    ],
)
def test_load_yaml_refuses_anchors_and_aliases(backend, text, expected):
    assert refusal(text, backend) == expected


def test_load_yaml_refuses_a_second_document(backend):
    assert refusal("a: 1\n---\nb: 2\n", backend) == (
        "file: line 2, column 1: a second YAML document is not allowed (list several under scenarios:)"
    )


def test_load_yaml_refuses_too_many_values(backend):
    text = "[" + ", ".join(["1"] * 30) + "]"
    assert refusal(text, backend, max_values=20) == "file: line 1: more than 20 values"
    started = time.process_time()
    assert refusal("[" + "0," * 400_000 + "0]", backend).endswith("more than 20,000 values")
    assert time.process_time() - started < 2.0  # the limit bounds the work (CPU seconds), not the file size


# --- mappings: duplicate and non-string keys ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\nb: 2\na: 3\n", "a: duplicate key (lines 1 and 3)"),
        ("job:\n  model:\n    layers: 1\n    layers: 2\n", "job.model.layers: duplicate key (lines 3 and 4)"),
        ("p: {tp: 1, tp: 2}\n", "p.tp: duplicate key (twice on line 1)"),
        ("s:\n- {a: 1}\n- {b: 1, 'b': 2}\n", "s[1].b: duplicate key (twice on line 3)"),
    ],
)
def test_load_yaml_refuses_duplicate_keys_naming_path_and_lines(backend, text, expected):
    assert refusal(text, backend) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1: x\n", "file: mapping keys must be strings (got 1) (line 1)"),
        ("a:\n  ~: x\n", "a: mapping keys must be strings (got None) (line 2)"),
        ("a:\n  on: x\n", "a: mapping keys must be strings (got True) (line 2)"),
        ("a:\n  1.5: x\n", "a: mapping keys must be strings (got 1.5) (line 2)"),
        ("? [a, b]\n: 1\n", "file: mapping keys must be strings (got a list or mapping) (line 1)"),
        ("{? {a: 1}: 2}\n", "file: mapping keys must be strings (got a list or mapping) (line 1)"),
    ],
)
def test_load_yaml_refuses_non_string_keys(backend, text, expected):
    assert refusal(text, backend) == expected


# --- scalars: numbers, strings, tags -----------------------------------------------------------


@pytest.mark.parametrize(
    "number", [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1e400", "1.0e+400", "-1e400", "9" * 400 + ".0"]
)
def test_load_yaml_refuses_non_finite_numbers_naming_the_field(backend, number):
    message = refusal(f"job:\n  model:\n    layers: {number}\n", backend)
    assert message.startswith(f"job.model.layers: must be a finite number (got {preview(number)})")
    assert message.endswith("(line 3)")


@pytest.mark.parametrize(
    ("number", "digits"),
    [("9" * 5000, 5000), ("-" + "9" * 5000, 5000), ("1" * 20, 20), ("0x" + "f" * 30, 30), ("1_" * 25, 25)],
)
def test_load_yaml_refuses_long_integers_before_converting_them(backend, number, digits):
    message = refusal(f"what_if:\n  seed: {number}\n", backend)
    assert message.startswith(f"what_if.seed: integer of {digits:,} digits, more than the 19 allowed (got ")
    assert len(message) < 150


def test_load_yaml_integers_stop_at_int64(backend):
    assert load_yaml("[9223372036854775807, -9223372036854775807, 0x7fffffffffffffff]", backend=backend) == [
        2**63 - 1,
        -(2**63) + 1,
        2**63 - 1,
    ]
    assert refusal("seed: 9223372036854775808", backend) == (
        "seed: integer outside ±9,223,372,036,854,775,807 (got '9223372036854775808') (line 1)"
    )
    assert refusal("x: 0b_", backend) == "x: not a valid integer (got '0b_') (line 1)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "a: !!python/object/apply:os.system [ls]",
            "a: tag '!!python/object/apply:os.system' is not allowed (line 1)",
        ),
        ("a: !!python/name:os.system ''", "a: tag '!!python/name:os.system' is not allowed (line 1)"),
        ("a: !!binary aGk=", "a: tag '!!binary' is not allowed (line 1)"),
        ("a: !!timestamp 2024-01-01", "a: tag '!!timestamp' is not allowed (line 1)"),
        ("a: !!set {x: null}", "a: tag '!!set' is not allowed (line 1)"),
        ("a: !!omap [{x: 1}]", "a: tag '!!omap' is not allowed (line 1)"),
        ("a: !Custom {x: 1}", "a: tag '!Custom' is not allowed (line 1)"),
        ("a: !<tag:x.org,2024:y> 1", "a: tag 'tag:x.org,2024:y' is not allowed (line 1)"),
        (
            "%TAG !! tag:evil.org,2024:\n---\na: !!str x",
            "a: tag 'tag:evil.org,2024:str' is not allowed (line 3)",
        ),
        ("a: !!int abc", "a: not a valid !!int (got 'abc') (line 1)"),
        ("a: !!float lots", "a: not a valid !!float (got 'lots') (line 1)"),
        ("a: !!bool maybe", "a: not a valid !!bool (got 'maybe') (line 1)"),
        ("a: !!null x", "a: not a valid !!null (got 'x') (line 1)"),
    ],
)
def test_load_yaml_refuses_tags_other_than_the_core_ones(backend, text, expected):
    assert refusal(text, backend) == expected


def test_load_yaml_refuses_long_strings_and_keys_quoting_a_prefix(backend):
    assert refusal("name: " + "x" * 20_000, backend) == (
        f"name: text of 20,000 characters, more than the 10,000 allowed (got '{'x' * 40}'…) (line 1)"
    )
    assert refusal("job:\n  ? " + "k" * 300 + "\n  : 1\n", backend) == (
        f"job: key of 300 characters, more than the 256 allowed (got '{'k' * 40}'…) (line 2)"
    )
    assert load_yaml("k" * 256 + ": 1", backend=backend) == {"k" * 256: 1}


def test_load_yaml_paths_quote_long_or_unprintable_keys(backend):
    message = refusal("'" + "k" * 100 + '\':\n  "a\\tb": .nan\n', backend)  # a real tab in the key
    assert message == f"'{'k' * 40}'….'a\\tb': must be a finite number (got '.nan') (line 2)"


# --- syntax --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line_and_column"),
    [
        ("a: 1\nb: [1, 2\nc: 3\n", "line 3, column 2"),
        ("a:\n  b: 1\n   c: 2\n", "line 3, column 5"),
        ('a: "open\n', "line 2, column 1"),
        ("a: 1\n\tb: 2\n", "line 2, column 1"),
    ],
)
def test_load_yaml_syntax_error_names_line_and_column_in_one_line(backend, text, line_and_column):
    message = refusal(text, backend)
    assert message.startswith(f"file: {line_and_column}: ") and "\n" not in message


def test_load_yaml_syntax_error_names_the_source(backend):
    # (at the end of a file without a final newline libyaml reports the next line: give one)
    assert refusal("a: [1\n", backend, source="yaml").startswith("yaml: line 2, column 1: ")


# --- every hostile corpus case, in process -------------------------------------------------------


def test_corpus_files_match_their_definitions():
    committed = {c.file for c in FILE_CASES if not c.generated}
    assert {p.name for p in CORPUS_DIR.iterdir()} == committed | {"README.md"}
    for case in FILE_CASES:
        if not case.generated:
            assert (CORPUS_DIR / case.file).read_bytes() == case.data(), case.file
    assert (CORPUS_DIR / "README.md").read_text(encoding="utf-8") == readme()
    assert (CORPUS_DIR / "base.yaml").read_text(encoding="utf-8") == BASE


def _cli_message(path: Path, catalog) -> str:
    """What ``manage.py simulate`` would print after "CommandError: " ("" if it would run)."""
    try:
        for scenario in load_scenarios(path):
            check_scenario(scenario, catalog)
    except ScenarioError as exc:
        return str(exc)
    return ""


@pytest.fixture(scope="module")
def corpus_messages(tmp_path_factory, catalog):
    """Each case's message with each parser (cases written once, big ones included)."""
    directory = tmp_path_factory.mktemp("cases")
    out: dict[tuple[str, str], tuple[str, float]] = {}
    patch = pytest.MonkeyPatch()
    try:
        for case in CASES:
            path = directory / case.file
            path.write_bytes(case.data())
            for backend in BACKENDS:
                patch.setattr(yamlsafe, "BACKENDS", (backend,))  # the default of load_yaml
                started = time.process_time()  # CPU: the 2 cores are shared
                out[case.file, backend] = (_cli_message(path, catalog), time.process_time() - started)
            path.unlink()
    finally:
        patch.undo()
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_corpus_case_gives_its_short_one_line_message(corpus_messages, case):
    messages = {}
    for backend in BACKENDS:
        message, seconds = corpus_messages[case.file, backend]
        expected = case.expected_python if backend == "python" and case.expected_python else case.expected
        assert message.startswith(expected) and bool(message) == bool(expected), (backend, message)
        assert len(message) <= MESSAGE_BOUND and message.isprintable(), (backend, message)
        assert seconds < (5.0 if backend == "python" else 1.0), (backend, seconds)
        messages[backend] = message
    if not case.parser:  # the loader's and the validators' own words: the same on both parsers
        assert len(set(messages.values())) == 1, messages


# --- helpers and the JSON door ---------------------------------------------------------------


def test_preview_is_short_for_any_value():
    assert preview("x" * 1000) == f"'{'x' * 40}'…"
    assert preview("a\nb") == "'a\\nb'"
    assert preview(10**5000) == "<integer of about 5,001 digits>"
    assert len(preview([["y" * 1000] * 1000] * 1000)) <= 121
    assert len(preview({str(i): i for i in range(10_000)})) <= 121
    nested: list = []
    for _ in range(10_000):
        nested = [nested]
    assert len(preview(nested)) < 50


def test_clip_message_is_one_printable_line():
    assert clip_message("a\nb\u2028c") == "a\\nb\\u2028c"
    assert len(clip_message("x" * 10_000)) == MAX_MESSAGE_CHARS


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (math.inf, "job.model.layers: must be an integer (got inf)"),
        (-math.inf, "job.model.layers: must be an integer (got -inf)"),
        (math.nan, "job.model.layers: must be an integer (got nan)"),
        (1e300, "job.model.layers: must be ≤ 10,000 (got <integer of about 301 digits>)"),
        (10**5000, "job.model.layers: must be ≤ 10,000 (got <integer of about 5,001 digits>)"),
        (-(10**5000), "job.model.layers: must be ≥ 1 (got <integer of about 5,001 digits>)"),
        ("x" * 10_000, f"job.model.layers: must be an integer (got '{'x' * 40}'…)"),
        ([1] * 10_000, "job.model.layers: must be an integer (got [1, 1, 1, 1, ...])"),
    ],
    ids=["inf", "-inf", "nan", "1e300", "10**5000", "-10**5000", "long-string", "long-list"],
)
def test_int_field_refuses_json_values_yaml_cannot_produce(value, expected):
    # The web and API doors hand parse_scenario JSON: int(inf) raised OverflowError there.
    with pytest.raises(ScenarioError) as info:
        parse_scenario(scenario_dict(model={"layers": value}))
    assert str(info.value) == expected
