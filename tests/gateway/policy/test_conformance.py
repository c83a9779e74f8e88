"""OPA's own conformance cases through callgate's engine, measured two ways; both lists of
exceptions are exact, so a case that starts failing and one that starts passing both show.

1. Against the results the cases expect. They were transcribed from OPA's repository after
   1.9, and some expect a later release's answer (OPA 1.9 itself fails 52 of them).
2. Against what OPA 1.9 answers, as callgate queries it (strict builtin errors), recorded in
   `opa_conformance/_opa-1.9-answers.json` by `record_opa_conformance.py`: OPA 1.9 is the
   reference for Rego semantics (docs/policies.md).

The plain engine (regorus as packaged, no callgate builtins) passes 456 of these 509 cases
and panics on 2.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from functools import cache
from typing import Any

from tests.gateway.policy.conformance import CASES_DIR, Case, Outcome, all_cases, run_all, run_case

_WITH_BUILTIN = "a builtin as the replacement in `with` is refused at load (clear message)"
_WITH_NESTED = (
    "nested replacements of builtins under one another's `with`: the engine fails "
    "(and denies) where OPA 1.9 strict errors too"
)
_WITH_SUPPLIED = "replacing a builtin callgate supplies with `with` is refused at load"
_BIG = "a number of 2^64 or more cannot be handed to callgate's sprintf (clear error)"
_NOT_STRICT = "a builtin error fails the evaluation, where OPA without strict errors is undefined"
_LATER = "the case expects a later OPA's answer; callgate gives OPA 1.9's"

# Cases failing against their expected result, and why.
EXPECTED_FAILURES: dict[str, str] = {
    "aggregates/test-aggregates-bignum.yaml :: aggregates/bignum exact (>64-bit integers through "
    "sum and product)": _BIG,
    "aggregates/test-aggregates-bignum.yaml :: aggregates/sum integer fast-path overflow "
    "(elements fit int64, sum does not)": _BIG,
    "arithmetic/test-arithmetic-bignum.yaml :: arithmetic/bignum exact (>64-bit integers through "
    "plus, minus, multiply)": _BIG,
    "arithmetic/test-arithmetic-edges.yaml :: arithmetic/int32 window edges (results crossing "
    "into wider integers)": _BIG,
    "sprintf/test-sprintf.yaml :: sprintf/big_int": _BIG,
    "sprintf/test-sprintf.yaml :: sprintf/big_int/max_cert_serial_number": _BIG,
    "comparisonexpr/test-comparisonexpr-decimals.yaml :: comparisonexpr/decimals order like the "
    "numbers they denote": "a literal beyond a 64-bit float (1e400) is refused at load",
    "functionerrors/test-functionerrors-undefined-builtin-result.yaml :: functionerrors/"
    "undefined builtin result": _NOT_STRICT,
    "regexmatch/test-regexmatch-0861.yaml :: regexmatch/regex.match bad RE": _NOT_STRICT,
    "regexreplace/test-regexreplace-0001.yaml :: "
    "regex.replace: bad regex pattern: Syntax error": _NOT_STRICT,
    "strings/test-anyprefixmatch.yaml :: "
    "strings/any_prefix_match/type_error_nostrict #1": _NOT_STRICT,
    "strings/test-anyprefixmatch.yaml :: "
    "strings/any_prefix_match/type_error_nostrict #3": _NOT_STRICT,
    "globmatch/test-globmatch-wildcards.yaml :: globmatch/empty pattern alternative": _LATER,
    "jsonbuiltins/test-is-valid.yaml :: jsonbuiltins/yaml is_valid unreachable content": _LATER,
    "walkbuiltin/test-walkbuiltin-0972.yaml :: walkbuiltin/objects no path": _LATER,
    "withkeyword/test-with-builtin-mock.yaml :: "
    "withkeyword/builtin: nested, multiple mocks": _WITH_SUPPLIED,
    "withkeyword/test-with-builtin-mock.yaml :: withkeyword/builtin: nested, mock function calls "
    "original": _WITH_NESTED,
    "withkeyword/test-with-builtin-mock.yaml :: "
    "withkeyword/builtin-builtin: arity 0": _WITH_BUILTIN,
    "withkeyword/test-with-builtin-mock.yaml :: withkeyword/builtin-builtin: arity 1, replacement "
    "is compound": _WITH_BUILTIN,
    "withkeyword/test-with-builtin-mock.yaml :: withkeyword/builtin-builtin: arity 1, replacement "
    "is simple": _WITH_BUILTIN,
    "withkeyword/test-with-function-mock.yaml :: withkeyword/function: direct call, built-in "
    "replacement, arity 1": _WITH_BUILTIN,
    "withkeyword/test-with-function-mock.yaml :: withkeyword/function: direct call, built-in "
    "replacement, arity 1, result captured": _WITH_BUILTIN,
}

_BEYOND_64 = (
    "numbers beyond 64 bits: OPA 1.9 rounds them to a 64-bit mantissa in arithmetic "
    "(and refuses a modulo of them); the engine computes exactly, and cannot hand "
    "them to callgate's sprintf"
)
_LATER_BUILTIN = "a builtin of a later OPA, supplied by callgate; OPA 1.9 has no such function"
_LATER_FIX = (
    "OPA 1.9 answers otherwise here, a behaviour later OPA releases changed; the "
    "engine answers as they do"
)


def _keys(reason: str, file: str, *notes: str) -> dict[str, str]:
    return {f"{file} :: {note}": reason for note in notes}


# Cases where the engine's answer is not OPA 1.9's, and why.
DIFFERENCES_FROM_OPA_19: dict[str, str] = {
    **_keys(
        _BEYOND_64,
        "aggregates/test-aggregates-bignum.yaml",
        "aggregates/bignum exact (>64-bit integers through sum and product)",
        "aggregates/sum integer fast-path overflow (elements fit int64, sum does not)",
    ),
    **_keys(
        _BEYOND_64,
        "arithmetic/test-arithmetic-bignum.yaml",
        "arithmetic/bignum exact (>64-bit integers through plus, minus, multiply)",
        "arithmetic/bignum modulo (divisor a nonzero multiple of 2^64)",
    ),
    **_keys(
        _BEYOND_64,
        "arithmetic/test-arithmetic-edges.yaml",
        "arithmetic/int32 window edges (results crossing into wider integers)",
    ),
    **_keys(
        _BIG,
        "sprintf/test-sprintf.yaml",
        "sprintf/big_int",
        "sprintf/big_int/max_cert_serial_number",
    ),
    **_keys(
        "a literal beyond a 64-bit float (1e400) is refused at load",
        "comparisonexpr/test-comparisonexpr-decimals.yaml",
        "comparisonexpr/decimals order like the numbers they denote",
    ),
    **_keys(
        _LATER_BUILTIN,
        "array/flatten.yaml",
        "array/flatten empty array",
        "array/flatten has nesting depth 1",
        "array/flatten mixed types",
        "array/flatten only arrays",
    ),
    **_keys(
        _LATER_BUILTIN,
        "strings/test-splitn.yaml",
        *(
            f"strings/split_n/{name}"
            for name in (
                "empty_delimiter_negative",
                "empty_delimiter_positive",
                "empty_string",
                "negative_basic",
                "negative_exact",
                "negative_more_than_parts",
                "negative_one",
                "no_delimiter_found_negative",
                "no_delimiter_found_positive",
                "positive_basic",
                "positive_exact",
                "positive_more_than_parts",
                "positive_one",
                "usecase_negative",
                "usecase_positive",
                "zero",
            )
        ),
    ),
    **_keys(
        "`import future.keywords.not` is OPA 1.17's (OPA 1.9 does not parse it); callgate "
        "gives it 1.17's meaning",
        "negation/test-not-body.yaml",
        "negation/not-body: negated call with vars, call evaluates",
        "negation/not-body: negated call with vars, call fails",
        "negation/not-body: negated call with vars, undefined operands",
    ),
    **_keys(
        _LATER_FIX + " (a key in both a base and a virtual document is yielded twice by OPA 1.9)",
        "baseandvirtualdocs/test-baseandvirtualdocs-enumerate-collision.yaml",
        "baseandvirtualdocs/enumerate/key in base and virtual doc yielded once",
        "baseandvirtualdocs/enumerate/key in base and virtual doc yielded once at data root",
        "baseandvirtualdocs/enumerate/key in base and virtual doc yielded once with values",
        "baseandvirtualdocs/enumerate/keys only in virtual doc still yielded",
    ),
    **_keys(
        _LATER_FIX + " (glob matching)",
        "globmatch/test-globmatch-wildcards.yaml",
        "globmatch/a run of wildcards matches the empty string",
        "globmatch/negated character-list requires exactly one character",
        "globmatch/single wildcard requires exactly one character",
        "globmatch/super wildcard does not consume a literal of the pattern",
        "globmatch/wildcard does not consume a literal of the pattern",
        "globmatch/wildcards do not cross any of multiple delimiters",
    ),
    **_keys(
        _LATER_FIX + " (OPA 1.9 takes versions SemVer 2.0.0 forbids)",
        "semvercompare/test-semvercompare-strict.yaml",
        "semvercompare/empty pre-release section in operand 1",
        "semvercompare/leading zero in a numeric pre-release identifier of operand 2",
        "semvercompare/leading zero in operand 1",
    ),
    **_keys(
        _LATER_FIX + " (OPA 1.9 takes versions SemVer 2.0.0 forbids)",
        "semverisvalid/test-semverisvalid-strict.yaml",
        "semverisvalid/empty build metadata section",
        "semverisvalid/empty pre-release section",
        "semverisvalid/leading zero in major version",
        "semverisvalid/leading zero in minor version",
        "semverisvalid/leading zero in numeric pre-release identifier",
        "semverisvalid/leading zero in patch version",
        "semverisvalid/leading zero in trailing numeric pre-release identifier",
    ),
    **_keys(
        _WITH_BUILTIN,
        "withkeyword/test-with-builtin-mock.yaml",
        "withkeyword/builtin-builtin: arity 0",
        "withkeyword/builtin-builtin: arity 1, replacement is compound",
        "withkeyword/builtin-builtin: arity 1, replacement is simple",
    ),
    **_keys(
        _WITH_SUPPLIED,
        "withkeyword/test-with-builtin-mock.yaml",
        "withkeyword/builtin: nested, multiple mocks",
    ),
    **_keys(
        _WITH_BUILTIN,
        "withkeyword/test-with-function-mock.yaml",
        "withkeyword/function: direct call, built-in replacement, arity 1",
        "withkeyword/function: direct call, built-in replacement, arity 1, result captured",
    ),
}

SUPPLIED_TOPICS = (
    "cryptohmacsha256",
    "jwtbuiltins",
    "jwtdecodeverify",
    "jwtverifyhs256",
    "netcidrcontainsmatches",
    "netcidrintersects",
    "netcidrmerge",
    "array",
)


@cache
def opa_19_answers() -> dict[str, dict[str, Any]]:
    doc = json.loads((CASES_DIR / "_opa-1.9-answers.json").read_text(encoding="utf-8"))
    answers: dict[str, dict[str, Any]] = doc["answers"]
    return answers


def as_opa_19_answered(case: Case) -> Case:
    """The case with OPA 1.9's recorded answer as the result it wants."""
    answer = opa_19_answers()[case.key]
    return replace(case, want=None if "error" in answer else answer["bindings"])


