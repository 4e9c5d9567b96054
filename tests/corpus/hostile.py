"""The hostile scenario corpus: a valid base file and one-mutation variants of it, with the start
of the one-line error each must give.

The small files live in ``tests/corpus/scenarios/`` (written by ``python -m tests.corpus.hostile``,
which also writes the README table); the big ones (past 16 KB) are built at run time by
:func:`corpus_files`; :data:`IN_PROCESS_ONLY` cases are no files at all.
``tests/utilities/test_yamlsafe.py`` runs every case in process and checks the files match this
module.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "scenarios"
BASE_NAME = "base.yaml"
#: Files past this size are generated at run time, not committed.
COMMITTED_LIMIT_BYTES = 16 * 1024

#: The 32-GPU job of tests/scenarios/conftest.py (SMALL_JOB) on 4 DGX H100 nodes, with one
#: field of every numeric family (cluster, model, batch, parallel, tokens, what-if).
BASE = """\
version: 1
name: gpt-1.3b-32gpu
description: The valid base of the hostile corpus; every other file is one mutation of it.
cluster:
  generator: rail-optimized
  server: dgx-h100
  nodes: 4
job:
  model:
    layers: 24
    hidden: 2048
    heads: 16
    vocab: 51200
    seq_len: 2048
  global_batch: 64
  micro_batch: 2
  parallel:
    tp: 8
    pp: 1
    dp: 4
  recompute: selective
  precision: bf16
  tokens: 1.0e+11
what_if:
  straggler_spread: 0.02
  slow_nodes: [1]
  slow_node_factor: 1.25
  steps: 16
  seed: 7
