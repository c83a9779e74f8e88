"""The official JSON Schema Test Suite's draft 2020-12 cases, run through callgate's own schema
compiler (`compile_schema`, as a manifest's schema is built) and its validation
(`schema_problems`, as arguments and outputs are checked).

Every required case passes, and so does every case for the formats callgate asserts and for
ECMA-262 patterns, except those listed below with the reason: each of them is refused at load
by design, and the test fails if one of them is not (so the list stays true), or if any other
case is refused or decides differently. Where the files come from: schema_suite/_sources.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.tools.problems import ManifestProblem
from gateway.tools.schema import compile_schema, schema_problems

SUITE = Path(__file__).parent / "schema_suite" / "draft2020-12"
REQUIRED = sorted(p.name for p in SUITE.glob("*.json"))
OPTIONAL = sorted(p.relative_to(SUITE).as_posix() for p in SUITE.glob("optional/**/*.json"))

REMOTE = "a $ref outside the schema: callgate never fetches one (docs/tools.md, Schemas)"
METASCHEMA = (
    "a custom metaschema is a remote document, and only 2020-12's own metaschema is "
    "accepted as $schema"
)
UNKNOWN_FORMAT = (
    "a format callgate cannot check is refused while formats are asserted (with "
    "format_assertion: false it is the annotation the case expects)"
)

# what the refusal says, for each reason: a case refused for another reason is not the one listed
SAYS = {
    REMOTE: "remote references are never fetched",
    METASCHEMA: "only JSON Schema 2020-12",
    UNKNOWN_FORMAT: "is not a format callgate can check",
}

# (file, case) → why callgate refuses the case's schema at load
REFUSED: dict[tuple[str, str], str] = {
    **{
        ("refRemote.json", case): REMOTE
        for case in (
            "remote ref",
            "fragment within remote ref",
            "anchor within remote ref",
            "ref within remote ref",
            "base URI change",
            "base URI change - change folder",
            "base URI change - change folder in subschema",
            "root ref in remote ref",
            "remote ref with ref to defs",
            "Location-independent identifier in remote ref",
            "retrieved nested refs resolve relative to their URI not $id",
            "remote HTTP ref with different $id",
            "remote HTTP ref with different URN $id",
            "remote HTTP ref with nested absolute ref",
            "$ref to $ref finds detached $anchor",
        )
    },
    **{
        ("dynamicRef.json", case): REMOTE
        for case in (
            "strict-tree schema, guards against misspelled properties",
            "tests for implementation dynamic anchor and reference link",
            "$ref and $dynamicAnchor are independent of order - $defs first",
            "$ref and $dynamicAnchor are independent of order - $ref first",
            "$ref to $dynamicRef finds detached $dynamicAnchor",
        )
    },
    **{
        ("vocabulary.json", case): METASCHEMA
        for case in (
            "schema that uses custom metaschema with with no validation vocabulary",
            "ignore unrecognized optional vocabulary",
        )
    },
    ("optional/format/unknown.json", "unknown format"): UNKNOWN_FORMAT,
}

# format.json tests the specification's default, where a format is only an annotation; with
# formats asserted (callgate's default) exactly these tests are invalid instead. The file also
# runs with format_assertion: false, where every one of its tests passes.
ASSERTED = frozenset(
    ("format.json", f"{name} format", f"invalid {name} string is only an annotation by default")
    for name in (
        "email",
        "idn-email",
        "regex",
        "ipv4",
        "ipv6",
        "idn-hostname",
        "hostname",
        "date",
        "date-time",
        "time",
        "json-pointer",
        "relative-json-pointer",
        "iri",
        "iri-reference",
        "uri",
        "uri-reference",
        "uri-template",
        "uuid",
        "duration",
    )
)
ANNOTATED = ("format.json", "optional/format/unknown.json")  # also run as annotations


def compiled(schema: Any, assertion: bool) -> Any:
    # a manifest's schema is an object: a boolean schema is the same as an allOf of itself
    root = schema if isinstance(schema, dict) else {"allOf": [schema]}
    return compile_schema(root, (), format_assertion=assertion)


def outcomes(name: str, assertion: bool) -> tuple[set[tuple[str, str]], list[str]]:
    """(the cases refused at load, the tests decided otherwise than the suite expects)."""
    refused: set[tuple[str, str]] = set()
    wrong: list[str] = []
    for case in json.loads((SUITE / name).read_text(encoding="utf-8")):
        try:
            validator = compiled(case["schema"], assertion)
        except ManifestProblem as exc:
            refused.add((name, case["description"]))
            why = REFUSED.get((name, case["description"]))
            if why is None or SAYS[why] not in str(exc):
                wrong.append(f"{case['description']!r} is refused: {exc}")
            continue
        for test in case["tests"]:
            expected = test["valid"] and (
                not assertion or (name, case["description"], test["description"]) not in ASSERTED
            )
            problems = schema_problems(validator, test["data"])
            if (problems is None) != expected:
                wrong.append(
                    f"{case['description']!r} / {test['description']!r}: expected "
                    f"{'valid' if expected else 'invalid'}, got {problems or 'valid'}"
                )
    return refused, wrong


@pytest.mark.parametrize("name", REQUIRED + OPTIONAL)
def test_the_suite_with_formats_asserted(name: str) -> None:
    refused, wrong = outcomes(name, assertion=True)
    assert not wrong, f"{name}:\n" + "\n".join(wrong)
    expected = {key for key in REFUSED if key[0] == name}
    assert refused == expected, f"{name}: listed as refused but compiled: {expected - refused}"


@pytest.mark.parametrize("name", ANNOTATED)
def test_the_format_cases_with_formats_as_annotations(name: str) -> None:
    refused, wrong = outcomes(name, assertion=False)
    assert not refused and not wrong, f"{name}:\n" + "\n".join(wrong)


def test_every_suite_file_is_run() -> None:
    assert len(REQUIRED) == 46 and len(OPTIONAL) == 23, (len(REQUIRED), len(OPTIONAL))
    assert {name for name, _ in REFUSED} <= {*REQUIRED, *OPTIONAL}
    assert {name for name, _, _ in ASSERTED} == {"format.json"}