def failing(outcomes: list[Outcome]) -> dict[str, str]:
    return {o.case.key: o.detail for o in outcomes if not o.passed}


def test_the_failing_cases_are_exactly_the_known_ones() -> None:
    outcomes = run_all()
    assert len(outcomes) == 509
    failed = failing(outcomes)
    new = {k: v for k, v in failed.items() if k not in EXPECTED_FAILURES}
    fixed = sorted(set(EXPECTED_FAILURES) - set(failed))
    assert not new, "newly failing:\n" + "\n".join(f"{k}: {v}" for k, v in sorted(new.items()))
    assert not fixed, f"passing now, take them off EXPECTED_FAILURES: {fixed}"
    assert sum(o.passed for o in outcomes) == 509 - len(EXPECTED_FAILURES)


def test_the_answers_differing_from_opa_19_are_exactly_the_known_ones() -> None:
    assert set(opa_19_answers()) == {case.key for case in all_cases()}
    outcomes = run_all(cases=[as_opa_19_answered(c) for c in all_cases()])
    differing = failing(outcomes)
    new = {k: v for k, v in differing.items() if k not in DIFFERENCES_FROM_OPA_19}
    agreeing = sorted(set(DIFFERENCES_FROM_OPA_19) - set(differing))
    assert not new, "differing from OPA 1.9:\n" + "\n".join(
        f"{k}: {v}" for k, v in sorted(new.items())
    )
    assert not agreeing, f"agree with OPA 1.9 now, take them off the list: {agreeing}"


def test_no_case_panics_the_engine() -> None:
    panics = [o.case.note for o in run_all() if o.panic]
    assert panics == []


def test_every_case_of_a_supplied_builtin_passes() -> None:
    outcomes = run_all(
        cases=[
            c for c in all_cases() if c.file.split("/")[0] in SUPPLIED_TOPICS or "split_n" in c.note
        ]
    )
    topics = Counter(o.case.file.split("/")[0] for o in outcomes)
    assert set(topics) >= set(SUPPLIED_TOPICS)
    assert [f"{o.case.note}: {o.detail}" for o in outcomes if not o.passed] == []


def test_a_recorded_answer_can_disagree() -> None:
    """The comparison with OPA 1.9's answers sees a difference when there is one."""
    case = next(c for c in all_cases() if c.key.startswith("aggregates/test-aggregates-bignum"))
    wrong = replace(as_opa_19_answered(case), want=[{"x": "something else"}])
    assert not run_case(wrong).passed