"""
BASE_LINES = BASE.splitlines(keepends=True)
MODEL_BLOCK = "".join(BASE_LINES[8:14])  # "  model:" and its five fields


@dataclass(frozen=True)
class Case:
    """One corpus file: its name, the mutation, the start of its error and its bytes."""

    file: str
    mutation: str
    expected: str  # the error message starts with this ("" for the base: it must succeed)
    make: Callable[[], bytes]
    generated: bool = False
    #: The problem is worded by the parser: libyaml and PyYAML agree on the line, not the words.
    parser: bool = False
    #: Where PyYAML's error differs from libyaml's (the CLI's) beyond the wording.
    expected_python: str | None = None

    def data(self) -> bytes:
        return self.make()


def sub(old: str, new: str) -> bytes:
    """BASE with its only occurrence of ``old`` replaced by ``new``, as UTF-8."""
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new).encode("utf-8")


def sub_bytes(old: str, new: bytes) -> bytes:
    """BASE with ``old`` replaced by raw bytes (for encodings errors)."""
    assert BASE.count(old) == 1, old
    head, tail = BASE.split(old)
    return head.encode() + new + tail.encode()


def line_index(old: str) -> int:
    """Index of the BASE line holding ``old``."""
    (index,) = [i for i, line in enumerate(BASE_LINES) if old in line]
    return index


def insert_after(old: str, text: str) -> bytes:
    """BASE with ``text`` inserted after the line holding ``old``."""
    index = line_index(old) + 1
    return "".join([*BASE_LINES[:index], text, *BASE_LINES[index:]]).encode("utf-8")


def bomb(indent: str, first: str = "a") -> str:
    """A 'billion laughs': nine lists of nine aliases of the one before (9**9 'lol's)."""
    names = [chr(ord(first) + i) for i in range(9)]
    rows = [f'{indent}- &{names[0]} ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    for previous, name in itertools.pairwise(names):
        rows.append(f"{indent}- &{name} [{','.join(['*' + previous] * 9)}]\n")
    return "".join(rows)


def _c(file: str, mutation: str, expected: str, data: bytes, **options) -> Case:
    return Case(file, mutation, expected, lambda: data, **options)


def _g(file: str, mutation: str, expected: str, make: Callable[[], bytes]) -> Case:
    return Case(file, mutation, expected, make, generated=True)


DIGITS_5000 = "9" * 5000


def ten_mib() -> bytes:
    """The base with a flow list of slow nodes, padded to exactly 10 MiB with a comment."""
    data = sub("slow_nodes: [1]", "slow_nodes: [" + "0, " * 3_000_000 + "0]")
    return data + b"\n#" + b"-" * (10 * 1024 * 1024 - len(data) - 3) + b"\n"


CASES: list[Case] = [
    _c(BASE_NAME, "the valid base (must succeed)", "", BASE.encode()),
    # --- encodings -----------------------------------------------------------------------------
    _c(
        "enc-latin1-name.yaml",
        "name in Latin-1 (0xE9 for é)",
        "file: not UTF-8 text (invalid byte 0xe9 at offset 29, line 2)",
        sub_bytes("name: gpt-1.3b-32gpu", b"name: gpt-1.3b-caf\xe9"),
    ),
    _c(
        "enc-cp1252-quotes.yaml",
        "Windows-1252 smart quotes (0x93, 0x94) in the description",
        "file: not UTF-8 text (invalid byte 0x93 at offset",
        sub_bytes("description: The valid", b"description: \x93The\x94 valid"),
    ),
    _c(
        "enc-ff-byte.yaml",
        "a 0xFF byte (never valid in UTF-8) in the description",
        "file: not UTF-8 text (invalid byte 0xff",
        sub_bytes("every other file", b"every \xff other file"),
    ),
    _c(
        "enc-lone-continuation-byte.yaml",
        "a continuation byte 0x80 with no lead byte",
        "file: not UTF-8 text (invalid byte 0x80",
        sub_bytes("server: dgx-h100", b"server: dgx-h100\x80"),
    ),
    _c(
        "enc-truncated-at-eof.yaml",
        "the file ends inside a 3-byte sequence (0xE2 0x82)",
        "file: not UTF-8 text (invalid byte 0xe2",
        BASE.encode() + b"# \xe2\x82",
    ),
    _c(
        "enc-overlong-slash.yaml",
        "an overlong encoding of '/' (0xC0 0xAF)",
        "file: not UTF-8 text (invalid byte 0xc0",
        sub_bytes("server: dgx-h100", b"server: dgx\xc0\xafh100"),
    ),
    _c(
        "enc-encoded-surrogate.yaml",
        "a UTF-16 surrogate encoded as UTF-8 (CESU-8: 0xED 0xA0 0x80)",
        "file: not UTF-8 text (invalid byte 0xed",
        sub_bytes("name: gpt-1.3b-32gpu", b"name: gpt\xed\xa0\x80"),
    ),
    _c(
        "enc-beyond-unicode.yaml",
        "a code point past U+10FFFF (0xF4 0x90 0x80 0x80)",
        "file: not UTF-8 text (invalid byte 0xf4",
        sub_bytes("name: gpt-1.3b-32gpu", b"name: gpt\xf4\x90\x80\x80"),
    ),
    _c(
        "enc-five-byte-sequence.yaml",
        "an obsolete 5-byte sequence (0xF8 ...)",
        "file: not UTF-8 text (invalid byte 0xf8",
        sub_bytes("name: gpt-1.3b-32gpu", b"name: gpt\xf8\x88\x80\x80\x80"),
    ),
    _c(
        "enc-utf16le-bom.yaml",
        "the whole file in UTF-16 LE with its byte-order mark",
        "file: not UTF-8 text (invalid byte 0xff at offset 0, line 1; it starts with a UTF-16",
        codecs.BOM_UTF16_LE + BASE.encode("utf-16-le"),
    ),
    _c(
        "enc-utf16be-bom.yaml",
        "the whole file in UTF-16 BE with its byte-order mark",
        "file: not UTF-8 text (invalid byte 0xfe at offset 0, line 1; it starts with a UTF-16",
        codecs.BOM_UTF16_BE + BASE.encode("utf-16-be"),
    ),
    _c(
        "enc-utf16le-no-bom.yaml",
        "UTF-16 LE without a byte-order mark (valid UTF-8 full of NULs)",
        "file: line 1, column 2: NUL character U+0000 is not allowed",
        BASE.encode("utf-16-le"),
    ),
    _c(
        "enc-utf32le-bom.yaml",
        "the whole file in UTF-32 LE with its byte-order mark",
        "file: not UTF-8 text (invalid byte 0xff at offset 0, line 1;",
        codecs.BOM_UTF32_LE + BASE.encode("utf-32-le"),
    ),
    _c(
        "enc-utf32be-bom.yaml",
        "the whole file in UTF-32 BE with its byte-order mark",
        "file: not UTF-8 text (invalid byte 0xfe at offset 2, line 1; it starts with a UTF-32",
        codecs.BOM_UTF32_BE + BASE.encode("utf-32-be"),
    ),
    _c(
        "bom-utf8-twice.yaml",
        "two UTF-8 byte-order marks at the start (the second is text)",
        "file: line 1, column 1: byte-order mark U+FEFF is only allowed at the start",
        codecs.BOM_UTF8 * 2 + BASE.encode(),
    ),
    _c(
        "bom-utf8-mid-file.yaml",
        "a UTF-8 byte-order mark at the start of line 8 (libyaml would skip it, PyYAML not)",
        "file: line 8, column 1: byte-order mark U+FEFF is only allowed at the start",
        sub("\njob:\n", "\n\ufeffjob:\n"),
    ),
    # --- control characters ----------------------------------------------------------------
    _c(
        "ctrl-nul-in-name.yaml",
        "a raw NUL byte inside the name",
        "file: line 2, column 10: NUL character U+0000 is not allowed",
        sub("name: gpt-1.3b-32gpu", "name: gpt\x00-1.3b"),
    ),
    _c(
        "ctrl-nul-padding.yaml",
        "1,000 NUL bytes after the last line",
        "file: line 30, column 1: NUL character U+0000",
        BASE.encode() + b"\x00" * 1000,
    ),
    _c(
        "ctrl-escaped-nul-in-name.yaml",
        'a NUL written as the escape "\\0" in a double-quoted name',
        "name: character U+0000 is not allowed (got 'gpt\\x00')",
        sub("name: gpt-1.3b-32gpu", 'name: "gpt\\0"'),
    ),
    _c(
        "ctrl-ansi-escape-in-description.yaml",
        'a terminal escape (clear screen) written as "\\e[2J" in the description',
        "description: character U+001B is not allowed",
        sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.",
            'description: "\\e[2J\\e[31mpwned"',
        ),
    ),
    _c(
        "ctrl-raw-escape-byte.yaml",
        "a raw ESC byte (0x1B) in the description",
        "file: line 3, column 14: control character U+001B is not allowed",
        sub("description: The", "description: \x1b[2JThe"),
    ),
    _c(
        "ctrl-bell.yaml",
        "a BEL (0x07) in the server slug",
        "file: line 6, column 19: control character U+0007",
        sub("server: dgx-h100", "server: dgx-h100\x07"),
    ),
    _c(
        "ctrl-delete.yaml",
        "a DEL (0x7F) in the generator",
        "file: line 5, column 14: control character U+007F",
        sub("generator: rail", "generator: \x7frail"),
    ),
    _c(
        "ctrl-c1-csi.yaml",
        "a C1 control U+009B (CSI) in the name",
        "file: line 2, column 7: control character U+009B",
        sub("name: gpt", "name: \x9bgpt"),
    ),
    _c(
        "ctrl-vertical-tab.yaml",
        "a vertical tab (0x0B) as indentation",
        "file: line 10, column 1: control character U+000B",
        sub("    layers: 24", "\x0b   layers: 24"),
    ),
    _c(
        "ctrl-form-feed.yaml",
        "a form feed (0x0C) between two lines",
        "file: line 8, column 1: control character U+000C",
        sub("\njob:\n", "\n\x0cjob:\n"),
    ),
    _c(
        "ctrl-noncharacter-fffe.yaml",
        "the noncharacter U+FFFE in the name",
        "file: line 2, column 10: control character U+FFFE",
        sub("name: gpt-1.3b-32gpu", "name: gpt\ufffe-1.3b"),
    ),
    _c(
        "ctrl-escaped-surrogate.yaml",
        'an unpaired surrogate written as "\\ud800" in the name',
        "file: line 2, column 13: found invalid Unicode character escape code",
        sub("name: gpt-1.3b-32gpu", 'name: "gpt\\ud800"'),
        parser=True,
        expected_python="name: character U+D800 is not allowed (got 'gpt\\ud800') (line 2)",
    ),
    # --- nesting -----------------------------------------------------------------------------
    _c(
        "deep-flow-sequences-65.yaml",
        "layers is a flow list nested 65 deep (64 allowed in all)",
        "file: line 10: nested deeper than 64 levels",
        sub("layers: 24", "layers: " + "[" * 65 + "]" * 65),
    ),
    _c(
        "deep-flow-mappings-100.yaml",
        "description is {a: {a: ... }} 100 deep",
        "file: line 3: nested deeper than 64 levels",
        sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.",
            "description: " + "{a: " * 100 + "1" + "}" * 100,
        ),
    ),
    _c(
        "deep-block-mappings-70.yaml",
        "job.model.layers replaced by block mappings 70 deep (one more space per level)",
        "file: line 72: nested deeper than 64 levels",
        sub("    layers: 24\n", "".join(" " * (4 + i) + "layers:\n" for i in range(70)) + " " * 74 + "24\n"),
    ),
    _c(
        "deep-block-sequences-200.yaml",
        "slow_nodes is '- - - ... 1' (block lists 200 deep on one line)",
        "file: line 27: nested deeper than 64 levels",
        sub("  slow_nodes: [1]\n", "  slow_nodes:\n    " + "- " * 200 + "1\n"),
    ),
    _c(
        "deep-mixed-1000.yaml",
        "what_if is [{a: [{a: ...}]}] 1,000 deep (libyaml's own limit)",
        "file: line 24: nested deeper than 64 levels",
        sub("what_if:\n", "what_if: " + "[{a: " * 500 + "1" + "}]" * 500 + "\nwhat_if_again:\n"),
    ),
    # --- anchors and aliases ---------------------------------------------------------------
    _c(
        "alias-bomb-description.yaml",
        "a billion-laughs bomb (9**9 strings from 0.8 KB) as the description",
        "description[0]: anchors and aliases are not allowed (&a) (line 4)",
        sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.\n",
            "description:\n" + bomb("  ") + "  - *i\n",
        ),
    ),
    _c(
        "alias-bomb-name.yaml",
        "a billion-laughs bomb as the name (an error echoing it was 92.8 MB)",
        "name[0]: anchors and aliases are not allowed (&a) (line 3)",
        sub("name: gpt-1.3b-32gpu\n", "name:\n" + bomb("  ") + "  - *i\n"),
    ),
    _c(
        "alias-bomb-slow-nodes.yaml",
        "a billion-laughs bomb of node indices in what_if.slow_nodes",
        "what_if.slow_nodes[0]: anchors and aliases are not allowed (&a) (line 27)",
        sub("  slow_nodes: [1]\n", "  slow_nodes:\n" + bomb("    ").replace('"lol"', "1") + "    - *i\n"),
    ),
    _c(
        "alias-bomb-job.yaml",
        "job is a billion-laughs bomb of mappings",
        "job[0]: anchors and aliases are not allowed (&a) (line 9)",
        sub(
            "job:\n",
            "job:\n" + bomb("  ").replace('"lol"', "{x: 1}") + "  - *i\njob_was:\n",
        ),
    ),
    _c(
        "alias-bomb-keys.yaml",
        "the bomb's anchors on mapping keys (&k key: ...)",
        "cluster: anchors and aliases are not allowed (&k) (line 5)",
        sub("  generator: rail-optimized", "  &k generator: rail-optimized\n  *k : again"),
    ),
    _c(
        "alias-plain-reuse.yaml",
        "a benign anchor on cluster reused by a second scenario of a scenarios: list",
        "scenarios[0].cluster: anchors and aliases are not allowed (&cluster) (line 5)",
        ("scenarios:\n- " + BASE.replace("\n", "\n  ").rstrip() + "\n")
        .replace("cluster:", "cluster: &cluster")
        .encode()
        + b"- {name: copy, cluster: *cluster, job: {}}\n",
    ),
    _c(
        "alias-anchor-unused.yaml",
        "an anchor nobody refers to",
        "job.parallel: anchors and aliases are not allowed (&layout) (line 17)",
        sub("  parallel:\n", "  parallel: &layout\n"),
    ),
    _c(
        "alias-undefined.yaml",
        "an alias to an anchor that does not exist",
        "name: anchors and aliases are not allowed (*nope) (line 2)",
        sub("name: gpt-1.3b-32gpu", "name: *nope"),
    ),
    _c(
        "alias-recursive.yaml",
        "a list that contains itself (&a [*a])",
        "description: anchors and aliases are not allowed (&loop) (line 3)",
        sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.",
            "description: &loop [*loop]",
        ),
    ),
    _c(
        "alias-merge-key.yaml",
        "a merge key (<<: *base) in a second scenario",
        "scenarios[0]: anchors and aliases are not allowed (&base) (line 2)",
        ("scenarios:\n- &base\n  " + BASE.replace("\n", "\n  ").rstrip() + "\n").encode()
        + b"- <<: *base\n  name: copy\n",
    ),
    _c(
        "alias-merge-inline.yaml",
        "a merge key without an alias (<<: {...}): just an unknown field",
        "cluster.<<: unknown field",
        sub("  nodes: 4\n", "  nodes: 4\n  <<: {nodes: 8}\n"),
    ),
    # --- duplicate keys ----------------------------------------------------------------------
    _c(
        "dup-top-name.yaml",
        "name given twice at the top",
        "name: duplicate key (lines 2 and 3)",
        sub("name: gpt-1.3b-32gpu\n", "name: gpt-1.3b-32gpu\nname: other\n"),
    ),
    _c(
        "dup-section-job.yaml",
        "a whole second job: section at the end",
        "job: duplicate key (lines 8 and 30)",
        BASE.encode() + b"job: {}\n",
    ),
    _c(
        "dup-cluster-nodes.yaml",
        "cluster.nodes given twice",
        "cluster.nodes: duplicate key (lines 7 and 8)",
        sub("  nodes: 4\n", "  nodes: 4\n  nodes: 400\n"),
    ),
    _c(
        "dup-model-layers.yaml",
        "job.model.layers given twice (depth 3)",
        "job.model.layers: duplicate key (lines 10 and 15)",
        insert_after("seq_len: 2048", "    layers: 96\n"),
    ),
    _c(
        "dup-parallel-flow.yaml",
        "tp twice in a flow mapping on one line",
        "job.parallel.tp: duplicate key (twice on line 17)",
        sub("  parallel:\n    tp: 8\n    pp: 1\n    dp: 4\n", "  parallel: {tp: 8, pp: 1, dp: 4, tp: 1}\n"),
    ),
    _c(
        "dup-quoted-and-plain.yaml",
        "seed as a plain key and as a quoted key",
        "what_if.seed: duplicate key (lines 29 and 30)",
        BASE.encode() + b'  "seed": 8\n',
    ),
    _c(
        "dup-in-scenarios-list.yaml",
        "a duplicate key inside the second entry of a scenarios: list",
        "scenarios[1].version: duplicate key (lines 3 and 4)",
        b"scenarios:\n- {name: a}\n- version: 1\n  version: 2\n",
    ),
    # --- numbers -----------------------------------------------------------------------------
    _c(
        "num-nan-layers.yaml",
        "job.model.layers: .nan",
        "job.model.layers: must be a finite number (got '.nan') (line 10)",
        sub("layers: 24", "layers: .nan"),
    ),
    _c(
        "num-inf-nodes.yaml",
        "cluster.nodes: .inf",
        "cluster.nodes: must be a finite number (got '.inf') (line 7)",
        sub("nodes: 4", "nodes: .inf"),
    ),
    _c(
        "num-neg-inf-tp.yaml",
        "job.parallel.tp: -.inf",
        "job.parallel.tp: must be a finite number (got '-.inf') (line 18)",
        sub("tp: 8", "tp: -.inf"),
    ),
    _c(
        "num-1e400-global-batch.yaml",
        "job.global_batch: 1e400 (overflows to inf)",
        "job.global_batch: must be a finite number (got '1e400') (line 15)",
        sub("global_batch: 64", "global_batch: 1e400"),
    ),
    _c(
        "num-1e400-tokens.yaml",
        "job.tokens: 1.0e+400",
        "job.tokens: must be a finite number (got '1.0e+400') (line 23)",
        sub("tokens: 1.0e+11", "tokens: 1.0e+400"),
    ),
    _c(
        "num-nan-straggler-spread.yaml",
        "what_if.straggler_spread: .NaN",
        "what_if.straggler_spread: must be a finite number (got '.NaN') (line 25)",
        sub("straggler_spread: 0.02", "straggler_spread: .NaN"),
    ),
    _c(
        "num-inf-oversubscription.yaml",
        "cluster.oversubscription: .inf (a new field)",
        "cluster.oversubscription: must be a finite number (got '.inf') (line 8)",
        sub("  nodes: 4\n", "  nodes: 4\n  oversubscription: .inf\n"),
    ),
    _c(
        "num-inf-nic-gbps.yaml",
        "cluster.nic_gbps: .Inf (a new field)",
        "cluster.nic_gbps: must be a finite number (got '.Inf') (line 8)",
        sub("  nodes: 4\n", "  nodes: 4\n  nic_gbps: .Inf\n"),
    ),
    _c(
        "num-inf-slow-node-factor.yaml",
        "what_if.slow_node_factor: +.inf",
        "what_if.slow_node_factor: must be a finite number (got '+.inf') (line 27)",
        sub("slow_node_factor: 1.25", "slow_node_factor: +.inf"),
    ),
    _c(
        "num-nan-in-slow-nodes.yaml",
        "what_if.slow_nodes: [.nan]",
        "what_if.slow_nodes[0]: must be a finite number (got '.nan') (line 26)",
        sub("slow_nodes: [1]", "slow_nodes: [.nan]"),
    ),
    _c(
        "num-5000-digit-hidden.yaml",
        "job.model.hidden: a 5,000-digit integer (Python's int() stops at 4,300)",
        "job.model.hidden: integer of 5,000 digits, more than the 19 allowed (got '9999",
        sub("hidden: 2048", "hidden: " + DIGITS_5000),
    ),
    _c(
        "num-5000-digit-negative-micro-batch.yaml",
        "job.micro_batch: a huge negative integer",
        "job.micro_batch: integer of 5,000 digits, more than the 19 allowed (got '-999",
        sub("micro_batch: 2", "micro_batch: -" + DIGITS_5000),
    ),
    _c(
        "num-5000-digit-seed.yaml",
        "what_if.seed: a 5,000-digit integer",
        "what_if.seed: integer of 5,000 digits",
        sub("seed: 7", "seed: " + DIGITS_5000),
    ),
    _c(
        "num-5000-digit-slow-node.yaml",
        "what_if.slow_nodes: [a 5,000-digit integer]",
        "what_if.slow_nodes[0]: integer of 5,000 digits",
        sub("slow_nodes: [1]", f"slow_nodes: [{DIGITS_5000}]"),
    ),
    _c(
        "num-5000-digit-float-tokens.yaml",
        "job.tokens: 5,000 digits then '.0' (a float that overflows)",
        "job.tokens: must be a finite number (got '9999",
        sub("tokens: 1.0e+11", f"tokens: {DIGITS_5000}.0"),
    ),
    _c(
        "num-20-digit-steps.yaml",
        "what_if.steps: a 20-digit integer",
        "what_if.steps: integer of 20 digits, more than the 19 allowed",
        sub("steps: 16", "steps: 12345678901234567890"),
    ),
    _c(
        "num-int64-overflow-seed.yaml",
        "what_if.seed: 2**63 (19 digits, one past int64)",
        "what_if.seed: integer outside ±9,223,372,036,854,775,807 (got '9223372036854775808')",
        sub("seed: 7", "seed: 9223372036854775808"),
    ),
    _c(
        "num-huge-hex-vocab.yaml",
        "job.model.vocab: a 30-digit hexadecimal integer",
        "job.model.vocab: integer of 30 digits",
        sub("vocab: 51200", "vocab: 0x" + "f" * 30),
    ),
    _c(
        "num-huge-sexagesimal-seq-len.yaml",
        "job.model.seq_len: a YAML 1.1 base-60 integer of 24 digits",
        "job.model.seq_len: integer of 24 digits",
        sub("seq_len: 2048", "seq_len: " + ":".join(["59"] * 12)),
    ),
    _c(
        "num-bad-binary-heads.yaml",
        "job.model.heads: 0b_ (matches YAML 1.1's int pattern, not int())",
        "job.model.heads: not a valid integer (got '0b_')",
        sub("heads: 16", "heads: 0b_"),
    ),
    _c(
        "num-fraction-layers.yaml",
        "job.model.layers: 24.5",
        "job.model.layers: must be an integer (got 24.5)",
        sub("layers: 24", "layers: 24.5"),
    ),
    _c(
        "num-negative-nodes.yaml",
        "cluster.nodes: -4",
        "cluster.nodes: must be ≥ 1 (got -4)",
        sub("nodes: 4", "nodes: -4"),
    ),
    _c(
        "num-zero-tp.yaml",
        "job.parallel.tp: 0",
        "job.parallel.tp: must be ≥ 1 (got 0)",
        sub("tp: 8", "tp: 0"),
    ),
    _c(
        "num-nodes-over-limit.yaml",
        "cluster.nodes: 1,000,001 (one past the limit)",
        "cluster.nodes: must be ≤ 1,000,000 (got 1,000,001)",
        sub("nodes: 4", "nodes: 1000001"),
    ),
    _c(
        "num-max-int64-layers.yaml",
        "job.model.layers: 2**63 - 1 (loads; the validator names the limit)",
        "job.model.layers: must be ≤ 10,000 (got 9,223,372,036,854,775,807)",
        sub("layers: 24", "layers: 9223372036854775807"),
    ),
    _c(
        "num-slow-node-out-of-range.yaml",
        "what_if.slow_nodes: [4] on a 4-node cluster",
        "what_if.slow_nodes: node indices must be < nodes (4) (got 4)",
        sub("slow_nodes: [1]", "slow_nodes: [4]"),
    ),
    # --- types ---------------------------------------------------------------------------------
    _c(
        "type-name-list.yaml",
        "name is a list",
        "name: must be a non-empty string (got ['gpt', '1.3b'])",
        sub("name: gpt-1.3b-32gpu", "name: [gpt, 1.3b]"),
    ),
    _c(
        "type-name-empty.yaml",
        "name is an empty string",
        "name: must be a non-empty string (got '')",
        sub("name: gpt-1.3b-32gpu", 'name: ""'),
    ),
    _c(
        "type-cluster-string.yaml",
        "cluster is a string",
        "cluster: must be a mapping (got str)",
        sub("cluster:\n  generator: rail-optimized\n  server: dgx-h100\n  nodes: 4\n", "cluster: rail\n"),
    ),
    _c(
        "type-job-list.yaml",
        "job is a list",
        "job: must be a mapping (got list)",
        b"version: 1\nname: x\ncluster: {server: dgx-h100, nodes: 4}\njob: [1, 2]\n",
    ),
    _c(
        "type-model-null.yaml",
        "job.model is empty (null)",
        "job.model: must be a mapping (got NoneType)",
        sub(MODEL_BLOCK, "  model:\n"),
    ),
    _c(
        "type-nodes-quoted.yaml",
        'cluster.nodes: "4" (a string)',
        "cluster.nodes: must be an integer (got '4')",
        sub("nodes: 4", 'nodes: "4"'),
    ),
    _c(
        "type-layers-bool.yaml",
        "job.model.layers: true",
        "job.model.layers: must be an integer (got True)",
        sub("layers: 24", "layers: true"),
    ),
    _c(
        "type-layers-bad-date.yaml",
        "job.model.layers: 2024-13-45 (yaml.safe_load raises ValueError on this 'date')",
        "job.model.layers: must be an integer (got '2024-13-45')",
        sub("layers: 24", "layers: 2024-13-45"),
    ),
    _c(
        "type-overlap-dp-string.yaml",
        'job.overlap_dp: "yes" (quoted: a string)',
        "job.overlap_dp: must be true or false (got 'yes')",
        sub("  precision: bf16\n", '  precision: bf16\n  overlap_dp: "yes"\n'),
    ),
    _c(
        "type-slow-nodes-mapping.yaml",
        "what_if.slow_nodes is a mapping",
        "what_if.slow_nodes: must be a list of node indices ≥ 0 (got {'a': 1})",
        sub("slow_nodes: [1]", "slow_nodes: {a: 1}"),
    ),
    _c(
        "type-key-null.yaml",
        "a null key (~: 1) in cluster",
        "cluster: mapping keys must be strings (got None) (line 8)",
        sub("  nodes: 4\n", "  nodes: 4\n  ~: 1\n"),
    ),
    _c(
        "type-key-int.yaml",
        "an integer key (1: x) at the top",
        "file: mapping keys must be strings (got 1) (line 1)",
        b"1: x\n" + BASE.encode(),
    ),
    _c(
        "type-key-bool.yaml",
        "a key that YAML 1.1 reads as a boolean (on: true) in job",
        "job: mapping keys must be strings (got True) (line 22)",
        sub("  precision: bf16\n", "  on: true\n"),
    ),
    _c(
        "type-key-complex.yaml",
        "a list as a mapping key (? [a, b])",
        "what_if: mapping keys must be strings (got a list or mapping) (line 30)",
        BASE.encode() + b"  ? [a, b]\n  : 1\n",
    ),
    # --- unknown keys, versions, structure -----------------------------------------------------
    _c(
        "unknown-top-key.yaml",
        "an unknown top-level key (turbo: true)",
        "turbo: unknown field",
        BASE.encode() + b"turbo: true\n",
    ),
    _c(
        "unknown-model-typo.yaml",
        "a typo in job.model (layer: instead of layers:)",
        "job.model.layer: unknown field",
        sub("    layers: 24", "    layer: 24"),
    ),
    _c(
        "unknown-what-if-key.yaml",
        "an unknown what_if key",
        "what_if.warp_speed: unknown field",
        BASE.encode() + b"  warp_speed: 9\n",
    ),
    _c(
        "long-key-9000.yaml",
        "an explicit top-level key (? ...) of 9,000 characters (plain keys stop at 1,024)",
        "file: key of 9,000 characters, more than the 256 allowed (got 'aaaa",
        BASE.encode() + b"? " + b"a" * 9000 + b"\n: 1\n",
    ),
    _c("version-2.yaml", "version: 2", "version: must be 1 (got 2)", sub("version: 1", "version: 2")),
    _c(
        "version-string.yaml",
        'version: "1" (a string)',
        "version: must be 1 (got '1')",
        sub("version: 1", 'version: "1"'),
    ),
    _c(
        "version-null.yaml",
        "version: (empty)",
        "version: must be 1 (got None)",
        sub("version: 1", "version:"),
    ),
    _c("empty.yaml", "an empty file", "file: empty (expected a scenario mapping)", b""),
    _c(
        "only-comment.yaml",
        "only a comment",
        "file: empty (expected a scenario mapping)",
        b"# nothing here\n",
    ),
    _c(
        "only-whitespace.yaml",
        "only spaces and newlines",
        "file: empty (expected a scenario mapping)",
        b"   \n\n      \n",
    ),
    _c(
        "top-level-list.yaml",
        "the scenario inside a top-level list",
        "scenario: must be a mapping (got list)",
        ("- " + BASE.replace("\n", "\n  ").rstrip() + "\n").encode(),
    ),
    _c("top-level-scalar.yaml", "a lone string", "scenario: must be a mapping (got str)", b"hello\n"),
    _c(
        "multi-documents.yaml",
        "the base twice, as two YAML documents",
        "file: line 31, column 1: a second YAML document is not allowed",
        b"---\n" + BASE.encode() + b"---\n" + BASE.encode(),
    ),
    _c(
        "document-end-then-text.yaml",
        "'...' (document end) followed by more text",
        "file: line 31, column 1: ",
        BASE.encode() + b"...\nname: sneaky\n",
        parser=True,
    ),
    _c(
        "scenarios-empty-list.yaml",
        "scenarios: []",
        "scenarios: must be a non-empty list",
        b"scenarios: []\n",
    ),
    _c(
        "scenarios-mapping.yaml",
        "scenarios: is a mapping",
        "scenarios: must be a non-empty list",
        b"scenarios: {a: 1}\n",
    ),
    _c(
        "missing-job.yaml",
        "no job: section",
        "job: required",
        BASE.split("job:")[0].encode() + b"what_if: {}\n",
    ),
    _c(
        "missing-server.yaml",
        "no cluster.server",
        "cluster.server: required",
        sub("  server: dgx-h100\n", ""),
    ),
    _c(
        "unknown-server-slug.yaml",
        "cluster.server names no catalog entry",
        "cluster.server: unknown slug 'dgx-z900'",
        sub("server: dgx-h100", "server: dgx-z900"),
    ),
    _c(
        "unknown-what-if-server.yaml",
        "what_if.server names no catalog entry (the error names what_if, not cluster)",
        "what_if.server: unknown slug 'dgx-z900'",
        sub("what_if:\n", "what_if:\n  server: dgx-z900\n"),
    ),
    # --- tags --------------------------------------------------------------------------------
    _c(
        "tag-python-object-apply.yaml",
        "!!python/object/apply:os.system (code execution under yaml.unsafe_load)",
        "name: tag '!!python/object/apply:os.system' is not allowed (line 2)",
        sub("name: gpt-1.3b-32gpu", 'name: !!python/object/apply:os.system ["echo pwned"]'),
    ),
    _c(
        "tag-python-name.yaml",
        "!!python/name:os.system",
        "description: tag '!!python/name:os.system' is not allowed (line 3)",
        sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.",
            "description: !!python/name:os.system ''",
        ),
    ),
    _c(
        "tag-binary.yaml",
        "!!binary in the description (bytes are not JSON)",
        "description: tag '!!binary' is not allowed (line 3)",
        sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.",
            "description: !!binary aGVsbG8=",
        ),
    ),
    _c(
        "tag-custom-local.yaml",
        "a custom local tag on cluster (!Cluster)",
        "cluster: tag '!Cluster' is not allowed (line 4)",
        sub("cluster:\n", "cluster: !Cluster\n"),
    ),
    _c(
        "tag-set.yaml",
        "!!set for slow_nodes",
        "what_if.slow_nodes: tag '!!set' is not allowed (line 26)",
        sub("slow_nodes: [1]", "slow_nodes: !!set {1: null}"),
    ),
    _c(
        "tag-omap.yaml",
        "!!omap for job.parallel",
        "job.parallel: tag '!!omap' is not allowed (line 17)",
        sub(
            "  parallel:\n    tp: 8\n    pp: 1\n    dp: 4\n",
            "  parallel: !!omap [{tp: 8}, {pp: 1}, {dp: 4}]\n",
        ),
    ),
    _c(
        "tag-timestamp.yaml",
        "!!timestamp on the name",
        "name: tag '!!timestamp' is not allowed (line 2)",
        sub("name: gpt-1.3b-32gpu", "name: !!timestamp 2024-01-01"),
    ),
    _c(
        "tag-verbatim.yaml",
        "a verbatim tag !<tag:example.com,2024:gpu>",
        "cluster.server: tag 'tag:example.com,2024:gpu' is not allowed (line 6)",
        sub("server: dgx-h100", "server: !<tag:example.com,2024:gpu> dgx-h100"),
    ),
    _c(
        "tag-directive-redefines-core.yaml",
        "%TAG redefines !! so that !!str means another tag",
        "name: tag 'tag:evil.example,2024:str' is not allowed (line 4)",
        b"%TAG !! tag:evil.example,2024:\n---\n" + sub("name: gpt-1.3b-32gpu", "name: !!str gpt"),
    ),
    _c(
        "tag-int-on-text.yaml",
        '!!int "abc" (yaml.safe_load raises ValueError)',
        "job.model.layers: not a valid !!int (got 'abc')",
        sub("layers: 24", 'layers: !!int "abc"'),
    ),
    _c(
        "tag-float-on-text.yaml",
        "!!float on a word",
        "job.tokens: not a valid !!float (got 'lots')",
        sub("tokens: 1.0e+11", "tokens: !!float lots"),
    ),
    _c(
        "tag-undefined-handle.yaml",
        "an undefined tag handle (!e!gpu)",
        "file: line 6, column 11: found undefined tag handle",
        sub("server: dgx-h100", "server: !e!gpu dgx-h100"),
        parser=True,
    ),
    # --- syntax ------------------------------------------------------------------------------
    _c(
        "syntax-unclosed-flow.yaml",
        "an unclosed flow list on line 26 (found at the next key, line 27)",
        "file: line 27, column 19: ",
        sub("slow_nodes: [1]", "slow_nodes: [1, 2"),
        parser=True,
    ),
    _c(
        "syntax-bad-indent.yaml",
        "a key indented one space too far on line 12",
        "file: line 12, column 11: mapping values are not allowed",
        sub("    heads: 16", "     heads: 16"),
        parser=True,
    ),
    _c(
        "syntax-tab-indent.yaml",
        "a tab as indentation on line 11",
        "file: line 11, column 1: found ",
        sub("    hidden: 2048", "\thidden: 2048"),
        parser=True,
    ),
    _c(
        "syntax-unclosed-quote.yaml",
        "an unclosed double quote on line 2",
        "file: line 30, column 1: found unexpected end of stream",
        sub("name: gpt-1.3b-32gpu", 'name: "gpt-1.3b-32gpu'),
        parser=True,
    ),
    _c(
        "syntax-bad-escape.yaml",
        'an unknown escape "\\q" on line 2',
        "file: line 2, column 11: found unknown escape character",
        sub("name: gpt-1.3b-32gpu", 'name: "gpt\\q"'),
        parser=True,
        expected_python="file: line 2, column 12: found unknown escape character 'q'",
    ),
    _c(
        "syntax-colon-in-value.yaml",
        "name: a: b (a mapping where a value was expected) on line 2",
        "file: line 2, column 8: mapping values are not allowed",
        sub("name: gpt-1.3b-32gpu", "name: a: b"),
        parser=True,
    ),
    _c(
        "syntax-stray-bracket.yaml",
        "a stray ']' after a flow list on line 7",
        "file: line 7, column 13: ",
        sub("nodes: 4", "nodes: [4]]"),
        parser=True,
    ),
    _c(
        "syntax-yaml-directive-2.yaml",
        "%YAML 2.0 (an unknown YAML version)",
        "file: line 1, column 1: found incompatible YAML document",
        b"%YAML 2.0\n---\n" + BASE.encode(),
        parser=True,
    ),
    # --- generated at run time (past 16 KB) --------------------------------------------------
    _g(
        "size-10mib.yaml",
        "10 MiB: the base followed by a 10 MiB flow list of slow nodes",
        "file: 10,485,760 bytes, more than the 1,048,576 allowed",
        ten_mib,
    ),
    _g(
        "size-1mib-plus-1.yaml",
        "one byte past 1 MiB (comment padding)",
        "file: 1,048,577 bytes, more than the 1,048,576 allowed",
        lambda: (BASE + "#" * (1024 * 1024 - len(BASE) - 1) + "\n").encode() + b"#",
    ),
    _g(
        "values-30000-slow-nodes.yaml",
        "30,000 slow nodes (under 1 MiB, over the 20,000-value limit)",
        "file: line 26: more than 20,000 values",
        lambda: sub("slow_nodes: [1]", "slow_nodes: [" + ", ".join(["1"] * 30_000) + "]"),
    ),
    _g(
        "deep-flow-100000.yaml",
        "job is '[[[[...' 100,000 deep (a RecursionError and 3,000 lines of stderr before)",
        "file: line 8: nested deeper than 64 levels",
        lambda: sub("job:\n", "job: " + "[" * 100_000 + "]" * 100_000 + "\njob_was:\n"),
    ),
    _g(
        "deep-block-1000.yaml",
        "block mappings 1,000 deep (one more space per level, 500 KB)",
        "file: line 72: nested deeper than 64 levels",
        lambda: sub(
            "    layers: 24\n", "".join(" " * (4 + i) + "k:\n" for i in range(1000)) + " " * 1004 + "1\n"
        ),
    ),
    _g(
        "long-name-200000.yaml",
        "a name of 200,000 characters",
        "name: text of 200,000 characters, more than the 10,000 allowed (got 'xxxxxxxx",
        lambda: sub("name: gpt-1.3b-32gpu", "name: " + "x" * 200_000),
    ),
    _g(
        "long-description-1mib.yaml",
        "a description just under 1 MiB",
        "description: text of 1,0",
        lambda: sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.",
            "description: " + "lol " * ((1024 * 1024 - len(BASE)) // 4 - 10),
        ),
    ),
    _g(
        "long-key-100000.yaml",
        "a mapping key of 100,000 characters in job.model",
        "job.model: key of 100,000 characters, more than the 256 allowed",
        lambda: insert_after("seq_len: 2048", "    ? " + "k" * 100_000 + "\n    : 1\n"),
    ),
    _g(
        "long-server-slug-50000.yaml",
        "a 50,000-character quoted server slug",
        "cluster.server: text of 50,000 characters",
        lambda: sub("server: dgx-h100", 'server: "' + "h" * 50_000 + '"'),
    ),
    _g(
        "num-100000-digit-layers.yaml",
        "job.model.layers: a 100,000-digit integer (the text limit stops it before any int())",
        "job.model.layers: text of 100,000 characters",
        lambda: sub("layers: 24", "layers: " + "7" * 100_000),
    ),
    _g(
        "alias-bomb-wide.yaml",
        "a wide bomb: 2,000 aliases of one 300 KB anchor in description",
        "description[0]: anchors and aliases are not allowed (&big) (line 4)",
        lambda: sub(
            "description: The valid base of the hostile corpus; every other file is one mutation of it.\n",
            "description:\n  - &big [" + ", ".join(["lol"] * 60_000) + "]\n" + "  - *big\n" * 2000,
        ),
    ),
]

#: Cases checked in process only (``tests/utilities/test_yamlsafe.py``), not written as corpus
#: files: every ``manage.py simulate`` costs ~2 s of Django start-up, and the CLI test must stay under
#: ~90 s on 2 cores. Each repeats a kind of failure some corpus file already takes to the CLI.
IN_PROCESS_ONLY = {
    "size-1mib-plus-1.yaml",
    "alias-bomb-wide.yaml",
    "dup-section-job.yaml",
    "type-key-null.yaml",
    "only-whitespace.yaml",
    "scenarios-mapping.yaml",
    "version-null.yaml",
    "version-string.yaml",
    "unknown-what-if-key.yaml",
    "missing-server.yaml",
    "ctrl-raw-escape-byte.yaml",
    "alias-recursive.yaml",
    "enc-cp1252-quotes.yaml",
    "enc-lone-continuation-byte.yaml",
    "enc-beyond-unicode.yaml",
    "enc-five-byte-sequence.yaml",
    "enc-utf16be-bom.yaml",
    "enc-utf32le-bom.yaml",
    "ctrl-nul-padding.yaml",
    "ctrl-bell.yaml",
    "ctrl-delete.yaml",
    "ctrl-vertical-tab.yaml",
    "ctrl-form-feed.yaml",
    "ctrl-noncharacter-fffe.yaml",
    "deep-flow-mappings-100.yaml",
    "alias-bomb-keys.yaml",
    "alias-anchor-unused.yaml",
    "alias-undefined.yaml",
    "alias-merge-inline.yaml",
    "dup-cluster-nodes.yaml",
    "dup-quoted-and-plain.yaml",
    "num-inf-nic-gbps.yaml",
    "num-inf-slow-node-factor.yaml",
    "num-5000-digit-slow-node.yaml",
    "num-20-digit-steps.yaml",
    "num-huge-hex-vocab.yaml",
    "num-huge-sexagesimal-seq-len.yaml",
    "num-fraction-layers.yaml",
    "num-negative-nodes.yaml",
    "num-zero-tp.yaml",
    "num-nodes-over-limit.yaml",
    "num-max-int64-layers.yaml",
    "num-slow-node-out-of-range.yaml",
    "type-name-empty.yaml",
    "type-job-list.yaml",
    "type-model-null.yaml",
    "type-nodes-quoted.yaml",
    "type-layers-bool.yaml",
    "type-overlap-dp-string.yaml",
    "type-slow-nodes-mapping.yaml",
    "type-key-int.yaml",
    "top-level-scalar.yaml",
    "document-end-then-text.yaml",
    "missing-job.yaml",
    "tag-omap.yaml",
    "tag-timestamp.yaml",
    "tag-verbatim.yaml",
    "tag-float-on-text.yaml",
    "tag-undefined-handle.yaml",
    "syntax-colon-in-value.yaml",
    "syntax-stray-bracket.yaml",
    "syntax-yaml-directive-2.yaml",
    "deep-block-1000.yaml",
    "long-description-1mib.yaml",
    "long-key-100000.yaml",
    "long-server-slug-50000.yaml",
    "num-100000-digit-layers.yaml",
}
FILE_CASES = [item for item in CASES if item.file not in IN_PROCESS_ONLY]

_BY_FILE = {case.file: case for case in CASES}
assert set(_BY_FILE) >= IN_PROCESS_ONLY, IN_PROCESS_ONLY - set(_BY_FILE)
assert len(_BY_FILE) == len(CASES), "duplicate corpus file names"


def case(file: str) -> Case:
    return _BY_FILE[file]


def corpus_files(tmp_dir: Path) -> list[tuple[Case, Path]]:
    """Every corpus file with its case: committed ones from CORPUS_DIR, big ones in ``tmp_dir``."""
    out = []
    for item in FILE_CASES:
        if item.generated:
            path = tmp_dir / item.file
            if not path.exists():
                path.write_bytes(item.data())
        else:
            path = CORPUS_DIR / item.file
        out.append((item, path))
    return out


def readme() -> str:
    """The README of the corpus directory: one row per file."""
    rows = [
        "# Hostile scenario corpus",
        "",
        "Each file is one mutation of `base.yaml` (the 32-GPU job of `tests/scenarios/conftest.py` on",
        "`cluster: {generator: rail-optimized, server: dgx-h100, nodes: 4}`). `manage.py simulate` must",
        "refuse every file but the base with one short line and no traceback, quickly and in bounded",
        "memory (`tests/scenarios/test_hostile_corpus.py`); the loader's own tests are",
        "`tests/utilities/test_yamlsafe.py`. Files marked *generated* are past 16 KB: the tests build them",
        "at run time. Regenerate this directory with `python -m tests.corpus.hostile` (the definitions and",
        "expected messages live in `tests/corpus/hostile.py`, with more cases checked in process only).",
        "",
        "| file | mutation | error starts with |",
        "| --- | --- | --- |",
    ]
    for item in FILE_CASES:
        name = f"{item.file} (*generated*)" if item.generated else item.file
        expected = f"`{item.expected}`" if item.expected else "(succeeds)"
        rows.append(f"| {name} | {item.mutation.replace('|', '/')} | {expected.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def write_corpus(directory: Path = CORPUS_DIR) -> None:
    """Write the committed files and the README (``python -m tests.corpus.hostile``)."""
    directory.mkdir(parents=True, exist_ok=True)
    for item in FILE_CASES:
        if not item.generated:
            data = item.data()
            assert len(data) <= COMMITTED_LIMIT_BYTES, item.file
            (directory / item.file).write_bytes(data)
    (directory / "README.md").write_text(readme(), encoding="utf-8")


if __name__ == "__main__":
    write_corpus()
