# Unit tests of the detectors (package callgate.detect): each on what it must find and on a
# near miss it must leave alone.
package callgate.detect_test

import data.callgate.detect

test_email_found if detect.email("write to bob.smith+trains@example.co.uk today")

test_email_needs_a_domain if not detect.email("bob@localhost and @handles")

test_card_number_with_luhn if detect.card_number("card 4111 1111 1111 1111 on file")

test_card_number_with_dashes if detect.card_number("5500-0000-0000-0004")

test_card_number_failing_luhn_is_not_one if not detect.card_number("4111 1111 1111 1112")

test_short_digit_runs_are_not_cards if not detect.card_number("order 123456789012, seat 42")

# Digits of other scripts are not card numbers (and do not break the Luhn check's to_number).
test_other_scripts_digits_are_not_cards if not detect.card_number("٤١١١ ١١١١ ١١١١ ١١١١")

test_luhn if {
	detect.luhn("79927398713")
	not detect.luhn("79927398710")
}

api_key_samples := [
	"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz12",
	"AKIAIOSFODNN7EXAMPLE",
	"token ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
	"gho_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
	"github_pat_abcdefghijklmnopqrstuvwxyz",
	"xoxb-1234567890-abcdefghij",
	"AIzaSyAbcdefghijklmnopqrstuvwxyz0123456",
	"sk_live_abcdefghijklmnop1234",
	"rk_test_abcdefghijklmnop1234",
]

test_api_keys if {
	every sample in api_key_samples {
		detect.api_key(sample)
	}
}

# may_hit's markers must pass every key the patterns find
test_may_hit_passes_every_api_key if {
	every sample in api_key_samples {
		detect.may_hit({"note": sample})
	}
}

test_words_are_not_api_keys if not detect.api_key("sk-short and AKIA lowercase akiaiosfodnn7example")

test_bearer_tokens if {
	detect.bearer_token("Authorization: Bearer abcdefghijklmnop.qrstuv")
	detect.bearer_token("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl")
}

test_bearer_needs_a_token if not detect.bearer_token("a bearer of good news")

test_private_key_block if detect.private_key("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl")

test_public_key_block_is_not_private if not detect.private_key("-----BEGIN PUBLIC KEY-----")

test_kinds if {
	detect.kinds("bob@example.com, 4111111111111111") == {"email", "card_number"}
	detect.kinds("ICE123 is on time") == set()
}

test_hits_give_json_pointers if {
	doc := {"a/b": [{"x": "ok"}, {"x": "me@example.org"}], "n": 4, "m~": "Bearer abcdefghijklmnopqrst"}
	detect.hits(doc) == {"/a~1b/1/x": {"email"}, "/m~0": {"bearer_token"}}
}

test_hits_of_a_plain_string if detect.hits("me@example.org") == {"": {"email"}}

test_no_hits if detect.hits({"train": "ICE123", "delay_min": 4}) == {}

test_may_hit_passes_every_hit if {
	detect.may_hit({"a": "me@example.org"})
	detect.may_hit(["4111-1111-1111-1111"])
	detect.may_hit("AUTHORIZATION: BEARER abcdefghijklmnopqrst")
	detect.may_hit({"k": "-----BEGIN EC PRIVATE KEY-----"})
}

test_may_hit_passes_every_card_layout if {
	detect.may_hit({"card": "4111 1111 1111 1111"})
	detect.may_hit({"card": "4111-1111 1111-1111"})
	detect.may_hit({"card": "4222222222222"})
	detect.may_hit({"note": "paid with 5500-0000-0000-0004 today"})
}

test_may_hit_skips_twelve_digits if not detect.may_hit({"order": "1234-5678-9012"})

test_may_hit_skips_a_plain_result if not detect.may_hit({"train": "ICE123", "date": "2026-12-01", "delay_min": 4})

# "high" holds "gh", as do "light" and "night": only a GitHub token's own prefix is a marker
test_may_hit_skips_a_weather_report if not detect.may_hit({"city": "Berlin", "forecast": "light rain", "high_c": 7})
