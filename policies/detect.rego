# Detectors: Rego helpers that spot values a tool's result should not hand to a model.
#
# A starting point, not a data-loss-prevention product: each detector is a small pattern (and,
# for card numbers, a Luhn check) over one string. They miss what they were not written for
# and may match what merely looks alike; extend or replace them in your own bundle.
#
#   email(s)          an e-mail address
#   card_number(s)    13 to 19 digits 0-9 (spaces or dashes between them allowed) passing Luhn
#   api_key(s)        common API-key shapes (OpenAI, AWS, GitHub, Slack, Google, Stripe)
#   bearer_token(s)   "Bearer <token>", or a JSON Web Token
#   private_key(s)    a PEM private-key block
#   kinds(s)          the set of the above that s matches ("email", "card_number", ...)
#   hits(doc)         JSON pointer (RFC 6901) -> kinds, for every string in doc that matches
#   pointer(path)     the JSON pointer of a walk() path
#   may_hit(doc)      a cheap first look: false means hits(doc) is surely empty
package callgate.detect

# A first look over the document's JSON text, which every detector's match passes: most
# results have no hit, and this spares walking them string by string. Two tests, both always
# made (one body: a second body, or the pattern held in a rule, costs every result more):
# - one pattern whose alternatives are each detector's own prefix or mark (regorus matches a
#   pattern of literals far faster than it iterates over a list of substrings);
# - card numbers' 13 digits: with every digit made "0" and spaces and dashes dropped, a run of
#   13 digits with a space or dash between some of them is a run of 13 zeros. This passes
#   everything the card pattern finds and more (digits far apart across separators), at about
#   half the cost of a pattern for the run: regorus compiles a pattern on each call, and one of
#   13 repeated states was most of the first look's time (measured).
# Digits are ASCII's 0-9 throughout: `\d` matches every script's digits, which to_number in the
# Luhn check cannot read (an error that would withhold the result).
may_hit(doc) if {
	text := json.marshal(doc)
	true in [
		regex.match(`@|sk-|AKIA|gh[pousr]_|github_pat_|xox|AIza|k_live_|k_test_|eyJ|PRIVATE KEY|(?i:bearer)`, text),
		contains(strings.replace_n({"1": "0", "2": "0", "3": "0", "4": "0", "5": "0", "6": "0", "7": "0", "8": "0", "9": "0", " ": "", "-": ""}, text), "0000000000000"),
	]
}

email(s) if regex.match(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`, s)

card_number(s) if {
	some candidate in regex.find_n(`\b(?:[0-9][ -]?){12,18}[0-9]\b`, s, -1)
	digits := regex.replace(candidate, `[ -]`, "")
	count(digits) >= 13
	count(digits) <= 19
	luhn(digits)
}

# luhn(digits): the Luhn checksum of a string of decimal digits is valid.
luhn(digits) if {
	n := count(digits)
	chars := split(digits, "")
	total := sum([_luhn_value(to_number(c), (n - 1) - i) | some i, c in chars])
	total % 10 == 0
}

_luhn_value(d, from_right) := d if from_right % 2 == 0

_luhn_value(d, from_right) := 2 * d if {
	from_right % 2 == 1
	d < 5
}

_luhn_value(d, from_right) := (2 * d) - 9 if {
	from_right % 2 == 1
	d >= 5
}

api_key_patterns := [
	`\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{20,}`, # OpenAI-style secret keys
	`\bAKIA[0-9A-Z]{16}\b`, # AWS access key IDs
	`\bgh[pousr]_[A-Za-z0-9]{36,}\b`, # GitHub tokens
	`\bgithub_pat_[A-Za-z0-9_]{22,}`, # GitHub fine-grained tokens
	`\bxox[abprs]-[A-Za-z0-9-]{10,}`, # Slack tokens
	`\bAIza[0-9A-Za-z_-]{35}`, # Google API keys
	`\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`, # Stripe keys
]

api_key(s) if {
	some pattern in api_key_patterns
	regex.match(pattern, s)
}

bearer_token(s) if regex.match(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*`, s)

bearer_token(s) if regex.match(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, s)

private_key(s) if regex.match(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----`, s)

kinds(s) := {kind |
	some kind in ["email", "card_number", "api_key", "bearer_token", "private_key"]
	_matches(kind, s)
}

_matches("email", s) if email(s)

_matches("card_number", s) if card_number(s)

_matches("api_key", s) if api_key(s)

_matches("bearer_token", s) if bearer_token(s)

_matches("private_key", s) if private_key(s)

hits(doc) := {pointer(path): found |
	walk(doc, [path, value])
	is_string(value)
	found := kinds(value)
	count(found) > 0
}

pointer(path) := concat("", [sprintf("/%s", [_token(p)]) | some p in path])

_token(p) := replace(replace(p, "~", "~0"), "/", "~1") if is_string(p)

_token(p) := sprintf("%v", [p]) if not is_string(p)
