"""The argument and result types of OPA's builtins (OPA 1.8 capabilities, Apache-2.0).

One line per builtin: `name: arg, arg -> result`. A type is `any`, `string`, `number`,
`boolean`, `null`, `object`, `array`, `set`, `array[T]`, `set[T]` or alternatives `A|B`;
`strings` stands for `string|array[string]|set[string]`.
The checker uses it for arity and argument types; deprecated builtins (removed in Rego v1) and
operators written infix are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

_TABLE = """
abs: number -> number
array.concat: array, array -> array
array.flatten: array -> array
array.reverse: array -> array
array.slice: array, number, number -> array
base64.decode: string -> string
base64.encode: string -> string
base64.is_valid: string -> boolean
base64url.decode: string -> string
base64url.encode: string -> string
base64url.encode_no_pad: string -> string
bits.and: number, number -> number
bits.lsh: number, number -> number
bits.negate: number -> number
bits.or: number, number -> number
bits.rsh: number, number -> number
bits.xor: number, number -> number
ceil: number -> number
concat: string, array[string]|set[string] -> string
contains: string, string -> boolean
count: string|array|object|set -> number
crypto.hmac.equal: string, string -> boolean
crypto.hmac.md5: string, string -> string
crypto.hmac.sha1: string, string -> string
crypto.hmac.sha256: string, string -> string
crypto.hmac.sha512: string, string -> string
crypto.md5: string -> string
crypto.parse_private_keys: string -> array
crypto.sha1: string -> string
crypto.sha256: string -> string
crypto.x509.parse_and_verify_certificates: string -> array
crypto.x509.parse_and_verify_certificates_with_options: string, object -> array
crypto.x509.parse_certificate_request: string -> object
crypto.x509.parse_certificates: string -> array
crypto.x509.parse_keypair: string, string -> object
crypto.x509.parse_rsa_private_key: string -> object
endswith: string, string -> boolean
floor: number -> number
format_int: number, number -> string
glob.match: string, null|array[string], string -> boolean
glob.quote_meta: string -> string
graph.reachable: object, array|set -> set
graph.reachable_paths: object, array|set -> set
graphql.is_valid: string|object, string|object -> boolean
graphql.parse: string|object, string|object -> array
graphql.parse_and_verify: string|object, string|object -> array
graphql.parse_query: string -> object
graphql.parse_schema: string -> object
graphql.schema_is_valid: string|object -> boolean
hex.decode: string -> string
hex.encode: string -> string
http.send: object -> object
indexof: string, string -> number
indexof_n: string, string -> array[number]
intersection: set[set] -> set
io.jwt.decode: string -> array
io.jwt.decode_verify: string, object -> array
io.jwt.encode_sign: object, object, object -> string
io.jwt.encode_sign_raw: string, string, string -> string
io.jwt.verify_eddsa: string, string -> boolean
io.jwt.verify_es256: string, string -> boolean
io.jwt.verify_es384: string, string -> boolean
io.jwt.verify_es512: string, string -> boolean
io.jwt.verify_hs256: string, string -> boolean
io.jwt.verify_hs384: string, string -> boolean
io.jwt.verify_hs512: string, string -> boolean
io.jwt.verify_ps256: string, string -> boolean
io.jwt.verify_ps384: string, string -> boolean
io.jwt.verify_ps512: string, string -> boolean
io.jwt.verify_rs256: string, string -> boolean
io.jwt.verify_rs384: string, string -> boolean
io.jwt.verify_rs512: string, string -> boolean
is_array: any -> boolean
is_boolean: any -> boolean
is_null: any -> boolean
is_number: any -> boolean
is_object: any -> boolean
is_set: any -> boolean
is_string: any -> boolean
json.filter: object, array|set -> any
json.is_valid: string -> boolean
json.marshal: any -> string
json.marshal_with_options: any, object -> string
json.match_schema: string|object, string|object -> array
json.patch: any, array[object] -> any
json.remove: object, array|set -> any
json.unmarshal: string -> any
json.verify_schema: string|object -> array
lower: string -> string
max: array|set -> any
min: array|set -> any
net.cidr_contains: string, string -> boolean
net.cidr_contains_matches: string|array|object|set, string|array|object|set -> set
net.cidr_expand: string -> set[string]
net.cidr_intersects: string, string -> boolean
net.cidr_is_valid: string -> boolean
net.cidr_merge: array[string]|set[string] -> set[string]
net.lookup_ip_addr: string -> set[string]
numbers.range: number, number -> array[number]
numbers.range_step: number, number, number -> array[number]
object.filter: object, array|object|set -> any
object.get: object, any, any -> any
object.keys: object -> set
object.remove: object, array|object|set -> any
object.subset: array|object|set, array|object|set -> any
object.union: object, object -> any
object.union_n: array[object] -> any
opa.runtime: -> object
product: array[number]|set[number] -> number
providers.aws.sign_req: object, object, number -> object
rand.intn: string, number -> number
regex.find_all_string_submatch_n: string, string, number -> array
regex.find_n: string, string, number -> array[string]
regex.globs_match: string, string -> boolean
regex.is_valid: string -> boolean
regex.match: string, string -> boolean
regex.replace: string, string, string -> string
regex.split: string, string -> array[string]
regex.template_match: string, string, string, string -> boolean
rego.metadata.chain: -> array
rego.metadata.rule: -> any
rego.parse_module: string, string -> object
replace: string, string, string -> string
round: number -> number
semver.compare: string, string -> number
semver.is_valid: any -> boolean
sort: array|set -> array
split: string, string -> array[string]
sprintf: string, array -> string
startswith: string, string -> boolean
strings.any_prefix_match: strings, strings -> boolean
strings.any_suffix_match: strings, strings -> boolean
strings.count: string, string -> number
strings.render_template: string, object -> string
strings.replace_n: object, string -> string
strings.reverse: string -> string
strings.split_n: string, string, number -> array[string]
substring: string, number, number -> string
sum: array[number]|set[number] -> number
time.add_date: number, number, number, number -> number
time.clock: number|array -> array[number]
time.date: number|array -> array[number]
time.diff: number|array, number|array -> array[number]
time.format: number|array -> string
time.now_ns: -> number
time.parse_duration_ns: string -> number
time.parse_ns: string, string -> number
time.parse_rfc3339_ns: string -> number
time.weekday: number|array -> string
to_number: null|boolean|number|string -> number
trace: string -> boolean
trim: string, string -> string
trim_left: string, string -> string
trim_prefix: string, string -> string
trim_right: string, string -> string
trim_space: string -> string
trim_suffix: string, string -> string
type_name: any -> string
union: set[set] -> set
units.parse: string -> number
units.parse_bytes: string -> number
upper: string -> string
urlquery.decode: string -> string
urlquery.decode_object: string -> object
urlquery.encode: string -> string
urlquery.encode_object: object -> string
uuid.parse: string -> object
uuid.rfc4122: string -> string
walk: any -> array
yaml.is_valid: string -> boolean
yaml.marshal: any -> string
yaml.unmarshal: string -> any
"""

# Written infix (`a + b`, `x | y`); the checker sees them as operators, not calls.
OPERATORS = {
    "plus": "number",
    "minus": "number|set",
    "mul": "number",
    "div": "number",
    "rem": "number",
    "or": "set",
    "and": "set",
}


@dataclass(frozen=True)
class Kind:
    """One alternative of a type: `array[string]` is Kind("array", "string")."""

    name: str  # any | string | number | boolean | null | object | array | set
    element: str = ""  # for array and set: the element kind, "" when any

    def __str__(self) -> str:
        return f"{self.name}[{self.element}]" if self.element else self.name


Type = tuple[Kind, ...]  # alternatives; ANY is (Kind("any"),)
ANY: Type = (Kind("any"),)


_ALIASES = {"strings": "string|array[string]|set[string]"}


def parse_type(text: str) -> Type:
    kinds: list[Kind] = []
    text = _ALIASES.get(text.strip(), text)
    for alternative in text.strip().split("|"):
        name, _, element = alternative.partition("[")
        kinds.append(Kind(name.strip(), element.rstrip("]").strip()))
    return tuple(kinds)


def type_text(value: Type) -> str:
    return " or ".join(str(k) for k in value)


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple[Type, ...]
    result: Type


def _parse_table(table: str) -> dict[str, Signature]:
    out: dict[str, Signature] = {}
    for line in table.strip().splitlines():
        name, _, rest = line.partition(":")
        args_text, _, result = rest.partition("->")
        args = tuple(parse_type(a) for a in args_text.split(",") if a.strip())
        out[name.strip()] = Signature(name.strip(), args, parse_type(result))
    return out


SIGNATURES: dict[str, Signature] = _parse_table(_TABLE)
# Builtins that take any number of arguments (their types are not checked).
VARIADIC = frozenset({"print"})
